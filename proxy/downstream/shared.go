package downstream

// Shared servers (share = true): one stdio process serves the pools of
// every client session of `aqlguard serve`, and what MCP scopes to a
// session is kept apart here, so that a session sees what a server of
// its own would have sent it and nothing of another's:
//
//   - request ids are the shared link's own (one counter for all
//     sessions), so a session cancels only its own calls: the link sends
//     notifications/cancelled for a call whose context ends, by the id
//     only it knows;
//   - progress tokens are rewritten to tokens of this process's own and
//     routed back to the session whose call sent them;
//   - a server's request (sampling, elicitation, roots) goes to the one
//     session it belongs to: the one whose progress token it carries in
//     _meta, else the one session with calls in flight; with none, or
//     several and no token, it is refused, never guessed;
//   - roots/list is answered here: the roots pinned in the config, or the
//     roots every session declared alike (a session whose client declares
//     others is refused at its first request, with a clear error);
//   - resource subscriptions are counted per session: the first
//     subscribes the server, the last unsubscribes it, and an update goes
//     only to the sessions subscribed to its uri;
//   - the log level at the server is the most verbose any session asked
//     for; each session gets the messages at or above its own level
//     (info until it sets one);
//   - list_changed goes to every session;
//   - tasks are refused: a task id would be the server's, readable by
//     every session that names it.
//
// The process ends with the last session that uses it; one that dies is
// reported to every session's calls in flight (the link fails them),
// and each session's server restarts as its own would, starting one new
// process for all.

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Hub runs the processes of shared servers: one per server name (and
// configuration: a reload that changes it starts a new one for the
// sessions that reload, while the old one serves the others until they
// leave).
type Hub struct {
	ctx context.Context
	log *slog.Logger

	mu    sync.Mutex
	procs map[string]*sharedProc
}

// NewHub makes a hub whose processes live at most as long as ctx.
func NewHub(ctx context.Context, log *slog.Logger) *Hub {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Hub{ctx: ctx, log: log, procs: map[string]*sharedProc{}}
}

// Processes counts the shared processes running or starting.
func (h *Hub) Processes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.procs)
}

func (s *Server) shared() bool { return s.cfg.Share && s.pool.opts.Hub != nil }

// sharedProc is one shared server process and its sessions.
type sharedProc struct {
	hub  *Hub
	cfg  config.Server
	srv  *Server // the process's own: its handshake and log
	up   chan struct{}
	err  error // why the start failed (set before up closes)
	st   State // the handshake's: tools not yet vetted
	peer *link.Peer
	conn *conn

	mu      sync.Mutex
	members map[*Server]*member
	gone    bool                 // ended or ending: nobody joins
	subs    map[string][]*member // uri → its subscribers
	subMu   sync.Mutex           // one subscribe or unsubscribe at the server at a time
	level   string               // set at the server; "" not set
	levelMu sync.Mutex           // one setLevel at the server at a time
	tokens  map[string]progressOwner
	tokenN  atomic.Int64
	roots   *rootSet // the roots the sessions declared alike; nil none yet
}

// member is one session's server in a shared process.
type member struct {
	proc   *sharedProc
	server *Server
	calls  atomic.Int64 // requests in flight
	level  string       // set by the session; "" not set (under proc.mu)
	// roots is the comparison of the session's roots with the process's
	// (nil: not made yet); rechecking says one runs after the client said
	// its roots changed.
	roots      atomic.Pointer[rootsVerdict]
	rechecking atomic.Bool
}

// rootsVerdict is a member's roots compared: refused says why they may
// not be served (nil: they match).
type rootsVerdict struct {
	refused error
}

type progressOwner struct {
	m     *member
	token json.RawMessage // the session's, as it sent it
}

type rootSet struct {
	key     string          // the uris, sorted: what is compared
	answer  json.RawMessage // the roots/list result the server gets
	holders int             // members whose roots are these
}

