package aql

import "sort"

// Shape is what aqlguard checks of a value against the JSON Schema that
// declares it: its JSON type, an array's items, an object's declared
// members. The catalog reads it from a tool's inputSchema (catalog
// deriveShape); what a schema says beyond it (formats, patterns,
// bounds, enums, $ref, conditionals) is the server's to enforce, so
// that a schema aqlguard reads differently from the server (a pattern
// RE2 cannot compile) never refuses an honest call.
//
// How deep: types are checked at every depth the schema declares them
// (an array's items, an object's properties, theirs); an undeclared
// member is refused at the top level of a tool's arguments (the house
// rule: an argument the tool does not declare has no role the guard can
// judge, so it is not forwarded; Catalog sets the top-level Shape
// Closed) and, below, only where the schema closes the object itself
// (additionalProperties false), since nested objects are often
// free-form maps whose members the server reads as data.
type Shape struct {
	// Types are the accepted JSON types (integer is a number too); empty
	// accepts any.
	Types []string
	// Items is the shape of an array's elements; nil: anything.
	Items *Shape
	// Properties are an object's declared members; Required those the
	// schema requires. A member that is not required may be null: MCP
	// reads a null argument as one not given (SEP-2243), and the
	// server says whether it takes it.
	Properties map[string]*Shape
	Required   map[string]bool
	// Closed refuses members not in Properties.
	Closed bool
	// Secret says the value is a secret (writeOnly, format password, a
	// secret's name): an error does not echo it.
	Secret bool
}

// Declared are the names of the declared members, sorted.
func (s *Shape) Declared() []string {
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckArguments checks a tool call's arguments, as the client sent
// them, against the tool's input (catalog.Operation.Input): first every
// member the input does not declare where it is closed (at the top
// level unless the server's entry allows undeclared arguments), named
// all at once; then the type of every declared value. tool names the
// tool in the errors. A nil input checks nothing.
func CheckArguments(tool string, input *Shape, args map[string]any) *Error {
	if input == nil {
		return nil
	}
	if err := undeclared(tool, "", input, args); err != nil {
		return err
	}
	return input.members(tool, "", args, false)
}

// undeclared refuses the members of obj (at path) that s does not
// declare, where s is closed, and below.
func undeclared(tool, path string, s *Shape, obj map[string]any) *Error {
	var unknown []string
	if s.Closed {
		for k := range obj {
			if _, ok := s.Properties[k]; !ok {
				unknown = append(unknown, keyPath(path, k))
			}
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		valid := s.Declared()
		for i, k := range valid {
			valid[i] = keyPath(path, k)
		}
		e := UnknownParams(tool, unknown, valid)
		if path != "" {
			e.Details["object"] = path
		}
		return e
	}
	for _, k := range sortedKeys(obj) {
		if err := undeclaredBelow(tool, keyPath(path, k), s.Properties[k], obj[k]); err != nil {
			return err
		}
	}
	return nil
}

func undeclaredBelow(tool, path string, s *Shape, v any) *Error {
	if s == nil {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		if s.Closed || len(s.Properties) > 0 {
			return undeclared(tool, path, s, x)
		}
	case []any:
		for i, e := range x {
			if err := undeclaredBelow(tool, indexPath(path, i), s.Items, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// check checks v (at path) against s: its type, then what is inside it.
// sensitive says v lies under a secret: an error does not echo it.
func (s *Shape) check(tool, path string, v any, sensitive bool) *Error {
	if s == nil {
		return nil
	}
	sensitive = sensitive || s.Secret
	if err := typeCheck(path, s.Types, v, sensitive); err != nil {
		return err
	}
	return s.inside(tool, path, v, sensitive)
}

// inside checks what is inside v (at path): an array's items, an
// object's declared members.
func (s *Shape) inside(tool, path string, v any, sensitive bool) *Error {
	switch x := v.(type) {
	case map[string]any:
		return s.members(tool, path, x, sensitive || s.Secret)
	case []any:
		if s.Items == nil {
			return nil
		}
		for i, e := range x {
			if err := s.Items.check(tool, indexPath(path, i), e, sensitive || s.Secret); err != nil {
				return err
			}
		}
	}
	return nil
}

// members checks the declared members of obj, in name order.
func (s *Shape) members(tool, path string, obj map[string]any, sensitive bool) *Error {
	if len(s.Properties) == 0 {
		return nil
	}
	for _, k := range sortedKeys(obj) {
		ps, ok := s.Properties[k]
		if !ok || obj[k] == nil && !s.Required[k] {
			continue
		}
		if err := ps.check(tool, keyPath(path, k), obj[k], sensitive); err != nil {
			return err
		}
	}
	return nil
}
