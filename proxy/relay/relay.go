// Package relay is aqlguard's MCP front at the JSON-RPC level: one
// Session per client connection, with the downstream servers of that
// session behind it. Everything MCP carries that is not a tool call —
// resources, prompts, completion, logging, progress, cancellation,
// sampling, elicitation, roots, list changes — passes through as raw
// JSON, routed to the right server and back to the right request, so
// fields, content types and numbers aqlguard does not know arrive as the
// other side sent them. Tools are the mode's business (Tools); resource
// reads and prompt gets are put to a Gate first.
package relay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools is what the mode offers as tools: the list the client sees and
// how a call is served. It is built per session, once its servers are up.
type Tools interface {
	// ListTools returns the tool objects, as they go on the wire.
	ListTools(ctx context.Context) ([]json.RawMessage, error)
	// CallTool serves tools/call, read once by the relay; an allowed
	// call goes on through the session's pool (downstream.Pool.ToolCall),
	// which the mode hands the guard. A *jsonrpc.Error is relayed as
	// the answer's error.
	CallTool(ctx context.Context, call ToolCall) (json.RawMessage, error)
	// ToolsChanged is called when a server's tools changed (list_changed,
	// a restart); it reports whether the client should be told.
	ToolsChanged(ctx context.Context, s *downstream.Server) bool
}

// Gate decides on what is not a tool call but still reads what a server
// holds: resources/read (subject "server.resource:<uri>") and
// prompts/get ("server.prompt:<name>"). A refusal is returned as a
// JSON-RPC error.
type Gate interface {
	// Forward decides on the read (method, a guarded one of the method
	// table, naming name: a URI or a prompt) and, if it is allowed,
	// forwards it with forward (under the context it hands it, which may
	// carry the guard's trace span), and records how it ended. It
	// returns the server's answer, or the refusal or the server's error.
	Forward(ctx context.Context, sess *Session, server, method, name string, args map[string]any,
		forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error)
}

// Config is what every session of one aqlguard shares.
type Config struct {
	Servers []config.Server
	Version string
	// Transparent passes on the single server's name, version,
	// instructions and capabilities as its own.
	Transparent bool
	// Instructions are aqlguard's own, for the other modes.
	Instructions string
	// ProtocolVersions are the versions the front speaks, newest first.
	ProtocolVersions []string
	// NewTools builds the mode's tools for a session.
	NewTools func(s *Session) (Tools, error)
	// VetTools, when set, checks every listing of a server's tools before
	// the session's servers hold it (tool pinning; downstream.Vet).
	VetTools downstream.Vet
	Gate     Gate
	// Restart restarts servers that die.
	Restart bool
	// Restarted is told of every server restarted after it died.
	Restarted func(server string)
	// Auth authorizes to remote servers with auth = "oauth".
	Auth *remoteauth.Manager
	// Sandbox, when set, is told of each stdio server's start with its
	// sandbox's grant and of what the sandbox refused it (the audit log).
	Sandbox downstream.SandboxRecorder
	// Hub runs the servers configured with share = true, one process for
	// every session (serve); nil starts them per session.
	Hub *downstream.Hub
	// PromptsListed, when set, is told the names of each server's
	// prompts, all of them, as the session lists them (aqlguard's record
	// of the names a client sees: proxy/names).
	PromptsListed func(server string, names []string)
	// FinishOnEOF answers the requests a client sent before its input
	// ended (MCP's stdio shutdown: the client closes stdin, then waits
	// for the exit) instead of cancelling them; see link.Peer.
	FinishOnEOF bool
	Log         *slog.Logger

	mu       sync.Mutex
	reloaded []config.Server
	sessions map[*Session]bool
}

// servers are the servers sessions start with: Servers, or the last
// reload's.
func (c *Config) servers() []config.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reloaded != nil {
		return c.reloaded
	}
	return c.Servers
}

// Reload makes servers the servers of every session, live ones included:
// unchanged servers keep running; the clients of sessions whose servers
// changed are told their lists changed.
func (c *Config) Reload(ctx context.Context, servers []config.Server) {
	c.mu.Lock()
	c.reloaded = slices.Clone(servers)
	if c.reloaded == nil {
		c.reloaded = []config.Server{}
	}
	live := make([]*Session, 0, len(c.sessions))
	for s := range c.sessions {
		live = append(live, s)
	}
	c.mu.Unlock()
	for _, s := range live {
		s.reload(ctx, servers)
	}
}

