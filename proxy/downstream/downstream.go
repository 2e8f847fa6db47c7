// Package downstream connects aqlguard to the MCP servers it guards: it
// launches stdio servers (each in a process group of its own) and
// connects to Streamable HTTP and SSE ones, all in parallel and each under
// its own start timeout, initializes them with the client's own
// initialize parameters, and then carries JSON-RPC both ways as raw
// bytes (package link). A server that fails to start is kept, marked
// failed, so introspection can report it while the others serve; one that
// dies is restarted with backoff when the pool is asked to.
//
// A Pool is one client session's servers and that session's forwarding
// to them (forward.go): the function the guard calls for an allowed
// call, progress tokens, the calls in flight, a 2026-07-28 server's
// input rounds, task ids as the client sees them. The relay reaches the
// client; nothing between the guard and a server goes back through it.
package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// ProtocolVersion is the MCP version aqlguard asks downstream servers for
// when it has no client's initialize to pass on. 2025-11-25 is the newest
// version an initialize handshake negotiates; asking for 2026-07-28 would
// first send server/discover, which older servers (most of npm today) do
// not know.
const ProtocolVersion = "2025-11-25"

// Status is a server's state.
type Status string

const (
	Starting   Status = "starting"
	Ready      Status = "ready"
	Failed     Status = "failed"
	Restarting Status = "restarting"
	Stopped    Status = "stopped"
)

// Upstream receives what servers send on their own: requests to the
// client (sampling, elicitation, roots) and notifications (progress,
// log messages, list changes, resource updates). A relay implements it.
type Upstream interface {
	ServerRequest(ctx context.Context, s *Server, req *jsonrpc.Request) (json.RawMessage, error)
	ServerNotification(ctx context.Context, s *Server, req *jsonrpc.Request)
	// ServerRestarted is called after a server that died is back (its
	// tools may have changed).
	ServerRestarted(s *Server)
	// ToolsRefreshed is called after each refresh the server asked for
	// (Refresh), whether or not what its state holds changed: the server
	// said its tools changed, and a client told so lists them again
	// (what it sees is only ever what was vetted).
	ToolsRefreshed(s *Server)
}

// Listing is a server's tools: decoded, as sent (in the same order), and
// the names of those whose definition as listed was not accepted.
type Listing struct {
	Tools []*mcp.Tool
	Raws  []json.RawMessage
	// Withheld names the tools listed with a definition that was not
	// accepted: the listing holds their last accepted one, and calls to
	// them are refused.
	Withheld map[string]bool
}

// Vet checks a listing of a server's tools before it becomes the
// server's state (tool pinning): it returns what may be shown. An error
// withholds every tool of the listing.
type Vet func(ctx context.Context, server string, l Listing) (Listing, error)

// Options configure a Pool.
type Options struct {
	// Version is aqlguard's, for the clientInfo it sends without a client.
	Version string
	// Initialize is the params of the client's initialize request, passed
	// on to every server as they are (the client's name, capabilities and
	// protocol version); nil sends aqlguard's own.
	Initialize json.RawMessage
	// Upstream receives what servers send on their own; nil answers their
	// requests with "method not found" and drops their notifications.
	Upstream Upstream
	// Client is the client side of the requests the pool forwards
	// (Forward); nil: a 2026-07-28 server's question in a call fails it.
	Client Client
	// Modern says the client speaks 2026-07-28 (revision.Modern). A server
	// set to protocol "auto" is spoken to in its client's revision when
	// it speaks both — a server of both revisions serves each as that
	// revision says (a tool that asks the client mid-call does so only
	// in 2025-11-25), so the client gets what it would get directly —
	// and in the one it speaks otherwise, which the relay translates.
	Modern bool
	// Restart restarts a server that dies, with backoff.
	Restart bool
	// Restarted, when set, is told of every server brought back after
	// it died (for the restarts metric).
	Restarted func(server string)
	// Vet, when set, checks every listing of a server's tools (at start,
	// after a restart, on a refresh) before it becomes the server's
	// state: nothing unvetted is ever shown.
	Vet Vet
	// Auth authorizes to remote servers with auth = "oauth"; nil fails
	// them.
	Auth *remoteauth.Manager
	// Hub, when set, runs the servers configured with share = true: one
	// process for the pools of every session (shared.go). Without it a
	// shared server is started per pool, as any other.
	Hub *Hub
	// Sandbox, when set, is told of each stdio server's start with the
	// grant it is confined to, and of what its sandbox refused it (the
	// audit log records both).
	Sandbox SandboxRecorder
	Log     *slog.Logger
}

