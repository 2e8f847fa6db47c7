package relay

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var legacy = []string{"2025-11-25", "2025-06-18"}

func TestParseMeta(t *testing.T) {
	const caps = `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`
	tests := []struct {
		name, params string
		modern       bool
		code         int64 // 0: no error
	}{
		{"no params", ``, false, 0},
		{"no _meta", `{"name":"x"}`, false, 0},
		{"an older version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, false, 0},
		{"complete", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"c"}}}`, true, 0},
		{"clientInfo is optional", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `}}`, true, 0},
		{"capabilities are not", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true, jsonrpc.CodeInvalidParams},
		{"capabilities not an object", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, true, jsonrpc.CodeInvalidParams},
		{"clientInfo not an object", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/clientInfo":"c"}}`, true, jsonrpc.CodeInvalidParams},
		{"version not a string", `{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}`, false, jsonrpc.CodeInvalidParams},
		{"a future version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",` + caps + `}}`, true, CodeUnsupportedProtocolVersion},
		{"bad log level", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/logLevel":3}}`, true, jsonrpc.CodeInvalidParams},
	}
	for _, tt := range tests {
		_, modern, err := parseMeta(json.RawMessage(tt.params), legacy)
		var werr *jsonrpc.Error
		switch {
		case tt.code == 0 && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.code != 0 && (!errors.As(err, &werr) || werr.Code != tt.code):
			t.Errorf("%s: error %v, want code %d", tt.name, err, tt.code)
		case modern != tt.modern:
			t.Errorf("%s: modern = %v, want %v", tt.name, modern, tt.modern)
		}
	}
	_, _, err := parseMeta(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`), legacy)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && !strings.Contains(string(werr.Data), `"supported":["2026-07-28","2025-11-25","2025-06-18"]`) {
		t.Errorf("an unsupported version's error must list the supported ones: %s", werr.Data)
	}
}

func TestTakeRetry(t *testing.T) {
	tests := []struct {
		name, params, state, rest string
		responses                 int
		bad                       bool
	}{
		{"a first call", `{"name":"t","arguments":{}}`, "", `{"name":"t","arguments":{}}`, 0, false},
		{"a retry", `{"name":"t","inputResponses":{"a":{"action":"accept"}},"requestState":"s"}`, "s", `{"name":"t"}`, 1, false},
		{"answers without a state", `{"name":"t","inputResponses":{"a":{}}}`, "", `{"name":"t"}`, 1, false},
		{"inputResponses null", `{"name":"t","inputResponses":null}`, "", "", 0, true},
		{"an answer not an object", `{"name":"t","inputResponses":{"a":12345}}`, "", "", 0, true},
		{"requestState not a string", `{"name":"t","requestState":{}}`, "", "", 0, true},
	}
	for _, tt := range tests {
		state, responses, rest, err := takeRetry(json.RawMessage(tt.params))
		if tt.bad {
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: want invalid params, got %v", tt.name, err)
			}
			continue
		}
		if err != nil || state != tt.state || string(rest) != tt.rest || len(responses) != tt.responses {
			t.Errorf("%s: takeRetry = %q, %d answers, %s, %v", tt.name, state, len(responses), rest, err)
		}
	}
}

func TestSubjectOfTellsCallsApart(t *testing.T) {
	same := []string{`{"name":"t","arguments":{"a":1}}`, `{ "name" : "t", "arguments" : { "a" : 1 } }`, `{"arguments":{"a":1},"name":"t","_meta":{"x":1}}`}
	for _, p := range same[1:] {
		if subjectOf("tools/call", json.RawMessage(p)) != subjectOf("tools/call", json.RawMessage(same[0])) {
			t.Errorf("%s is the same call as %s", p, same[0])
		}
	}
	other := []string{`{"name":"u","arguments":{"a":1}}`, `{"name":"t","arguments":{"a":2}}`, `{"name":"t"}`, `{"name":"t","arguments":{"a":1},"uri":"x"}`}
	for _, p := range other {
		if subjectOf("tools/call", json.RawMessage(p)) == subjectOf("tools/call", json.RawMessage(same[0])) {
			t.Errorf("%s is not the same call as %s", p, same[0])
		}
	}
	if subjectOf("prompts/get", json.RawMessage(same[0])) == subjectOf("tools/call", json.RawMessage(same[0])) {
		t.Error("a prompt get is not a tool call")
	}
}

// FuzzModernParams: whatever a 2026-07-28 client sends, reading its
// _meta and its retry fields never panics, and what is forwarded is
// still a JSON object.
func FuzzModernParams(f *testing.F) {
	f.Add(`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"inputResponses":{"a":{}},"requestState":"s"}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":null}}`)
	f.Add(`{"_meta":[],"inputResponses":[1]}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/logLevel":"x","progressToken":1}}`)
	f.Add("{}\v") // white space to Go, not to JSON
	f.Fuzz(func(t *testing.T, params string) {
		raw := json.RawMessage(params)
		_, _, _ = parseMeta(raw, legacy)
		_, _, rest, err := takeRetry(raw)
		_ = subjectOf("tools/call", raw)
		if err == nil && isObject(raw) && !isObject(rest) {
			t.Fatalf("takeRetry(%s) left %s: not an object", raw, rest)
		}
	})
}

// BenchmarkParseMeta: a 2025-11-25 tools/call's params, with and without
// a progress token: every request is asked whether it is 2026-07-28.
func BenchmarkParseMeta(b *testing.B) {
	for name, params := range map[string]string{
		"plain":    `{"name":"write_file","arguments":{"path":"/tmp/notes.txt","content":"hello"}}`,
		"progress": `{"name":"write_file","arguments":{"path":"/tmp/notes.txt","content":"hello"},"_meta":{"progressToken":7}}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, modern, err := parseMeta(json.RawMessage(params), nil); modern || err != nil {
					b.Fatal(modern, err)
				}
			}
		})
	}
}
