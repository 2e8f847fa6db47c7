package downstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The test binary doubles as a stdio MCP server (the Go idiom for a
// helper process): with AQLGUARD_DOWNSTREAM_TEST=serve it serves two
// tools, echo and hang; with =crash it writes to stderr and exits 3.
func TestMain(m *testing.M) {
	switch os.Getenv("AQLGUARD_DOWNSTREAM_TEST") {
	case "serve":
		serveTestServer()
		return
	case "crash":
		fmt.Fprintln(os.Stderr, "config missing")
		os.Exit(3)
	case "npm404": // as npx does for a package that does not exist
		fmt.Fprint(os.Stderr, npm10NotFound)
		os.Exit(1)
	case "leak": // a server that prints its credentials as it fails
		fmt.Fprintf(os.Stderr, "Error: authentication failed for https://alice:s3cr3t@registry.example.com/?token=%s (%s)\n",
			os.Getenv("NPM_TOKEN"), os.Getenv("CAUSE_TEST_GITHUB_TOKEN"))
		fmt.Fprintln(os.Stderr, "    at main (/srv/x.js:1:1)")
		os.Exit(1)
	case "die":
		// Starts, answers, and dies soon after: a crash loop.
		after, err := time.ParseDuration(os.Getenv("AQLGUARD_DOWNSTREAM_DIE_AFTER"))
		if err != nil {
			after = 300 * time.Millisecond
		}
		time.AfterFunc(after, func() { os.Exit(1) })
		serveTestServer()
		return
	}
	os.Exit(m.Run())
}

func serveTestServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "downstream-test", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Message}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "hang"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ in) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}

func helper(name, mode string, callTimeout time.Duration) config.Server {
	return config.Server{Name: name, Command: os.Args[0], Env: map[string]string{"AQLGUARD_DOWNSTREAM_TEST": mode},
		StartTimeout: config.Duration{Duration: 20 * time.Second}, CallTimeout: config.Duration{Duration: callTimeout}}
}

// TestPool: servers start side by side; a ready one lists its tools and
// answers; one that exits at start is failed with how it ended, and calls
// to it fail at once as unavailable; a call over call_timeout is
// cancelled; after Close nothing is ready.
func TestPool(t *testing.T) {
	ctx := context.Background()
	logs := &syncWriter{w: &bytes.Buffer{}}
	log := slog.New(slog.NewTextHandler(logs, nil))
	p := Start(ctx, []config.Server{helper("ok", "serve", 300*time.Millisecond), helper("bad", "crash", 0)},
		Options{Version: "test", Log: log})
	defer p.Close()

	ok, _ := p.Server("ok")
	if st := ok.State(); st.Status != Ready || len(st.Tools) != 2 {
		t.Fatalf("ok: %+v", st)
	}
	res, err := p.Call(ctx, "ok", "echo", map[string]any{"message": "hi"})
	if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("echo: %+v %v", res, err)
	}
	if res, err := p.Call(ctx, "ok", "hang", map[string]any{"message": "wait"}); !errors.Is(err, ErrCallTimeout) {
		t.Fatalf("hang: %+v %v, want ErrCallTimeout", res, err)
	}
	// The server is still there after a cancelled call.
	if _, err := p.Call(ctx, "ok", "echo", map[string]any{"message": "again"}); err != nil {
		t.Fatalf("echo after a timeout: %v", err)
	}

	bad, _ := p.Server("bad")
	if st := bad.State(); st.Status == Ready || !strings.Contains(st.Problem, "code 3") {
		t.Fatalf("bad: %+v", st)
	}
	if _, err := p.Call(ctx, "bad", "echo", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a call to a failed server: %v, want ErrUnavailable", err)
	}
	if _, err := p.Call(ctx, "nope", "echo", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a call to no server: %v, want ErrUnavailable", err)
	}
	if !strings.Contains(logs.String(), "config missing") {
		t.Errorf("the crashing server's stderr is not in the log:\n%s", logs.String())
	}

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(ctx, "ok", "echo", nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a call after Close: %v, want ErrUnavailable", err)
	}
}

// syncWriter serialises the log's writes (servers log from their own
// goroutines) and its reads.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

