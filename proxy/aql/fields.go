package aql

import (
	"strings"
)

// Field-selection presets (field-selection.md 3). aqlguard cannot know a
// downstream resource's schema, so the presets are defined by shape:
// minimal keeps identifying keys, standard keeps every scalar, full keeps
// everything.
const (
	PresetMinimal  = "minimal"
	PresetStandard = "standard"
	PresetFull     = "full"
)

// minimalKeys are the keys the minimal preset keeps.
var minimalKeys = map[string]bool{"id": true, "name": true, "title": true, "uri": true, "path": true, "key": true, "status": true}

// FieldsParam is the definition of the fields parameter added to READ
// operations whose tool does not define its own.
func FieldsParam() *Param {
	return &Param{
		Name:        "fields",
		Types:       []string{"string", "array"},
		ItemTypes:   []string{"string"},
		Type:        "string | string[]",
		Description: "Field selection: preset ('minimal', 'standard', 'full') or array of dot-separated field paths",
		Consumed:    true,
	}
}

// Selection is a parsed fields value.
type Selection struct {
	preset string
	paths  [][]string
}

// ParseSelection validates a fields parameter value.
func ParseSelection(v any) (*Selection, *Error) {
	switch x := v.(type) {
	case string:
		switch x {
		case PresetMinimal, PresetStandard, PresetFull:
			return &Selection{preset: x}, nil
		}
		return nil, &Error{Code: CodeInvalidEnum, Message: "Parameter 'fields' must be a preset (minimal, standard, full) or an array of field paths",
			Details: map[string]any{"param_name": "fields", "allowed_values": []string{PresetMinimal, PresetStandard, PresetFull}}}
	case []any:
		s := &Selection{}
		for i, e := range x {
			p, ok := e.(string)
			if !ok || p == "" {
				return nil, InvalidType(indexPath("fields", i), "string", jsonType(e), nil)
			}
			s.paths = append(s.paths, strings.Split(p, "."))
		}
		return s, nil
	}
	return nil, InvalidType("fields", "string | string[]", jsonType(v), nil)
}

// Apply filters data. A collection (an array, or an object holding an
// "items" array) is filtered per element and its other members, such as
// pagination, are kept (field-selection.md 4.2). Missing fields are
// omitted silently (4.3).
func (s *Selection) Apply(data any) any {
	if s == nil || s.preset == PresetFull {
		return data
	}
	switch x := data.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.Apply(e)
		}
		return out
	case map[string]any:
		if items, ok := x["items"].([]any); ok && !s.names("items") {
			out := make(map[string]any, len(x))
			for k, v := range x {
				out[k] = v
			}
			out["items"] = s.Apply(items)
			return out
		}
		return s.object(x)
	}
	return data
}

func (s *Selection) names(key string) bool {
	for _, p := range s.paths {
		if p[0] == key {
			return true
		}
	}
	return false
}

func (s *Selection) object(m map[string]any) map[string]any {
	out := map[string]any{}
	switch s.preset {
	case PresetMinimal:
		for k, v := range m {
			if minimalKeys[strings.ToLower(k)] {
				out[k] = v
			}
		}
		return out
	case PresetStandard:
		for k, v := range m {
			switch v.(type) {
			case map[string]any, []any:
			default:
				out[k] = v
			}
		}
		return out
	}
	for _, p := range s.paths {
		pick(m, out, p)
	}
	return out
}

// pick copies the value at path from src into dst, preserving structure.
func pick(src, dst map[string]any, path []string) {
	v, ok := src[path[0]]
	if !ok {
		return
	}
	if len(path) == 1 {
		dst[path[0]] = v
		return
	}
	switch child := v.(type) {
	case map[string]any:
		sub, _ := dst[path[0]].(map[string]any)
		if sub == nil {
			sub = map[string]any{}
			dst[path[0]] = sub
		}
		pick(child, sub, path[1:])
	case []any:
		// A path through an array selects inside each element.
		prev, _ := dst[path[0]].([]any)
		out := make([]any, len(child))
		for i, e := range child {
			em, ok := e.(map[string]any)
			if !ok {
				continue
			}
			var sub map[string]any
			if i < len(prev) {
				sub, _ = prev[i].(map[string]any)
			}
			if sub == nil {
				sub = map[string]any{}
			}
			pick(em, sub, path[1:])
			out[i] = sub
		}
		dst[path[0]] = out
	}
}
