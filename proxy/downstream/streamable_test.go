package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func drain(c *streamableConn) []jsonrpc.Message {
	var out []jsonrpc.Message
	for {
		select {
		case m := <-c.incoming:
			out = append(out, m)
		default:
			return out
		}
	}
}

func TestReadEvents(t *testing.T) {
	c := newStreamableConn("http://unused", nil)
	defer c.cancel()
	id, _ := jsonrpc.MakeID("aqlguard-1")
	call := &jsonrpc.Request{ID: id, Method: "tools/call"}
	stream := "event: message\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"p\",\"progress\":1}}\n\n" +
		": a comment\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":\"aqlguard-1\",\n" +
		"data: \"result\":{\"big\":12345678901234567890}}\n\n"
	c.readEvents(strings.NewReader(stream), call)
	got := drain(c)
	if len(got) != 2 {
		t.Fatalf("%d messages, want 2: %v", len(got), got)
	}
	if r, ok := got[1].(*jsonrpc.Response); !ok || string(r.Result) != `{"big":12345678901234567890}` {
		t.Errorf("the answer: %#v", got[1])
	}

	// A stream that ends without the answer answers with an error.
	c.readEvents(strings.NewReader("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\n"), call)
	got = drain(c)
	if r, ok := got[len(got)-1].(*jsonrpc.Response); !ok || r.Error == nil {
		t.Errorf("a stream without the answer: %v", got)
	}
}

func FuzzReadEvents(f *testing.F) {
	f.Add("data: {\"jsonrpc\":\"2.0\",\"id\":\"aqlguard-1\",\"result\":{}}\n\n")
	f.Add("data: [{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]\n\ndata: {\n")
	f.Add("event: endpoint\ndata:\n\n\n\ndata: \x00\n")
	f.Fuzz(func(t *testing.T, stream string) {
		c := newStreamableConn("http://unused", nil)
		defer c.cancel()
		id, _ := jsonrpc.MakeID("aqlguard-1")
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.readEvents(strings.NewReader(stream), &jsonrpc.Request{ID: id, Method: "tools/call"})
		}()
		for {
			select {
			case <-done:
				drain(c)
				return
			case <-c.incoming:
			}
		}
	})
}