func TestRestartDelay(t *testing.T) {
	tests := []struct {
		attempt int
		min     time.Duration
	}{
		{0, 500 * time.Millisecond},
		{1, time.Second},
		{2, 2 * time.Second},
		{5, 16 * time.Second},
		{6, 30 * time.Second}, // capped
		{60, 30 * time.Second},
	}
	for _, tt := range tests {
		for range 200 { // the jitter is random: every draw stays in range
			d := restartDelay(tt.attempt)
			if d < tt.min || d > tt.min+tt.min/4 {
				t.Fatalf("restartDelay(%d) = %s, want %s … %s", tt.attempt, d, tt.min, tt.min+tt.min/4)
			}
		}
	}
}

// TestLineLogger: a server's stderr becomes one log line per line,
// however the writes split it; CR is dropped; an overlong line is cut
// rather than buffered without bound.
func TestLineLogger(t *testing.T) {
	long := strings.Repeat("x", maxStderrLine+100)
	tests := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"whole lines", []string{"a\nb\n"}, []string{"a", "b"}},
		{"split across writes", []string{"hel", "lo\nwor", "ld\n"}, []string{"hello", "world"}},
		{"CRLF", []string{"dos\r\n"}, []string{"dos"}},
		{"no newline yet", []string{"partial"}, nil},
		{"an overlong line", []string{long}, []string{long[:maxStderrLine]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			l := newLineLogger(slog.New(captureHandler{lines: &got}))
			for _, w := range tt.writes {
				if n, err := l.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("lines %q, want %q", got, tt.want)
			}
			if len(l.buf) > maxStderrLine {
				t.Errorf("%d bytes buffered", len(l.buf))
			}
		})
	}
}

type captureHandler struct{ lines *[]string }

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" {
			*h.lines = append(*h.lines, a.Value.String())
		}
		return true
	})
	return nil
}
func (h captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h captureHandler) WithGroup(string) slog.Handler      { return h }

