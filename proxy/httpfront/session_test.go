package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// echoRelay stands for the relay on the other side of a sessionConn: it
// answers every request with its own params as the result, first sending
// a progress notification related to it when the params say "note", and
// an unrelated one when they say "aside".
func echoRelay(t *testing.T, c *sessionConn) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = c.Close() })
	go func() {
		for {
			m, err := c.Read(ctx)
			if err != nil {
				return
			}
			req, ok := m.(*jsonrpc.Request)
			if !ok || !req.IsCall() {
				continue
			}
			switch string(req.Params) {
			case `"note"`:
				_ = c.Write(link.WithRelated(ctx, req.ID), &jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`{"progress":1}`)})
			case `"aside"`:
				_ = c.Write(ctx, &jsonrpc.Request{Method: "notifications/resources/list_changed"})
			case `"hold"`:
				continue // never answered
			}
			_ = c.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: req.Params})
		}
	}()
}

func postTo(c *sessionConn, body string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	r.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	c.servePOST(w, r, []byte(body), false)
	return w
}

func TestSessionPOST(t *testing.T) {
	tests := []struct {
		name, body string
		headers    []string
		status     int
		mediaType  string
		contains   []string
	}{
		{"a notification is accepted", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil,
			http.StatusAccepted, "", nil},
		{"a response to the server is accepted", `{"jsonrpc":"2.0","id":"aqlguard-1","result":{}}`, nil,
			http.StatusAccepted, "", nil},
		{"an answer that comes alone is JSON", `{"jsonrpc":"2.0","id":7,"method":"m","params":"plain"}`, nil,
			http.StatusOK, "application/json", []string{`"id":7`, `"result":"plain"`}},
		{"what belongs to the request comes first, as events", `{"jsonrpc":"2.0","id":8,"method":"m","params":"note"}`, nil,
			http.StatusOK, "text/event-stream", []string{"notifications/progress", `"id":8`}},
		{"a client that takes only events gets events", `{"jsonrpc":"2.0","id":9,"method":"m","params":"plain"}`, []string{"Accept", "text/event-stream"},
			http.StatusOK, "text/event-stream", []string{`"id":9`}},
		{"what belongs to no request stays off the POST", `{"jsonrpc":"2.0","id":10,"method":"m","params":"aside"}`, nil,
			http.StatusOK, "application/json", []string{`"id":10`}},
		{"a batch of an old revision gets an array", `[{"jsonrpc":"2.0","id":1,"method":"m","params":"a"},{"jsonrpc":"2.0","id":2,"method":"m","params":"b"}]`,
			[]string{"Mcp-Protocol-Version", "2025-03-26"}, http.StatusOK, "application/json", []string{`[{`, `"result":"a"`, `"result":"b"`}},
		{"2025-06-18 has no batches", `[{"jsonrpc":"2.0","id":1,"method":"m"}]`, []string{"Mcp-Protocol-Version", "2025-06-18"},
			http.StatusBadRequest, "", nil},
		{"a batch that names one id twice", `[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","id":1,"method":"m"}]`, nil,
			http.StatusBadRequest, "application/json", []string{"already in use"}},
		{"not JSON", `{"jsonrpc":`, nil, http.StatusBadRequest, "application/json", []string{`-32700`}},
		{"an empty batch", `[]`, nil, http.StatusBadRequest, "application/json", []string{`-32700`}},
		{"a POST cannot resume", `{"jsonrpc":"2.0","id":1,"method":"m"}`, []string{"Last-Event-ID", "x_1"}, http.StatusBadRequest, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newSessionConn("s", slog.New(slog.DiscardHandler))
			echoRelay(t, c)
			w := postTo(c, tt.body, tt.headers...)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("Content-Type"); tt.mediaType != "" && !strings.HasPrefix(got, tt.mediaType) {
				t.Errorf("Content-Type %q, want %s", got, tt.mediaType)
			}
			for _, s := range tt.contains {
				if !strings.Contains(w.Body.String(), s) {
					t.Errorf("body lacks %s: %s", s, w.Body)
				}
			}
			if strings.Contains(w.Body.String(), "list_changed") {
				t.Errorf("an unrelated notification was sent on a POST: %s", w.Body)
			}
		})
	}
}

// TestSessionIDsInFlight: an id in flight in the session is refused to
// a second POST (its answer would go to the first), and free again once
// the first is done, answered or not.
func TestSessionIDsInFlight(t *testing.T) {
	c := newSessionConn("s", slog.New(slog.DiscardHandler))
	echoRelay(t, c)
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":1,"method":"m","params":"hold"}`
	first := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)).WithContext(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.servePOST(httptest.NewRecorder(), first, []byte(body), false)
	}()
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.replies) == 1 })
	if w := postTo(c, `{"jsonrpc":"2.0","id":1,"method":"m","params":"plain"}`); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "already in use") {
		t.Fatalf("a second POST with the id in flight: %d %s", w.Code, w.Body)
	}
	cancel() // the client hangs up on the first
	<-done
	if w := postTo(c, `{"jsonrpc":"2.0","id":1,"method":"m","params":"plain"}`); w.Code != http.StatusOK {
		t.Fatalf("the id after its POST ended: %d %s", w.Code, w.Body)
	}
}

