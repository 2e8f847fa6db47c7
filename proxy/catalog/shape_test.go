package catalog

import (
	"encoding/json"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/aql"
)

// Input schemas as the servers of the e2e tests send them (tools/list of
// @modelcontextprotocol/server-filesystem 2026.8.31 and server-everything,
// go-sdk's conformance everything-server, internal/fixture/testserver).
const (
	fsEditFile = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["path","edits"],
		"properties":{"dryRun":{"default":false,"type":"boolean"},"path":{"type":"string"},
		"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],
			"properties":{"newText":{"type":"string"},"oldText":{"type":"string"}}}}}}`
	fsReadFile = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["path"],
		"properties":{"head":{"type":"number"},"path":{"type":"string"},"tail":{"type":"number"}}}`
	fsListAllowed  = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{}}`
	goEverything   = `{"type":"object"}`
	goElicitation  = `{"type":"object","additionalProperties":false,"required":["message"],"properties":{"message":{"type":"string"}}}`
	goSchema202012 = `{"$defs":{"address":{"properties":{"city":{"type":"string"},"street":{"type":"string"}},"type":"object"}},
		"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,
		"allOf":[{"anyOf":[{"required":["phone"]},{"required":["email"]}]}],"else":{"required":["email"]},
		"if":{"properties":{"contactMethod":{"const":"phone"}},"required":["contactMethod"]},
		"properties":{"address":{"$ref":"#/$defs/address"},"contactMethod":{"enum":["phone","email"],"type":"string"},
		"email":{"type":"string"},"name":{"type":"string"},"phone":{"type":"string"}},"then":{"required":["phone"]},"type":"object"}`
	tsGetItem    = `{"type":"object","required":["id"],"properties":{"id":{"type":"string","pattern":"^[a-z0-9-]+$"}}}`
	tsListItems  = `{"type":"object","properties":{"limit":{"default":10,"maximum":100,"minimum":1,"type":"integer"},"status":{"enum":["active","archived"],"type":"string"}}}`
	tsUpdateNote = `{"type":"object","required":["id","input"],"properties":{"id":{"type":"string"},"input":{"type":"object"}}}`
	tsRunCommand = `{"type":"object","required":["command"],"properties":{"command":{"type":"string"},"cwd":{"type":"string"}}}`
	evGetSum     = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","required":["a","b"],"properties":{"a":{"type":"number"},"b":{"type":"number"}}}`
	lookAround   = `{"type":"object","properties":{"name":{"type":"string","pattern":"^(?!admin).*$","format":"hostname","maxLength":3}}}`
	nullable     = `{"type":"object","properties":{"n":{"type":"integer","nullable":true},"s":{"type":["string","null"]},"o":{"anyOf":[{"type":"string"},{"type":"integer"}]}}}`
	closedByNot  = `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"not":{}}}}}`
	patterned    = `{"type":"object","properties":{"o":{"type":"object","patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false}}}`
	freeForm     = `{"type":"object","additionalProperties":true}`
)

