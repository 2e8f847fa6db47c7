package aql

import (
	"encoding/json"
	"strings"
	"testing"
)

// toolShape is a tool's input as the catalog reads it: run(command,
// count, tags, options{depth, mode}, opts{...} closed, data free-form,
// items of closed objects), closed at the top level.
func toolShape() *Shape {
	str, integer := &Shape{Types: []string{"string"}}, &Shape{Types: []string{"integer"}}
	return &Shape{Closed: true, Required: map[string]bool{"command": true}, Properties: map[string]*Shape{
		"command": str,
		"count":   integer,
		"ratio":   {Types: []string{"number"}},
		"maybe":   {Types: []string{"string", "null"}},
		"tags":    {Types: []string{"array"}, Items: str},
		"options": {Types: []string{"object"}, Properties: map[string]*Shape{"depth": integer, "mode": str}},
		"opts":    {Types: []string{"object"}, Closed: true, Properties: map[string]*Shape{"force": {Types: []string{"boolean"}}}},
		"data":    {Types: []string{"object"}},
		"edits": {Types: []string{"array"}, Items: &Shape{Types: []string{"object"}, Closed: true,
			Required:   map[string]bool{"old": true},
			Properties: map[string]*Shape{"old": str, "new": str}}},
		"token": {Types: []string{"string"}, Secret: true},
	}}
}

func TestCheckArguments(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		code    Code
		details map[string]any
	}{
		{name: "declared", args: `{"command":"ls","count":3,"tags":["a"],"options":{"depth":1,"extra":true},"data":{"anything":[1]}}`},
		{name: "none", args: `{}`},
		{name: "integer written 2.0", args: `{"command":"ls","count":2.0}`},
		{name: "number takes an integer", args: `{"command":"ls","ratio":2}`},
		{name: "null for an argument not required", args: `{"command":"ls","count":null,"options":{"depth":null}}`},
		{name: "null where declared", args: `{"command":"ls","maybe":null}`},
		// The red team of issue 29, item 2.
		{name: "extra path", args: `{"command":"ls","path":"/etc/shadow"}`, code: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"path"}, "operation": "run"}},
		{name: "a Cyrillic a in path", args: `{"command":"ls","p\u0430th":"/x"}`, code: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"p\u0430th"}}},
		{name: "a lookalike of a declared name", args: `{"comm\u0430nd":"rm -rf /"}`, code: CodeUnknownParam},
		{name: "the name in another case", args: `{"Command":"ls"}`, code: CodeUnknownParam},
		{name: "all undeclared named at once", args: `{"command":"ls","b":1,"a":2}`, code: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"a", "b"}}},
		{name: "undeclared before a wrong type", args: `{"count":"5","zz":1}`, code: CodeUnknownParam},
		{name: "a string for an integer", args: `{"command":"ls","count":"5"}`, code: CodeInvalidType,
			details: map[string]any{"param_name": "count", "expected_type": "integer", "actual_type": "string", "value": "5"}},
		{name: "a fraction for an integer", args: `{"command":"ls","count":1.5}`, code: CodeInvalidType,
			details: map[string]any{"actual_type": "number"}},
		{name: "null for a required argument", args: `{"command":null}`, code: CodeInvalidType,
			details: map[string]any{"param_name": "command", "actual_type": "null"}},
		{name: "an item's type", args: `{"command":"ls","tags":["a",1]}`, code: CodeInvalidType,
			details: map[string]any{"param_name": "tags[1]"}},
		{name: "a nested member's type", args: `{"command":"ls","options":{"depth":"deep"}}`, code: CodeInvalidType,
			details: map[string]any{"param_name": "options.depth"}},
		{name: "a member of a closed object", args: `{"command":"ls","opts":{"force":true,"recursive":true}}`, code: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"opts.recursive"}, "valid_params": []string{"opts.force"}, "object": "opts"}},
		{name: "a member of an item", args: `{"command":"ls","edits":[{"old":"a","new":"b"},{"old":"a","mode":"x"}]}`, code: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"edits[1].mode"}}},
		{name: "an object for a string", args: `{"command":{"argv":["rm"]}}`, code: CodeInvalidType,
			details: map[string]any{"expected_type": "string", "actual_type": "object"}},
		{name: "a secret is not echoed", args: `{"command":"ls","token":12345}`, code: CodeInvalidType,
			details: map[string]any{"value": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, perr := ParseArguments([]byte(tt.args), DefaultLimits())
			if perr != nil {
				t.Fatal(perr)
			}
			err := CheckArguments("run", toolShape(), args)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || err.Code != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			checkDetails(t, err, tt.details)
		})
	}
}

