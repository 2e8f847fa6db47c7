package effects

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Definition is what a server says of one tool, as the model reads it:
// the members that describe what it does and what it takes.
type Definition struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's input schema as decoded JSON (nil: none).
	InputSchema map[string]any
	// Hints are the tool's annotations; nil where the server said
	// nothing.
	ReadOnly, Destructive, OpenWorld *bool
}

// MatchKey is the digest a profile knows a tool definition by: SHA-256
// of the canonical JSON of the tool's name, its description, and the
// shape of its input schema. The shape keeps what says what the tool
// takes and what the model reads (types, formats, enums, properties,
// required names, items, additionalProperties, the combinators and
// references, and every description, where an instruction to the model
// can hide) and drops what schema generators add on their own (titles,
// defaults, examples, numeric and length bounds, patterns, $schema,
// $id), so that a profile made from a server's source matches what the
// server sends, and a description changed by one word does not.
func MatchKey(d Definition) string {
	canon, _ := json.Marshal(map[string]any{
		"name":        d.Name,
		"description": d.Description,
		"input":       Shape(d.InputSchema),
	})
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// shapeKeys are the schema keywords Shape keeps.
var shapeKeys = map[string]bool{
	"type": true, "format": true, "enum": true, "const": true, "description": true,
	"properties": true, "required": true, "items": true, "prefixItems": true, "additionalProperties": true,
	"anyOf": true, "oneOf": true, "allOf": true, "not": true, "$ref": true, "$defs": true, "definitions": true,
	"contentEncoding": true, "contentMediaType": true,
}

// Shape is a schema with only the keywords MatchKey compares, required
// names sorted and a one-element type list written as its one type.
func Shape(schema any) any {
	switch s := schema.(type) {
	case map[string]any:
		out := make(map[string]any, len(s))
		for k, v := range s {
			if !shapeKeys[k] {
				continue
			}
			switch k {
			case "properties", "$defs", "definitions":
				if m, ok := v.(map[string]any); ok {
					props := make(map[string]any, len(m))
					for name, sub := range m {
						props[name] = Shape(sub)
					}
					out[k] = props
					continue
				}
			case "required":
				if list, ok := v.([]any); ok {
					names := make([]string, 0, len(list))
					for _, n := range list {
						if str, ok := n.(string); ok {
							names = append(names, str)
						}
					}
					slices.Sort(names)
					names = slices.Compact(names)
					out[k] = names
					continue
				}
			case "type":
				if list, ok := v.([]any); ok {
					types := make([]string, 0, len(list))
					for _, t := range list {
						if str, ok := t.(string); ok {
							types = append(types, str)
						}
					}
					slices.Sort(types)
					if len(types) == 1 {
						out[k] = types[0]
					} else {
						out[k] = types
					}
					continue
				}
			case "enum", "const", "description", "format", "$ref", "contentEncoding", "contentMediaType":
				out[k] = v
				continue
			}
			out[k] = Shape(v)
		}
		return out
	case []any:
		out := make([]any, len(s))
		for i, v := range s {
			out[i] = Shape(v)
		}
		return out
	}
	return schema
}