// attach joins s to its shared process, starting one if none runs.
func (h *Hub) attach(ctx context.Context, s *Server) (*member, error) {
	// A process that ends (its last member left, it died) as s joins it
	// is not joined: s starts or joins the next one.
	for range 3 {
		p := h.current(s)
		select {
		case <-p.up:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if p.err != nil {
			return nil, p.err
		}
		m := &member{proc: p, server: s}
		p.mu.Lock()
		if !p.gone {
			p.members[s] = m
			p.mu.Unlock()
			return m, nil
		}
		p.mu.Unlock()
	}
	return nil, errors.New("the shared process kept ending as the session joined it")
}

// current is the process s joins: the running one of its name and
// configuration, else a new one (started).
func (h *Hub) current(s *Server) *sharedProc {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.procs[s.Name]
	if p != nil && !reflect.DeepEqual(p.cfg, s.cfg) {
		p = nil // reloaded with another configuration: a new process
	}
	if p != nil {
		p.mu.Lock()
		gone := p.gone
		p.mu.Unlock()
		if gone {
			p = nil
		}
	}
	if p == nil {
		p = h.newProc(s)
		h.procs[s.Name] = p
		go p.start()
	}
	return p
}

func (h *Hub) newProc(s *Server) *sharedProc {
	opts := Options{Version: s.pool.opts.Version, Initialize: s.pool.opts.Initialize, Auth: s.pool.opts.Auth,
		Log: h.log}
	if s.cfg.Roots != nil {
		// Pinned roots are offered whatever the first client declared.
		opts.Initialize = withRootsCapability(opts.Initialize)
	}
	pool := &Pool{byName: map[string]*Server{}, opts: opts, ctx: h.ctx, cancel: func() {}}
	cfg := s.cfg
	cfg.Protocol = ProtocolVersion // what a shared process is spoken to in (policy refuses 2026-07-28)
	p := &sharedProc{hub: h, cfg: s.cfg, srv: newServer(cfg, pool, h.log.With("shared", true)), up: make(chan struct{}),
		members: map[*Server]*member{}, subs: map[string][]*member{}, tokens: map[string]progressOwner{}}
	return p
}

// withRootsCapability adds capabilities.roots to initialize params that
// lack it.
func withRootsCapability(params json.RawMessage) json.RawMessage {
	if params == nil {
		return nil // aqlguard's own: made in initialize
	}
	caps, _ := rawjson.Lookup(params, "capabilities")
	if _, ok := rawjson.Lookup(caps, "roots"); ok {
		return params
	}
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	caps, err := rawjson.Set(caps, "roots", json.RawMessage(`{}`))
	if err != nil {
		return params
	}
	out, err := rawjson.Set(params, "capabilities", caps)
	if err != nil {
		return params
	}
	return out
}

// start runs the process's handshake under its own start timeout, not a
// session's: the sessions waiting for it each wait with their own.
func (p *sharedProc) start() {
	defer close(p.up)
	timeout := p.cfg.StartTimeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(p.hub.ctx, timeout)
	defer cancel()
	st, c, peer, err := p.srv.connect(ctx, sharedHandler{p}, false)
	if err == nil && st.Modern {
		err = errors.New("the server answered in " + revision.Modern + "; a shared server is spoken to in " + ProtocolVersion)
		_ = peer.Close()
	}
	if err != nil {
		p.err = &startError{problem: startProblem(ctx, err, timeout, c), err: err}
		p.end()
		return
	}
	p.st, p.peer, p.conn = st, peer, c
	p.srv.log.Info("shared server process started", "protocol", st.Protocol)
	go p.watch()
}

// startError is a start that failed: problem is the fixed phrase.
type startError struct {
	problem string
	err     error
}

func (e *startError) Error() string { return e.problem + ": " + e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// watch reports the process's end to every member: each is marked as
// its own server would be when it died, and restarts as it would
// (restart.go), joining one new process.
func (p *sharedProc) watch() {
	<-p.peer.Done()
	members := p.end()
	if len(members) == 0 {
		return // ended by its last member
	}
	how := p.conn.ending()
	p.conn.closeAll()
	for _, m := range members {
		m.server.sharedDied(m, how, p.peer.Err())
	}
}

// end takes the process out of the hub and returns its members (none
// join it any more).
func (p *sharedProc) end() []*member {
	p.hub.mu.Lock()
	if p.hub.procs[p.cfg.Name] == p {
		delete(p.hub.procs, p.cfg.Name)
	}
	p.hub.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone = true
	ms := make([]*member, 0, len(p.members))
	for _, m := range p.members {
		ms = append(ms, m)
	}
	clear(p.members)
	return ms
}

// sharedDied is watch's end of a member server: as Server.watch.
func (s *Server) sharedDied(m *member, how string, err error) {
	s.mu.Lock()
	if s.member != m || s.stopped {
		s.mu.Unlock()
		return
	}
	s.peer, s.member = nil, nil
	restart := s.wentAway(how)
	s.mu.Unlock()
	s.logWentAway(restart, how, err)
	if restart {
		go s.restart() // each member's on its own: they join one new process
	}
}

// startShared is start for a shared server: join (or start) its process,
// vet its tools for this session, and serve.
func (s *Server) startShared(ctx context.Context, restart bool) bool {
	began := time.Now()
	m, err := s.pool.opts.Hub.attach(ctx, s)
	if err != nil {
		problem := "could not connect or initialize (see aqlguard's log)"
		var se *startError
		if errors.As(err, &se) {
			problem = se.problem
		}
		s.failedStart(problem, err, restart)
		return false
	}
	st := m.proc.st
	st.Status = Ready
	if _, ok := st.Capabilities["tools"]; ok {
		l, err := s.vet(ctx, Listing{Tools: st.Tools, Raws: st.ToolsRaw})
		st.Tools, st.ToolsRaw, st.Withheld, st.vetErr = l.Tools, l.Raws, l.Withheld, err
	}
	s.mu.Lock()
	if s.stopped || s.pool.closing.Load() {
		s.mu.Unlock()
		m.leave()
		return false
	}
	st.Restarts = s.state.Restarts
	s.state, s.peer, s.member = st, m.proc.peer, m
	s.upSince = time.Now()
	s.mu.Unlock()
	if st.vetErr != nil {
		s.Refresh()
	}
	s.log.Info("downstream server ready (shared process)", "tools", len(st.Tools), "protocol", st.Protocol,
		"elapsed", time.Since(began).Round(time.Millisecond))
	return true
}

// leave takes the member out of its process: its subscriptions and log
// level go, and the last member ends the process.
func (m *member) leave() {
	p := m.proc
	p.mu.Lock()
	if p.members[m.server] != m {
		p.mu.Unlock()
		return
	}
	delete(p.members, m.server)
	last := len(p.members) == 0 && !p.gone
	if last {
		p.gone = true
	}
	var drop []string
	for uri, subs := range p.subs {
		if i := slices.Index(subs, m); i >= 0 {
			subs = slices.Delete(subs, i, i+1)
			p.subs[uri] = subs
			if len(subs) == 0 {
				drop = append(drop, uri)
			}
		}
	}
	for tok, o := range p.tokens {
		if o.m == m {
			delete(p.tokens, tok)
		}
	}
	hadLevel := m.level != ""
	p.mu.Unlock()
	m.releaseRoots()
	if last {
		p.end()
		if p.peer != nil {
			_ = p.peer.Close()
			p.conn.closeAll()
		}
		p.srv.log.Info("shared server process ended with its last session")
		return
	}
	ctx, cancel := context.WithTimeout(p.hub.ctx, 10*time.Second)
	defer cancel()
	for _, uri := range drop {
		p.subscription(ctx, nil, mcpmethod.ResourcesUnsubscribe, uri)
	}
	if hadLevel {
		if err := p.applyLevel(ctx); err != nil {
			p.srv.log.Debug("the shared server's log level could not be raised", "err", err)
		}
	}
}

// errTasksShared refuses tasks on a shared server.
var errTasksShared = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "aqlguard does not run tasks on a shared server (share = true): a task's id is the server's, and every session could name it"}

// request sends one of the member's requests to the shared process.
func (m *member) request(ctx context.Context, peer *link.Peer, method string, params json.RawMessage) (json.RawMessage, error) {
	p := m.proc
	if err := m.checkRoots(ctx); err != nil {
		return nil, err
	}
	switch {
	case method == mcpmethod.ResourcesSubscribe || method == mcpmethod.ResourcesUnsubscribe:
		return m.subscription(ctx, method, params)
	case method == mcpmethod.LoggingSetLevel:
		return m.setLevel(ctx, params)
	case strings.HasPrefix(method, "tasks/"):
		return nil, errTasksShared
	case method == mcpmethod.ToolsCall:
		if _, ok := rawjson.Lookup(params, "task"); ok {
			return nil, errTasksShared
		}
	}
	if meta, ok := rawjson.Lookup(params, "_meta"); ok {
		if token, ok := rawjson.Lookup(meta, "progressToken"); ok {
			ours := "aqlguard-s-" + strconv.FormatInt(p.tokenN.Add(1), 10)
			if newMeta, err := rawjson.Set(meta, "progressToken", ours); err == nil {
				if out, err := rawjson.Set(params, "_meta", newMeta); err == nil {
					params = out
					p.mu.Lock()
					p.tokens[ours] = progressOwner{m: m, token: append(json.RawMessage(nil), token...)}
					p.mu.Unlock()
					defer func() {
						p.mu.Lock()
						delete(p.tokens, ours)
						p.mu.Unlock()
					}()
				}
			}
		}
	}
	m.calls.Add(1)
	defer m.calls.Add(-1)
	return peer.Call(ctx, method, params)
}

// notify sends one of the member's notifications. A client's
// roots/list_changed is the member's own business: its roots are
// compared again (the server hears of it only when the roots it is
// given change).
func (m *member) notify(ctx context.Context, peer *link.Peer, method string, params json.RawMessage) error {
	if method != "notifications/roots/list_changed" {
		return peer.Notify(ctx, method, params)
	}
	if m.proc.cfg.Roots != nil {
		return nil // pinned: the server's roots do not change
	}
	if m.roots.Load() == nil {
		return nil // compared at its next request
	}
	if !m.rechecking.CompareAndSwap(false, true) {
		return nil // one comparison at a time, however many the client sends
	}
	// Asked of the client outside the notification's handler: the
	// client answers on the connection this notification came on.
	go func() {
		defer m.rechecking.Store(false)
		ctx, cancel := context.WithTimeout(m.proc.hub.ctx, time.Minute)
		defer cancel()
		m.releaseRoots()
		if err := m.checkRoots(ctx); err != nil {
			m.server.log.Warn("the session's roots no longer match the shared server's", "err", err)
		}
	}()
	return nil
}

// subscription serves a member's resources/subscribe or unsubscribe:
// counted per session, and at the server only the first and the last.
func (m *member) subscription(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	uri, err := exactURI(params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": " + err.Error()}
	}
	return m.proc.subscription(ctx, m, method, uri)
}