// State is a server's state at one moment.
type State struct {
	Status Status
	// Modern is true for a server spoken to in 2026-07-28 (revision.Modern),
	// false for one initialized in an older revision (Protocol).
	Modern bool
	// Problem is a user-facing description of why the server is not
	// ready: fixed phrases only, so it can be shown in introspection. The
	// full error is in the log.
	Problem  string
	Protocol string
	// Init is the server's answer to initialize, decoded; InitRaw is it as
	// sent, which transparent mode passes on.
	Init    *mcp.InitializeResult
	InitRaw json.RawMessage
	// DiscoverRaw is a 2026-07-28 server's answer to server/discover, as
	// sent (InitRaw is then made from it).
	DiscoverRaw json.RawMessage
	// Capabilities are the server's capabilities as sent, by name
	// ("tools", "resources", "prompts", "completions", "logging", ...).
	Capabilities map[string]json.RawMessage
	// Tools are the server's tools, decoded (for the catalog); ToolsRaw
	// are the same tools as sent, in the same order. Both hold only what
	// Options.Vet let through.
	Tools    []*mcp.Tool
	ToolsRaw []json.RawMessage
	// Withheld names the tools whose listed definition was not accepted
	// (Listing.Withheld).
	Withheld map[string]bool
	// vetErr says the last listing could not be vetted (every tool is
	// withheld): it is listed again.
	vetErr error
	// Restarts counts how often the server was restarted after dying.
	Restarts int
	// Attempt is the restart attempt a restarting server waits for, and
	// NextAttempt when it comes (zero when it is not restarting).
	Attempt     int
	NextAttempt time.Time
}

// Server is one downstream server.
type Server struct {
	Name      string
	Transport string

	cfg  config.Server
	pool *Pool
	log  *slog.Logger

	mu      sync.RWMutex
	state   State
	peer    *link.Peer
	conn    *conn
	stopped bool // for good: no restart, no late start
	// member is the server's place in a shared process (share = true),
	// nil for one of its own; peer is then the shared process's.
	member *member
	// crashes counts the restart attempts of a crash loop (restart.go);
	// upSince is when the running connection started.
	crashes int
	upSince time.Time

	// modern is what a 2026-07-28 server's connections share: its log
	// level, listen streams and subscriptions (modern.go).
	modern *revision.ServerSession

	// A 2025-11-25 server's log level and subscriptions (renew.go).
	asked asked

	// listing is a one-slot turn: one listing of the tools at a time.
	listing chan struct{}
	// The refresh the server asked for (Refresh): at most one runs; a
	// request meanwhile makes it run once more; they start at the pace
	// refreshPace allows.
	refreshMu    sync.Mutex
	refreshing   bool
	refreshAgain bool
	refreshPace  *rate.Limiter
}

// Refreshes a server asks for (notifications/tools/list_changed) start
// at most refreshBurst at once and then one per refreshEvery: a server
// that sends them in a loop gets that many listings, however many it
// sends.
const (
	refreshEvery = 250 * time.Millisecond
	refreshBurst = 2
)

func newServer(c config.Server, p *Pool, log *slog.Logger) *Server {
	s := &Server{Name: c.Name, Transport: c.Transport, cfg: c, pool: p, log: log.With("server", c.Label()),
		listing: make(chan struct{}, 1), refreshPace: rate.NewLimiter(rate.Every(refreshEvery), refreshBurst)}
	s.state.Status = Starting
	s.modern = revision.NewServerSession(c.Name, p.clientMeta, restartDelay, s.log)
	return s
}

// Pool is the set of downstream servers of one client session, and that
// session's forwarding to them (forward.go).
type Pool struct {
	mu      sync.RWMutex // guards servers and byName (Update changes them)
	servers []*Server
	byName  map[string]*Server
	opts    Options
	closing atomic.Bool
	ctx     context.Context // ends at Close: restarts stop
	cancel  context.CancelFunc

	progressN atomic.Int64
	fmu       sync.Mutex               // guards progress and calling
	progress  map[string]progressRoute // our token → the client's
	calling   []serverCall             // the client's requests being forwarded, oldest first
}

