package relay

import (
	"encoding/json"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/revision"
)

var legacy = []string{"2025-11-25", "2025-06-18"}

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
		_, _, rest, err := revision.Retry(raw)
		_ = subjectOf("tools/call", raw)
		if err == nil && revision.IsObject(raw) && !revision.IsObject(rest) {
			t.Fatalf("revision.Retry(%s) left %s: not an object", raw, rest)
		}
	})
}
