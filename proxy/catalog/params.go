package catalog

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
)

// deriveParams turns a tool's JSON Schema inputSchema into parameter
// definitions: required ones first, then by name. Public names are
// snake_case (spec 4.3); a downstream spelling that differs is kept in
// MapTo and accepted as an alias, unless another property already owns the
// snake_case spelling, in which case the original name stays public.
func deriveParams(schema any) []*aql.Param {
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if rs, ok := s["required"].([]any); ok {
		for _, r := range rs {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
	}
	owned := map[string]bool{}
	for name := range props {
		owned[name] = true
	}
	params := make([]*aql.Param, 0, len(props))
	for name, raw := range props {
		ps, _ := raw.(map[string]any)
		p := paramFromSchema(ps)
		p.Name = name
		p.Required = required[name]
		if sn := Snake(name); sn != name && !owned[sn] {
			p.Name, p.MapTo, p.Aliases = sn, name, []string{name}
		}
		// What the schema alone says; markSecrets adds the policy's
		// secret_arguments once the operation has its names.
		p.Sensitive = (*policy.Policy)(nil).SecretArgument(policy.CallNames{}, []string{policy.SnakeName(name)}, ps)
		params = append(params, p)
	}
	sort.Slice(params, func(i, j int) bool {
		if params[i].Required != params[j].Required {
			return params[i].Required
		}
		return params[i].Name < params[j].Name
	})
	return params
}

func paramFromSchema(s map[string]any) *aql.Param {
	p := &aql.Param{Types: schemaTypes(s), Shape: deriveShape(s, 1)}
	p.Description, _ = s["description"].(string)
	if p.Description == "" {
		p.Description, _ = s["title"].(string)
	}
	if d, ok := s["default"]; ok {
		if b, err := json.Marshal(d); err == nil {
			p.Default = b
		}
	}
	if e, ok := s["enum"].([]any); ok {
		p.Enum = numbersAsJSON(e)
	} else if c, ok := s["const"]; ok {
		p.Enum = numbersAsJSON([]any{c})
	}
	p.Minimum = num(s["minimum"])
	p.Maximum = num(s["maximum"])
	p.MinLength = integer(s["minLength"])
	p.MaxLength = integer(s["maxLength"])
	p.Pattern, _ = s["pattern"].(string)
	p.Format, _ = s["format"].(string)
	if items, ok := s["items"].(map[string]any); ok {
		p.Items = items
		p.ItemTypes = schemaTypes(items)
	}
	p.Type = strings.Join(p.Types, " | ")
	if p.Type == "" {
		p.Type = "any"
	}
	return p
}

// maxShapeDepth bounds how deep deriveShape reads a schema: below, a
// value is anything. A request cannot nest deeper than the nesting limit
// (spec 4.7.5: at most 100 levels, 32 by default), and checking less
// never refuses an honest call.
const maxShapeDepth = 32

// InputShape is what aqlguard checks of a tool's arguments (aql.Shape):
// the members its inputSchema's properties declare, closed at the top
// level (an argument the schema does not declare is refused) unless
// allowUndeclared (the server's allow_undeclared_arguments). A schema
// without properties declares no argument: {"type":"object"} is a tool
// that takes none, whatever additionalProperties says; a server whose
// tools take free-form arguments needs allow_undeclared_arguments.
func InputShape(schema any, allowUndeclared bool) *aql.Shape {
	s, _ := schema.(map[string]any)
	shape := deriveShape(s, 0)
	if shape == nil {
		shape = &aql.Shape{}
	}
	shape.Types = nil // the arguments are an object (aql.ParseArguments)
	shape.Closed = !allowUndeclared
	return shape
}

// deriveShape reads what aqlguard checks of a value from its JSON Schema
// (see aql.Shape for what, and how deep); nil where it says nothing
// aqlguard checks (no schema, $ref, or below maxShapeDepth). "nullable"
// (OpenAPI's spelling) accepts null.
func deriveShape(s map[string]any, depth int) *aql.Shape {
	if s == nil || depth > maxShapeDepth {
		return nil
	}
	shape := &aql.Shape{Types: schemaTypes(s), Secret: policy.SecretSchema(s)}
	if s["nullable"] == true && len(shape.Types) > 0 && !slices.Contains(shape.Types, "null") {
		shape.Types = append(shape.Types, "null")
	}
	if items, ok := s["items"].(map[string]any); ok {
		shape.Items = deriveShape(items, depth+1)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		shape.Properties = make(map[string]*aql.Shape, len(props))
		for name, raw := range props {
			ps := deriveShape(asSchema(raw), depth+1)
			if ps == nil {
				ps = &aql.Shape{}
			}
			ps.Secret = ps.Secret || policy.SecretName(name)
			shape.Properties[name] = ps
		}
		if rs, ok := s["required"].([]any); ok {
			for _, r := range rs {
				if name, ok := r.(string); ok {
					if shape.Required == nil {
						shape.Required = map[string]bool{}
					}
					shape.Required[name] = true
				}
			}
		}
	}
	// additionalProperties false (or {"not": {}}, its spelling as a
	// schema) closes the object; patternProperties reopen it to names
	// aqlguard does not match (the server does).
	if _, patterns := s["patternProperties"]; !patterns && closedSchema(s["additionalProperties"]) {
		shape.Closed = true
	}
	return shape
}

// asSchema is a property's schema as an object; true (anything) and
// other forms are nil (nothing checked).
func asSchema(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// closedSchema reports whether an additionalProperties value admits no
// member: false, or a schema that matches nothing ({"not": {}}).
func closedSchema(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case map[string]any:
		not, ok := x["not"].(map[string]any)
		return ok && len(x) == 1 && len(not) == 0
	}
	return false
}

// markSecrets marks the parameters the policy declares secret
// (secret_arguments) sensitive, as their name or schema already may have.
func markSecrets(op *Operation, pol *policy.Policy) {
	if pol == nil || len(pol.SecretArguments) == 0 {
		return
	}
	names := policy.NameForms(op.Name, op.Server, op.Tool.Name)
	for _, p := range op.Params {
		if pol.SecretArgument(names, []string{policy.SnakeName(p.ServerName())}, nil) {
			p.Sensitive = true
		}
	}
}

// schemaTypes reads "type" (string or list), else the types of
// anyOf/oneOf branches, else infers from enum; empty means any.
func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if name, ok := x.(string); ok {
				out = append(out, name)
			}
		}
		return out
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		branches, ok := s[key].([]any)
		if !ok {
			continue
		}
		seen := map[string]bool{}
		var out []string
		for _, b := range branches {
			bm, _ := b.(map[string]any)
			ts := schemaTypes(bm)
			if len(ts) == 0 {
				return nil // one branch accepts anything
			}
			for _, t := range ts {
				if !seen[t] {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
		return out
	}
	return nil
}

// numbersAsJSON converts decoded float64s to json.Number, the form the
// request decoder produces, so enum comparison and rendering agree.
func numbersAsJSON(vs []any) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		if f, ok := v.(float64); ok {
			b, _ := json.Marshal(f)
			out[i] = json.Number(b)
			continue
		}
		out[i] = v
	}
	return out
}