// Start connects to every configured server in parallel. It returns when
// each has either listed its tools or failed (or hit its start timeout);
// it never fails as a whole.
func Start(ctx context.Context, cfgs []config.Server, opts Options) *Pool {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &Pool{byName: map[string]*Server{}, opts: opts, ctx: life, cancel: cancel}
	var wg sync.WaitGroup
	for _, c := range cfgs {
		s := newServer(c, p, opts.Log)
		p.servers = append(p.servers, s)
		p.byName[c.Name] = s
		wg.Go(func() { s.start(ctx, false) })
	}
	wg.Wait()
	return p
}

// Servers returns every configured server, in config order.
func (p *Pool) Servers() []*Server {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Clone(p.servers)
}

// Server finds a server by name.
func (p *Pool) Server(name string) (*Server, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s, ok := p.byName[name]
	return s, ok
}

// Update makes the pool the servers of cfgs (a reload): a server whose
// configuration did not change keeps running, untouched; a changed one
// is stopped and started anew; a new one is started; a removed one is
// stopped. It returns the names of the servers that changed, in any way.
func (p *Pool) Update(ctx context.Context, cfgs []config.Server) []string {
	p.mu.Lock()
	old := p.byName
	var next []*Server
	var start, stop []*Server
	var changed []string
	for _, c := range cfgs {
		if s, ok := old[c.Name]; ok && reflect.DeepEqual(s.cfg, c) {
			next = append(next, s)
			continue
		}
		s := newServer(c, p, p.opts.Log)
		next = append(next, s)
		start = append(start, s)
		changed = append(changed, c.Name)
		if prev, ok := old[c.Name]; ok {
			stop = append(stop, prev)
		}
	}
	kept := map[string]bool{}
	for _, s := range next {
		kept[s.Name] = true
	}
	for name, s := range old {
		if !kept[name] {
			stop = append(stop, s)
			changed = append(changed, name)
		}
	}
	p.servers = next
	p.byName = make(map[string]*Server, len(next))
	for _, s := range next {
		p.byName[s.Name] = s
	}
	p.mu.Unlock()
	for _, s := range stop {
		s.stop()
	}
	var wg sync.WaitGroup
	for _, s := range start {
		wg.Go(func() { s.start(ctx, false) })
	}
	wg.Wait()
	return changed
}

// State returns the server's state now.
func (s *Server) State() State {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state
}

// start connects, initializes and lists tools; on failure the server is
// marked failed (or, when restarting, tried again later).
func (s *Server) start(ctx context.Context, restart bool) bool {
	if s.shared() {
		return s.startShared(ctx, restart)
	}
	timeout := s.cfg.StartTimeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	st, c, peer, err := s.connect(sctx, serverHandler{s}, s.pool.opts.Modern)
	if err != nil {
		s.failedStart(startProblem(sctx, err, timeout, c), err, restart)
		return false
	}
	// Whatever revision listed them, the tools are vetted before the
	// state holds them.
	if _, ok := st.Capabilities["tools"]; ok {
		l, err := s.vet(sctx, Listing{Tools: st.Tools, Raws: st.ToolsRaw})
		st.Tools, st.ToolsRaw, st.Withheld, st.vetErr = l.Tools, l.Raws, l.Withheld, err
	}
	s.mu.Lock()
	if s.stopped || s.pool.closing.Load() { // stopped while it started
		s.mu.Unlock()
		_ = peer.Close()
		c.closeAll()
		return false
	}
	st.Restarts = s.state.Restarts
	s.state, s.peer, s.conn = st, peer, c
	s.upSince = time.Now()
	s.mu.Unlock()
	if st.vetErr != nil {
		s.Refresh() // its tools are withheld until they can be vetted
	}
	s.log.Info("downstream server ready", "tools", len(st.Tools), "protocol", st.Protocol,
		"transport", s.cfg.Transport, "elapsed", time.Since(began).Round(time.Millisecond))
	if st.Modern {
		s.modern.OpenListens(peer, st.Capabilities)
	}
	go s.watch(peer, c)
	return true
}

// failedStart marks a server whose start failed (or, when a first start
// failed and servers restart, tries it again later).
func (s *Server) failedStart(problem string, err error, restart bool) {
	s.log.Error("downstream server failed to start", "problem", problem, "err", err)
	s.mu.Lock()
	retry := !restart && s.pool.opts.Restart && !s.stopped && !s.pool.closing.Load()
	switch {
	case retry:
		// A first start that failed is tried again, with the backoff
		// of a crash loop: the command may be installed, the network
		// back, a moment later.
		s.state.Status = Restarting
	case !restart:
		s.state.Status = Failed
	}
	s.state.Problem = problem
	s.mu.Unlock()
	if retry {
		go s.restart()
	}
}