// subscription adds m to uri's subscribers (or takes it out) and
// subscribes or unsubscribes the server when the first comes or the last
// goes; m nil unsubscribes a uri that lost its last subscriber.
func (p *sharedProc) subscription(ctx context.Context, m *member, method, uri string) (json.RawMessage, error) {
	p.subMu.Lock()
	defer p.subMu.Unlock()
	p.mu.Lock()
	subs := p.subs[uri]
	i := slices.Index(subs, m)
	atServer := false
	switch {
	case m == nil:
		atServer = len(subs) == 0
	case method == mcpmethod.ResourcesSubscribe:
		// Recorded before the server is asked, so that an update it
		// sends before it answers is not lost.
		atServer = len(subs) == 0
		if i < 0 {
			p.subs[uri] = append(subs, m)
		}
	default:
		// Only the member's own subscription is taken away: another
		// session's stays, whatever this one sends.
		atServer = i >= 0 && len(subs) == 1
		if i >= 0 {
			p.subs[uri] = slices.Delete(subs, i, i+1)
			if len(p.subs[uri]) == 0 {
				delete(p.subs, uri)
			}
		}
	}
	p.mu.Unlock()
	if atServer {
		params, _ := json.Marshal(map[string]string{"uri": uri})
		if _, err := p.peer.Call(ctx, method, params); err != nil {
			if m == nil {
				p.srv.log.Debug("a resource nobody is subscribed to any more could not be unsubscribed", "err", err)
			}
			if m != nil && method == mcpmethod.ResourcesSubscribe {
				p.mu.Lock()
				if j := slices.Index(p.subs[uri], m); j >= 0 {
					p.subs[uri] = slices.Delete(p.subs[uri], j, j+1)
				}
				if len(p.subs[uri]) == 0 {
					delete(p.subs, uri)
				}
				p.mu.Unlock()
			}
			return nil, err
		}
	}
	return json.RawMessage(`{}`), nil
}

