package revision

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
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

// TestExchangeRounds: a server's question during a 2026-07-28 client's
// call answers the call input_required under a fresh requestState; a
// retry of another call or a used state resumes nothing; the right retry
// hands the answer to the server's question and gets the call's result.
func TestExchangeRounds(t *testing.T) {
	srv := new(int) // a server, compared by identity
	var e *Exchanges
	e = NewExchanges(context.Background(), func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		Used(ctx, srv)
		answer, err := e.Ask(ctx, srv, &jsonrpc.Request{Method: "elicitation/create", Params: json.RawMessage(`{"message":"name?"}`)})
		if err != nil {
			return nil, err
		}
		return json.RawMessage(`{"content":[],"answer":` + string(answer) + `}`), nil
	}, slog.New(slog.DiscardHandler))
	call := func(id, params string) (map[string]json.RawMessage, error) {
		rid, _ := jsonrpc.MakeID(id)
		res, err := e.Call(context.Background(), &jsonrpc.Request{ID: rid, Method: "tools/call", Params: json.RawMessage(params)},
			map[string]json.RawMessage{"elicitation": json.RawMessage(`{}`)})
		return rawjson.Members(res), err
	}
	first, err := call("1", `{"name":"t","arguments":{"a":1}}`)
	if err != nil || string(first["resultType"]) != `"input_required"` {
		t.Fatalf("first call: %v %v, want input_required", first, err)
	}
	want := `{"aqlguard-i-1":{"method":"elicitation/create","params":{"message":"name?"}}}`
	if got := string(first["inputRequests"]); got != want {
		t.Errorf("inputRequests = %s, want %s", got, want)
	}
	var state string
	_ = json.Unmarshal(first["requestState"], &state)
	if len(state) != len("aqlguard-")+32 {
		t.Errorf("requestState %q is not 192 random bits", state)
	}
	retry := func(args string) string {
		return `{"name":"t","arguments":` + args + `,"requestState":"` + state + `","inputResponses":{"aqlguard-i-1":{"action":"accept"}}}`
	}
	if _, err := call("2", retry(`{"a":2}`)); err == nil || !strings.Contains(err.Error(), "another call") {
		t.Errorf("a retry of another call: %v, want refused", err)
	}
	if _, err := call("3", `{"name":"t","requestState":"aqlguard-forged"}`); err == nil || !strings.Contains(err.Error(), "not one aqlguard gave") {
		t.Errorf("a forged requestState: %v, want refused", err)
	}
	done, err := call("4", retry(`{ "a" : 1 }`))
	if err != nil || string(done["answer"]) != `{"action":"accept"}` {
		t.Fatalf("the retry: %v %v, want the call's result with the client's answer", done, err)
	}
	if _, err := call("5", retry(`{"a":1}`)); err == nil || !strings.Contains(err.Error(), "used already") {
		t.Errorf("a second retry under one requestState: %v, want refused", err)
	}
}

// TestAskNeedsACallAndItsCapability: a server's request reaches a
// 2026-07-28 client only in one of its calls to that server, and only
// when the client declared what the request needs.
func TestAskNeedsACallAndItsCapability(t *testing.T) {
	srv, other := new(int), new(int)
	asked := make(chan error, 1)
	var e *Exchanges
	e = NewExchanges(context.Background(), func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
		Used(ctx, srv)
		_, err := e.Ask(ctx, other, &jsonrpc.Request{Method: "elicitation/create"})
		if err == nil {
			return nil, errors.New("asked through a call to another server")
		}
		_, err = e.Ask(ctx, srv, &jsonrpc.Request{Method: "sampling/createMessage"})
		asked <- err
		return json.RawMessage(`{}`), nil
	}, slog.New(slog.DiscardHandler))
	rid, _ := jsonrpc.MakeID("1")
	if _, err := e.Call(context.Background(), &jsonrpc.Request{ID: rid, Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`)},
		map[string]json.RawMessage{"elicitation": json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := <-asked; err == nil || !strings.Contains(err.Error(), "did not declare") {
		t.Errorf("sampling without the capability: %v, want refused", err)
	}
	if _, ok, _ := e.AskInCall(context.Background(), &jsonrpc.Request{Method: "roots/list"}); ok {
		t.Error("roots/list was asked outside a call")
	}
}