// TestInputShapes: every honest call of the real servers' tools passes,
// what they do not declare is refused, and what aqlguard does not check
// (patterns, formats, bounds, enums, $ref, conditionals) refuses nothing.
func TestInputShapes(t *testing.T) {
	tests := []struct {
		name, schema, args string
		code               aql.Code
		allow              bool
	}{
		{name: "fs edit_file", schema: fsEditFile, args: `{"path":"/r/a.txt","edits":[{"oldText":"a","newText":"b"}],"dryRun":true}`},
		{name: "fs edit_file, an edit with a member more", schema: fsEditFile, args: `{"path":"/r/a","edits":[{"oldText":"a","newText":"b","x":1}]}`},
		{name: "fs edit_file, edits as a string", schema: fsEditFile, args: `{"path":"/r/a","edits":"a->b"}`, code: aql.CodeInvalidType},
		{name: "fs edit_file, an edit's text a number", schema: fsEditFile, args: `{"path":"/r/a","edits":[{"oldText":1,"newText":"b"}]}`, code: aql.CodeInvalidType},
		{name: "fs read_file", schema: fsReadFile, args: `{"path":"/r/a","head":10}`},
		{name: "fs read_file, head as text", schema: fsReadFile, args: `{"path":"/r/a","head":"10"}`, code: aql.CodeInvalidType},
		{name: "fs read_file, head null", schema: fsReadFile, args: `{"path":"/r/a","head":null}`},
		{name: "fs read_file, an extra path", schema: fsReadFile, args: `{"path":"/r/a","paths":["/etc/shadow"]}`, code: aql.CodeUnknownParam},
		{name: "fs list_allowed_directories", schema: fsListAllowed, args: `{}`},
		{name: "fs list_allowed_directories, anything", schema: fsListAllowed, args: `{"path":"/"}`, code: aql.CodeUnknownParam},
		{name: "go-sdk tool without params", schema: goEverything, args: `{}`},
		{name: "go-sdk tool without params, an argument", schema: goEverything, args: `{"x":1}`, code: aql.CodeUnknownParam},
		{name: "go-sdk tool without params, allowed", schema: goEverything, args: `{"x":1}`, allow: true},
		{name: "go-sdk test_elicitation", schema: goElicitation, args: `{"message":"hi"}`},
		{name: "go-sdk 2020-12 tool", schema: goSchema202012, args: `{"name":"a","contactMethod":"phone","phone":"1","address":{"city":"x","zip":1}}`},
		{name: "go-sdk 2020-12 tool, an enum aqlguard leaves", schema: goSchema202012, args: `{"contactMethod":"fax"}`},
		{name: "go-sdk 2020-12 tool, undeclared", schema: goSchema202012, args: `{"name":"a","fax":"1"}`, code: aql.CodeUnknownParam},
		{name: "ts get_item, a pattern aqlguard leaves", schema: tsGetItem, args: `{"id":"Not An Id"}`},
		{name: "ts list_items", schema: tsListItems, args: `{"limit":1000,"status":"gone"}`},
		{name: "ts list_items, a count as text", schema: tsListItems, args: `{"limit":"5"}`, code: aql.CodeInvalidType},
		{name: "ts update_note, a free-form object", schema: tsUpdateNote, args: `{"id":"n1","input":{"title":"t","anything":[1,{"x":null}]}}`},
		{name: "ts run_command", schema: tsRunCommand, args: `{"command":"ls","cwd":"/tmp"}`},
		{name: "ts run_command, an extra path", schema: tsRunCommand, args: `{"command":"ls","path":"/etc"}`, code: aql.CodeUnknownParam},
		{name: "ts run_command, an extra path, allowed", schema: tsRunCommand, args: `{"command":"ls","path":"/etc"}`, allow: true},
		{name: "ts run_command, an allowed extra does not open a type", schema: tsRunCommand, args: `{"command":["rm"],"path":"/etc"}`, allow: true, code: aql.CodeInvalidType},
		{name: "everything get-sum", schema: evGetSum, args: `{"a":1.5,"b":2}`},
		{name: "a look-around, a format and a bound aqlguard leaves", schema: lookAround, args: `{"name":"administrator"}`},
		{name: "nullable", schema: nullable, args: `{"n":null,"s":null,"o":3}`},
		{name: "a union's types", schema: nullable, args: `{"o":true}`, code: aql.CodeInvalidType},
		{name: "closed by {not: {}}", schema: closedByNot, args: `{"o":{"a":"x","b":"y"}}`, code: aql.CodeUnknownParam},
		{name: "patternProperties leave it open", schema: patterned, args: `{"o":{"x-a":"1","other":2}}`},
		{name: "additionalProperties true declares nothing", schema: freeForm, args: `{"x":1}`, code: aql.CodeUnknownParam},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var schema any
			if err := json.Unmarshal([]byte(tt.schema), &schema); err != nil {
				t.Fatal(err)
			}
			args, perr := aql.ParseArguments([]byte(tt.args), aql.DefaultLimits())
			if perr != nil {
				t.Fatal(perr)
			}
			err := aql.CheckArguments("tool", InputShape(schema, tt.allow), args)
			switch {
			case tt.code == "" && err != nil:
				t.Fatalf("an honest call refused: %v", err)
			case tt.code != "" && (err == nil || err.Code != tt.code):
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
}

// TestInputShapeDepth: a schema nested deeper than maxShapeDepth is
// read to that depth; below, anything.
func TestInputShapeDepth(t *testing.T) {
	schema := map[string]any{"type": "string"}
	for range maxShapeDepth + 10 {
		schema = map[string]any{"type": "object", "properties": map[string]any{"a": schema}}
	}
	in := InputShape(schema, false)
	depth := 0
	for s := in; s != nil; s = s.Properties["a"] {
		depth++
	}
	if depth > maxShapeDepth+2 {
		t.Errorf("read %d levels", depth)
	}
}

// TestParamShapes: the MCP-AQL parameters carry the same reading, so the
// endpoints check inside a parameter as transparent mode does.
func TestParamShapes(t *testing.T) {
	var schema any
	if err := json.Unmarshal([]byte(fsEditFile), &schema); err != nil {
		t.Fatal(err)
	}
	params := deriveParams(schema)
	for _, p := range params {
		if err := p.Compile(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := aql.Validate("fs_edit_file", params, map[string]any{"path": "/a", "edits": []any{map[string]any{"oldText": json.Number("1"), "newText": "b"}}})
	if err == nil || err.Code != aql.CodeInvalidType || err.Details["param_name"] != "edits[0].oldText" {
		t.Fatalf("an edit's text as a number: %v", err)
	}
}