func exactURI(params json.RawMessage) (string, error) {
	raw, ok := rawjson.Lookup(params, "uri")
	if !ok {
		return "", errors.New("missing uri")
	}
	var uri string
	if err := json.Unmarshal(raw, &uri); err != nil || uri == "" {
		return "", errors.New("uri is not a non-empty string")
	}
	return uri, nil
}

// Log levels (RFC 5424, as MCP names them), most verbose first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// defaultLevel is what a session that set no level receives: what it
// would not choose cannot be another session's choice.
const defaultLevel = "info"

func levelRank(level string) int { return slices.Index(logLevels, level) }

// setLevel records the member's level and sets the server to the most
// verbose one any member asked for.
func (m *member) setLevel(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	raw, ok := rawjson.Lookup(params, "level")
	var level string
	if !ok || json.Unmarshal(raw, &level) != nil || levelRank(level) < 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "logging/setLevel: level must be one of " + strings.Join(logLevels, ", ")}
	}
	p := m.proc
	p.mu.Lock()
	was := m.level
	m.level = level
	p.mu.Unlock()
	if err := p.applyLevel(ctx); err != nil {
		p.mu.Lock()
		m.level = was
		p.mu.Unlock()
		return nil, err
	}
	return json.RawMessage(`{}`), nil
}

