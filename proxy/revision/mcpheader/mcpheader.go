// Package mcpheader is SEP-2243's mirroring of tool arguments into HTTP
// headers (MCP 2026-07-28, Streamable HTTP): a property of a tool's
// inputSchema annotated `"x-mcp-header": "Region"` travels, besides the
// body, as the header Mcp-Param-Region. aqlguard is both ends of it: as a
// client of an HTTP server it must send the headers (Headers); as a
// server it must check that those a client sent say what the body says
// (Check), so that nothing routing on the header sees another call than
// the one the guard judged.
//
// The go-sdk implements the same rules, unexported.
package mcpheader

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// Prefix starts every parameter header's name.
const Prefix = "Mcp-Param-"

const (
	sentinelStart = "=?base64?"
	sentinelEnd   = "?="
)

// A Binding is one annotated property: its path of property names from
// the schema's root, and the header name after Prefix.
type Binding struct {
	Path   []string
	Header string
}

type property struct {
	Type       json.RawMessage     `json:"type"`
	Header     json.RawMessage     `json:"x-mcp-header"`
	Properties map[string]property `json:"properties"`
}

// Bindings reads the annotated properties of a tool's inputSchema. An
// annotation the revision forbids (on a type other than string, integer
// or boolean, a name that is not an HTTP token, two names equal but for
// case) is an error: such a tool is not to be offered over HTTP.
func Bindings(inputSchema json.RawMessage) ([]Binding, error) {
	if len(inputSchema) == 0 {
		return nil, nil
	}
	var root property
	if err := json.Unmarshal(inputSchema, &root); err != nil {
		return nil, nil // not an object schema: nothing annotated
	}
	var out []Binding
	seen := map[string]bool{}
	var walk func(props map[string]property, prefix []string) error
	walk = func(props map[string]property, prefix []string) error {
		for name, p := range props {
			path := append(append([]string(nil), prefix...), name)
			if p.Header != nil {
				var header, typ string
				if json.Unmarshal(p.Header, &header) != nil || header == "" {
					return fmt.Errorf("property %q: x-mcp-header must be a non-empty string", strings.Join(path, "."))
				}
				if !isToken(header) {
					return fmt.Errorf("property %q: x-mcp-header %q is not an HTTP header name", strings.Join(path, "."), header)
				}
				_ = json.Unmarshal(p.Type, &typ)
				if typ != "string" && typ != "integer" && typ != "boolean" {
					return fmt.Errorf("property %q: x-mcp-header applies only to string, integer and boolean properties", strings.Join(path, "."))
				}
				lower := strings.ToLower(header)
				if seen[lower] {
					return fmt.Errorf("property %q: x-mcp-header %q is used twice", strings.Join(path, "."), header)
				}
				seen[lower] = true
				out = append(out, Binding{Path: path, Header: header})
			}
			if err := walk(p.Properties, path); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root.Properties, nil); err != nil {
		return nil, err
	}
	return out, nil
}

func isToken(s string) bool {
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", c):
		default:
			return false
		}
	}
	return s != ""
}

// value reads the argument at path: ok is false when it is absent or
// null.
func value(arguments json.RawMessage, path []string) (json.RawMessage, bool) {
	cur := arguments
	for _, name := range path {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		v, ok := obj[name]
		if !ok {
			return nil, false
		}
		cur = v
	}
	return cur, string(cur) != "null"
}

// text is an argument as the header carries it: a string as it is, an
// integer in decimal, a boolean as true or false. Anything else (a
// fraction, an integer beyond 2^53, an object) has no header form.
func text(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53-1 {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

// Encode is a header value as SEP-2243 writes it: as it is when it is
// plain visible ASCII, else base64 between the sentinels (as is a plain
// value that looks like one).
func Encode(s string) string {
	plain := s == "" || (s[0] != ' ' && s[0] != '\t' && s[len(s)-1] != ' ' && s[len(s)-1] != '\t')
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			plain = false
		}
	}
	if strings.HasPrefix(s, sentinelStart) && strings.HasSuffix(s, sentinelEnd) {
		plain = false
	}
	if plain {
		return s
	}
	return sentinelStart + base64.StdEncoding.EncodeToString([]byte(s)) + sentinelEnd
}

// Decode undoes Encode; ok is false for a sentinel around bad base64.
func Decode(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, sentinelStart); ok {
		if inner, ok = strings.CutSuffix(inner, sentinelEnd); ok {
			b, err := base64.StdEncoding.DecodeString(inner)
			if err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return v, true
}

// Headers are the Mcp-Param-* headers a call with arguments carries.
func Headers(bindings []Binding, arguments json.RawMessage) map[string]string {
	out := map[string]string{}
	for _, b := range bindings {
		raw, ok := value(arguments, b.Path)
		if !ok {
			continue
		}
		if s, ok := text(raw); ok {
			out[Prefix+b.Header] = Encode(s)
		}
	}
	return out
}

// ErrMismatch is what Check's errors wrap: the request is to be refused
// with HeaderMismatch (-32020) and HTTP 400.
var ErrMismatch = errors.New("header mismatch")

// Check holds the Mcp-Param-* headers of h to the arguments: each
// annotated argument that is present (and not null) needs its header,
// saying the same value (integers compared as numbers); one that is
// absent must have none. Headers no binding names are not ours to judge.
func Check(h http.Header, bindings []Binding, arguments json.RawMessage) error {
	for _, b := range bindings {
		name := Prefix + b.Header
		values := h.Values(name)
		raw, present := value(arguments, b.Path)
		switch {
		case !present && len(values) > 0:
			return fmt.Errorf("%w: %s is sent, but the argument %s is not", ErrMismatch, name, strings.Join(b.Path, "."))
		case !present:
			continue
		case len(values) == 0:
			return fmt.Errorf("%w: the argument %s needs the header %s", ErrMismatch, strings.Join(b.Path, "."), name)
		case len(values) > 1:
			return fmt.Errorf("%w: %s is sent more than once", ErrMismatch, name)
		}
		if strings.ContainsFunc(values[0], func(c rune) bool { return c < 0x20 && c != '\t' || c == 0x7f }) {
			return fmt.Errorf("%w: %s holds characters a header value cannot", ErrMismatch, name)
		}
		got, ok := Decode(values[0])
		if !ok {
			return fmt.Errorf("%w: %s is not valid base64", ErrMismatch, name)
		}
		want, ok := text(raw)
		if !ok {
			return fmt.Errorf("%w: the argument %s has no header form", ErrMismatch, strings.Join(b.Path, "."))
		}
		if got != want && !sameInteger(got, raw) {
			return fmt.Errorf("%w: %s does not say what the argument %s says", ErrMismatch, name, strings.Join(b.Path, "."))
		}
	}
	return nil
}

// sameInteger compares a header's number with an integer argument as
// numbers ("42.0" and 42 are one value).
func sameInteger(header string, raw json.RawMessage) bool {
	var body float64
	if json.Unmarshal(raw, &body) != nil || body != math.Trunc(body) {
		return false
	}
	h, err := strconv.ParseFloat(strings.TrimSpace(header), 64)
	return err == nil && h == body
}
