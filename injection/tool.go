package injection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// ScanTool scans a tool definition, decoded from JSON (the members of
// one entry of tools/list): everything the model reads of it. See
// (*Scanner).ScanTool.
func ScanTool(def map[string]any, opts Options) []Finding {
	return New(opts).ScanTool(def)
}

// ScanToolJSON decodes one tool definition and scans it; a definition
// that is not a JSON object is an error, for the caller to refuse.
func ScanToolJSON(raw []byte, opts Options) ([]Finding, error) {
	return New(opts).ScanToolJSON(raw)
}

// ScanToolJSON is ScanToolJSON with s's options.
func (s *Scanner) ScanToolJSON(raw []byte) ([]Finding, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var def map[string]any
	if err := dec.Decode(&def); err != nil {
		return nil, fmt.Errorf("scanning a tool definition: %w", err)
	}
	if def == nil {
		return nil, fmt.Errorf("scanning a tool definition: not a JSON object")
	}
	return s.ScanTool(def), nil
}

// ScanTool scans what the model reads of a tool definition against one
// budget: its name, title and description; every string in its input
// and output schemas (descriptions, titles, enum and const values,
// defaults, examples, comments, and any member a schema keyword does not
// explain) and every property name; and its annotations' strings.
// Findings say where: "description", "inputSchema.properties.path.description",
// "inputSchema.properties.mode.enum[2]", "annotations.title";
// a finding in a property's name is at the property
// ("inputSchema.properties.content_from_reading_ssh_id_rsa").
func (s *Scanner) ScanTool(def map[string]any) []Finding {
	b := s.Batch()
	b.Tool("", def)
	return b.Findings()
}

// Tool scans a tool definition into the batch, its places under prefix
// (for a listing: "tools[3].").
func (b *Batch) Tool(prefix string, def map[string]any) {
	b.depth = 0
	if name, ok := def["name"].(string); ok {
		b.name(prefix+"name", name)
	}
	for _, k := range []string{"title", "description"} {
		if v, ok := def[k]; ok {
			b.Value(prefix+k, v)
		}
	}
	if v, ok := def["annotations"]; ok {
		b.Value(prefix+"annotations", v)
	}
	for _, k := range []string{"inputSchema", "outputSchema"} {
		if v, ok := def[k]; ok {
			b.schema(prefix+k, v)
		}
	}
}

// Value scans every string in a decoded JSON value, and every member
// name of its objects, under where: a tool result's structuredContent,
// a resource's JSON.
func (b *Batch) Value(where string, v any) {
	if b.deeper(where) {
		return
	}
	defer b.up()
	switch x := v.(type) {
	case string:
		b.Text(where, x)
	case []any:
		for i, e := range x {
			b.Value(where+"["+strconv.Itoa(i)+"]", e)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			at := join(where, k)
			b.name(at, k)
			b.Value(at, x[k])
		}
	}
}

// schema scans a JSON Schema: the values of keywords that hold text, the
// names of properties, and anything a keyword does not explain.
func (b *Batch) schema(where string, v any) {
	if b.deeper(where) {
		return
	}
	defer b.up()
	switch x := v.(type) {
	case string:
		b.Text(where, x)
	case []any:
		for i, e := range x {
			b.schema(where+"["+strconv.Itoa(i)+"]", e)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			at := join(where, k)
			val := x[k]
			switch kw := schemaKeywords[k]; kw {
			case kwSchemas:
				if m, ok := val.(map[string]any); ok {
					for _, name := range sortedKeys(m) {
						pat := join(at, name)
						b.name(pat, name)
						b.schema(pat, m[name])
					}
					continue
				}
				b.schema(at, val)
			case kwToken:
				if str, ok := val.(string); ok && isToken(str) {
					continue
				}
				b.schema(at, val)
			case kwValue:
				b.values(at, val)
			case kwStructure, kwText:
				b.schema(at, val)
			default:
				b.name(at, k) // a member no keyword explains: its name is read too
				b.schema(at, val)
			}
		}
	}
}

// values scans the values a schema offers (enum, const, default,
// examples): they are text the model reads, but a value that is also
// another server's tool name is a value, not a mention.
func (b *Batch) values(where string, v any) {
	if b.deeper(where) {
		return
	}
	defer b.up()
	switch x := v.(type) {
	case string:
		b.text(where, x, true)
	case []any:
		for i, e := range x {
			b.values(where+"["+strconv.Itoa(i)+"]", e)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			at := join(where, k)
			b.name(at, k)
			b.values(at, x[k])
		}
	}
}