// applyLevel sets the server's log level to the most verbose a member
// asked for, if that is not what it has.
func (p *sharedProc) applyLevel(ctx context.Context) error {
	p.levelMu.Lock()
	defer p.levelMu.Unlock()
	p.mu.Lock()
	want := ""
	for _, m := range p.members {
		if m.level != "" && (want == "" || levelRank(m.level) < levelRank(want)) {
			want = m.level
		}
	}
	have := p.level
	p.mu.Unlock()
	if want == "" || want == have {
		return nil
	}
	params, _ := json.Marshal(map[string]string{"level": want})
	if _, err := p.peer.Call(ctx, mcpmethod.LoggingSetLevel, params); err != nil {
		return err
	}
	p.mu.Lock()
	p.level = want
	p.mu.Unlock()
	return nil
}

// sharedHandler serves what a shared process sends on its own.
type sharedHandler struct{ p *sharedProc }

func (h sharedHandler) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	p := h.p
	switch req.Method {
	case mcpmethod.Ping:
		return json.RawMessage(`{}`), nil
	case "roots/list":
		return p.rootsAnswer(), nil
	}
	m, why := p.owner(req.Params)
	if m == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "aqlguard cannot tell which client " + req.Method + " is for: " + why}
	}
	up := m.server.pool.opts.Upstream
	if up == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "aqlguard has no client to pass " + req.Method + " to"}
	}
	if params, ok := p.ownToken(req.Params, m); ok {
		req = &jsonrpc.Request{ID: req.ID, Method: req.Method, Params: params}
	}
	return up.ServerRequest(ctx, m.server, req)
}

// whyNoneInFlight is owner's why when no member has a call in flight.
const whyNoneInFlight = "no session has a call in flight at this shared server"

// owner is the member a server's request or notification belongs to:
// the one whose progress token its _meta carries, else the only member
// with calls in flight. why says why there is none.
func (p *sharedProc) owner(params json.RawMessage) (*member, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if meta, ok := rawjson.Lookup(params, "_meta"); ok {
		if raw, ok := rawjson.Lookup(meta, "progressToken"); ok {
			var token string
			if json.Unmarshal(raw, &token) == nil {
				if o, ok := p.tokens[token]; ok {
					return o.m, ""
				}
			}
		}
	}
	var only *member
	for _, m := range p.members {
		if m.calls.Load() > 0 {
			if only != nil {
				return nil, "several sessions have calls in flight at this shared server and the request carries none's progress token"
			}
			only = m
		}
	}
	if only == nil {
		return nil, whyNoneInFlight
	}
	return only, ""
}

