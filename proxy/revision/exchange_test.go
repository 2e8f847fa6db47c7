package revision

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

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
		_, _, _ = ParseMeta(raw, legacy)
		_, _, rest, err := Retry(raw)
		_ = subjectOf("tools/call", raw)
		if err == nil && IsObject(raw) && !IsObject(rest) {
			t.Fatalf("Retry(%s) left %s: not an object", raw, rest)
		}
	})
}

// TestWaitingRequest: the work of a 2026-07-28 client's call belongs to
// the retry waiting for it now, and to no request while the call is
// parked; other work is no exchange's.
func TestWaitingRequest(t *testing.T) {
	two, _ := jsonrpc.MakeID("retry-2")
	if _, _, in := WaitingRequest(context.Background()); in {
		t.Error("work of no exchange is in one")
	}
	x := &exchange{request: two}
	work := context.WithValue(context.Background(), exchangeKey{}, x)
	if id, ok, in := WaitingRequest(work); !in || !ok || id != two {
		t.Errorf("a 2026-07-28 call's work belongs to %v %v %v, want the retry waiting", id.Raw(), ok, in)
	}
	x.mu.Lock()
	x.request = jsonrpc.ID{}
	x.mu.Unlock()
	if id, ok, in := WaitingRequest(work); !in || ok {
		t.Errorf("a parked call's work belongs to %v %v %v", id.Raw(), ok, in)
	}
}