func (c *Config) track(s *Session, alive bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessions == nil {
		c.sessions = map[*Session]bool{}
	}
	if alive {
		c.sessions[s] = true
	} else {
		delete(c.sessions, s)
	}
}

// Session is one client connection and its servers.
type Session struct {
	// ID labels the session in logs and audit records; it is ours, never
	// the client's.
	ID string
	// Shared says the session serves whoever sends the same clientInfo
	// and capabilities (2026-07-28 over HTTP without sessions): its
	// clients share no secret, so nothing may be approved for the
	// session as a whole.
	Shared bool
	// Credential names the client the session authenticated as on
	// `serve` (a [[serve.clients]] name, "serve-token", "oauth:…"), for
	// the audit log; "" over stdio.
	Credential string

	cfg    *Config
	client *link.Peer
	log    *slog.Logger

	initOnce    sync.Once
	initStarted atomic.Bool
	// initialize requests read from the client whose handlers have not
	// returned (see Arrived): a request sent after one of them waits for
	// it rather than being told the session is not initialized.
	initMu       sync.Mutex
	initInFlight int
	initSettled  chan struct{} // closed when initInFlight drops to 0
	ready        chan struct{} // closed when initialize has been answered
	initErr      error
	init         initParams
	pool         *downstream.Pool
	tools        Tools
	result       json.RawMessage // our initialize result
	protoUsed    string

	routes routes
	subs   subscriptions
	// roots are the client's, as it last answered roots/list.
	roots clientRoots

	// life ends with the session: the work of its calls runs under it.
	life    context.Context
	endLife context.CancelFunc

	// A 2026-07-28 client (see revision.Modern).
	modern       atomic.Bool
	modernClient *revision.ClientSession // its calls that may need its input, its listen streams
}

type initParams struct {
	ProtocolVersion string `json:"protocolVersion"`
	ClientInfo      struct {
		Name  string `json:"name"`
		Title string `json:"title"`
	} `json:"clientInfo"`
	// Capabilities are the client's, raw (roots: whether it may be
	// asked), so that a client whose capabilities aqlguard cannot read
	// still initializes.
	Capabilities json.RawMessage `json:"capabilities"`
}

// Serve runs one session on conn until the client goes away or ctx ends;
// then the session's servers are stopped.
func Serve(ctx context.Context, conn mcp.Connection, cfg *Config) error {
	s := &Session{ID: newLabel(), cfg: cfg, ready: make(chan struct{})}
	if c, ok := conn.(interface{ SharedByClients() bool }); ok {
		s.Shared = c.SharedByClients()
	}
	if c, ok := conn.(interface{ Credential() string }); ok {
		s.Credential = c.Credential()
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.log = cfg.Log.With("session", s.ID)
	s.modernClient = revision.NewClientSession(s.life, (*modernHost)(s), cfg.ProtocolVersions, s.log)
	s.routes.resources = map[string]string{}
	s.client = link.New(conn, (*clientHandler)(s), s.log)
	s.client.IDPrefix = "aqlguard-"
	s.client.FinishOnEOF = cfg.FinishOnEOF
	cfg.track(s, true)
	defer cfg.track(s, false)
	s.client.Start()
	select {
	case <-s.client.Done():
	case <-ctx.Done():
		_ = s.client.Close()
	}
	// The requests in flight were cancelled; each still records what the
	// guard decided before the session's servers and the store go.
	if !s.client.WaitServed(servedWithin) {
		s.log.Error("requests in flight did not finish at the end of the session", "waited", servedWithin)
	}
	s.close()
	if err := s.client.Err(); err != nil && !errors.Is(err, link.ErrClosed) {
		return err
	}
	return nil
}

// servedWithin bounds how long a session that ends waits for the
// requests it was serving.
const servedWithin = 10 * time.Second

func (s *Session) close() {
	s.endLife()
	s.initOnce.Do(func() { s.initErr = errors.New("the session ended"); close(s.ready) })
	<-s.ready
	if c, ok := s.tools.(interface{ Close() }); ok {
		c.Close()
	}
	if s.pool != nil {
		_ = s.pool.Close()
	}
}

// reload applies a new server list to a live session.
func (s *Session) reload(ctx context.Context, servers []config.Server) {
	select {
	case <-s.ready:
	default:
		return // still starting: it started with the list it read
	}
	if s.initErr != nil || s.pool == nil {
		return
	}
	changed := s.pool.Update(ctx, servers)
	if len(changed) == 0 {
		return
	}
	s.log.Info("servers reloaded", "changed", changed)
	s.routes.forgetPrompts()
	notify := false
	for _, name := range changed {
		srv, ok := s.pool.Server(name)
		if !ok {
			srv = nil // removed: the mode derives its tools without it
		}
		if s.tools.ToolsChanged(ctx, srv) {
			notify = true
		}
	}
	if notify {
		s.NotifyClient("notifications/tools/list_changed", json.RawMessage(`{}`))
	}
	s.NotifyClient("notifications/resources/list_changed", json.RawMessage(`{}`))
	s.NotifyClient("notifications/prompts/list_changed", json.RawMessage(`{}`))
}

// ClientName is the MCP client's own name for itself (its title if it
// gave one), for the human's questions.
func (s *Session) ClientName() string {
	if s.init.ClientInfo.Title != "" {
		return s.init.ClientInfo.Title
	}
	return s.init.ClientInfo.Name
}

// Pool is the session's servers (nil before initialize).
func (s *Session) Pool() *downstream.Pool { return s.pool }

// Log is the session's logger.
func (s *Session) Log() *slog.Logger { return s.log }

// NotifyClient sends the client a notification (tools/list_changed when
// the mode's tool list changed).
func (s *Session) NotifyClient(method string, params json.RawMessage) {
	if s.modern.Load() {
		s.modernClient.Notify(method, params)
		return
	}
	s.sendClient(context.Background(), method, params)
}

// sendClient sends the client a notification; ctx says which of its
// requests it belongs to, if any (link.WithRelated).
func (s *Session) sendClient(ctx context.Context, method string, params json.RawMessage) {
	if err := s.client.Notify(ctx, method, params); err != nil {
		s.log.Debug("a notification could not be sent to the client", "method", method, "err", err)
	}
}

func newLabel() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "s-" + hex.EncodeToString(b)
}

