package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolCallParams: what goes to the server is the client's other
// members as sent, the tool's name and the arguments the guard judged,
// re-encoded: a duplicate or differently spelled member the client sent
// is not what reaches the server.
func TestToolCallParams(t *testing.T) {
	base := json.RawMessage(`{"_meta":{"progressToken":7},"name":"other","arguments":{"path":"/etc/passwd"},"x":1}`)
	got, err := toolCallParams(base, "read_file", map[string]any{"path": "/tmp/a"})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(got, &p); err != nil {
		t.Fatal(err)
	}
	if string(p["name"]) != `"read_file"` || string(p["arguments"]) != `{"path":"/tmp/a"}` ||
		string(p["_meta"]) != `{"progressToken":7}` || string(p["x"]) != "1" {
		t.Fatalf("params %s", got)
	}
	if strings.Contains(string(got), "passwd") {
		t.Fatalf("the client's own arguments went to the server: %s", got)
	}
	if got, err := toolCallParams(nil, "t", nil); err != nil || string(got) != `{"name":"t","arguments":{}}` {
		t.Fatalf("no base: %s %v", got, err)
	}
}

// callKey labels a call's context in these tests.
type callKey struct{}

// progressSeen is what a test's client side saw of the progress a server
// sent: the token as the client would see it, the message, and the label
// of the call it was mapped to ("" for progress of no call in flight).
type progressSeen struct{ token, message, call string }

// recordingClient is the client side of a test pool: it maps each
// progress notification back through the server (Server.Progress), as a
// relay does, records the servers calls reach, and answers a
// 2026-07-28 server's rounds with answer.
type recordingClient struct {
	mu       sync.Mutex
	progress []progressSeen
	reached  []string
	asked    [][]string
	answer   func(asked []rawjson.Member) map[string]json.RawMessage
}

func (c *recordingClient) ServerRequest(context.Context, *Server, *jsonrpc.Request) (json.RawMessage, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "not in this test"}
}

func (c *recordingClient) ServerNotification(_ context.Context, s *Server, req *jsonrpc.Request) {
	if req.Method != "notifications/progress" {
		return
	}
	seen := progressSeen{}
	var p struct {
		Token   json.RawMessage `json:"progressToken"`
		Message string          `json:"message"`
	}
	_ = json.Unmarshal(req.Params, &p)
	seen.message = p.Message
	if params, call, ok := s.Progress(req.Params); ok {
		_ = json.Unmarshal(params, &p)
		seen.token = string(p.Token)
		seen.call, _ = call.Value(callKey{}).(string)
	}
	c.mu.Lock()
	c.progress = append(c.progress, seen)
	c.mu.Unlock()
}

func (c *recordingClient) ServerRestarted(*Server) {}
func (c *recordingClient) ToolsRefreshed(*Server)  {}

func (c *recordingClient) Reaches(ctx context.Context, s *Server) {
	label, _ := ctx.Value(callKey{}).(string)
	c.mu.Lock()
	c.reached = append(c.reached, label+"→"+s.Name)
	c.mu.Unlock()
}

func (c *recordingClient) Answer(_ context.Context, _ *Server, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	var keys []string
	for _, m := range asked {
		keys = append(keys, m.Key)
	}
	c.mu.Lock()
	c.asked = append(c.asked, keys)
	c.mu.Unlock()
	if c.answer == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no answer in this test"}
	}
	return c.answer(asked), nil
}

func (c *recordingClient) seen() []progressSeen {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.progress)
}