func TestExitDescription(t *testing.T) {
	exit3 := exec.Command(os.Args[0])
	exit3.Env = append(os.Environ(), "AQLGUARD_DOWNSTREAM_TEST=crash")
	err3 := exit3.Run()
	tests := []struct {
		err  error
		want string
	}{
		{nil, "exited"},
		{err3, "exited with code 3"},
		{io.EOF, "closed its connection"},
		{fmt.Errorf("read: %w", io.EOF), "closed its connection"},
		{errors.New("other"), "ended"},
	}
	for _, tt := range tests {
		if got := exitDescription(tt.err); got != tt.want {
			t.Errorf("exitDescription(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestHeaderTransport: the configured headers go on every request, and
// the caller's request is not changed.
func TestHeaderTransport(t *testing.T) {
	var seen http.Header
	tr := headerTransport{headers: map[string]string{"Authorization": "Bearer t"},
		base: roundTrip(func(r *http.Request) (*http.Response, error) {
			seen = r.Header.Clone()
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
		})}
	req, _ := http.NewRequest(http.MethodPost, "http://example.invalid/mcp", nil)
	if _, err := tr.RoundTrip(req); err != nil {
		t.Fatal(err)
	}
	if seen.Get("Authorization") != "Bearer t" || req.Header.Get("Authorization") != "" {
		t.Fatalf("sent %v; the caller's request now has %v", seen, req.Header)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A server inherits aqlguard's environment without AQLGUARD_* (the serve
// token among them), and gets what its config sets, whatever the name.
func TestChildEnv(t *testing.T) {
	env := childEnv([]string{"PATH=/bin", "AQLGUARD_SERVE_TOKEN=secret", "AQLGUARD_SUPERVISOR_PID=1", "HOME=/h"},
		map[string]string{"AQLGUARD_TEST_VALUE": "configured", "B": "2"})
	got := strings.Join(env, " ")
	if want := "PATH=/bin HOME=/h AQLGUARD_TEST_VALUE=configured B=2"; got != want {
		t.Errorf("childEnv = %q, want %q", got, want)
	}
}

// countingUpstream counts the refreshes reported to it.
type countingUpstream struct{ refreshed, restarted atomic.Int64 }

func (u *countingUpstream) ServerRequest(context.Context, *Server, *jsonrpc.Request) (json.RawMessage, error) {
	return nil, errors.New("no client")
}
func (u *countingUpstream) ServerNotification(context.Context, *Server, *jsonrpc.Request) {}
func (u *countingUpstream) ServerRestarted(*Server)                                       { u.restarted.Add(1) }
func (u *countingUpstream) ToolsRefreshed(*Server)                                        { u.refreshed.Add(1) }

// TestRefreshIsVettedAndCoalesced: every listing passes Vet before the
// state holds it (at start and on a refresh); a flood of refresh
// requests (a server's list_changed loop) costs a bounded number of
// listings, not one each.
func TestRefreshIsVettedAndCoalesced(t *testing.T) {
	var vets atomic.Int64
	withheld := true
	var mu sync.Mutex
	vet := func(_ context.Context, server string, l Listing) (Listing, error) {
		vets.Add(1)
		mu.Lock()
		defer mu.Unlock()
		out := Listing{Withheld: map[string]bool{}}
		for i, tl := range l.Tools {
			if tl.Name == "hang" && withheld {
				out.Withheld["hang"] = true // the pinned definition stands in
			}
			out.Tools, out.Raws = append(out.Tools, tl), append(out.Raws, l.Raws[i])
		}
		return out, nil
	}
	up := &countingUpstream{}
	p := Start(context.Background(), []config.Server{helper("ok", "serve", 0)}, Options{Version: "test", Vet: vet, Upstream: up})
	defer p.Close()
	srv, _ := p.Server("ok")
	if st := srv.State(); st.Status != Ready || !st.Withheld["hang"] || vets.Load() != 1 {
		t.Fatalf("start: %+v, %d vettings", st, vets.Load())
	}
	const requests = 20000
	mu.Lock()
	withheld = false
	mu.Unlock()
	for range requests {
		srv.Refresh()
	}
	idle := func() bool {
		srv.refreshMu.Lock()
		defer srv.refreshMu.Unlock()
		return !srv.refreshing
	}
	for deadline := time.Now().Add(time.Minute); !idle(); time.Sleep(10 * time.Millisecond) { // a hang guard
		if time.Now().After(deadline) {
			t.Fatal("the refreshes never ended")
		}
	}
	if n := vets.Load() - 1; n < 1 || n > 10 {
		t.Errorf("%d refresh requests made %d listings; want at least one and a handful at most", requests, n)
	}
	if st := srv.State(); st.Withheld["hang"] || up.refreshed.Load() != vets.Load()-1 {
		t.Errorf("after the refreshes: withheld %v, %d refreshes reported of %d", st.Withheld, up.refreshed.Load(), vets.Load()-1)
	}
}

// TestUnvettedToolsAreListedUntilVetted: tools that could not be vetted
// at start (the pins could not be read: the state database was down)
// are listed again, beyond the retries of a failed refresh, until they
// can be; nobody has to ask for it.
func TestUnvettedToolsAreListedUntilVetted(t *testing.T) {
	var vets atomic.Int64
	var down atomic.Bool
	down.Store(true)
	vet := func(_ context.Context, _ string, l Listing) (Listing, error) {
		vets.Add(1)
		if down.Load() {
			return Listing{}, errors.New("state database unavailable")
		}
		return l, nil
	}
	p := Start(context.Background(), []config.Server{helper("ok", "serve", 0)}, Options{Version: "test", Vet: vet, Upstream: &countingUpstream{}})
	defer p.Close()
	srv, _ := p.Server("ok")
	if st := srv.State(); st.Status != Ready || len(st.Tools) != 0 {
		t.Fatalf("start with the state down: %d tools listed", len(st.Tools))
	}
	for deadline := time.Now().Add(time.Minute); vets.Load() <= maxRefreshRetries+2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d vettings in a minute: the listing was not tried again beyond %d retries", vets.Load(), maxRefreshRetries)
		}
	}
	down.Store(false)
	for deadline := time.Now().Add(time.Minute); len(srv.State().Tools) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the tools were not listed again once they could be vetted")
		}
	}
	settled := vets.Load()
	time.Sleep(2 * unvettedRetry)
	if n := vets.Load() - settled; n != 0 {
		t.Errorf("%d more listings after the tools were vetted", n)
	}
}