// initialize starts the session's servers with the client's own
// initialize parameters and answers with their (transparent) or our
// (other modes) server info and capabilities.
func (s *Session) initialize(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	started := false
	s.initOnce.Do(func() {
		started = true
		s.initStarted.Store(true)
		defer close(s.ready)
		s.result, s.initErr = s.start(ctx, params)
	})
	if !started {
		if s.modern.Load() {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "this session speaks " + revision.Modern + ", which has no initialize"}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "initialize was already received on this session"}
	}
	return s.result, s.initErr
}

func (s *Session) start(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	if err := json.Unmarshal(params, &s.init); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: " + err.Error()}
	}
	version := s.cfg.ProtocolVersions[0]
	if slices.Contains(s.cfg.ProtocolVersions, s.init.ProtocolVersion) {
		version = s.init.ProtocolVersion
	}
	down, err := setMember(params, "protocolVersion", version)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "initialize: " + err.Error()}
	}
	s.pool = downstream.Start(ctx, s.cfg.servers(), downstream.Options{Version: s.cfg.Version, Initialize: down, Modern: s.modern.Load(), Auth: s.cfg.Auth,
		Upstream: (*upstream)(s), Client: (*upstream)(s), Restart: s.cfg.Restart, Restarted: s.cfg.Restarted, Vet: s.cfg.VetTools, Hub: s.cfg.Hub, Sandbox: s.cfg.Sandbox, Log: s.log})
	if s.cfg.Transparent && len(s.pool.Servers()) == 1 {
		srv := s.pool.Servers()[0]
		st := srv.State()
		if st.Status != downstream.Ready {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("aqlguard: the server %s did not start: %s", srv.Label(), st.Problem)}
		}
	}
	if s.tools, err = s.cfg.NewTools(s); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: " + err.Error()}
	}
	s.protoUsed = version
	return s.initializeResult(version)
}

