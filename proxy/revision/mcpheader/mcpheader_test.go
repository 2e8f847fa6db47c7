package mcpheader

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
)

const schema = `{"type":"object","properties":{
	"region":{"type":"string","x-mcp-header":"Region"},
	"count":{"type":"integer","x-mcp-header":"Count"},
	"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry"}}},
	"query":{"type":"string"}}}`

func TestBindings(t *testing.T) {
	b, err := Bindings(json.RawMessage(schema))
	if err != nil || len(b) != 3 {
		t.Fatalf("Bindings = %v, %v; want three", b, err)
	}
	for _, bad := range []string{
		`{"properties":{"a":{"type":"number","x-mcp-header":"A"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":""}}}`,
		`{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`,
	} {
		if _, err := Bindings(json.RawMessage(bad)); err == nil {
			t.Errorf("Bindings(%s): no error", bad)
		}
	}
}

func TestHeadersAndCheck(t *testing.T) {
	b, _ := Bindings(json.RawMessage(schema))
	args := json.RawMessage(`{"region":"us-west1","count":42,"opts":{"dry":true},"query":"x"}`)
	h := http.Header{}
	for k, v := range Headers(b, args) {
		h.Set(k, v)
	}
	if h.Get("Mcp-Param-Region") != "us-west1" || h.Get("Mcp-Param-Count") != "42" || h.Get("Mcp-Param-Dry") != "true" {
		t.Fatalf("Headers = %v", h)
	}
	if err := Check(h, b, args); err != nil {
		t.Fatalf("Check of what Headers made: %v", err)
	}
	tests := []struct {
		name string
		edit func(h http.Header)
		args string
		ok   bool
	}{
		{"as made", func(http.Header) {}, string(args), true},
		{"another region", func(h http.Header) { h.Set("Mcp-Param-Region", "eu-west1") }, string(args), false},
		{"missing", func(h http.Header) { h.Del("Mcp-Param-Count") }, string(args), false},
		{"42.0 is 42", func(h http.Header) { h.Set("Mcp-Param-Count", "42.0") }, string(args), true},
		{"sent for an absent argument", func(http.Header) {}, `{"count":42,"opts":{"dry":true}}`, false},
		{"null is absent", func(h http.Header) { h.Del("Mcp-Param-Region") }, `{"region":null,"count":42,"opts":{"dry":true}}`, true},
		{"base64", func(h http.Header) { h.Set("Mcp-Param-Region", Encode("us-west1 ")) }, `{"region":"us-west1 ","count":42,"opts":{"dry":true}}`, true},
		{"bad base64", func(h http.Header) { h.Set("Mcp-Param-Region", "=?base64?***?=") }, string(args), false},
		{"twice", func(h http.Header) { h.Add("Mcp-Param-Region", "us-west1") }, string(args), false},
		{"an unknown header is not ours", func(h http.Header) { h.Set("Mcp-Param-Other", "x") }, string(args), true},
	}
	for _, tt := range tests {
		hh := h.Clone()
		tt.edit(hh)
		err := Check(hh, b, json.RawMessage(tt.args))
		if (err == nil) != tt.ok {
			t.Errorf("%s: Check = %v", tt.name, err)
		}
		if err != nil && !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: %v does not wrap ErrMismatch", tt.name, err)
		}
	}
}

func TestEncode(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		if got := Encode(in); got != want {
			t.Errorf("Encode(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"", "a", " x", "=?base64?QQ==?=", "\x00", "世界"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := Decode(Encode(s))
		if !ok || got != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", s, got, ok)
		}
		_, _ = Decode(s) // never panics
	})
}