// connect runs one connection's handshake: dial, initialize (the
// client's parameters), initialized, tools/list (every page). h serves
// what the server sends on its own; modern says the client speaks
// 2026-07-28.
func (s *Server) connect(ctx context.Context, h link.Handler, modern bool) (State, *conn, *link.Peer, error) {
	c, err := dial(ctx, s.cfg, s.pool.opts.Auth, s.pool.opts.Sandbox, s.log)
	if err != nil {
		return State{}, nil, nil, fmt.Errorf("connect: %w", err)
	}
	if sc, ok := c.Connection.(*streamableConn); ok {
		sc.bindings = s.paramBindings
	}
	peer := link.New(c, h, s.log)
	peer.IDPrefix = "aqlguard-"
	peer.Start()
	tryModern := s.cfg.Protocol == revision.Modern || s.cfg.Protocol != ProtocolVersion && modern
	if !tryModern && s.cfg.Protocol != ProtocolVersion {
		// A client of an older revision: initialize first, and only a
		// server that refuses it is asked whether it speaks 2026-07-28.
		st, err := s.initialize(ctx, peer)
		var werr *jsonrpc.Error
		if err == nil || !errors.As(err, &werr) {
			return st, c, peer, err
		}
		s.log.Debug("initialize was refused; asking whether the server speaks "+revision.Modern, "err", err)
		tryModern = true
	}
	if tryModern {
		st, modern, err := s.discover(ctx, peer)
		switch {
		case err != nil:
			return State{}, c, nil, fmt.Errorf("server/discover: %w", err)
		case modern:
			if _, ok := st.Capabilities["tools"]; ok {
				call := func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
					return peer.Call(ctx, method, s.modernParams(params))
				}
				if st.Tools, st.ToolsRaw, err = listTools(ctx, call); err != nil {
					return State{}, c, nil, err
				}
				if s.cfg.Transport == "streamable" {
					st.Tools, st.ToolsRaw = s.validForHTTP(st.Tools, st.ToolsRaw)
				}
			}
			return st, c, peer, nil
		case s.cfg.Protocol == revision.Modern:
			return State{}, c, nil, errors.New("the server does not speak MCP " + revision.Modern + " (server/discover), which its protocol setting asks for")
		}
	}
	st, err := s.initialize(ctx, peer)
	return st, c, peer, err
}

// initialize runs the handshake of the older revisions: initialize (the
// client's parameters), initialized, tools/list (every page).
func (s *Server) initialize(ctx context.Context, peer *link.Peer) (State, error) {
	st := State{Status: Ready}
	params := s.pool.opts.Initialize
	if params == nil {
		params, _ = json.Marshal(map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "aqlguard", "version": s.pool.opts.Version}})
	}
	raw, err := peer.Call(ctx, mcpmethod.Initialize, params)
	if err != nil {
		return State{}, fmt.Errorf("initialize: %w", err)
	}
	var init mcp.InitializeResult
	if err := json.Unmarshal(raw, &init); err != nil {
		return State{}, fmt.Errorf("initialize: the server's answer does not decode: %w", err)
	}
	st.Init, st.InitRaw, st.Protocol = &init, raw, init.ProtocolVersion
	var caps struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(raw, &caps)
	st.Capabilities = caps.Capabilities
	if err := peer.Notify(ctx, "notifications/initialized", json.RawMessage(`{}`)); err != nil {
		return State{}, err
	}
	if _, ok := st.Capabilities["tools"]; ok {
		if st.Tools, st.ToolsRaw, err = listTools(ctx, peer.Call); err != nil {
			return State{}, err
		}
	}
	return st, nil
}

// vet passes a listing through Options.Vet; a vetting that fails
// withholds every tool (and is logged, and returned).
func (s *Server) vet(ctx context.Context, l Listing) (Listing, error) {
	v := s.pool.opts.Vet
	if v == nil {
		return l, nil
	}
	out, err := v(ctx, s.Name, l)
	if err != nil {
		s.log.Error("the server's tools could not be checked against their pins; they are withheld until they can be", "tools", len(l.Tools), "err", err)
		return Listing{}, err
	}
	return out, nil
}

