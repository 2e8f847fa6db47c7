package relay

import (
	"github.com/aqlguard/aqlguard/proxy/revision"

	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var legacy = []string{"2025-11-25", "2025-06-18"}

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
		_, _, _ = revision.ParseMeta(raw, legacy)
		_, _, rest, err := takeRetry(raw)
		_ = subjectOf("tools/call", raw)
		if err == nil && revision.IsObject(raw) && !revision.IsObject(rest) {
			t.Fatalf("takeRetry(%s) left %s: not an object", raw, rest)
		}
	})
}