// TestHTTPConnectionsAreReused: concurrent calls to one HTTP server keep
// their connections. With http.DefaultTransport (two idle connections
// per host) 16 callers making 25 calls each opened ~130 connections: a
// call that found no idle one dialled, and its connection was closed
// when answered if two were idle already.
func TestHTTPConnectionsAreReused(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil, nil
	})
	var opened atomic.Int64
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()

	ctx := context.Background()
	p := Start(ctx, []config.Server{{Name: "h", URL: ts.URL, Transport: "streamable",
		StartTimeout: config.Duration{Duration: 20 * time.Second}}}, Options{Version: "test"})
	defer p.Close()
	if st, _ := p.Server("h"); st.State().Status != Ready {
		t.Fatalf("not ready: %+v", st.State())
	}
	const callers, calls = 16, 25
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range calls {
				if _, err := p.Call(ctx, "h", "echo", map[string]any{"message": "hi"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	// The callers' own connections, the session's GET stream and the
	// handshake's, and on a loaded machine a few more dialled while a
	// connection was between answer and reuse; a connection per call
	// (the defect) is over a hundred.
	if n := opened.Load(); n > 2*callers+4 {
		t.Fatalf("%d connections opened for %d calls by %d callers", n, callers*calls, callers)
	}
}

// BenchmarkReadEvents: the answer to a tools/call as an event stream, as
// go-sdk servers send it.
func BenchmarkReadEvents(b *testing.B) {
	c := newStreamableConn("http://unused", nil)
	defer c.cancel()
	id, _ := jsonrpc.MakeID("aqlguard-1")
	call := &jsonrpc.Request{ID: id, Method: "tools/call"}
	stream := "event: message\nid: 1_0\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"aqlguard-1\",\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\n\n"
	b.ReportAllocs()
	for b.Loop() {
		c.readEvents(strings.NewReader(stream), call)
		<-c.incoming
	}
}

// TestAnswerThatIsNotJSONRPC: a server whose answer to a request's POST
// is not JSON-RPC at all (a proxy's HTML page) fails the request at once
// rather than at its call timeout; one that answers with another message
// or none is left to send the response on its GET stream, as a go-sdk
// client allows.
func TestAnswerThatIsNotJSONRPC(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		fails                   bool
	}{
		{"an HTML page", "text/html", `<html>log in</html>`, true},
		{"JSON, not JSON-RPC", "application/json", `{"hello":1}`, true},
		{"another id", "application/json", `{"jsonrpc":"2.0","id":"someone-else","result":{}}`, false},
		{"a notification", "application/json", `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`, false},
		{"nothing", "", ``, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				_, _ = io.WriteString(w, tc.body)
			}))
			defer ts.Close()
			c := newStreamableConn(ts.URL, ts.Client())
			defer c.cancel()
			id, _ := jsonrpc.MakeID("aqlguard-1")
			if err := c.Write(context.Background(), &jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{}`)}); err != nil {
				t.Fatal(err)
			}
			wait := 5 * time.Second
			if !tc.fails {
				wait = 300 * time.Millisecond // long enough for a failure to show
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			for {
				m, err := c.Read(ctx)
				if err != nil {
					if tc.fails {
						t.Fatalf("no failure for the request: %v", err)
					}
					return
				}
				if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
					if !tc.fails || r.Error == nil || !strings.Contains(r.Error.Error(), "not JSON-RPC") {
						t.Fatalf("answer %+v", r)
					}
					return
				}
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		code        int64
		message     string
	}{
		{"a JSON-RPC error body is the error", 400, "application/json",
			`{"jsonrpc":"2.0","id":"x","error":{"code":-32020,"message":"Header mismatch"}}`, -32020, "Header mismatch"},
		{"unknown method, 2026-07-28", 404, "application/json",
			`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, -32601, "Method not found"},
		{"a plain 404", 404, "text/plain", "404 page not found", -32601, "the server answered HTTP 404 Not Found: 404 page not found"},
		{"405", 405, "", "", -32601, "the server answered HTTP 405 Method Not Allowed"},
		{"a plain-text 400", 400, "text/plain; charset=utf-8", "Bad Request: unsupported protocol version\n", -32600,
			"the server answered HTTP 400 Bad Request: Bad Request: unsupported protocol version"},
		{"an HTML page is not quoted", 502, "text/html", "<html><body>bad gateway</body></html>", -32603, "the server answered HTTP 502 Bad Gateway"},
	}
	for _, tt := range tests {
		got := httpError(tt.status, tt.contentType, []byte(tt.body))
		if got.Code != tt.code || got.Message != tt.message {
			t.Errorf("%s: %d %q, want %d %q", tt.name, got.Code, got.Message, tt.code, tt.message)
		}
	}
}

func TestHTTPErrorUnknownMethod(t *testing.T) {
	got := httpError(400, "text/plain; charset=utf-8", []byte("JSON RPC not handled: \"foo/bar\" unsupported\n"))
	if got.Code != -32601 {
		t.Errorf("a go-sdk server's plain-text answer to an unknown method: %d %q, want -32601", got.Code, got.Message)
	}
}

// TestStartProblemNamesTheHTTPStatus: a remote server that turns aqlguard
// away at its start is described by the status it answered (401 and 403
// saying what it wants), in fixed words: what the server wrote is never
// in the problem a client sees.
func TestStartProblemNamesTheHTTPStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   string
	}{
		{401, "the server answered HTTP 401 Unauthorized: it wants credentials (auth = \"oauth\", or an Authorization header)"},
		{403, "the server answered HTTP 403 Forbidden: it wants credentials (auth = \"oauth\", or an Authorization header)"},
		{429, "the server answered HTTP 429 Too Many Requests"},
	} {
		err := fmt.Errorf("initialize: %w", httpError(tt.status, "text/plain", []byte("token sk-live-123 is not valid")))
		if got := describe(context.Background(), err, time.Second); got != tt.want {
			t.Errorf("%d: %q, want %q", tt.status, got, tt.want)
		}
	}
	werr := &jsonrpc.Error{Code: -32600, Message: "bad"}
	if got := describe(context.Background(), werr, time.Second); got != "the server refused to initialize (JSON-RPC error -32600)" {
		t.Errorf("a JSON-RPC refusal: %q", got)
	}
}