func num(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

func integer(v any) *int {
	if f, ok := v.(float64); ok && f >= 0 && f == float64(int(f)) {
		n := int(f)
		return &n
	}
	return nil
}

// examples builds one example request from the required parameters (and,
// when there are none, from the first optional one), with values that
// satisfy each parameter's type and constraints.
func examples(op *Operation) []Example {
	params := map[string]any{}
	for _, p := range op.Params {
		if p.Required {
			params[p.Name] = exampleValue(p)
		}
	}
	if len(params) == 0 {
		for _, p := range op.Params {
			if !p.Consumed {
				params[p.Name] = exampleValue(p)
				break
			}
		}
	}
	req := map[string]any{"operation": op.Name}
	if len(params) > 0 {
		req["params"] = params
	}
	desc := "Call " + op.Name
	if op.Tool != nil {
		desc = "Call " + op.Tool.Name + " on " + op.Server
	}
	ex := []Example{{Description: desc, Request: req}}
	if op.Selectable {
		sel := map[string]any{}
		for k, v := range params {
			sel[k] = v
		}
		sel["fields"] = aql.PresetMinimal
		ex = append(ex, Example{Description: "Same, returning only identifying fields",
			Request: map[string]any{"operation": op.Name, "params": sel}})
	}
	return ex
}

func exampleValue(p *aql.Param) any {
	if len(p.Enum) > 0 {
		return p.Enum[0]
	}
	if len(p.Default) > 0 {
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			return v
		}
	}
	t := ""
	if len(p.Types) > 0 {
		t = p.Types[0]
	}
	switch t {
	case "integer", "number":
		switch {
		case p.Minimum != nil:
			return *p.Minimum
		case p.Maximum != nil && *p.Maximum < 1:
			return *p.Maximum
		}
		return 1
	case "boolean":
		return true
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	case "null":
		return nil
	}
	switch p.Format {
	case "date-time":
		return "2026-01-01T00:00:00Z"
	case "date":
		return "2026-01-01"
	case "uri", "url":
		return "https://example.com"
	case "email":
		return "user@example.com"
	case "uuid":
		return "00000000-0000-4000-8000-000000000000"
	}
	return exampleString(p)
}

// exampleString picks a string that satisfies the parameter's pattern and
// length bounds, so the example passes the operation's own validation.
func exampleString(p *aql.Param) string {
	candidates := []string{"example", "<" + p.Name + ">", "example-1", "abc", "a", "1", "A", "/tmp/example", "example.txt"}
	var re *regexp.Regexp
	if p.Pattern != "" {
		re, _ = regexp.Compile(p.Pattern)
	}
	for _, c := range candidates {
		n := len([]rune(c))
		if p.MinLength != nil && n < *p.MinLength || p.MaxLength != nil && n > *p.MaxLength {
			continue
		}
		if re == nil || re.MatchString(c) {
			return c
		}
	}
	if p.MinLength != nil {
		return strings.Repeat("a", *p.MinLength)
	}
	return "<" + p.Name + ">"
}
