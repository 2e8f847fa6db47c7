package catalog

import (
	"encoding/json"
	"regexp"
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
	p := &aql.Param{Types: schemaTypes(s)}
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
