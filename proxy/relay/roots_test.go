//lint:file-ignore SA1019 roots are deprecated as of 2026-07-28 but served in both revisions: the guard judges paths against them while clients declare them
package relay

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootsTools is a mode for the roots test: "roots" goes to the server,
// which asks its client's roots (so through the relay); "guard_roots"
// is the guard asking the client itself (AskClientRoots).
type rootsTools struct{ s *Session }

func (m rootsTools) ListTools(context.Context) ([]json.RawMessage, error) {
	return []json.RawMessage{
		json.RawMessage(`{"name":"roots","inputSchema":{"type":"object"}}`),
		json.RawMessage(`{"name":"guard_roots","inputSchema":{"type":"object"}}`),
	}, nil
}

func (m rootsTools) CallTool(ctx context.Context, call ToolCall) (json.RawMessage, error) {
	if call.Name == "guard_roots" {
		roots, known := m.s.AskClientRoots(ctx)
		text := "unknown"
		if known {
			text = "[" + strings.Join(roots, " ") + "]"
		}
		return json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}})
	}
	return m.s.Pool().Forward(ctx, m.s.Pool().Servers()[0], "tools/call", call.Params)
}

func (rootsTools) ToolsChanged(context.Context, *downstream.Server) bool { return false }

// rootsServer is a server whose tool "roots" asks its client's roots and
// answers with their URIs.
func rootsServer(t *testing.T) *httptest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "rooted", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "roots"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Join(uris, " ")}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

// session runs a relay session for client, speaking version ("" the
// newest), against a rootsServer, and returns the client's session and
// the relay's.
func session(t *testing.T, client *mcp.Client, version string) (*mcp.ClientSession, *Session) {
	t.Helper()
	ts := rootsServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan *Session, 1)
	cfg := &Config{
		Servers:          []config.Server{{Name: "rooted", URL: ts.URL, Transport: "streamable"}},
		Version:          "test",
		ProtocolVersions: []string{"2025-11-25"},
		Log:              slog.New(slog.DiscardHandler),
		NewTools: func(s *Session) (Tools, error) {
			started <- s
			return rootsTools{s}, nil
		},
	}
	ct, st := mcp.NewInMemoryTransports()
	conn, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- Serve(ctx, conn, cfg) }()
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		cancel()
		<-served
	})
	return cs, <-started
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("%s: %+v", tool, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestClientRootsRecordedAndForgotten: the roots a client answers to a
// server's roots/list are recorded as clean paths (file: URIs of this
// machine only), forgotten when the client says they changed, and asked
// again by the guard itself when it needs them.
func TestClientRootsRecordedAndForgotten(t *testing.T) {
	for _, version := range versions {
		t.Run(version, func(t *testing.T) { clientRootsRecordedAndForgotten(t, version) })
	}
}

// versions are the revisions a client may speak: 2025-11-25 is asked on
// its connection, 2026-07-28 in an input_required round of its call.
var versions = []string{"2025-11-25", revision.Modern}

func clientRootsRecordedAndForgotten(t *testing.T, version string) {
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///home/u/proj/"}, &mcp.Root{URI: "file://otherhost/share"},
		&mcp.Root{URI: "https://example.com/repo"}, &mcp.Root{URI: "file:///srv/%64ata//x/.."})
	cs, sess := session(t, client, version)
	if sess.modern.Load() != (version == revision.Modern) {
		t.Fatalf("the session speaks modern = %v", sess.modern.Load())
	}

	if roots, known := sess.ClientRoots(); known || roots != nil {
		t.Fatalf("before anyone asked: ClientRoots = %q, %v", roots, known)
	}
	// A server asks; the client answers through the relay.
	if got := callText(t, cs, "roots"); !strings.Contains(got, "file:///home/u/proj/") {
		t.Fatalf("the server got roots %q", got)
	}
	roots, known := sess.ClientRoots()
	if want := []string{"/home/u/proj", "/srv/data"}; !known || !slices.Equal(roots, want) {
		t.Fatalf("after the server asked: ClientRoots = %q, %v; want %q", roots, known, want)
	}

	// The client's roots change: what was recorded is forgotten.
	client.RemoveRoots("file:///home/u/proj/")
	waitFor(t, "the roots to be forgotten", func() bool { _, known := sess.ClientRoots(); return !known })

	// The guard asks itself, and the answer is kept.
	if got := callText(t, cs, "guard_roots"); got != "[/srv/data]" {
		t.Fatalf("the guard's own ask = %q", got)
	}
	if roots, known := sess.ClientRoots(); !known || !slices.Equal(roots, []string{"/srv/data"}) {
		t.Fatalf("after the guard asked: ClientRoots = %q, %v", roots, known)
	}
	client.AddRoots(&mcp.Root{URI: "file:///home/u/other"})
	waitFor(t, "the roots to be forgotten", func() bool { _, known := sess.ClientRoots(); return !known })
	if got := callText(t, cs, "guard_roots"); got != "[/home/u/other /srv/data]" {
		t.Fatalf("the guard's ask after a change = %q", got)
	}
}