// ownToken puts the member's own progress token back in params' _meta.
func (p *sharedProc) ownToken(params json.RawMessage, m *member) (json.RawMessage, bool) {
	meta, ok := rawjson.Lookup(params, "_meta")
	if !ok {
		return nil, false
	}
	token, err := exactStringMember(meta, "progressToken")
	if err != nil {
		return nil, false
	}
	p.mu.Lock()
	o, ok := p.tokens[token]
	p.mu.Unlock()
	if !ok || o.m != m {
		return nil, false
	}
	newMeta, err := rawjson.Set(meta, "progressToken", o.token)
	if err != nil {
		return nil, false
	}
	out, err := rawjson.Set(params, "_meta", newMeta)
	return out, err == nil
}

func exactStringMember(obj json.RawMessage, name string) (string, error) {
	raw, ok := rawjson.Lookup(obj, name)
	if !ok {
		return "", errors.New("missing " + name)
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	return v, nil
}

func (h sharedHandler) Notification(ctx context.Context, req *jsonrpc.Request) {
	p := h.p
	var to []*member
	switch req.Method {
	case link.MethodCancelled:
		return // the link cancelled the server's request to the client
	case "notifications/progress":
		token, err := exactStringMember(req.Params, "progressToken")
		if err != nil {
			return
		}
		p.mu.Lock()
		o, ok := p.tokens[token]
		p.mu.Unlock()
		if !ok {
			return
		}
		params, err := rawjson.Set(req.Params, "progressToken", o.token)
		if err != nil {
			return
		}
		req, to = &jsonrpc.Request{Method: req.Method, Params: params}, []*member{o.m}
	case "notifications/resources/updated":
		uri, err := exactURI(req.Params)
		if err != nil {
			return
		}
		p.mu.Lock()
		to = slices.Clone(p.subs[uri])
		p.mu.Unlock()
	case "notifications/message":
		to = p.logReaders(req.Params)
	case "notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		to = p.all()
	default:
		// Anything else may be part of a call: to the session it
		// belongs to, if one can be told, else to nobody.
		if m, _ := p.owner(req.Params); m != nil {
			to = []*member{m}
		}
	}
	for _, m := range to {
		if up := m.server.pool.opts.Upstream; up != nil {
			up.ServerNotification(ctx, m.server, req)
		}
	}
}

func (p *sharedProc) all() []*member {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*member, 0, len(p.members))
	for _, m := range p.members {
		out = append(out, m)
	}
	return out
}

