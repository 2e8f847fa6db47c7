package aql

import (
	"encoding/json"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func testDefs(t *testing.T) []*Param {
	defs := []*Param{
		{Name: "title", Types: []string{"string"}, Required: true, Description: "The title. More text.", MinLength: ptr(1), MaxLength: ptr(5)},
		{Name: "count", Types: []string{"integer"}, Minimum: ptr(1.0), Maximum: ptr(10.0), Default: json.RawMessage(`3`)},
		{Name: "ratio", Types: []string{"number"}},
		{Name: "status", Types: []string{"string"}, Enum: []any{"a", "b"}},
		{Name: "code", Types: []string{"string"}, Pattern: `^[a-z]+$`},
		{Name: "tags", Types: []string{"array"}, ItemTypes: []string{"string"}},
		{Name: "flag", Types: []string{"boolean"}, Default: json.RawMessage(`false`)},
		{Name: "next_action_hint", Types: []string{"string"}, Aliases: []string{"nextActionHint"}},
		{Name: "secret", Types: []string{"string"}, Sensitive: true},
	}
	for _, d := range defs {
		if err := d.Compile(); err != nil {
			t.Fatal(err)
		}
	}
	return defs
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		params   string
		wantCode Code
		want     string
		details  map[string]any
	}{
		{name: "defaults applied", params: `{"title":"x"}`, want: `{"count":3,"flag":false,"title":"x"}`},
		{name: "alias accepted", params: `{"title":"x","nextActionHint":"go"}`, want: `{"count":3,"flag":false,"next_action_hint":"go","title":"x"}`},
		{name: "canonical beats alias", params: `{"title":"x","nextActionHint":"no","next_action_hint":"yes"}`, want: `{"count":3,"flag":false,"next_action_hint":"yes","title":"x"}`},
		{name: "missing", params: `{}`, wantCode: CodeMissingParam, details: map[string]any{"param_name": "title", "operation": "op"}},
		{name: "null required is missing", params: `{"title":null}`, wantCode: CodeMissingParam},
		{name: "wrong type", params: `{"title":5}`, wantCode: CodeInvalidType, details: map[string]any{"expected_type": "string", "actual_type": "integer", "value": 5}},
		{name: "integer rejects fraction", params: `{"title":"x","count":1.5}`, wantCode: CodeInvalidType, details: map[string]any{"actual_type": "number"}},
		{name: "integer accepts 2.0", params: `{"title":"x","count":2.0}`, want: `{"count":2.0,"flag":false,"title":"x"}`},
		{name: "number accepts integer", params: `{"title":"x","ratio":2}`, want: `{"count":3,"flag":false,"ratio":2,"title":"x"}`},
		{name: "item type", params: `{"title":"x","tags":["a",1]}`, wantCode: CodeInvalidType, details: map[string]any{"param_name": "tags[1]"}},
		{name: "sensitive value not echoed", params: `{"title":"x","secret":12345}`, wantCode: CodeInvalidType, details: map[string]any{"value": nil}},
		{name: "unknown before defaults", params: `{"title":"x","bogus":1,"zzz":2}`, wantCode: CodeUnknownParam,
			details: map[string]any{"unknown_params": []string{"bogus", "zzz"}, "operation": "op"}},
		{name: "type before unknown", params: `{"title":1,"bogus":1}`, wantCode: CodeInvalidType},
		{name: "enum", params: `{"title":"x","status":"c"}`, wantCode: CodeInvalidEnum, details: map[string]any{"allowed_values": []string{"a", "b"}}},
		{name: "range", params: `{"title":"x","count":11}`, wantCode: CodeOutOfRange, details: map[string]any{"maximum": 10}},
		{name: "min length", params: `{"title":""}`, wantCode: CodeOutOfRange},
		{name: "max length counts runes", params: `{"title":"ééééé"}`, want: `{"count":3,"flag":false,"title":"ééééé"}`},
		{name: "max length", params: `{"title":"abcdef"}`, wantCode: CodeOutOfRange},
		{name: "pattern", params: `{"title":"x","code":"A1"}`, wantCode: CodePatternMismatch},
	}
	defs := testDefs(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var params map[string]any
			dec := json.NewDecoder(stringsReader(tt.params))
			dec.UseNumber()
			if err := dec.Decode(&params); err != nil {
				t.Fatal(err)
			}
			got, err := Validate("op", defs, params)
			if tt.wantCode != "" {
				if err == nil || err.Code != tt.wantCode {
					t.Fatalf("err = %v, want %s", err, tt.wantCode)
				}
				checkDetails(t, err, tt.details)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := mustJSON(t, got); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
	t.Run("valid params listed", func(t *testing.T) {
		_, err := Validate("op", defs, map[string]any{"title": "x", "nope": 1})
		valid, _ := err.Details["valid_params"].([]string)
		if len(valid) != len(defs) {
			t.Errorf("valid_params = %v", valid)
		}
	})
}

func TestMissingParamMessage(t *testing.T) {
	err := MissingParam("op", &Param{Name: "name", Type: "string", Description: "the name of the memory to operate on. Extra."})
	if want := "Missing required parameter 'name'. Expected: string (the name of the memory to operate on)"; err.Message != want {
		t.Errorf("message = %q, want %q", err.Message, want)
	}
}

func TestCompileRejectsNonRE2(t *testing.T) {
	p := &Param{Name: "p", Pattern: `^(?!x)`}
	if err := p.Compile(); err == nil {
		t.Error("look-ahead compiled")
	}
}