// A client that does not declare roots is not asked: the roots stay
// unknown, at once.
func TestClientRootsWithoutTheCapability(t *testing.T) {
	for _, version := range versions {
		client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
		cs, _ := session(t, client, version)
		start := time.Now()
		if got := callText(t, cs, "guard_roots"); got != "unknown" {
			t.Fatalf("%s: the guard's ask of a client without roots = %q", version, got)
		}
		if took := time.Since(start); took > askRootsFor/2 {
			t.Errorf("%s: the guard waited %v for a client that cannot answer", version, took)
		}
	}
}

// An answer to a roots/list sent before the client said its roots
// changed is stale: it is not kept. A result that is not a list of roots
// keeps nothing either.
func TestClientRootsRecord(t *testing.T) {
	var r clientRoots
	gen := r.generation()
	r.forget()
	if r.record(gen, json.RawMessage(`{"roots":[{"uri":"file:///a"}]}`)) || r.known {
		t.Fatal("a stale answer was kept")
	}
	gen = r.generation()
	for _, bad := range []string{`{}`, `{"roots":{}}`, `{"roots":[{"uri":5}]}`, `[]`, `null`} {
		if r.record(gen, json.RawMessage(bad)) || r.known {
			t.Errorf("%s was kept as roots", bad)
		}
	}
	if !r.record(gen, json.RawMessage(`{"roots":[{"uri":"file:///b"},{"uri":"file:///a/"},{"uri":"file:///a"},{"uri":"file:///%00"},{"name":"no uri"}]}`)) {
		t.Fatal("a list of roots was not kept")
	}
	if !r.known || !slices.Equal(r.roots, []string{"/a", "/b"}) {
		t.Errorf("roots = %q, %v", r.roots, r.known)
	}
	if !r.record(gen, json.RawMessage(`{"roots":[]}`)) || !r.known || len(r.roots) != 0 {
		t.Errorf("no roots is an answer too: %q, %v", r.roots, r.known)
	}
}

// A client that does not answer holds up the guard askRootsFor at most,
// once: the next call does not wait again, until the client says its
// roots changed.
func TestAskClientRootsOfAClientThatDoesNotAnswer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits askRootsFor")
	}
	ts := rootsServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan *Session, 1)
	cfg := &Config{Servers: []config.Server{{Name: "rooted", URL: ts.URL, Transport: "streamable"}}, Version: "test",
		ProtocolVersions: []string{"2025-11-25"}, Log: slog.New(slog.DiscardHandler),
		NewTools: func(s *Session) (Tools, error) { started <- s; return rootsTools{s}, nil }}
	ct, st := mcp.NewInMemoryTransports()
	sconn, err := st.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = Serve(ctx, sconn, cfg) }()
	// A client that declares roots and answers nothing it is asked.
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	answers := make(chan *jsonrpc.Response, 8)
	go func() {
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			if r, ok := msg.(*jsonrpc.Response); ok {
				answers <- r
			}
		}
	}()
	n := 0
	call := func(method, params string) *jsonrpc.Response {
		n++
		id, _ := jsonrpc.MakeID(float64(n))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: json.RawMessage(params)}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-answers:
			return r
		case <-time.After(3 * askRootsFor):
			t.Fatalf("%s was not answered", method)
			return nil
		}
	}
	call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"mute","version":"0"}}`)
	_ = conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)})
	sess := <-started
	guard := func() (string, time.Duration) {
		start := time.Now()
		r := call("tools/call", `{"name":"guard_roots","arguments":{}}`)
		if r.Error != nil {
			t.Fatalf("guard_roots: %v", r.Error)
		}
		var res struct{ Content []struct{ Text string } }
		_ = json.Unmarshal(r.Result, &res)
		return res.Content[0].Text, time.Since(start)
	}
	if got, took := guard(); got != "unknown" || took < askRootsFor || took > askRootsFor+2*time.Second {
		t.Fatalf("first ask of a mute client = %q after %v; want unknown after %v", got, took, askRootsFor)
	}
	if got, took := guard(); got != "unknown" || took > askRootsFor/2 {
		t.Fatalf("second ask of a mute client = %q after %v; want unknown at once", got, took)
	}
	// The client says its roots changed: it is asked again.
	_ = conn.Write(ctx, &jsonrpc.Request{Method: "notifications/roots/list_changed", Params: json.RawMessage(`{}`)})
	waitFor(t, "the change to be heard", func() bool { return sess.roots.generation() == 1 })
	if got, took := guard(); got != "unknown" || took < askRootsFor {
		t.Fatalf("ask after roots/list_changed = %q after %v; want asked again", got, took)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