// RefreshTools lists the server's tools again, vets them (Options.Vet)
// and makes them the server's state; it reports whether the state's
// tools changed. One listing runs at a time; the wait for it ends with
// ctx.
func (s *Server) RefreshTools(ctx context.Context) (changed bool, err error) {
	select {
	case s.listing <- struct{}{}:
		defer func() { <-s.listing }()
	case <-ctx.Done():
		return false, fmt.Errorf("listing the tools of %s: %w", s.Name, ctx.Err())
	}
	s.mu.RLock()
	peer, modern := s.peer, s.state.Modern
	s.mu.RUnlock()
	if peer == nil {
		return false, s.unavailable()
	}
	call := peer.Call
	if modern {
		call = func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			return peer.Call(ctx, method, s.modernParams(params))
		}
	}
	tools, raws, err := listTools(ctx, call)
	if err != nil {
		return false, err
	}
	if modern && s.cfg.Transport == "streamable" {
		tools, raws = s.validForHTTP(tools, raws)
	}
	l, vetErr := s.vet(ctx, Listing{Tools: tools, Raws: raws})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peer != peer {
		return false, nil // restarted meanwhile: the restart listed them
	}
	changed = !sameListing(s.state, l)
	s.state.Tools, s.state.ToolsRaw, s.state.Withheld, s.state.vetErr = l.Tools, l.Raws, l.Withheld, vetErr
	return changed, vetErr
}

// sameListing reports whether st already holds l.
func sameListing(st State, l Listing) bool {
	return slices.EqualFunc(st.ToolsRaw, l.Raws, func(a, b json.RawMessage) bool { return string(a) == string(b) }) &&
		maps.Equal(st.Withheld, l.Withheld)
}

// Refresh lists the server's tools again because the server said they
// changed (notifications/tools/list_changed), without waiting: at most
// one such refresh runs per server, a request that comes meanwhile makes
// it run once more (not once per request), and they start at a bounded
// pace (refreshEvery). Each refresh is reported to the pool's Upstream
// (ToolsRefreshed), so the client hears of them at that pace too; one
// that failed (the pins could not be checked, the server did not answer)
// is tried again, up to maxRefreshRetries times. A server that sends
// list_changed in a loop costs a bounded number of listings and no
// memory per notification.
func (s *Server) Refresh() {
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	s.refreshAgain = true
	if s.refreshing {
		return
	}
	s.refreshing = true
	go s.refreshLoop()
}

// maxRefreshRetries bounds the listings tried again, one after another,
// after a refresh that failed (a server that did not answer); the next
// request starts afresh. Tools that could not be vetted (their pins
// could not be read: the state database is down) are listed again
// beyond it, every unvettedRetry at most, for as long as they are
// withheld: nobody else would ask again, and the session must get its
// tools back by itself when the state answers.
const (
	maxRefreshRetries = 5
	unvettedRetry     = 5 * time.Second
)

func (s *Server) refreshLoop() {
	ctx := s.pool.ctx
	failed := 0
	for s.refreshWanted(failed) {
		if failed > maxRefreshRetries {
			select {
			case <-ctx.Done():
				s.endRefresh()
				return
			case <-time.After(min(unvettedRetry, refreshEvery<<min(failed-maxRefreshRetries, 5))):
			}
		}
		if err := s.refreshPace.Wait(ctx); err != nil {
			s.endRefresh()
			return // the pool is closing
		}
		changed, err := s.RefreshTools(ctx)
		switch {
		case err == nil && failed > maxRefreshRetries:
			s.log.Info("the server's tools were listed and vetted again", "attempts", failed+1)
			failed = 0
		case err == nil:
			failed = 0
		case failed < maxRefreshRetries:
			failed++
			s.log.Warn("listing the server's tools failed", "attempt", failed, "err", err)
		default:
			failed++
			if !s.unvetted() {
				s.log.Warn("listing the server's tools failed", "attempt", failed, "err", err)
			} else if failed == maxRefreshRetries+1 {
				s.log.Warn("the server's tools stay withheld until their pins can be read; listing them again every few seconds",
					"err", err)
			}
		}
		if up := s.pool.opts.Upstream; (err == nil || changed) && up != nil {
			up.ToolsRefreshed(s)
		}
	}
}

// refreshWanted reports whether the refresh loop lists the tools (once
// more): at its start, when a request came meanwhile, or to retry a
// failed one; else it ends the loop. A stopped server (a reload replaced
// or removed it) is not listed again.
func (s *Server) refreshWanted(failed int) bool {
	s.mu.RLock()
	stopped := s.stopped
	s.mu.RUnlock()
	unvetted := s.unvetted()
	s.refreshMu.Lock()
	defer s.refreshMu.Unlock()
	if stopped || !s.refreshAgain && (failed == 0 || failed > maxRefreshRetries && !unvetted) {
		s.refreshing, s.refreshAgain = false, false
		return false
	}
	s.refreshAgain = false
	return true
}

