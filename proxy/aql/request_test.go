package aql

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	lim := DefaultLimits()
	small := lim
	small.MaxRequestSize, small.MaxStringLength, small.MaxArrayElements, small.MaxNestingDepth = 200, 10, 3, 4
	tests := []struct {
		name     string
		raw      string
		lim      Limits
		wantCode Code
		wantOp   string
		want     map[string]any // resolved params (JSON-compared)
		details  map[string]any // subset of error details
	}{
		{name: "minimal", raw: `{"operation":"list_users"}`, wantOp: "list_users", want: map[string]any{}},
		{name: "params win over top level", raw: `{"operation":"get","id":"top","params":{"id":"inner"},"x":1}`,
			wantOp: "get", want: map[string]any{"id": "inner", "x": json.Number("1")}},
		{name: "underscore fields exempt", raw: `{"operation":"get","_meta":{"a":1},"params":{"_request_id":"r","k":"v"}}`,
			wantOp: "get", want: map[string]any{"k": "v"}},
		{name: "null params", raw: `{"operation":"get","params":null}`, wantOp: "get", want: map[string]any{}},
		{name: "missing operation", raw: `{"params":{}}`, wantCode: CodeMissingParam, details: map[string]any{"param_name": "operation"}},
		{name: "empty arguments", raw: ``, wantCode: CodeMissingParam},
		{name: "operation not string", raw: `{"operation":5}`, wantCode: CodeInvalidType, details: map[string]any{"expected_type": "string", "actual_type": "integer"}},
		{name: "operation bad name", raw: `{"operation":"Get-User"}`, wantCode: CodeNotFoundOperation},
		{name: "params not object", raw: `{"operation":"get","params":[1]}`, wantCode: CodeInvalidType, details: map[string]any{"param_name": "params"}},
		{name: "arguments not object", raw: `[1,2]`, wantCode: CodeInvalidType},
		{name: "request too large", raw: `{"operation":"get","params":{"s":"` + strings.Repeat("a", 300) + `"}}`, lim: small,
			wantCode: CodePayloadTooLarge, details: map[string]any{"limit_type": "request_size", "unit": "bytes", "limit_value": float64(200)}},
		{name: "string too long", raw: `{"operation":"get","params":{"s":"abcdefghijklmnop"}}`, lim: small,
			wantCode: CodePayloadTooLarge, details: map[string]any{"limit_type": "string_length", "actual_value": float64(16), "location": "params.s"}},
		{name: "array too long", raw: `{"operation":"get","params":{"a":[1,2,3,4]}}`, lim: small,
			wantCode: CodePayloadTooLarge, details: map[string]any{"limit_type": "array_elements", "unit": "elements", "actual_value": float64(4)}},
		{name: "too deep", raw: `{"operation":"get","params":{"a":{"b":{"c":{"d":1}}}}}`, lim: small,
			wantCode: CodePayloadTooLarge, details: map[string]any{"limit_type": "nesting_depth", "unit": "levels", "actual_value": float64(5), "limit_value": float64(4)}},
		{name: "depth at limit ok", raw: `{"operation":"get","params":{"a":{"b":{}}}}`, lim: small, wantOp: "get",
			want: map[string]any{"a": map[string]any{"b": map[string]any{}}}},
		{name: "brackets in strings do not count", raw: `{"operation":"get","params":{"s":"[[[[{{{{"}}`, lim: small, wantOp: "get",
			want: map[string]any{"s": "[[[[{{{{"}},
		{name: "invalid utf8", raw: "{\"operation\":\"get\",\"params\":{\"description\":\"ab\xffcd\"}}",
			wantCode: CodeInvalidEncoding, details: map[string]any{"location": "params.description", "byte_offset": float64(46)}},
		{name: "overlong encoding", raw: "{\"operation\":\"get\",\"params\":{\"s\":\"\xc0\xaf\"}}", wantCode: CodeInvalidEncoding},
		{name: "utf8 encoded surrogate", raw: "{\"operation\":\"get\",\"params\":{\"s\":\"\xed\xa0\x80\"}}", wantCode: CodeInvalidEncoding},
		{name: "truncated sequence", raw: "{\"operation\":\"get\",\"params\":{\"s\":\"\xe2\x82\"}}", wantCode: CodeInvalidEncoding},
		{name: "lone surrogate escape", raw: `{"operation":"get","params":{"s":"\ud800x"}}`, wantCode: CodeInvalidEncoding,
			details: map[string]any{"location": "params.s"}},
		{name: "lone low surrogate escape", raw: `{"operation":"get","params":{"s":"\udc00"}}`, wantCode: CodeInvalidEncoding},
		{name: "valid surrogate pair", raw: `{"operation":"get","params":{"s":"\ud83d\ude00"}}`, wantOp: "get",
			want: map[string]any{"s": "😀"}},
		{name: "invalid utf8 in key", raw: "{\"operation\":\"get\",\"params\":{\"k\xff\":1}}", wantCode: CodeInvalidEncoding},
		// A member named twice: encoding/json keeps the last, a server
		// may read the first (issue 29, item 2).
		{name: "duplicate member", raw: `{"operation":"get","params":{"path":"/tmp/a","path":"/etc/shadow"}}`,
			wantCode: CodeInvalidType, details: map[string]any{"param_name": "params.path", "duplicate": true}},
		{name: "duplicate spelled with an escape", raw: `{"operation":"get","params":{"path":"/tmp/a","pa\u0074h":"/etc/shadow"}}`,
			wantCode: CodeInvalidType, details: map[string]any{"param_name": "params.path"}},
		{name: "duplicate operation", raw: `{"operation":"get","operation":"delete"}`, wantCode: CodeInvalidType,
			details: map[string]any{"param_name": "operation"}},
		{name: "duplicate nested", raw: `{"operation":"get","params":{"o":{"a":1,"b":{"c":1},"a":2}}}`, wantCode: CodeInvalidType,
			details: map[string]any{"param_name": "params.o.a"}},
		{name: "duplicate in an array's object", raw: `{"operation":"get","params":{"l":[{"a":1},{"a":1,"a":2}]}}`, wantCode: CodeInvalidType,
			details: map[string]any{"param_name": "params.l[1].a"}},
		{name: "duplicate among many members", raw: `{"operation":"get","params":{` + manyMembers(40) + `,"m7":0}}`, wantCode: CodeInvalidType,
			details: map[string]any{"param_name": "params.m7"}},
		{name: "same name in two objects", raw: `{"operation":"get","params":{"a":{"x":1},"b":{"x":1},"x":1}}`, wantOp: "get",
			want: map[string]any{"a": map[string]any{"x": json.Number("1")}, "b": map[string]any{"x": json.Number("1")}, "x": json.Number("1")}},
		{name: "escapes are names of their own", raw: `{"operation":"get","params":{"a\nb":1,"anb":2,"a\\nb":3}}`, wantOp: "get",
			want: map[string]any{"a\nb": json.Number("1"), "anb": json.Number("2"), "a\\nb": json.Number("3")}},
		{name: "a lookalike is another name", raw: `{"operation":"get","params":{"path":1,"p\u0430th":2}}`, wantOp: "get",
			want: map[string]any{"path": json.Number("1"), "p\u0430th": json.Number("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.lim
			if lim == (Limits{}) {
				lim = DefaultLimits()
			}
			env, err := Parse([]byte(tt.raw), lim)
			if tt.wantCode != "" {
				if err == nil {
					t.Fatalf("Parse succeeded, want %s", tt.wantCode)
				}
				if err.Code != tt.wantCode {
					t.Fatalf("code = %s (%s), want %s", err.Code, err.Message, tt.wantCode)
				}
				checkDetails(t, err, tt.details)
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if env.Single == nil || env.Single.Operation != tt.wantOp {
				t.Fatalf("got %+v, want operation %q", env.Single, tt.wantOp)
			}
			if got, want := mustJSON(t, env.Single.Params), mustJSON(t, tt.want); got != want {
				t.Errorf("params = %s, want %s", got, want)
			}
		})
	}
}

func TestParseBatch(t *testing.T) {
	env, err := Parse([]byte(`{"operations":[{"operation":"a","params":{"x":1}},5,{"operation":"b","operations":[]},{"params":{}}]}`), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if len(env.Batch) != 4 {
		t.Fatalf("batch len %d", len(env.Batch))
	}
	if env.BatchErrs[0] != nil || env.Batch[0].Operation != "a" {
		t.Errorf("entry 0: %+v %v", env.Batch[0], env.BatchErrs[0])
	}
	for i, code := range map[int]Code{1: CodeInvalidType, 2: CodeUnknownParam, 3: CodeMissingParam} {
		if env.BatchErrs[i] == nil || env.BatchErrs[i].Code != code {
			t.Errorf("entry %d: err %v, want %s", i, env.BatchErrs[i], code)
		}
	}
	if _, err := Parse([]byte(`{"operation":"batch","operations":[{"operation":"a"}]}`), DefaultLimits()); err != nil {
		t.Errorf("operation batch form: %v", err)
	}
	for _, raw := range []string{`{"operations":[]}`, `{"operations":{}}`, `{"operation":"x","operations":[{"operation":"a"}]}`, `{"operations":[{"operation":"a"}],"stray":1}`} {
		if _, err := Parse([]byte(raw), DefaultLimits()); err == nil {
			t.Errorf("%s: want error", raw)
		}
	}
}

func checkDetails(t *testing.T, err *Error, want map[string]any) {
	t.Helper()
	var got map[string]any
	if e := json.Unmarshal([]byte(mustJSON(t, err.Details)), &got); e != nil {
		t.Fatal(e)
	}
	for k, v := range want {
		if mustJSON(t, got[k]) != mustJSON(t, v) {
			t.Errorf("details[%s] = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// manyMembers is n members "m0":0 … of an object's body.
func manyMembers(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"m` + strconv.Itoa(i) + `":0`
	}
	return strings.Join(parts, ",")
}