// TestSessionGETStream: what belongs to no request goes to the one GET
// stream; a second is refused; a server's request with neither a POST
// nor a GET stream to go to fails, so the server hears of it.
func TestSessionGETStream(t *testing.T) {
	c := newSessionConn("s", slog.New(slog.DiscardHandler))
	ask := &jsonrpc.Request{Method: "roots/list"}
	ask.ID, _ = jsonrpc.MakeID("aqlguard-1")
	if err := c.Write(context.Background(), ask); err == nil {
		t.Fatal("a server request with nowhere to go was taken")
	}

	srv := httptest.NewServer(http.HandlerFunc(c.serveGET))
	defer srv.Close()
	get := func(headers ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Accept", "text/event-stream")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	stream := get()
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || stream.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET: %d %s", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	waitFor(t, func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.stream != nil })
	for _, tt := range []struct {
		headers []string
		status  int
	}{{nil, http.StatusConflict}, {[]string{"Last-Event-ID", "x_1"}, http.StatusBadRequest}, {[]string{"Accept", "application/json"}, http.StatusNotAcceptable}} {
		resp := get(tt.headers...)
		_ = resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("GET %v: %d, want %d", tt.headers, resp.StatusCode, tt.status)
		}
	}
	if err := c.Write(context.Background(), ask); err != nil {
		t.Fatalf("a server request with the GET stream open: %v", err)
	}
	buf := make([]byte, 512)
	n, _ := io.ReadAtLeast(stream.Body, buf, len("event: message\ndata: "))
	if got := string(buf[:n]); !strings.HasPrefix(got, "event: message\ndata: ") || !strings.Contains(got, "roots/list") {
		t.Errorf("the GET stream read %q", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// FuzzDecodeBody: a POST's body is the client's to write. Reading it
// never panics; a body that is one message reads as link.DecodeMessage
// reads it, and a batch as each of its elements does.
func FuzzDecodeBody(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"aqlguard-1","result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"m"},{"jsonrpc":"2.0","method":"n"}]`,
		`[]`, ` [ ] `, `{"jsonrpc":`, "\t\n{}", `[1]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		msgs, batch, err := decodeBody(body)
		if err != nil {
			if msgs != nil {
				t.Fatalf("an error came with messages: %v", err)
			}
			return
		}
		if len(msgs) == 0 {
			t.Fatal("no error and no message")
		}
		if !batch {
			want, werr := link.DecodeMessage(bytes.TrimLeft(body, " \t\r\n"))
			if werr != nil || len(msgs) != 1 || fmt.Sprint(want) != fmt.Sprint(msgs[0]) {
				t.Fatalf("one message read as %v, link.DecodeMessage says %v, %v", msgs, want, werr)
			}
			return
		}
		var raws []json.RawMessage
		if json.Unmarshal(body, &raws) != nil || len(raws) != len(msgs) {
			t.Fatalf("a batch of %d messages from %q", len(msgs), body)
		}
	})
}

func TestAccepts(t *testing.T) {
	for _, tt := range []struct {
		accept         string
		sse, sseByName bool
		json           bool
	}{
		{"application/json, text/event-stream", true, true, true},
		{"text/event-stream;q=0.9", true, true, false},
		{"*/*", true, false, true},
		{"text/*", true, false, false},
		{"application/json", false, false, true},
		{"", false, false, false},
		{"application/json,text/event-stream", true, true, true},
		{"text/html, application/*;q=0.5", false, false, true},
		{"text/event-streams, application/jsonx", false, false, false},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		if got := accepts(r, "text/event-stream"); got != tt.sse {
			t.Errorf("%q takes events: %v, want %v", tt.accept, got, tt.sse)
		}
		if got := names(r, "text/event-stream"); got != tt.sseByName {
			t.Errorf("%q names events: %v, want %v", tt.accept, got, tt.sseByName)
		}
		if got := accepts(r, "application/json"); got != tt.json {
			t.Errorf("%q takes JSON: %v, want %v", tt.accept, got, tt.json)
		}
	}
}

// TestCheckHost: a listener on loopback takes only loopback Host names (a
// web page's name rebound to 127.0.0.1 is refused); elsewhere the Host is
// not ours to judge.
func TestCheckHost(t *testing.T) {
	v4, v6 := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}, &net.TCPAddr{IP: net.IPv6loopback, Port: 9}
	public := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 9}
	for _, tt := range []struct {
		local net.Addr
		host  string
		ok    bool
	}{
		{v4, "127.0.0.1:9", true},
		{v4, "localhost:9", true},
		{v4, "LOCALHOST", true},
		{v4, "[::1]:9", true},
		{v4, "evil.example:9", false},
		{v4, "127.0.0.1.evil.example", false},
		{v6, "evil.example", false},
		{v6, "[::1]:9", true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 9}, "evil.example", false},
		{public, "evil.example", true},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "evil.example", true},
		{nil, "evil.example", true},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Host = tt.host
		if tt.local != nil {
			r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, tt.local))
		}
		if err := checkHost(r); (err == nil) != tt.ok {
			t.Errorf("listening on %v, Host %q: %v, want allowed %v", tt.local, tt.host, err, tt.ok)
		}
	}
}

// TestSessionPushes: once the relay's Peer has taken PushTo, a POST's
// messages go to it on the POST's goroutine, in order, and a Peer that
// is done makes the POST find no session.
func TestSessionPushes(t *testing.T) {
	c := newSessionConn("s", slog.New(slog.DiscardHandler))
	var took []string
	open := true
	c.PushTo(func(m jsonrpc.Message) bool {
		if open {
			took = append(took, m.(*jsonrpc.Request).Method)
		}
		return open
	})
	batch := `[{"jsonrpc":"2.0","method":"notifications/a"},{"jsonrpc":"2.0","method":"notifications/b"}]`
	if w := postTo(c, batch, "Mcp-Protocol-Version", "2025-03-26"); w.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if strings.Join(took, " ") != "notifications/a notifications/b" {
		t.Fatalf("the Peer took %q", took)
	}
	open = false
	if w := postTo(c, `{"jsonrpc":"2.0","method":"notifications/c"}`); w.Code != http.StatusNotFound {
		t.Fatalf("a POST to a session whose Peer is done: status %d", w.Code)
	}
}