// ToolsWithheld reports whether the server's tools are withheld because
// its last listing could not be vetted (its pins could not be read): a
// call naming one of them is refused as unavailable, not as unknown.
func (s *Server) ToolsWithheld() bool { return s.unvetted() }

// unvetted reports whether the server's last listing could not be
// vetted (every tool withheld).
func (s *Server) unvetted() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.state.vetErr != nil
}

func (s *Server) endRefresh() {
	s.refreshMu.Lock()
	s.refreshing, s.refreshAgain = false, false
	s.refreshMu.Unlock()
}

// maxToolPages bounds tools/list pagination against a server that never
// stops handing out cursors.
const maxToolPages = 1000

func listTools(ctx context.Context, call func(context.Context, string, json.RawMessage) (json.RawMessage, error)) ([]*mcp.Tool, []json.RawMessage, error) {
	var tools []*mcp.Tool
	var raws []json.RawMessage
	cursor := ""
	for range maxToolPages {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = json.Marshal(map[string]string{"cursor": cursor})
		}
		raw, err := call(ctx, mcpmethod.ToolsList, params)
		if err != nil {
			return nil, nil, fmt.Errorf("tools/list: %w", err)
		}
		var page struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, nil, fmt.Errorf("tools/list: the answer does not decode: %w", err)
		}
		for _, r := range page.Tools {
			var t mcp.Tool
			if err := json.Unmarshal(r, &t); err != nil {
				return nil, nil, fmt.Errorf("tools/list: a tool does not decode: %w", err)
			}
			tools = append(tools, &t)
			raws = append(raws, r)
		}
		if page.NextCursor == "" {
			return tools, raws, nil
		}
		cursor = page.NextCursor
	}
	return nil, nil, fmt.Errorf("tools/list: more than %d pages", maxToolPages)
}

// watch waits for the connection to end. Outside shutdown that is news:
// in-flight calls have already failed (the peer fails them at once); the
// server is restarted if the pool restarts servers.
func (s *Server) watch(peer *link.Peer, c *conn) {
	<-peer.Done()
	s.mu.RLock()
	stopped := s.stopped
	s.mu.RUnlock()
	if s.pool.closing.Load() || stopped {
		return
	}
	how := c.ending()
	c.closeAll()
	s.mu.Lock()
	if s.peer == peer {
		s.peer, s.conn = nil, nil
	}
	restart := s.wentAway(how)
	s.mu.Unlock()
	s.logWentAway(restart, how, peer.Err())
	if restart {
		s.restart()
	}
}

// wentAway marks the server as one whose connection ended (how says
// how), with s.mu held, and reports whether it is restarted.
func (s *Server) wentAway(how string) (restart bool) {
	s.died(time.Now())
	restart = s.pool.opts.Restart && !s.pool.closing.Load()
	if restart {
		s.state.Status = Restarting
	} else {
		s.state.Status = Failed
	}
	s.state.Problem = "server " + how
	return restart
}

func (s *Server) logWentAway(restart bool, how string, err error) {
	if restart {
		s.log.Warn("downstream server went away; restarting it", "how", how, "err", err, "shared", s.cfg.Share)
	} else {
		s.log.Warn("downstream server went away; its calls fail until aqlguard restarts", "how", how, "err", err, "shared", s.cfg.Share)
	}
}

// Request sends one request to the server as raw JSON-RPC and returns the
// raw result. A JSON-RPC error from the server is a *jsonrpc.Error.
func (s *Server) Request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if livesInProcess(method) && !s.State().Modern {
		return s.requestRemembered(ctx, method, params)
	}
	return s.request(ctx, method, params)
}

func (s *Server) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	s.mu.RLock()
	peer, modern, m := s.peer, s.state.Modern, s.member
	s.mu.RUnlock()
	if peer == nil {
		return nil, s.unavailable()
	}
	if modern {
		params = s.modernParams(params)
	} else {
		params = revision.Legacy(params)
	}
	limit := s.cfg.CallTimeout.Duration
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, limit, fmt.Errorf("%w: %s", ErrCallTimeout, limit))
		defer cancel()
	}
	var res json.RawMessage
	var err error
	began := time.Now()
	if m != nil {
		res, err = m.request(ctx, peer, method, params)
	} else {
		res, err = peer.Call(ctx, method, params)
	}
	res, err = s.noteRefusals(method, began, res, err)
	switch {
	case errors.Is(err, link.ErrClosed):
		status := Failed
		if s.pool.opts.Restart {
			status = Restarting
		}
		return nil, &UnavailableError{Server: s.Label(), Status: status, During: method}
	case errors.Is(context.Cause(ctx), ErrCallTimeout):
		return nil, &CallTimeoutError{Server: s.Label(), Method: method, Limit: limit}
	}
	return res, err
}

