package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sourceGate records the file whose code the forward it is handed runs,
// and forwards nothing.
type sourceGate struct{ source string }

func (g *sourceGate) Forward(_ context.Context, _ *Session, _, _, _ string, _ map[string]any,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	f := runtime.FuncForPC(reflect.ValueOf(forward).Pointer())
	file, _ := f.FileLine(f.Entry())
	g.source = filepath.ToSlash(file)
	return json.RawMessage(`{}`), nil
}

// TestReadsForwardStraightDownstream: a resource read or prompt get is
// put to the gate with the downstream side's own forward
// (downstream.Pool.Forwarder), as a tool call is: the guard does not
// call back into the relay on its way to the server.
func TestReadsForwardStraightDownstream(t *testing.T) {
	g := &sourceGate{}
	s := &Session{cfg: &Config{Gate: g}, pool: &downstream.Pool{}}
	if _, err := s.gated(context.Background(), &downstream.Server{Name: "fs"}, "file:///a", nil, "resources/read", json.RawMessage(`{"uri":"file:///a"}`)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(g.source, "/proxy/downstream/forward.go") {
		t.Errorf("the gate is handed code of %s, want the downstream side's (proxy/downstream/forward.go)", g.source)
	}
}

// TestProgressGoesToTheRequestWaiting: a server's progress, mapped back
// by the downstream side to the call it came with, goes to the client's
// request of that call; for a 2026-07-28 client's call, to the retry
// waiting for its work now, and to none while the call is parked.
func TestProgressGoesToTheRequestWaiting(t *testing.T) {
	one, _ := jsonrpc.MakeID(float64(1))
	two, _ := jsonrpc.MakeID("retry-2")
	if id, ok := requestOf(link.WithRelated(context.Background(), one)); !ok || id != one {
		t.Errorf("a call's progress goes to %v %v, want its request", id.Raw(), ok)
	}
	if id, ok := requestOf(context.Background()); !ok || id.IsValid() {
		t.Errorf("progress of no request goes to %v %v, want the unrelated stream", id.Raw(), ok)
	}
	// A call of a 2026-07-28 client: its work runs in the exchange's
	// context, and the call is parked once a server asks something.
	asked := make(chan context.Context)
	resume := make(chan struct{})
	x := revision.NewExchanges(context.Background(), func(ctx context.Context, _ *jsonrpc.Request) (json.RawMessage, error) {
		asked <- ctx
		<-resume
		return json.RawMessage(`{}`), nil
	}, slog.New(slog.DiscardHandler))
	answered := make(chan json.RawMessage)
	go func() {
		res, _ := x.Call(context.Background(), &jsonrpc.Request{ID: two, Method: "tools/call", Params: json.RawMessage(`{"name":"t"}`)}, nil)
		answered <- res
	}()
	work := link.WithRelated(<-asked, one)
	if id, ok := requestOf(work); !ok || id != two {
		t.Errorf("a 2026-07-28 call's progress goes to %v %v, want the retry waiting", id.Raw(), ok)
	}
	go func() {
		_, _ = revision.Round(work, []rawjson.Member{{Key: "q", Value: json.RawMessage(`{"method":"roots/list"}`)}})
	}()
	if res := <-answered; !strings.Contains(string(res), "input_required") {
		t.Fatalf("the call was answered %s, want input_required", res)
	}
	if id, ok := requestOf(work); ok {
		t.Errorf("a parked call's progress goes to %v", id.Raw())
	}
	close(resume)
}
