package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Servers shared among the sessions of `aqlguard serve` (share = true):
// one process, and each session sees what a server of its own would have
// sent it, and nothing of another session's.

// sharedConfig is serve with the testserver's session tools shared;
// extra goes under its [[servers]] entry.
func sharedConfig(t *testing.T, extra string) string {
	return "mode = \"transparent\"\n" + allowingServe(t) + `
[safety]
max_autonomous_steps = 100000
auto_approve = ["*"]
deny = ["*drop_database*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = ` + tomlString(bins.testserver) + `
args = ["-session-tools"]
share = true
` + extra
}

// sharedClient is one client session and what reached it.
type sharedClient struct {
	name    string
	cs      *mcp.ClientSession
	mu      sync.Mutex
	logs    []string
	updates []string
	asked   []string
	// progress are the messages of the progress notifications it got.
	progress []string
}

func (c *sharedClient) seen() (logs, updates, asked []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.logs...), append([]string(nil), c.updates...), append([]string(nil), c.asked...)
}

// connectShared connects a client named name; elicit, when set, is how
// it answers elicitation; roots, when set, are its roots.
func connectShared(t *testing.T, url, name string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error), roots ...string) *sharedClient {
	t.Helper()
	c := &sharedClient{name: name}
	opts := &mcp.ClientOptions{
		//lint:ignore SA1019 this client speaks 2025-11-25, where servers log
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			c.logs = append(c.logs, fmt.Sprint(r.Params.Data))
			c.mu.Unlock()
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			c.progress = append(c.progress, r.Params.Message)
			c.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			c.mu.Lock()
			c.updates = append(c.updates, r.Params.URI)
			c.mu.Unlock()
		},
	}
	if elicit != nil {
		opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.asked = append(c.asked, r.Params.Message)
			c.mu.Unlock()
			return elicit(ctx, r)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "0"}, opts)
	for _, r := range roots {
		//lint:ignore SA1019 this client speaks 2025-11-25, where clients declare roots
		client.AddRoots(&mcp.Root{URI: r})
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("%s: connect: %v", name, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

// setLevel sets the session's log level (logging/setLevel).
func (c *sharedClient) setLevel(t *testing.T, level string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	//lint:ignore SA1019 this client speaks 2025-11-25, where servers log
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: mcp.LoggingLevel(level)}); err != nil {
		t.Fatalf("%s: logging/setLevel %s: %v", c.name, level, err)
	}
}

// subscribe subscribes the session to uri's updates, or unsubscribes it
// (on false).
func (c *sharedClient) subscribe(t *testing.T, uri string, on bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var err error
	if on {
		err = c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	} else {
		err = c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	}
	if err != nil {
		t.Fatalf("%s: (un)subscribing %s: %v", c.name, uri, err)
	}
}

func (c *sharedClient) call(t *testing.T, tool string, args map[string]any, meta mcp.Meta) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return resultText(t, mustCall(t, ctx, c.cs, tool, args, meta))
}

// testservers counts the live testserver processes aqlguard started.
func testservers(s *served) int { return processesOf(s, "testserver") }

// processesOf counts the live processes aqlguard started whose command
// line names program.
func processesOf(s *served, program string) int {
	n := 0
	for _, cmd := range marked(s.mark) {
		if strings.Contains(cmd, program) {
			n++
		}
	}
	return n
}

// TestSharedServerIsOneProcess: three sessions are served by one process;
// one that ends leaves it to the others; the last one ends it.
func TestSharedServerIsOneProcess(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	var clients []*sharedClient
	var pid string
	for i := range 3 {
		c := connectShared(t, s.url, fmt.Sprintf("c%d", i), nil)
		clients = append(clients, c)
		got := c.call(t, "pid", nil, nil)
		if pid != "" && got != pid {
			t.Fatalf("session %d was served by process %s, session 0 by %s", i, got, pid)
		}
		pid = got
	}
	if n := testservers(s); n != 1 {
		t.Fatalf("%d testserver processes for 3 sessions of a shared server, want 1", n)
	}
	_ = clients[0].cs.Close()
	_ = clients[1].cs.Close()
	time.Sleep(200 * time.Millisecond)
	if got := clients[2].call(t, "pid", nil, nil); got != pid {
		t.Fatalf("after two sessions ended the third is served by %s, want the same process %s", got, pid)
	}
	_ = clients[2].cs.Close()
	waitFor(t, "the shared process to end with its last session", func() bool { return testservers(s) == 0 })
	// A new session starts a new one.
	c := connectShared(t, s.url, "c3", nil)
	if got := c.call(t, "pid", nil, nil); got == pid || got == "" {
		t.Fatalf("a session after the last one ended got process %q, want a new one", got)
	}
}