// Notify sends one notification to the server.
func (s *Server) Notify(ctx context.Context, method string, params json.RawMessage) error {
	s.mu.RLock()
	peer, m := s.peer, s.member
	s.mu.RUnlock()
	if peer == nil {
		return s.unavailable()
	}
	if m != nil {
		return m.notify(ctx, peer, method, params)
	}
	return peer.Notify(ctx, method, params)
}

func (s *Server) unavailable() error {
	st := s.State()
	return &UnavailableError{Server: s.Label(), Status: st.Status, Problem: st.Problem, Attempt: st.Attempt, Next: st.NextAttempt}
}

// Label is the server's name for people (as its client config spells
// it, hyphens and all: config.Server.Label).
func (s *Server) Label() string { return s.cfg.Label() }

// ErrUnavailable is returned for calls to a server that is not ready.
var ErrUnavailable = errors.New("downstream server unavailable")

// UnavailableError says why a call found its server not ready. It is
// ErrUnavailable; Message says it to a model, in a fixed phrase.
type UnavailableError struct {
	Server  string
	Status  Status
	Problem string // a fixed phrase (State.Problem)
	// Attempt and Next: the restart a restarting server waits for.
	Attempt int
	Next    time.Time
	// During is the method that was in flight when the server went away
	// ("" when the server was not ready before the call).
	During string
}

func (e *UnavailableError) Error() string { return e.Message(time.Now()) }

func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// PublicMessage is what the other side of a relayed request is told.
func (e *UnavailableError) PublicMessage() string { return e.Message(time.Now()) }

// Message is the fixed sentence for the model and the human: which
// server, what state it is in, and what to do.
func (e *UnavailableError) Message(now time.Time) string {
	switch {
	case e.During != "" && e.Status == Restarting:
		return fmt.Sprintf("server %s went away during %s; aqlguard restarts it: try again in a moment", e.Server, e.During)
	case e.During != "":
		return fmt.Sprintf("server %s went away during %s; it is not restarted until aqlguard restarts", e.Server, e.During)
	case e.Status == Restarting && e.Attempt > 0:
		next := max(e.Next.Sub(now), 0).Round(100 * time.Millisecond)
		last := ""
		if e.Problem != "" {
			last = "; last: " + e.Problem
		}
		return fmt.Sprintf("server %s is restarting (attempt %d, next in %s%s): try again then", e.Server, e.Attempt, next, last)
	case e.Status == Restarting:
		return fmt.Sprintf("server %s is restarting: try again in a moment", e.Server)
	case e.Status == Starting:
		return fmt.Sprintf("server %s is still starting: try again in a moment", e.Server)
	case e.Status == Failed && e.Problem != "":
		return fmt.Sprintf("server %s is not available (%s); check its configuration and aqlguard's log", e.Server, e.Problem)
	case e.Status == Stopped:
		return fmt.Sprintf("server %s was stopped (the session ended or the configuration changed)", e.Server)
	}
	return fmt.Sprintf("server %s is not available; check aqlguard's log", e.Server)
}

// ErrCallTimeout is returned for a request the server did not answer
// within its call_timeout.
var ErrCallTimeout = errors.New("call timeout")

// CallTimeoutError is ErrCallTimeout for one request; its text is a
// fixed sentence for the model and the human.
type CallTimeoutError struct {
	Server, Method string
	Limit          time.Duration
}

func (e *CallTimeoutError) Error() string {
	return fmt.Sprintf("server %s did not answer %s within its call_timeout (%s); the request was cancelled", e.Server, e.Method, e.Limit)
}

func (e *CallTimeoutError) Is(target error) bool { return target == ErrCallTimeout }

// PublicMessage is what the other side of a relayed request is told.
func (e *CallTimeoutError) PublicMessage() string { return e.Error() }