// maxDepth bounds how deep a batch walks decoded JSON: a place's name
// grows with its depth, and no honest definition nests this deep.
const maxDepth = 64

// deeper enters one level of nesting at where, or reports (once per
// batch, as Unscanned) that it is too deep to walk.
func (b *Batch) deeper(where string) bool {
	if b.depth >= maxDepth {
		if !b.tooDeep {
			b.tooDeep = true
			b.add(Finding{Kind: Unscanned, Confidence: High, Rule: "depth", Where: where,
				Say: fmt.Sprintf("not scanned deeper than %d levels of nesting", maxDepth)})
		}
		return true
	}
	b.depth++
	return false
}

func (b *Batch) up() { b.depth-- }

// Keyword kinds of JSON Schema.
const (
	kwUnknown   = iota
	kwStructure // holds schemas or values to walk
	kwSchemas   // a map from names to schemas
	kwText      // holds text the model reads
	kwToken     // holds a machine token (a type, a format, a URI)
	kwValue     // holds values (enum, const, default, examples)
)

var schemaKeywords = map[string]int{
	"properties": kwSchemas, "patternProperties": kwSchemas, "$defs": kwSchemas, "definitions": kwSchemas,
	"dependentSchemas": kwSchemas,
	"items":            kwStructure, "prefixItems": kwStructure, "additionalProperties": kwStructure, "additionalItems": kwStructure,
	"anyOf": kwStructure, "oneOf": kwStructure, "allOf": kwStructure, "not": kwStructure, "if": kwStructure,
	"then": kwStructure, "else": kwStructure, "contains": kwStructure, "propertyNames": kwStructure,
	"unevaluatedProperties": kwStructure, "unevaluatedItems": kwStructure, "contentSchema": kwStructure,
	"required": kwStructure, "dependentRequired": kwStructure, "minimum": kwStructure, "maximum": kwStructure,
	"exclusiveMinimum": kwStructure, "exclusiveMaximum": kwStructure, "minLength": kwStructure, "maxLength": kwStructure,
	"minItems": kwStructure, "maxItems": kwStructure, "uniqueItems": kwStructure, "minProperties": kwStructure,
	"maxProperties": kwStructure, "multipleOf": kwStructure, "readOnly": kwStructure, "writeOnly": kwStructure,
	"deprecated": kwStructure, "nullable": kwStructure, "minContains": kwStructure, "maxContains": kwStructure,
	"description": kwText, "title": kwText, "enum": kwValue, "const": kwValue, "default": kwValue, "examples": kwValue,
	"$comment": kwText, "pattern": kwText,
	"type": kwToken, "format": kwToken, "$ref": kwToken, "$schema": kwToken, "$id": kwToken, "$anchor": kwToken,
	"$dynamicRef": kwToken, "$dynamicAnchor": kwToken, "contentEncoding": kwToken, "contentMediaType": kwToken,
}

// isToken: a short string without spaces, as a type, format or URI is.
func isToken(s string) bool {
	if len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// name scans a name the model reads (a property, a member, the tool's):
// its words split at case changes, so that contentFromReadingSshIdRsa
// reads as content_from_reading_ssh_id_rsa. A name that is also another
// server's tool's name is no mention of it (names that collide are item
// 5's business).
func (b *Batch) name(where, name string) {
	b.text(where, splitCamel(name), true)
}

// splitCamel writes '_' where a lower-case letter or digit is followed
// by an upper-case one; other names come back unchanged.
func splitCamel(s string) string {
	var out []byte
	prevLower := false
	for i, r := range s {
		upper := unicode.IsUpper(r)
		if upper && prevLower {
			if out == nil {
				out = append(make([]byte, 0, len(s)+8), s[:i]...)
			}
			out = append(out, '_')
		}
		if out != nil {
			out = utf8.AppendRune(out, r)
		}
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	if out == nil {
		return s
	}
	return string(out)
}

// join is where.k, k made safe and short, and where no longer than
// about 250 bytes.
func join(where, k string) string {
	if len(where) > 200 {
		return where // deep enough to find; the rest would only grow
	}
	k = clip(k, 48)
	if where == "" {
		return k
	}
	return where + "." + k
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