// TestSharedServerLogLevels: the server logs at the most verbose level a
// session asked for; each session gets only its own call's messages, at
// or above its own level; setting debug floods nobody else.
func TestSharedServerLogLevels(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	quiet := connectShared(t, s.url, "quiet", nil)
	loud := connectShared(t, s.url, "loud", nil)
	quiet.setLevel(t, "error")
	loud.setLevel(t, "debug")
	loud.call(t, "log", map[string]any{"level": "debug", "text": "loud-debug"}, nil)
	quiet.call(t, "log", map[string]any{"level": "debug", "text": "quiet-debug"}, nil)
	quiet.call(t, "log", map[string]any{"level": "warning", "text": "quiet-warning"}, nil)
	quiet.call(t, "log", map[string]any{"level": "error", "text": "quiet-error"}, nil)
	waitFor(t, "the log messages", func() bool {
		l, _, _ := loud.seen()
		q, _, _ := quiet.seen()
		return len(l) >= 1 && len(q) >= 1
	})
	time.Sleep(200 * time.Millisecond)
	l, _, _ := loud.seen()
	q, _, _ := quiet.seen()
	if strings.Join(l, ",") != "loud-debug" {
		t.Errorf("the debug session got %q, want only its own loud-debug", l)
	}
	if strings.Join(q, ",") != "quiet-error" {
		t.Errorf("the error-level session got %q, want only its own quiet-error", q)
	}
	// A hostile session keeps a call in flight to read the others' log
	// messages: one that names no call, while two sessions are in
	// flight, reaches neither.
	holding := make(chan string, 1)
	go func() { holding <- loud.call(t, "slow", map[string]any{"ms": 1500}, nil) }()
	time.Sleep(300 * time.Millisecond)
	quiet.call(t, "log", map[string]any{"level": "error", "text": "quiet-secret"}, nil)
	<-holding
	time.Sleep(200 * time.Millisecond)
	if l, _, _ := loud.seen(); strings.Contains(strings.Join(l, ","), "quiet-secret") {
		t.Errorf("a session holding a call in flight read another's log message: %q", l)
	}
	// The loud session leaves: the server's level rises to error, and a
	// debug message is not even sent.
	_ = loud.cs.Close()
	time.Sleep(200 * time.Millisecond)
	quiet.call(t, "log", map[string]any{"level": "debug", "text": "quiet-debug-2"}, nil)
	quiet.call(t, "log", map[string]any{"level": "critical", "text": "quiet-critical"}, nil)
	waitFor(t, "quiet-critical", func() bool { q, _, _ := quiet.seen(); return len(q) == 2 })
	if q, _, _ := quiet.seen(); q[1] != "quiet-critical" {
		t.Errorf("got %q", q)
	}
}

// TestSharedServerSubscriptions: updates reach only the sessions
// subscribed to the uri; a session cannot unsubscribe another's; the
// last unsubscribe ends the server's subscription.
func TestSharedServerSubscriptions(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil)
	b := connectShared(t, s.url, "b", nil)
	a.subscribe(t, "file:///x", true)
	b.subscribe(t, "file:///y", true)
	b.call(t, "touch", map[string]any{"uri": "file:///x"}, nil)
	b.call(t, "touch", map[string]any{"uri": "file:///y"}, nil)
	waitFor(t, "both updates", func() bool {
		_, ua, _ := a.seen()
		_, ub, _ := b.seen()
		return len(ua) >= 1 && len(ub) >= 1
	})
	// b unsubscribes what it never subscribed: a's subscription stays.
	b.subscribe(t, "file:///x", false)
	b.call(t, "touch", map[string]any{"uri": "file:///x"}, nil)
	waitFor(t, "the second update of x", func() bool { _, ua, _ := a.seen(); return len(ua) >= 2 })
	a.subscribe(t, "file:///x", false)
	a.call(t, "touch", map[string]any{"uri": "file:///x"}, nil)
	time.Sleep(300 * time.Millisecond)
	_, ua, _ := a.seen()
	_, ub, _ := b.seen()
	if strings.Join(ua, ",") != "file:///x,file:///x" {
		t.Errorf("a got updates %q, want file:///x twice (then it unsubscribed)", ua)
	}
	if strings.Join(ub, ",") != "file:///y" {
		t.Errorf("b got updates %q, want only its own file:///y", ub)
	}
}