// logReaders are the members a log message goes to: the session it
// belongs to when one can be told (its progress token, or the only
// session with calls in flight); with no session in flight, every
// session (the server speaks of itself); with several and no token,
// none: it may be about any of their calls, and a session that keeps a
// call in flight must not read the others'. Each gets it only at or
// above its own level; a level aqlguard does not know counts as debug.
func (p *sharedProc) logReaders(params json.RawMessage) []*member {
	rank := 0
	if level, err := exactStringMember(params, "level"); err == nil && levelRank(level) >= 0 {
		rank = levelRank(level)
	}
	var candidates []*member
	switch m, why := p.owner(params); {
	case m != nil:
		candidates = []*member{m}
	case why == whyNoneInFlight:
		candidates = p.all()
	default:
		p.srv.log.Debug("a log message of the shared server was dropped: several sessions have calls in flight and it names none")
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := candidates[:0]
	for _, m := range candidates {
		level := m.level
		if level == "" {
			level = defaultLevel
		}
		if _, ok := p.members[m.server]; ok && rank >= levelRank(level) {
			out = append(out, m)
		}
	}
	return out
}

// rootsConflict refuses a session whose client declares roots other
// than those the shared server serves: the server is unavailable to it,
// for a reason in a fixed phrase (State.Problem's kind).
func rootsConflict(server string) error {
	return &UnavailableError{Server: server, Status: Failed,
		Problem: "it is shared (share = true) with sessions whose client declares other roots, and aqlguard never gives a server the roots of several clients: " +
			"pin its roots in aqlguard's config (roots = [...]) or set share = false"}
}

// rootsAnswer is the server's roots/list answer: the pinned roots, else
// those every session declared alike (none before the first session's
// were read; the server is told when they are).
func (p *sharedProc) rootsAnswer() json.RawMessage {
	if p.cfg.Roots != nil {
		roots := make([]map[string]string, 0, len(p.cfg.Roots))
		for _, r := range p.cfg.Roots {
			roots = append(roots, map[string]string{"uri": r})
		}
		out, _ := json.Marshal(map[string]any{"roots": roots})
		return out
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.roots == nil {
		return json.RawMessage(`{"roots":[]}`)
	}
	return p.roots.answer
}

// askRootsWithin bounds the wait for a client's roots.
const askRootsWithin = 10 * time.Second

// checkRoots compares the member's roots with the process's once (again
// after its client says they changed): the first member's become the
// process's; a member whose differ is refused. The client is asked with
// no lock held: one that does not answer holds up only its own session.
func (m *member) checkRoots(ctx context.Context) error {
	p := m.proc
	if v := m.roots.Load(); v != nil {
		if v.refused == nil || !p.rootsUnheld() {
			return v.refused
		}
		// Refused while other sessions held the server's roots; none
		// does any more: this session's may become them.
		m.roots.CompareAndSwap(v, nil)
	}
	if p.cfg.Roots != nil {
		m.roots.Store(&rootsVerdict{})
		return nil
	}
	actx, cancel := context.WithTimeout(ctx, askRootsWithin)
	set, err := m.askRoots(actx)
	cancel()
	if err != nil {
		return err
	}
	p.mu.Lock()
	if v := m.roots.Load(); v != nil { // compared meanwhile
		p.mu.Unlock()
		return v.refused
	}
	if _, ok := p.members[m.server]; !ok {
		p.mu.Unlock()
		return errors.New("the session left the shared server")
	}
	v := &rootsVerdict{}
	notify := false
	switch {
	case p.roots == nil || p.roots.holders == 0:
		was := "[]"
		if p.roots != nil {
			was = p.roots.key
		}
		notify = was != set.key
		set.holders = 1
		p.roots = set
	case p.roots.key == set.key:
		p.roots.holders++
	default:
		v.refused = rootsConflict(p.cfg.Name)
	}
	m.roots.Store(v)
	p.mu.Unlock()
	if v.refused != nil {
		m.server.log.Warn("the session's client declares roots other than the shared server's; its requests to it are refused")
	}
	if notify {
		_ = p.peer.Notify(ctx, "notifications/roots/list_changed", json.RawMessage(`{}`))
	}
	return v.refused
}

// rootsUnheld reports whether no member holds the process's roots.
func (p *sharedProc) rootsUnheld() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.roots == nil || p.roots.holders == 0
}

// releaseRoots forgets the member's roots comparison.
func (m *member) releaseRoots() {
	p := m.proc
	p.mu.Lock()
	defer p.mu.Unlock()
	if v := m.roots.Swap(nil); v != nil && v.refused == nil && p.roots != nil {
		p.roots.holders--
	}
}

// askRoots reads the session's roots: none when its client does not
// declare the capability, else its answer to roots/list.
func (m *member) askRoots(ctx context.Context) (*rootSet, error) {
	caps, _ := rawjson.Lookup(m.server.pool.opts.Initialize, "capabilities")
	if _, ok := rawjson.Lookup(caps, "roots"); !ok {
		return &rootSet{key: "[]", answer: json.RawMessage(`{"roots":[]}`)}, nil
	}
	up := m.server.pool.opts.Upstream
	if up == nil {
		return nil, rootsConflict(m.proc.cfg.Name)
	}
	res, err := up.ServerRequest(ctx, m.server, &jsonrpc.Request{Method: "roots/list", Params: json.RawMessage(`{}`)})
	if err != nil {
		m.server.log.Warn("the session's roots could not be read for the shared server; its requests to it are refused", "err", err)
		return nil, rootsConflict(m.proc.cfg.Name)
	}
	var list struct {
		Roots []struct {
			URI string `json:"uri"`
		} `json:"roots"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, rootsConflict(m.proc.cfg.Name)
	}
	uris := []string{}
	for _, r := range list.Roots {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	uris = slices.Compact(uris)
	key, _ := json.Marshal(uris)
	return &rootSet{key: string(key), answer: append(json.RawMessage(nil), res...)}, nil
}