// Call forwards one tools/call and decodes the result (the MCP-AQL
// endpoints wrap it in their own envelope; transparent mode relays
// Request's raw bytes instead).
func (p *Pool) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	s, ok := p.Server(server)
	if !ok {
		return nil, fmt.Errorf("%w: no server %s", ErrUnavailable, server)
	}
	if args == nil {
		args = map[string]any{}
	}
	params, err := json.Marshal(map[string]any{"name": tool, "arguments": args})
	if err != nil {
		return nil, err
	}
	raw, err := s.Request(ctx, mcpmethod.ToolsCall, params)
	if err != nil {
		return nil, fmt.Errorf("server %s: tools/call %s: %w", server, tool, err)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("server %s: tools/call %s: the result does not decode: %w", server, tool, err)
	}
	return &res, nil
}

// Close ends every connection (and so every stdio child's process group).
func (p *Pool) Close() error {
	p.closing.Store(true)
	p.cancel()
	var wg sync.WaitGroup
	for _, s := range p.Servers() {
		wg.Go(s.stop)
	}
	wg.Wait()
	return nil
}

// stop ends the server's connection for good (Close, or a reload that
// removed or changed it).
func (s *Server) stop() {
	s.mu.Lock()
	peer, c, m := s.peer, s.conn, s.member
	s.peer, s.conn, s.member = nil, nil, nil
	s.stopped = true
	s.state.Status = Stopped
	s.mu.Unlock()
	if m != nil {
		m.leave()
		return
	}
	if c == nil {
		return
	}
	_ = peer.Close()
	c.closeAll()
}

// serverHandler serves what a server sends on its own.
type serverHandler struct{ s *Server }

func (h serverHandler) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	if req.Method == mcpmethod.Ping {
		return json.RawMessage(`{}`), nil
	}
	if up := h.s.pool.opts.Upstream; up != nil {
		return up.ServerRequest(ctx, h.s, req)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "aqlguard has no client to pass " + req.Method + " to"}
}

func (h serverHandler) Notification(ctx context.Context, req *jsonrpc.Request) {
	if h.s.State().Modern {
		var ok bool
		if req, ok = h.s.modern.Notification(req); !ok {
			return
		}
	}
	if up := h.s.pool.opts.Upstream; up != nil {
		up.ServerNotification(ctx, h.s, req)
	}
}

// startProblem is the fixed phrase for a start that failed with err,
// and closes c (if the dial made one): a child that died during the
// handshake says how.
func startProblem(ctx context.Context, err error, timeout time.Duration, c *conn) string {
	problem := describe(ctx, err, timeout)
	if c == nil {
		return problem
	}
	exited := false
	if c.exited != nil {
		select {
		case <-c.exited:
			problem, exited = startExit(c.exitErr), true
		case <-time.After(100 * time.Millisecond):
		}
	}
	// The child's own last words say why (npm's 404, a missing module);
	// one that is still running is quoted only when it wrote an error.
	if cause, errorish := c.cause(); exited || errorish {
		problem = withCause(problem, cause)
	}
	c.closeAll()
	return problem
}

// ending says how a connection that ended did: a child's exit, waited
// for a moment, else that it closed its connection.
func (c *conn) ending() string {
	if c.exited != nil {
		select {
		case <-c.exited:
			return exitDescription(c.exitErr)
		case <-time.After(500 * time.Millisecond):
		}
	}
	return "closed its connection"
}

// startExit says how a child that died during its start ended.
func startExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		switch ee.ExitCode() {
		case 127: // the shells' "not found"
			return "command not found"
		case 126:
			return "command could not be run"
		}
		return fmt.Sprintf("process exited during start (exit code %d)", ee.ExitCode())
	}
	return "process " + exitDescription(err) + " during start"
}

// describe turns a start error into a fixed, user-facing phrase.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	var exitErr *exec.ExitError
	var werr *jsonrpc.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("start timed out after %s", timeout)
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return "command not found"
	case netProblem(err) != "":
		return netProblem(err)
	case errors.As(err, &exitErr):
		return fmt.Sprintf("process exited during start (exit code %d)", exitErr.ExitCode())
	case errors.As(err, &werr):
		switch status := httpStatus(werr); status {
		case 0:
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("the server answered HTTP %d %s: it wants credentials (auth = \"oauth\", or an Authorization header)", status, http.StatusText(status))
		default:
			return fmt.Sprintf("the server answered HTTP %d %s", status, http.StatusText(status))
		}
		return fmt.Sprintf("the server refused to initialize (JSON-RPC error %d)", werr.Code)
	}
	return "could not connect or initialize (see aqlguard's log)"
}