// TestSharedServerElicitationGoesToItsCaller: two sessions call a tool
// that elicits at once; each question reaches its own client. A server
// request that names no call while two sessions have calls in flight is
// refused, never guessed.
func TestSharedServerElicitationGoesToItsCaller(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	both := make(chan struct{}, 2)
	arrived := func(ctx context.Context) {
		select {
		case both <- struct{}{}:
		default: // after the two at once
		}
		// Hold the answer until both questions were asked: both calls
		// are then in flight at once.
		deadline := time.After(5 * time.Second)
		for len(both) < 2 {
			select {
			case <-deadline:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	answer := func(name string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			arrived(ctx)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"answer": name}}, nil
		}
	}
	a := connectShared(t, s.url, "a", answer("alice"))
	b := connectShared(t, s.url, "b", answer("bob"))
	var wg sync.WaitGroup
	got := map[string]string{}
	var mu sync.Mutex
	for _, c := range []*sharedClient{a, b} {
		wg.Go(func() {
			text := c.call(t, "ask", map[string]any{"question": "who is " + c.name + "?"}, mcp.Meta{"progressToken": "same-token"})
			mu.Lock()
			got[c.name] = text
			mu.Unlock()
		})
	}
	wg.Wait()
	if !strings.Contains(got["a"], "alice") || !strings.Contains(got["b"], "bob") {
		t.Fatalf("answers crossed sessions: a got %q, b got %q", got["a"], got["b"])
	}
	_, _, askedA := a.seen()
	_, _, askedB := b.seen()
	if strings.Join(askedA, ",") != "who is a?" || strings.Join(askedB, ",") != "who is b?" {
		t.Fatalf("questions crossed sessions: a was asked %q, b %q", askedA, askedB)
	}

	// No progress token while another session has a call in flight: the
	// server's request names nobody and is refused.
	slowDone := make(chan string, 1)
	go func() { slowDone <- b.call(t, "slow", map[string]any{"ms": 1500}, nil) }()
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "anyone?"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := jsonString(res); !res.IsError || !strings.Contains(text, "cannot tell which client") {
		t.Errorf("an elicitation naming no call, with two sessions in flight: %s", text)
	}
	<-slowDone
	_, _, askedB = b.seen()
	if len(askedB) != 1 {
		t.Errorf("b was asked %q: another session's question reached it", askedB)
	}
	// Alone in flight, the same request goes to its caller.
	if got := a.call(t, "ask", map[string]any{"question": "alone?"}, nil); !strings.Contains(got, "alice") {
		t.Errorf("alone in flight, a got %q", got)
	}
}

// TestSharedServerCancelIsPerSession: a session cancels its own call and
// no other's, whatever ids it names.
func TestSharedServerCancelIsPerSession(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil)
	b := connectShared(t, s.url, "b", nil)
	done := make(chan string, 1)
	go func() { done <- b.call(t, "slow", map[string]any{"ms": 1500}, nil) }()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 5000}})
		errc <- err
	}()
	time.Sleep(300 * time.Millisecond)
	// A hostile session names every id it can guess.
	hc := &http.Client{}
	for i := range 40 {
		for _, id := range []string{fmt.Sprint(i), fmt.Sprintf("%q", fmt.Sprint(i)), fmt.Sprintf("%q", fmt.Sprintf("aqlguard-%d", i))} {
			post(t, hc, s.url, a.cs.ID(), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`}}`)
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("a's cancelled call: %v", err)
	}
	if got := <-done; got != "done" {
		t.Fatalf("b's call was cancelled by a: %q", got)
	}
}

