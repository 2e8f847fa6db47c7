package aql

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Param is one parameter definition: the ParameterInfo of introspection
// and, at once, the rule validation enforces, so the two cannot drift
// (ADR-004).
type Param struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Required bool   `json:"required"`

	Description string          `json:"description,omitempty"`
	Default     json.RawMessage `json:"default,omitempty"`
	Enum        []any           `json:"enum,omitempty"`
	Minimum     *float64        `json:"minimum,omitempty"`
	Maximum     *float64        `json:"maximum,omitempty"`
	MinLength   *int            `json:"minLength,omitempty"`
	MaxLength   *int            `json:"maxLength,omitempty"`
	Pattern     string          `json:"pattern,omitempty"`
	Format      string          `json:"format,omitempty"`
	Items       map[string]any  `json:"items,omitempty"`
	Sensitive   bool            `json:"sensitive,omitempty"`
	// Aliases are other accepted spellings. Introspection's ParameterInfo
	// allows no member for them (introspection-response.schema.json), so
	// Compile names them in the description: nothing accepted is
	// undocumented.
	Aliases []string `json:"-"`

	// Types are the accepted JSON types ("integer", "string", ...);
	// empty accepts any. Type is their introspection rendering.
	Types []string `json:"-"`
	// ItemTypes are the accepted JSON types of array elements.
	ItemTypes []string `json:"-"`
	// Consumed marks parameters aqlguard handles itself (field selection)
	// and does not forward downstream.
	Consumed bool `json:"-"`
	// MapTo is the downstream spelling when it differs from Name (a
	// camelCase argument exposed under its snake_case name, spec 4.3).
	MapTo string `json:"-"`
	// Shape is what the tool's schema says of the value (catalog
	// deriveShape): validation checks inside it (an array's items, an
	// object's members) by it; nil: Types and ItemTypes only.
	Shape *Shape `json:"-"`

	re *regexp.Regexp
}

// ServerName is the parameter as the downstream server spells it.
func (p *Param) ServerName() string {
	if p.MapTo != "" {
		return p.MapTo
	}
	return p.Name
}

// Compile prepares a Param for validation. A pattern that Go's RE2 cannot
// express (look-arounds, back-references) is returned as an error so the
// caller can log that the downstream server alone enforces it.
func (p *Param) Compile() error {
	if p.Type == "" {
		p.Type = renderTypes(p.Types)
	}
	if len(p.Aliases) > 0 {
		note := "Also accepted as " + strings.Join(p.Aliases, ", ") + "."
		if !strings.Contains(p.Description, note) {
			p.Description = strings.TrimSpace(strings.TrimSpace(p.Description) + " " + note)
		}
	}
	if p.Pattern == "" {
		return nil
	}
	re, err := regexp.Compile(p.Pattern)
	if err != nil {
		return fmt.Errorf("parameter %q: pattern %q is not RE2: %w", p.Name, p.Pattern, err)
	}
	p.re = re
	return nil
}

func renderTypes(ts []string) string {
	if len(ts) == 0 {
		return "any"
	}
	return strings.Join(ts, " | ")
}

// Validate checks params against defs in the order operations.txt 5.4
// prescribes (required, types, unknown, constraints) and then applies
// defaults, so a typo is reported before any default hides it. It returns
// a new map; params is not modified.
func Validate(op string, defs []*Param, params map[string]any) (map[string]any, *Error) {
	return validate(op, defs, params, false)
}

// ValidateAllowingUnknown is Validate for a tool whose server's entry
// allows undeclared arguments (allow_undeclared_arguments): a parameter
// defs do not define is kept as sent, unchecked; everything else is
// checked as Validate checks it.
func ValidateAllowingUnknown(op string, defs []*Param, params map[string]any) (map[string]any, *Error) {
	return validate(op, defs, params, true)
}