// TestCheckArgumentsOpen: a top level that is not closed (the server's
// allow_undeclared_arguments) lets undeclared arguments through, and
// still checks the declared ones.
func TestCheckArgumentsOpen(t *testing.T) {
	in := toolShape()
	in.Closed = false
	args := map[string]any{"command": "ls", "path": "/tmp", "free": map[string]any{"x": 1}}
	if err := CheckArguments("run", in, args); err != nil {
		t.Fatalf("refused: %v", err)
	}
	args["count"] = "5"
	if err := CheckArguments("run", in, args); err == nil || err.Code != CodeInvalidType {
		t.Fatalf("a declared argument's type is not checked: %v", err)
	}
	if err := CheckArguments("run", nil, args); err != nil {
		t.Fatalf("a nil input checks nothing: %v", err)
	}
	if err := CheckArguments("run", &Shape{Closed: true}, map[string]any{"x": 1}); err == nil ||
		!strings.Contains(err.Message, "'run': x") || len(err.Details["valid_params"].([]string)) != 0 {
		t.Fatalf("a tool that declares nothing: %v", err)
	}
}

// TestValidateChecksInside: the MCP-AQL endpoints check what a schema
// declares below a parameter as transparent mode does, and a server
// that allows undeclared arguments gets them kept.
func TestValidateChecksInside(t *testing.T) {
	in := toolShape()
	defs := []*Param{
		{Name: "options", Types: []string{"object"}, Shape: in.Properties["options"]},
		{Name: "opts", Types: []string{"object"}, Shape: in.Properties["opts"]},
		{Name: "edits", Types: []string{"array"}, Shape: in.Properties["edits"]},
	}
	for raw, want := range map[string]Code{
		`{"options":{"depth":1,"free":true}}`:    "",
		`{"options":{"depth":"1"}}`:              CodeInvalidType,
		`{"opts":{"force":true,"again":true}}`:   CodeUnknownParam,
		`{"edits":[{"old":"a"},{"old":1}]}`:      CodeInvalidType,
		`{"edits":[{"old":"a","more":"b"}]}`:     CodeUnknownParam,
		`{"options":{"depth":1},"undeclared":1}`: CodeUnknownParam,
	} {
		var params map[string]any
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&params); err != nil {
			t.Fatal(err)
		}
		_, err := Validate("op", defs, params)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: refused: %v", raw, err)
		case want != "" && (err == nil || err.Code != want):
			t.Errorf("%s: %v, want %s", raw, err, want)
		}
	}
	out, err := ValidateAllowingUnknown("op", defs, map[string]any{"options": map[string]any{}, "undeclared": json.Number("1")})
	if err != nil || out["undeclared"] != json.Number("1") {
		t.Errorf("allowing unknown: %v %v", out, err)
	}
	if _, err := ValidateAllowingUnknown("op", defs, map[string]any{"opts": map[string]any{"again": true}}); err == nil {
		t.Error("allowing unknown arguments opened a closed object below")
	}
}

func TestQuoted(t *testing.T) {
	for in, want := range map[string]string{
		"path":                   "path",
		"file_path":              "file_path",
		"p\u0430th":              `p\u0430th`,
		"a b":                    `a b`,
		"it's":                   `it\'s`,
		"x\u200by":               `x\u200by`,
		"\x00":                   `\x00`,
		strings.Repeat("a", 64):  strings.Repeat("a", 64),
		strings.Repeat("a", 100): strings.Repeat("a", 64) + "...",
		strings.Repeat("é", 70):  strings.Repeat(`\u00e9`, 64) + "...",
	} {
		if got := Quoted(in); got != want {
			t.Errorf("Quoted(%q) = %q, want %q", in, got, want)
		}
	}
	if got := QuotedList([]string{"a", "b", "c"}, 2); got != "a, b and 1 more" {
		t.Errorf("QuotedList = %q", got)
	}
}