// TestSharedServerCrashReachesEverySession: the process dies during two
// sessions' calls; each is told, and both are served again by one new
// process.
func TestSharedServerCrashReachesEverySession(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil)
	b := connectShared(t, s.url, "b", nil)
	pid := a.call(t, "pid", nil, nil)
	var wg sync.WaitGroup
	errs := make([]string, 2)
	for i, c := range []*sharedClient{a, b} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"ms": 5000}})
			errs[i] = fmt.Sprint(err, jsonString(res))
		})
	}
	time.Sleep(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	_, _ = a.cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	wg.Wait()
	for i, e := range errs {
		if !strings.Contains(e, "went away") {
			t.Errorf("session %d's call in flight when the shared server died: %s", i, e)
		}
	}
	var pa, pb string
	waitFor(t, "the shared server to restart", func() bool {
		for _, c := range []*sharedClient{a, b} {
			res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "pid", Arguments: map[string]any{}})
			if err != nil || res.IsError {
				return false
			}
		}
		return true
	})
	pa, pb = a.call(t, "pid", nil, nil), b.call(t, "pid", nil, nil)
	if pa != pb || pa == pid {
		t.Errorf("after the crash a is served by %s, b by %s (before: %s); want one new process", pa, pb, pid)
	}
	if n := testservers(s); n != 1 {
		t.Errorf("%d testserver processes after the restart, want 1", n)
	}
}

// TestSharedServerIsGuardedPerSession: every session's calls are judged
// (the deny blocks the principal, whose sessions both are).
func TestSharedServerIsGuardedPerSession(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil)
	b := connectShared(t, s.url, "b", nil)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	for _, c := range []*sharedClient{a, b} {
		res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "drop_database", Arguments: map[string]any{"name": "prod"}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || strings.Contains(jsonString(res), "dropped") {
			t.Errorf("%s: drop_database through the shared server was not refused: %s", c.name, jsonString(res))
		}
	}
}