// initializeResult is the answer to initialize. In transparent mode with
// one server it is the server's own, as sent, with the protocol version
// the front speaks and tools.listChanged (aqlguard lists its
// verification tool while a code is pending). Otherwise it is
// aqlguard's, with the union of what the servers can do.
func (s *Session) initializeResult(version string) (json.RawMessage, error) {
	ready := s.readyServers()
	if s.cfg.Transparent && len(ready) == 1 {
		st := ready[0].State()
		if slices.Contains(s.cfg.ProtocolVersions, st.Protocol) {
			version = st.Protocol
			s.protoUsed = version
		}
		out, err := setMember(st.InitRaw, "protocolVersion", version)
		if err != nil {
			return nil, err
		}
		var caps map[string]json.RawMessage
		if raw, ok := members(out)["capabilities"]; ok {
			_ = json.Unmarshal(raw, &caps)
		}
		if caps == nil {
			caps = map[string]json.RawMessage{}
		}
		tools, _ := setMember(caps["tools"], "listChanged", true)
		caps["tools"] = tools
		capsRaw, _ := json.Marshal(caps)
		return setMember(out, "capabilities", json.RawMessage(capsRaw))
	}
	caps := map[string]any{"tools": map[string]any{"listChanged": true}}
	var instructions []string
	if s.cfg.Instructions != "" {
		instructions = append(instructions, s.cfg.Instructions)
	}
	for _, srv := range ready {
		st := srv.State()
		for _, feature := range []string{"resources", "prompts", "completions", "logging"} {
			raw, ok := st.Capabilities[feature]
			if !ok || string(raw) == "null" {
				continue
			}
			union, _ := caps[feature].(map[string]any)
			if union == nil {
				union = map[string]any{}
			}
			// resources: subscribe, listChanged; prompts: listChanged.
			var flags map[string]any
			_ = json.Unmarshal(raw, &flags)
			for _, flag := range []string{"subscribe", "listChanged"} {
				if b, _ := flags[flag].(bool); b && feature != "completions" && feature != "logging" {
					union[flag] = true
				}
			}
			caps[feature] = union
		}
		// tasks (2025-11-25) and extensions (2026-07-28: the tasks one
		// among them): what any server can do, merged.
		for _, feature := range []string{"tasks", "extensions"} {
			var flags map[string]any
			if json.Unmarshal(st.Capabilities[feature], &flags) != nil || flags == nil {
				continue
			}
			union, _ := caps[feature].(map[string]any)
			caps[feature] = mergeObjects(union, flags)
		}
		if s.cfg.Transparent && st.Init.Instructions != "" {
			instructions = append(instructions, st.Init.Instructions)
		}
	}
	res := map[string]any{"protocolVersion": version, "capabilities": caps,
		"serverInfo": map[string]any{"name": "aqlguard", "version": s.cfg.Version}}
	if len(instructions) > 0 {
		res["instructions"] = strings.Join(instructions, "\n\n")
	}
	return json.Marshal(res)
}

// mergeObjects merges b into a, objects member by member (a's other
// values win).
func mergeObjects(a, b map[string]any) map[string]any {
	if a == nil {
		a = map[string]any{}
	}
	for k, v := range b {
		av, aok := a[k].(map[string]any)
		bv, bok := v.(map[string]any)
		switch {
		case aok && bok:
			a[k] = mergeObjects(av, bv)
		case a[k] == nil:
			a[k] = v
		}
	}
	return a
}

func (s *Session) readyServers() []*downstream.Server {
	var out []*downstream.Server
	for _, srv := range s.pool.Servers() {
		if srv.State().Status == downstream.Ready {
			out = append(out, srv)
		}
	}
	return out
}

// serversWith reports the servers that declared capability c
// ("resources", "prompts", "completions", "logging"), in config order.
func (s *Session) serversWith(c string) []*downstream.Server {
	var out []*downstream.Server
	for _, srv := range s.pool.Servers() {
		st := srv.State()
		if raw, ok := st.Capabilities[c]; ok && string(raw) != "null" {
			out = append(out, srv)
		}
	}
	return out
}

// errNotReady answers requests that come before initialize.
var errNotReady = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the session is not initialized: send initialize first"}

// waitReady waits for initialize to be answered.
func (s *Session) waitReady(ctx context.Context) error {
	select {
	case <-s.ready:
		if s.initErr != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the session failed to initialize"}
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// started reports whether initialize has arrived (it may still run).
func (s *Session) started() bool { return s.initStarted.Load() }

// initArrived counts an initialize request read from the client; its
// handler calls initReturned when it returns.
func (s *Session) initArrived() {
	s.initMu.Lock()
	if s.initInFlight == 0 {
		s.initSettled = make(chan struct{})
	}
	s.initInFlight++
	s.initMu.Unlock()
}

func (s *Session) initReturned() {
	s.initMu.Lock()
	s.initInFlight--
	if s.initInFlight == 0 {
		close(s.initSettled)
	}
	s.initMu.Unlock()
}

// awaitInitialize waits until the initialize requests the client sent
// before this request have been served: a client may send initialize,
// notifications/initialized and its first requests without waiting for
// the answer, and handlers run concurrently.
func (s *Session) awaitInitialize(ctx context.Context) error {
	s.initMu.Lock()
	settled := s.initSettled
	pending := s.initInFlight > 0
	s.initMu.Unlock()
	if !pending {
		return nil
	}
	select {
	case <-settled:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