// workServer is a go-sdk server over Streamable HTTP whose tool "work"
// sends two progress notifications under the call's token, with its
// argument "who" as their message, then waits for release (not for its
// call's cancellation: it answers whether or not its client is still
// there), sends one more progress ("<who> late") and answers "<who> done".
func workServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "work", Version: "1"}, nil)
	type in struct {
		Who string `json:"who"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "work"}, func(ctx context.Context, req *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		token := req.Params.GetProgressToken()
		notify := func(msg string) {
			_ = req.Session.NotifyProgress(context.WithoutCancel(ctx), &mcp.ProgressNotificationParams{ProgressToken: token, Progress: 1, Message: msg})
		}
		notify(a.Who)
		notify(a.Who)
		<-release
		notify(a.Who + " late")
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Who + " done"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return ts
}

func startPool(t *testing.T, url, protocol string, client *recordingClient) (*Pool, *Server) {
	t.Helper()
	p := Start(context.Background(), []config.Server{{Name: "work", URL: url, Transport: "streamable", Protocol: protocol}},
		Options{Version: "test", Upstream: client, Client: client, Log: testLog(t)})
	t.Cleanup(func() { _ = p.Close() })
	srv, _ := p.Server("work")
	if st := srv.State(); st.Status != Ready {
		t.Fatalf("the server did not start: %s", st.Problem)
	}
	return p, srv
}

// callCtx is the context of a client's request id, labelled.
func callCtx(ctx context.Context, label string, id int64) context.Context {
	return context.WithValue(link.WithRelated(ctx, requestID(id)), callKey{}, label)
}

func requestID(id int64) jsonrpc.ID {
	rid, _ := jsonrpc.MakeID(float64(id))
	return rid
}

// TestProgressReachesItsOwnCall: two calls in flight at once that send
// the same request id and the same progress token (two clients alike,
// one retrying) each get their own progress, under the token they sent,
// and the server's requests meanwhile go with the oldest call to it;
// once both are answered the pool keeps no route and no call.
func TestProgressReachesItsOwnCall(t *testing.T) {
	release := make(chan struct{})
	client := &recordingClient{}
	p, srv := startPool(t, workServer(t, release).URL, "", client)
	var wg sync.WaitGroup
	results := map[string]string{}
	var mu sync.Mutex
	for _, who := range []string{"A", "B"} {
		wg.Go(func() {
			ctx := callCtx(context.Background(), who, 1)
			res, err := p.ToolCall("work", "work", map[string]any{"who": who}, json.RawMessage(`{"_meta":{"progressToken":1}}`))(ctx)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				results[who] = err.Error()
				return
			}
			results[who] = string(res)
		})
	}
	waitFor(t, "both calls' first progress", func() bool { return len(client.seen()) >= 4 })
	if id, want := srv.Related(), requestID(1); id != want {
		t.Errorf("what the server sends now goes with %v, want the request 1", id.Raw())
	}
	close(release)
	wg.Wait()
	for _, who := range []string{"A", "B"} {
		if !strings.Contains(results[who], who+" done") {
			t.Errorf("call %s answered %s", who, results[who])
		}
	}
	for _, s := range client.seen() {
		if s.call != strings.TrimSuffix(s.message, " late") || s.token != "1" {
			t.Errorf("progress %q reached call %q under token %s, want its own call under 1", s.message, s.call, s.token)
		}
	}
	p.fmu.Lock()
	left, calling := len(p.progress), len(p.calling)
	p.fmu.Unlock()
	if left != 0 || calling != 0 {
		t.Errorf("after the calls the pool keeps %d progress routes and %d calls", left, calling)
	}
	if id := srv.Related(); id.IsValid() {
		t.Errorf("with no call in flight the server's requests go with %v", id.Raw())
	}
}

// TestCancelledCallLeavesNothing: a call whose client cancels it returns
// at once; what its server sends afterwards (progress under the token
// it was given, then the answer) reaches no call, and the pool keeps no
// route for it. The same request id in a second pool (another session)
// is that session's own.
func TestCancelledCallLeavesNothing(t *testing.T) {
	release := make(chan struct{})
	ts := workServer(t, release)
	client, other := &recordingClient{}, &recordingClient{}
	p, srv := startPool(t, ts.URL, "", client)
	q, _ := startPool(t, ts.URL, "", other)

	ctx, cancel := context.WithCancel(callCtx(context.Background(), "gone", 1))
	failed := make(chan error, 1)
	go func() {
		_, err := p.ToolCall("work", "work", map[string]any{"who": "gone"}, json.RawMessage(`{"_meta":{"progressToken":"t"}}`))(ctx)
		failed <- err
	}()
	stays := make(chan string, 1)
	go func() {
		res, err := q.ToolCall("work", "work", map[string]any{"who": "stays"}, json.RawMessage(`{"_meta":{"progressToken":"t"}}`))(callCtx(context.Background(), "stays", 1))
		if err != nil {
			stays <- err.Error()
			return
		}
		stays <- string(res)
	}()
	waitFor(t, "the first progress of both", func() bool { return len(client.seen()) >= 2 && len(other.seen()) >= 2 })
	cancel()
	select {
	case err := <-failed:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the cancelled call returned %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	if id := srv.Related(); id.IsValid() {
		t.Errorf("a cancelled call still takes its server's requests (%v)", id.Raw())
	}
	close(release)
	if got := <-stays; !strings.Contains(got, "stays done") {
		t.Errorf("the other session's call answered %s", got)
	}
	// The server's late progress does come (on its session's stream),
	// and is dropped: its token is no call's any more.
	waitFor(t, "the cancelled call's late progress", func() bool {
		return slices.ContainsFunc(client.seen(), func(s progressSeen) bool { return s.message == "gone late" })
	})
	for _, s := range client.seen() {
		if s.message == "gone late" && s.call != "" {
			t.Errorf("progress sent after the cancel reached a call: %+v", s)
		}
	}
	for _, s := range other.seen() {
		if s.call != "stays" {
			t.Errorf("the other session got progress of %q: %+v", s.call, s)
		}
	}
	p.fmu.Lock()
	left := len(p.progress)
	p.fmu.Unlock()
	if left != 0 {
		t.Errorf("the cancelled call left %d progress routes", left)
	}
}

// askServer is a go-sdk server spoken to in 2026-07-28 whose tool "ask"
// answers input_required until its retry carries an answer to "q1" and
// its requestState, which it then echoes (with the argument "forever" it
// asks again whatever it is answered).
func askServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest, args map[string]any) (*mcp.CallToolResult, any, error) {
		if r, ok := req.Params.InputResponses["q1"]; ok && req.Params.RequestState == "state-1" && args["forever"] == nil {
			b, _ := json.Marshal(r)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered " + string(b)}}}, nil, nil
		}
		return &mcp.CallToolResult{RequestState: "state-1", InputRequests: mcp.InputRequestMap{
			"q1": &mcp.ElicitParams{Message: "which?", RequestedSchema: map[string]any{"type": "object"}}}}, nil, nil
	})
	// Stateless: the go-sdk serves 2026-07-28 over HTTP only so.
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	return ts
}

// TestRoundsGoThroughTheClient: a 2026-07-28 server's input_required
// answer is put to the pool's client, whose answer goes back on a retry
// of the judged call (the same arguments) with the server's
// requestState; a server that never stops asking is given up on after
// maxRounds; a pool with a client that cannot answer, or none, fails the
// call.
func TestRoundsGoThroughTheClient(t *testing.T) {
	ts := askServer(t)
	client := &recordingClient{answer: func(asked []rawjson.Member) map[string]json.RawMessage {
		return map[string]json.RawMessage{"q1": json.RawMessage(`{"action":"accept","content":{"pick":"x"}}`)}
	}}
	p, srv := startPool(t, ts.URL, "2026-07-28", client)
	if !srv.State().Modern {
		t.Fatal("the go-sdk server was not spoken to in 2026-07-28")
	}
	res, err := p.ToolCall("work", "ask", map[string]any{"n": 1}, nil)(callCtx(context.Background(), "call", 7))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `answered {\"action\":\"accept\"`) {
		t.Errorf("the result: %s", res)
	}
	if len(client.asked) != 1 || !slices.Equal(client.asked[0], []string{"q1"}) {
		t.Errorf("the client was asked %v, want one round of q1", client.asked)
	}
	if !slices.Contains(client.reached, "call→work") {
		t.Errorf("the client did not hear the call reach its server: %v", client.reached)
	}

	_, err = p.ToolCall("work", "ask", map[string]any{"forever": true}, nil)(callCtx(context.Background(), "call", 8))
	if err == nil || !strings.Contains(err.Error(), "still asked for input after 32 rounds") {
		t.Errorf("a server that never stops asking: %v", err)
	}

	mute := &recordingClient{}
	q, _ := startPool(t, ts.URL, "2026-07-28", mute)
	_, err = q.ToolCall("work", "ask", nil, nil)(callCtx(context.Background(), "call", 7))
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Message != "no answer in this test" {
		t.Errorf("a round the client cannot answer: %v", err)
	}
	none := Start(context.Background(), []config.Server{{Name: "work", URL: ts.URL, Transport: "streamable", Protocol: "2026-07-28"}}, Options{Version: "test"})
	t.Cleanup(func() { _ = none.Close() })
	_, err = none.ToolCall("work", "ask", nil, nil)(context.Background())
	if !errors.As(err, &werr) || !strings.Contains(werr.Message, "outside a call that can carry it") {
		t.Errorf("a round with no client: %v", err)
	}
}

// TestToolCallFindsItsServerWhenItGoes: the closure the guard is handed
// looks its server up when it runs, and fails closed for none (and a
// forward with no pool behind it fails, it does not panic).
func TestToolCallFindsItsServerWhenItGoes(t *testing.T) {
	var p *Pool
	if _, err := p.ToolCall("work", "t", nil, nil)(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no pool: %v", err)
	}
	if _, err := p.Forwarder(nil, "resources/read", nil)(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("a read with no pool: %v", err)
	}
	p = &Pool{byName: map[string]*Server{}}
	if _, err := p.ToolCall("work", "t", nil, nil)(context.Background()); !errors.Is(err, ErrUnavailable) {
		t.Errorf("no server: %v", err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLog writes the pool's log to the test's.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