func validate(op string, defs []*Param, params map[string]any, allowUnknown bool) (map[string]any, *Error) {
	byName := make(map[string]*Param, len(defs))
	alias := map[string]string{}
	for _, d := range defs {
		byName[d.Name] = d
		for _, a := range d.Aliases {
			alias[a] = d.Name
		}
	}
	out := make(map[string]any, len(params)+2)
	for k, v := range params {
		if canon, ok := alias[k]; ok {
			if _, both := params[canon]; both {
				continue // the canonical spelling wins
			}
			k = canon
		}
		out[k] = v
	}
	for _, d := range defs {
		if v, ok := out[d.Name]; d.Required && (!ok || v == nil) {
			return nil, MissingParam(op, d)
		}
	}
	for _, d := range defs {
		if v, ok := out[d.Name]; ok {
			if err := d.checkType(op, v); err != nil {
				return nil, err
			}
		}
	}
	var unknown []string
	for _, k := range sortedKeys(out) {
		if _, ok := byName[k]; !ok && !allowUnknown {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		valid := make([]string, 0, len(defs))
		for _, d := range defs {
			valid = append(valid, d.Name)
		}
		return nil, UnknownParams(op, unknown, valid)
	}
	for _, d := range defs {
		if v, ok := out[d.Name]; ok && d.Shape != nil {
			if err := undeclaredBelow(op, d.Name, d.Shape, v); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range defs {
		if v, ok := out[d.Name]; ok && v != nil {
			if err := d.checkConstraints(v); err != nil {
				return nil, err
			}
		}
	}
	for _, d := range defs {
		if _, ok := out[d.Name]; !ok && len(d.Default) > 0 {
			dec := json.NewDecoder(strings.NewReader(string(d.Default)))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				out[d.Name] = v
			}
		}
	}
	return out, nil
}

func (p *Param) checkType(op string, v any) *Error {
	name := p.Name
	if err := typeCheck(name, p.Types, v, p.Sensitive); err != nil {
		return err
	}
	if p.Shape != nil {
		return p.Shape.inside(op, name, v, p.Sensitive)
	}
	if arr, ok := v.([]any); ok && len(p.ItemTypes) > 0 {
		for i, e := range arr {
			if err := typeCheck(indexPath(name, i), p.ItemTypes, e, p.Sensitive); err != nil {
				return err
			}
		}
	}
	return nil
}

func typeCheck(name string, types []string, v any, sensitive bool) *Error {
	if len(types) == 0 {
		return nil
	}
	actual := jsonType(v)
	for _, t := range types {
		if t == actual || t == "number" && actual == "integer" {
			return nil
		}
	}
	var echo any
	if !sensitive && (actual == "string" || actual == "integer" || actual == "number" || actual == "boolean") {
		if s, ok := v.(string); !ok || len(s) <= 64 {
			echo = v
		}
	}
	return InvalidType(name, renderTypes(types), actual, echo)
}

func (p *Param) checkConstraints(v any) *Error {
	if len(p.Enum) > 0 && !inEnum(p.Enum, v) {
		return &Error{Code: CodeInvalidEnum,
			Message: fmt.Sprintf("Parameter '%s' must be one of the allowed values", p.Name),
			Details: map[string]any{"param_name": p.Name, "allowed_values": p.Enum}}
	}
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err == nil && (p.Minimum != nil && f < *p.Minimum || p.Maximum != nil && f > *p.Maximum) {
			d := map[string]any{"param_name": p.Name, "value": n}
			if p.Minimum != nil {
				d["minimum"] = *p.Minimum
			}
			if p.Maximum != nil {
				d["maximum"] = *p.Maximum
			}
			return &Error{Code: CodeOutOfRange, Details: d,
				Message: fmt.Sprintf("Parameter '%s' is out of range%s", p.Name, rangeText(p.Minimum, p.Maximum))}
		}
	}
	if s, ok := v.(string); ok {
		n := utf8.RuneCountInString(s)
		if p.MinLength != nil && n < *p.MinLength || p.MaxLength != nil && n > *p.MaxLength {
			d := map[string]any{"param_name": p.Name, "length": n}
			if p.MinLength != nil {
				d["minLength"] = *p.MinLength
			}
			if p.MaxLength != nil {
				d["maxLength"] = *p.MaxLength
			}
			return &Error{Code: CodeOutOfRange, Details: d,
				Message: fmt.Sprintf("Parameter '%s' has length %d, outside the allowed length", p.Name, n)}
		}
		if p.re != nil && !p.re.MatchString(s) {
			return &Error{Code: CodePatternMismatch,
				Message: fmt.Sprintf("Parameter '%s' does not match the pattern '%s'", p.Name, p.Pattern),
				Details: map[string]any{"param_name": p.Name, "pattern": p.Pattern}}
		}
	}
	return nil
}

func rangeText(lo, hi *float64) string {
	switch {
	case lo != nil && hi != nil:
		return fmt.Sprintf(" [%v, %v]", *lo, *hi)
	case lo != nil:
		return fmt.Sprintf(" (minimum %v)", *lo)
	case hi != nil:
		return fmt.Sprintf(" (maximum %v)", *hi)
	}
	return ""
}

// inEnum compares JSON values; numbers compare by value so 1 and 1.0 match.
func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if jsonEqual(e, v) {
			return true
		}
	}
	return false
}

func jsonEqual(a, b any) bool {
	fa, aNum := asFloat(a)
	fb, bNum := asFloat(b)
	if aNum || bNum {
		return aNum && bNum && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func asFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return math.NaN(), false
}
