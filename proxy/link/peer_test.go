package link

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scripted serves requests by method.
type scripted struct {
	mu            sync.Mutex
	notifications []string
	cancelled     chan string
}

func (s *scripted) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	switch req.Method {
	case "echo":
		return req.Params, nil
	case "fail":
		return nil, &jsonrpc.Error{Code: -32042, Message: "nope", Data: json.RawMessage(`{"big":12345678901234567890}`)}
	case "plain-error":
		return nil, errors.New("broken")
	case "hang":
		<-ctx.Done()
		s.cancelled <- "hang"
		return nil, ctx.Err()
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "unknown " + req.Method}
}

func (s *scripted) Notification(_ context.Context, req *jsonrpc.Request) {
	s.mu.Lock()
	s.notifications = append(s.notifications, req.Method+" "+string(req.Params))
	s.mu.Unlock()
}

func pair(t *testing.T) (*Peer, *Peer, *scripted) {
	t.Helper()
	ta, tb := mcp.NewInMemoryTransports()
	ca, err := ta.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cb, err := tb.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	server := &scripted{cancelled: make(chan string, 1)}
	a := New(ca, &scripted{}, nil)
	b := New(cb, server, nil)
	a.Start()
	b.Start()
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b, server
}

func TestPeerCall(t *testing.T) {
	a, _, _ := pair(t)
	ctx := context.Background()
	tests := []struct {
		method, params string
		want           string
		wantErr        *jsonrpc.Error
	}{
		{"echo", `{"n":12345678901234567890,"x":{"unknown":[1.0e400]}}`, `{"n":12345678901234567890,"x":{"unknown":[1.0e400]}}`, nil},
		{"fail", `{}`, "", &jsonrpc.Error{Code: -32042, Message: "nope", Data: json.RawMessage(`{"big":12345678901234567890}`)}},
		{"plain-error", `{}`, "", &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error (aqlguard's log has the details)"}}, // never the Go error
		{"nothing", `{}`, "", &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "unknown nothing"}},
	}
	for _, tt := range tests {
		got, err := a.Call(ctx, tt.method, json.RawMessage(tt.params))
		if tt.wantErr == nil {
			if err != nil || string(got) != tt.want {
				t.Errorf("%s: got %s, %v; want %s", tt.method, got, err, tt.want)
			}
			continue
		}
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != tt.wantErr.Code || werr.Message != tt.wantErr.Message || string(werr.Data) != string(tt.wantErr.Data) {
			t.Errorf("%s: error %#v, want %#v", tt.method, err, tt.wantErr)
		}
	}
}

func TestPeerCancellation(t *testing.T) {
	a, _, server := pair(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := a.Call(ctx, "hang", json.RawMessage(`{}`))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Call = %v, want context.Canceled", err)
	}
	select {
	case <-server.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the other side's handler was not cancelled")
	}
}

func TestPeerNotificationsInOrder(t *testing.T) {
	a, _, server := pair(t)
	for _, n := range []string{"1", "2", "3"} {
		if err := a.Notify(context.Background(), "notifications/x", json.RawMessage(`{"n":`+n+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	// A call after the notifications returns after they were handled.
	if _, err := a.Call(context.Background(), "echo", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	server.mu.Lock()
	defer server.mu.Unlock()
	want := []string{`notifications/x {"n":1}`, `notifications/x {"n":2}`, `notifications/x {"n":3}`}
	if len(server.notifications) != 3 || server.notifications[0] != want[0] || server.notifications[2] != want[2] {
		t.Errorf("notifications %q, want %q", server.notifications, want)
	}
}

func TestPeerCloseFailsPendingCalls(t *testing.T) {
	a, b, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := a.Call(context.Background(), "hang", json.RawMessage(`{}`))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Call = %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a pending call outlived the connection")
	}
	if _, err := a.Call(context.Background(), "echo", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Call after close = %v", err)
	}
}

// endedInput is a connection whose other side sent msgs and then closed
// its output (a client closing a stdio server's stdin); what is written
// to it is kept.
type endedInput struct {
	mu      sync.Mutex
	msgs    []jsonrpc.Message
	written []jsonrpc.Message
}

func (c *endedInput) Read(context.Context) (jsonrpc.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.msgs) == 0 {
		return nil, io.EOF
	}
	m := c.msgs[0]
	c.msgs = c.msgs[1:]
	return m, nil
}

func (c *endedInput) Write(_ context.Context, m jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = append(c.written, m)
	return nil
}

func (c *endedInput) Close() error      { return nil }
func (c *endedInput) SessionID() string { return "" }

// slow answers after a while, so that the input has ended by then.
type slow struct{ scripted }

func (s *slow) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	select {
	case <-time.After(50 * time.Millisecond):
		return json.RawMessage(`{"done":true}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// With FinishOnEOF, requests received before the input ended are
// answered before the Peer is done (MCP's stdio shutdown); without it
// they are cancelled and nothing is written.
func TestPeerFinishOnEOF(t *testing.T) {
	for _, finish := range []bool{true, false} {
		conn := &endedInput{}
		for i := range 3 {
			id, _ := jsonrpc.MakeID(float64(i + 1))
			conn.msgs = append(conn.msgs, &jsonrpc.Request{ID: id, Method: "work"})
		}
		p := New(conn, &slow{}, nil)
		p.FinishOnEOF = finish
		p.Start()
		select {
		case <-p.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the peer is not done")
		}
		conn.mu.Lock()
		n := len(conn.written)
		conn.mu.Unlock()
		if want := map[bool]int{true: 3, false: 0}[finish]; n != want {
			t.Errorf("FinishOnEOF %v: %d answers written, want %d", finish, n, want)
		}
		if _, err := p.Call(context.Background(), "late", nil); err == nil {
			t.Errorf("FinishOnEOF %v: a call after the input ended did not fail", finish)
		}
	}
}

// barrier answers once n requests are being served at the same time.
type barrier struct {
	scripted
	n       int
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (b *barrier) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	b.mu.Lock()
	if b.arrived++; b.arrived == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return json.RawMessage(`{}`), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Every request is served on a goroutine of its own, also when workers
// kept from earlier requests take them: twelve requests that each wait
// for all the others finish, round after round.
func TestPeerRequestsRunConcurrently(t *testing.T) {
	ta, tb := mcp.NewInMemoryTransports()
	ca, _ := ta.Connect(context.Background())
	cb, _ := tb.Connect(context.Background())
	b := &barrier{n: 12}
	a, peer := New(ca, &scripted{}, nil), New(cb, b, nil)
	a.Start()
	peer.Start()
	t.Cleanup(func() { a.Close(); peer.Close() })
	for round := range 3 {
		b.mu.Lock()
		b.arrived, b.all = 0, make(chan struct{})
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var wg sync.WaitGroup
		for range b.n {
			wg.Go(func() {
				if _, err := a.Call(ctx, "wait", nil); err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			})
		}
		wg.Wait()
		cancel()
	}
}

// TestCancelledIDIsReadExactly: a cancellation names a request only by
// its exact requestId member; one spelled in another case, or given twice,
// names none (the other side might read the other one).
func TestCancelledIDIsReadExactly(t *testing.T) {
	for _, tc := range []struct {
		params string
		want   string // "" when no request is named
	}{
		{`{"requestId":"a1"}`, `"a1"`},
		{`{"requestId":7,"reason":"x"}`, `7`},
		{`{"RequestId":"a1"}`, ``},
		{`{"requestId":"a1","requestid":"b2"}`, ``},
		{`{"requestId":"a1","requestId":"b2"}`, ``},
		{`{"requestId":null}`, ``},
		{`{"requestId":{"x":1}}`, ``},
		{`{}`, ``},
		{`[1]`, ``},
		{`not json`, ``},
	} {
		id, ok := CancelledID(json.RawMessage(tc.params))
		if tc.want == "" {
			if ok {
				t.Errorf("CancelledID(%s) = %v, want none", tc.params, id.Raw())
			}
			continue
		}
		got, _ := json.Marshal(id.Raw())
		if !ok || string(got) != tc.want {
			t.Errorf("CancelledID(%s) = %s, %v; want %s", tc.params, got, ok, tc.want)
		}
	}
}

// pushing is a connection whose messages come by PushTo's receive, as
// a Streamable HTTP session's POSTs bring them; Read only waits for the
// end.
type pushing struct {
	endedInput
	receive func(jsonrpc.Message) bool
	end     chan struct{}
}

func (c *pushing) PushTo(receive func(jsonrpc.Message) bool) { c.receive = receive }

func (c *pushing) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-c.end:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestPeerTakesPushedMessages: what a Pusher pushes is taken on the
// pushing goroutine: a notification's handler has run when receive
// returns, a request is served and answered, a response reaches its
// call; once the connection has ended nothing is taken.
func TestPeerTakesPushedMessages(t *testing.T) {
	conn := &pushing{end: make(chan struct{})}
	h := &scripted{}
	p := New(conn, h, nil)
	p.Start()
	if conn.receive == nil {
		t.Fatal("Start did not give the connection its receive")
	}
	if !conn.receive(&jsonrpc.Request{Method: "notifications/roots/list_changed", Params: json.RawMessage(`1`)}) {
		t.Fatal("a notification was not taken")
	}
	h.mu.Lock()
	got := h.notifications
	h.mu.Unlock()
	if len(got) != 1 {
		t.Fatalf("after receive returned, the handler had seen %q", got)
	}
	id, _ := jsonrpc.MakeID(float64(7))
	if !conn.receive(&jsonrpc.Request{ID: id, Method: "echo", Params: json.RawMessage(`"hi"`)}) {
		t.Fatal("a request was not taken")
	}
	answered := func() *jsonrpc.Response {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		for _, m := range conn.written {
			if r, ok := m.(*jsonrpc.Response); ok && r.ID == id {
				return r
			}
		}
		return nil
	}
	for deadline := time.Now().Add(5 * time.Second); answered() == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pushed request was not answered")
		}
	}
	if r := answered(); string(r.Result) != `"hi"` {
		t.Fatalf("answered %s", r.Result)
	}
	// A call of ours, answered by a pushed response.
	result := make(chan json.RawMessage, 1)
	go func() {
		r, err := p.Call(context.Background(), "ask", nil)
		if err != nil {
			t.Error(err)
		}
		result <- r
	}()
	var asked *jsonrpc.Request
	for deadline := time.Now().Add(5 * time.Second); asked == nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the call was not sent")
		}
		conn.mu.Lock()
		for _, m := range conn.written {
			if r, ok := m.(*jsonrpc.Request); ok && r.Method == "ask" {
				asked = r
			}
		}
		conn.mu.Unlock()
	}
	conn.receive(&jsonrpc.Response{ID: asked.ID, Result: json.RawMessage(`{"yes":1}`)})
	if r := <-result; string(r) != `{"yes":1}` {
		t.Fatalf("the call got %s", r)
	}
	close(conn.end)
	<-p.Done()
	if conn.receive(&jsonrpc.Request{Method: "notifications/late"}) {
		t.Error("a message was taken after the connection ended")
	}
}
