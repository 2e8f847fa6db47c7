package httpfront

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// fakeTenant is a Tenant whose Drop says what the test tells it.
type fakeTenant struct {
	name    string
	rc      *relay.Config
	dropErr atomic.Pointer[error]
	gate    chan struct{} // non-nil: Drop waits for it
	dropped atomic.Bool
}

func (t *fakeTenant) Relay() *relay.Config { return t.rc }
func (t *fakeTenant) Drop(context.Context) error {
	if t.gate != nil {
		<-t.gate
	}
	if p := t.dropErr.Load(); p != nil {
		return *p
	}
	t.dropped.Store(true)
	return nil
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newPrincipals is a Principals of fake tenants, with what each Make made.
func newPrincipals() (*Principals[*fakeTenant], *fakeClock, *[]*fakeTenant) {
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	var mu sync.Mutex
	var made []*fakeTenant
	p := &Principals[*fakeTenant]{Idle: time.Minute, now: clock.now,
		Make: func(_ context.Context, name string) (*fakeTenant, error) {
			if strings.HasPrefix(name, "bad") {
				return nil, errors.New("no policy for " + name)
			}
			t := &fakeTenant{name: name, rc: &relay.Config{Version: name}}
			mu.Lock()
			made = append(made, t)
			mu.Unlock()
			return t, nil
		}}
	return p, clock, &made
}

func errp(err error) *error { return &err }

// TestPrincipalsDropOnlyWhatNobodyHolds: the eviction rules. A tenant
// held (a session open, a request in flight) is never dropped however
// long; one let go is dropped once idle for Idle, not before; one whose
// Drop refuses (busy, or the state unreachable) is kept and dropped at a
// later Reap; a principal that comes back gets a new tenant.
func TestPrincipalsDropOnlyWhatNobodyHolds(t *testing.T) {
	ctx := context.Background()
	p, clock, made := newPrincipals()
	_, releaseA, err := p.Hold(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	rcB, releaseB, _ := p.Hold(ctx, "bob")
	rcB2, releaseB2, _ := p.Hold(ctx, "bob") // a second session of bob's
	if rcB != rcB2 || len(*made) != 2 {
		t.Fatalf("one tenant per principal: %d made", len(*made))
	}
	releaseB()
	releaseB() // twice is once
	clock.add(time.Hour)
	if n := p.Reap(ctx); n != 0 || p.Len() != 2 {
		t.Fatalf("held tenants dropped: %d, %d left", n, p.Len())
	}
	releaseA()
	releaseB2()
	clock.add(59 * time.Second)
	if n := p.Reap(ctx); n != 0 {
		t.Fatalf("dropped before Idle: %d", n)
	}
	alice := (*made)[0]
	alice.dropErr.Store(errp(fmt.Errorf("%w: a question is on the screen", parking.ErrBusy)))
	clock.add(time.Second)
	if n := p.Reap(ctx); n != 1 || p.Len() != 1 || !(*made)[1].dropped.Load() || alice.dropped.Load() {
		t.Fatalf("reap: %d dropped, %d left", n, p.Len())
	}
	alice.dropErr.Store(nil)
	if n := p.Reap(ctx); n != 1 || p.Len() != 0 || !alice.dropped.Load() {
		t.Fatalf("the busy tenant once it is not: %d dropped, %d left", n, p.Len())
	}
	if rc, release, _ := p.Hold(ctx, "bob"); rc == rcB || len(*made) != 3 {
		t.Errorf("bob came back to a dropped tenant")
	} else {
		release()
	}
}

// TestPrincipalsReturnDuringADrop: a principal that comes back while its
// tenant is being dropped waits for the drop: it gets a new tenant if the
// drop wrote what the old one owed, the old one if the drop failed;
// never two tenants at once.
func TestPrincipalsReturnDuringADrop(t *testing.T) {
	ctx := context.Background()
	for _, fails := range []bool{false, true} {
		p, clock, made := newPrincipals()
		rc, release, _ := p.Hold(ctx, "alice")
		release()
		old := (*made)[0]
		old.gate = make(chan struct{})
		if fails {
			old.dropErr.Store(errp(errors.New("the state is unreachable")))
		}
		clock.add(time.Hour)
		reaped := make(chan int)
		go func() { reaped <- p.Reap(ctx) }()
		held := make(chan *relay.Config)
		go func() {
			for begun := false; !begun; time.Sleep(time.Millisecond) { // the drop has begun
				p.mu.Lock()
				begun = p.held["alice"].dropping != nil
				p.mu.Unlock()
			}
			got, release, err := p.Hold(ctx, "alice")
			if err != nil {
				t.Error(err)
			}
			release()
			held <- got
		}()
		select {
		case <-held:
			t.Fatalf("fails %v: the principal came back during its drop", fails)
		case <-time.After(50 * time.Millisecond):
		}
		close(old.gate)
		<-reaped
		got := <-held
		if fails && (got != rc || len(*made) != 1) {
			t.Errorf("the drop failed, and the principal got a new tenant (%d made)", len(*made))
		}
		if !fails && (got == rc || len(*made) != 2) {
			t.Errorf("the drop succeeded, and the principal got the dropped tenant (%d made)", len(*made))
		}
	}
}

// TestPrincipalsMakeFails: a tenant that cannot be made refuses its
// session and is tried again by the next.
func TestPrincipalsMakeFails(t *testing.T) {
	p, _, _ := newPrincipals()
	calls := 0
	inner := p.Make
	p.Make = func(ctx context.Context, name string) (*fakeTenant, error) {
		calls++
		return inner(ctx, name)
	}
	for range 2 {
		if _, _, err := p.Hold(context.Background(), "bad-one"); err == nil {
			t.Fatal("a tenant that could not be made was held")
		}
	}
	if calls != 2 || p.Len() != 0 {
		t.Errorf("made %d times, %d kept", calls, p.Len())
	}
}

// TestSessionsHoldTheirPrincipal: through the front, a session of either
// kind holds its principal's tenant from its first request to its end;
// only then can the tenant be dropped.
func TestSessionsHoldTheirPrincipal(t *testing.T) {
	tok, digest := clientauth.NewToken()
	cfg := &config.Config{Agent: "default", Serve: config.Serve{Clients: []config.ServeClient{{Name: "a", TokenSHA256: digest}}}}
	auth := clientauth.New(clientauth.StaticClients(cfg, ""), cfg.Agent, nil, nil)
	p, clock, made := newPrincipals()
	p.Make = func(_ context.Context, name string) (*fakeTenant, error) {
		t := &fakeTenant{name: name, rc: &relay.Config{Version: "test", ProtocolVersions: []string{"2025-11-25"}, Log: slog.New(slog.DiscardHandler),
			NewTools: func(*relay.Session) (relay.Tools, error) { return noTools{}, nil }}}
		*made = append(*made, t)
		return t, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := New(ctx, &relay.Config{}, Options{Auth: auth, RelayFor: func(ctx context.Context, id clientauth.Identity) (*relay.Config, func(), error) {
		return p.Hold(ctx, id.Principal)
	}})
	defer f.Close()
	do := func(method, session, body string, headers ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", "Bearer "+tok)
		if session != "" {
			r.Header.Set(headerSession, session)
		}
		for i := 0; i+1 < len(headers); i += 2 {
			r.Header.Set(headers[i], headers[i+1])
		}
		w := httptest.NewRecorder()
		f.ServeHTTP(w, r)
		return w
	}
	idle := func() bool {
		clock.add(time.Hour)
		return p.Reap(context.Background()) == 1
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`
	w := do(http.MethodPost, "", initialize)
	id := w.Header().Get(headerSession)
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %s", w.Code, w.Body)
	}
	if idle() {
		t.Fatal("the tenant of an open session was dropped")
	}
	if w := do(http.MethodDelete, id, ""); w.Code != http.StatusNoContent {
		t.Fatalf("delete: %d", w.Code)
	}
	waitUntil(t, idle) // the session's end runs on its own goroutine
	if len(*made) != 1 {
		t.Fatalf("%d tenants made", len(*made))
	}

	// A 2026-07-28 client: its shared session holds the tenant.
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{` + modernMeta + `}}`
	if w := do(http.MethodPost, "", body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list"); w.Code != http.StatusOK {
		t.Fatalf("a 2026-07-28 request: %d %s", w.Code, w.Body)
	}
	if len(*made) != 2 {
		t.Fatalf("the principal came back: %d tenants made", len(*made))
	}
	if idle() {
		t.Fatal("the tenant of an open 2026-07-28 session was dropped")
	}
	f.mu.Lock()
	var conns []*statelessConn
	for _, c := range f.stateless {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	for _, c := range conns {
		c.cancel()
		<-c.done
	}
	if !idle() {
		t.Fatal("the tenant outlived its principal's sessions")
	}
}

// waitUntil polls cond for up to five seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestPrincipalsKeepMaxIdle: principals that arrive faster than Idle
// lets their tenants go leave at most MaxIdle idle tenants behind: the
// longest idle go first, and the held ones stay.
func TestPrincipalsKeepMaxIdle(t *testing.T) {
	ctx := context.Background()
	p, clock, made := newPrincipals()
	p.MaxIdle = 2
	_, keep, _ := p.Hold(ctx, "held")
	for i := range 5 {
		_, release, err := p.Hold(ctx, fmt.Sprint("p", i))
		if err != nil {
			t.Fatal(err)
		}
		clock.add(time.Second)
		release()
	}
	if n := p.Reap(ctx); n != 3 || p.Len() != 3 {
		t.Fatalf("%d dropped, %d left; want the 3 longest idle dropped", n, p.Len())
	}
	for i, want := range []bool{false, true, true, true, false, false} { // held, p0 … p4
		if got := (*made)[i].dropped.Load(); got != want {
			t.Errorf("%s dropped %v", (*made)[i].name, got)
		}
	}
	keep()
}

// TestRunReapsPastMaxIdle: Run does not wait for its tick once MaxIdle is
// passed.
func TestRunReapsPastMaxIdle(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, _, _ := newPrincipals()
	p.MaxIdle, p.Idle = 1, time.Hour
	go p.Run(ctx)
	for i := range 3 {
		_, release, _ := p.Hold(ctx, fmt.Sprint("p", i))
		release()
	}
	waitUntil(t, func() bool { return p.Len() <= 1 })
}