// TestSharedServerRoots: sessions whose clients declare other roots than
// those the server was given are refused, with a clear error; pinned
// roots are the server's whatever the clients declare.
func TestSharedServerRoots(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil, "file:///home/a")
	same := connectShared(t, s.url, "same", nil, "file:///home/a")
	other := connectShared(t, s.url, "other", nil, "file:///home/b")
	if got := a.call(t, "roots", nil, nil); got != "file:///home/a" {
		t.Errorf("the shared server's roots: %q, want a's", got)
	}
	if got := same.call(t, "roots", nil, nil); got != "file:///home/a" {
		t.Errorf("a session with the same roots: %q", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := other.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
	text := fmt.Sprint(err, jsonString(res))
	if err == nil && !res.IsError || !strings.Contains(text, "other roots") || !strings.Contains(text, "roots = [") {
		t.Errorf("a session whose client declares other roots: %s", text)
	}
	if strings.Contains(text, "file:///home/a") {
		t.Errorf("the refusal names another session's roots: %s", text)
	}
	// When no session holds the server's roots any more, the refused
	// session's become them.
	_ = a.cs.Close()
	_ = same.cs.Close()
	var got string
	waitFor(t, "the other session to be served once the first two left", func() bool {
		res, err := other.cs.CallTool(ctx, &mcp.CallToolParams{Name: "roots", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			return false
		}
		got = resultText(t, res)
		return true
	})
	if got != "file:///home/b" {
		t.Errorf("the shared server's roots once only the other session is left: %q", got)
	}

	pinned := startServeOn(t, sharedConfig(t, `roots = ["file:///srv/shared"]`), "")
	for _, r := range []string{"file:///home/a", "file:///home/b"} {
		c := connectShared(t, pinned.url, r, nil, r)
		if got := c.call(t, "roots", nil, nil); got != "file:///srv/shared" {
			t.Errorf("pinned roots, client with %s: the server got %q", r, got)
		}
	}
}

// TestSharedServerGuardsEachPrincipal: two principals' sessions share
// one process; a deny blocks the principal that made the call, and the
// other's calls go on through the same process.
func TestSharedServerGuardsEachPrincipal(t *testing.T) {
	cfg := sharedConfig(t, "")
	cfg = strings.Replace(cfg, "auth = \"none\"\n", "", 1)
	cli := t.TempDir()
	cfgPath := filepath.Join(cli, "config.toml")
	writeFile(t, cfgPath, cfg)
	alice := addClient(t, cli, cfgPath, "alice")
	bob := addClient(t, cli, cfgPath, "bob", "--agent", "ci")
	s := startServeEnv(t, readFile(t, cfgPath), "")
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := connectHTTP(t, s.url, bearerClient(token))
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	a, b := connect(alice), connect(bob)
	pa, _ := callText(t, a, "pid", nil)
	pb, _ := callText(t, b, "pid", nil)
	if pa != pb {
		t.Fatalf("alice is served by process %s, bob by %s: want one shared process", pa, pb)
	}
	if text, isErr := callText(t, a, "drop_database", map[string]any{"name": "prod"}); !isErr || strings.Contains(text, "dropped") {
		t.Fatalf("alice's drop_database: %s", text)
	}
	if text, isErr := callText(t, a, "echo", map[string]any{"message": "x"}); !isErr || !strings.Contains(text, "PERMISSION_AGENT_BLOCKED") {
		t.Errorf("alice's call after her block: %s", text)
	}
	if text, isErr := callText(t, b, "echo", map[string]any{"message": "bob"}); isErr || text != "bob" {
		t.Errorf("bob's call through the same process after alice's block: %s", text)
	}
}

// TestSharedEverythingServer: the go-sdk everything-server shared by two
// sessions: each one's elicitation, sampling and progress reach it and
// not the other, from one process.
func TestSharedEverythingServer(t *testing.T) {
	s := startServeOn(t, "mode = \"transparent\"\n"+allowingServe(t)+"[safety]\nauto_approve = [\"*\"]\n"+everythingServer()+"share = true\n", "")
	type session struct {
		c        *modernClient
		cs       *mcp.ClientSession
		progress int
		mu       sync.Mutex
	}
	var sessions []*session
	for range 2 {
		x := &session{c: &modernClient{}}
		opts := x.c.options(false)
		opts.ProgressNotificationHandler = func(context.Context, *mcp.ProgressNotificationClientRequest) {
			x.mu.Lock()
			x.progress++
			x.mu.Unlock()
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0"}, opts).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		x.cs = cs
		sessions = append(sessions, x)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	for i, x := range sessions {
		if got := resultText(t, mustCall(t, ctx, x.cs, "test_elicitation", map[string]any{"message": "who?"}, nil)); !strings.Contains(got, "ada") {
			t.Errorf("session %d: test_elicitation: %s", i, got)
		}
		if got := resultText(t, mustCall(t, ctx, x.cs, "test_sampling", map[string]any{"prompt": "capital of France?"}, nil)); !strings.Contains(got, "Paris") {
			t.Errorf("session %d: test_sampling: %s", i, got)
		}
		mustCall(t, ctx, x.cs, "test_tool_with_progress", map[string]any{}, mcp.Meta{"progressToken": "p-1"})
	}
	time.Sleep(200 * time.Millisecond)
	for i, x := range sessions {
		x.c.mu.Lock()
		e, sm := x.c.elicited, x.c.sampled
		x.c.mu.Unlock()
		x.mu.Lock()
		p := x.progress
		x.mu.Unlock()
		if e != 1 || sm != 1 || p == 0 {
			t.Errorf("session %d was asked %d elicitations and %d samplings (want 1 each) and got %d progress notifications", i, e, sm, p)
		}
	}
	if n := processesOf(s, "everything"); n != 1 {
		t.Errorf("%d everything-server processes for two sessions of a shared one, want 1", n)
	}
}

// TestSharedFilesystemServerGetsPinnedRoots: the npm filesystem server,
// shared with roots pinned in the config, serves those roots whatever
// roots the clients declare.
func TestSharedFilesystemServerGetsPinnedRoots(t *testing.T) {
	cmd, args := fsServer(t)
	pinned, declared := t.TempDir(), t.TempDir()
	s := startServeOn(t, "mode = \"transparent\"\n"+allowingServe(t)+"[safety]\nauto_approve = [\"*\"]\n[[servers]]\nname = \"fs\"\ntrust_first_sight = true\ncommand = "+
		tomlString(cmd)+"\nargs = "+tomlArray(args...)+"\nshare = true\nroots = ["+tomlString("file://"+pinned)+"]\n", "")
	for _, name := range []string{"a", "b"} {
		c := connectShared(t, s.url, name, nil, "file://"+declared)
		var got string
		waitFor(t, "the filesystem server to take the pinned roots", func() bool {
			got = c.call(t, "list_allowed_directories", map[string]any{}, nil)
			return strings.Contains(got, pinned)
		})
		if strings.Contains(got, declared) {
			t.Errorf("client %s: the shared filesystem server allows the client's declared root: %s", name, got)
		}
	}
}

// TestSharedServerProgressIsPerSession: two sessions' calls in flight at
// once with the same progress token; each gets its own call's progress.
func TestSharedServerProgressIsPerSession(t *testing.T) {
	s := startServeOn(t, sharedConfig(t, ""), "")
	a := connectShared(t, s.url, "a", nil)
	b := connectShared(t, s.url, "b", nil)
	var wg sync.WaitGroup
	for _, c := range []*sharedClient{a, b} {
		wg.Go(func() {
			c.call(t, "slow", map[string]any{"ms": 400, "label": "of-" + c.name}, mcp.Meta{"progressToken": 7})
		})
	}
	wg.Wait()
	time.Sleep(200 * time.Millisecond)
	for _, c := range []*sharedClient{a, b} {
		c.mu.Lock()
		got := strings.Join(c.progress, ",")
		c.mu.Unlock()
		if want := "of-" + c.name + ",of-" + c.name; got != want {
			t.Errorf("%s got progress %q, want %q", c.name, got, want)
		}
	}
}

// TestSharedServerUnderRun: `aqlguard run` has one session; a server
// with share = true serves it, with its pinned roots, not the client's.
func TestSharedServerUnderRun(t *testing.T) {
	client := &mcp.ClientOptions{}
	g, err := launchGuard(t, guardOptions{Client: client, Config: "mode = \"transparent\"\n[safety]\nauto_approve = [\"*\"]\n[[servers]]\nname = \"ts\"\ntrust_first_sight = true\ncommand = " +
		tomlString(bins.testserver) + "\nargs = [\"-session-tools\"]\nshare = true\nroots = [\"file:///srv/pinned\"]\n"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.callRaw("roots", map[string]any{})
	if err != nil || res.IsError {
		t.Fatalf("roots: %v %s", err, jsonString(res))
	}
	if got := resultText(t, res); got != "file:///srv/pinned" {
		t.Errorf("under run, the shared server's roots: %q, want the pinned ones", got)
	}
}

// TestSharedServerWithModernClients: a client that speaks 2026-07-28 (no
// session; a server's question carried in its call's answer) and one of
// 2025-11-25 use one shared everything-server, which is spoken to in
// 2025-11-25: each gets its own elicitation and sampling, in its own
// revision, from the one process.
func TestSharedServerWithModernClients(t *testing.T) {
	s := startServeOn(t, "mode = \"transparent\"\n"+allowingServe(t)+"[safety]\nauto_approve = [\"*\"]\n"+everythingServer()+"share = true\n", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	modern, legacy := &modernClient{}, &modernClient{}
	mcs, err := mcp.NewClient(&mcp.Implementation{Name: "modern", Version: "0"}, modern.options(true)).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mcs.Close() })
	if got := mcs.InitializeResult().ProtocolVersion; got != modernVersion {
		t.Fatalf("the modern client negotiated %q, want %q", got, modernVersion)
	}
	lcs, err := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "0"}, legacy.options(false)).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lcs.Close() })

	// In turns: a question a server asks while two sessions have calls
	// in flight, naming neither's progress token, is refused (never
	// guessed; TestSharedServerElicitationGoesToItsCaller).
	for range 3 {
		for _, c := range []struct {
			name string
			cs   *mcp.ClientSession
		}{{"modern", mcs}, {"legacy", lcs}} {
			if got := resultText(t, mustCall(t, ctx, c.cs, "test_elicitation", map[string]any{"message": "who?"}, nil)); !strings.Contains(got, "ada") {
				t.Errorf("%s: test_elicitation: %s", c.name, got)
			}
			if got := resultText(t, mustCall(t, ctx, c.cs, "test_sampling", map[string]any{"prompt": "capital of France?"}, nil)); !strings.Contains(got, "Paris") {
				t.Errorf("%s: test_sampling: %s", c.name, got)
			}
		}
	}
	for name, c := range map[string]*modernClient{"modern": modern, "legacy": legacy} {
		c.mu.Lock()
		e, sm := c.elicited, c.sampled
		c.mu.Unlock()
		if e != 3 || sm != 3 {
			t.Errorf("the %s client was asked %d elicitations and %d samplings, want 3 each", name, e, sm)
		}
	}
	if n := processesOf(s, "everything"); n != 1 {
		t.Errorf("%d everything-server processes for a modern and a legacy client of a shared one, want 1", n)
	}
}
