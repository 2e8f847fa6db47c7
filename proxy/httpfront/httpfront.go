// Package httpfront serves MCP's Streamable HTTP transport in front of the
// relay: it owns the sessions (one relay session, with its own downstream
// servers, per Mcp-Session-Id), checks every request before the transport
// sees it (Host and Origin against DNS rebinding, body size, protocol
// version header) and ends sessions that are deleted, idle too long, or
// too many. The framing is ours: sessionConn for sessions (2025-11-25
// and older); a 2026-07-28 client's POSTs are revision.ServePost's, on a
// session of the front's (statelessConn).
package httpfront

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/revision"
)

// Options bound what clients may do.
type Options struct {
	// MaxBodyBytes bounds a POST body (default 1 MiB).
	MaxBodyBytes int64
	// MaxSessions bounds the sessions alive at once (default 32); each
	// runs its own downstream servers.
	MaxSessions int
	// IdleTimeout ends a session with no request for this long (default
	// 30 minutes).
	IdleTimeout time.Duration
	// Auth, when set, says who every request comes from (a static
	// client's token or an identity provider's JWT) and refuses the rest
	// with the challenge the MCP authorization spec names. A session
	// belongs to the identity that started it: a request of another
	// identity does not find it.
	Auth *clientauth.Authenticator
	// RelayFor is the relay configuration of an identity's sessions (its
	// principal's guard), held by the session until release is called
	// (Principals.Hold: a principal's guard is not dropped while one of
	// its sessions is open or a request is served); nil: the one New was
	// given, for everyone.
	RelayFor func(ctx context.Context, id clientauth.Identity) (rc *relay.Config, release func(), err error)
	Log      *slog.Logger
}

const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
)

// Front is the /mcp endpoint.
type Front struct {
	relay *relay.Config
	opts  Options
	log   *slog.Logger
	ctx   context.Context
	stop  context.CancelFunc

	mu        sync.Mutex
	sessions  map[string]*session
	stateless map[string]*statelessConn // sessions of 2026-07-28 clients, by client (revision.ClientKey)
	closed    bool
}

type session struct {
	ident  clientauth.Identity
	conn   *sessionConn
	cancel context.CancelFunc
	done   chan struct{}
	use
}

// New returns the endpoint; sessions live until Close or ctx ends.
func New(ctx context.Context, rc *relay.Config, opts Options) *Front {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 1 << 20
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 32
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	fctx, stop := context.WithCancel(ctx)
	f := &Front{relay: rc, opts: opts, log: opts.Log, ctx: fctx, stop: stop, sessions: map[string]*session{}, stateless: map[string]*statelessConn{}}
	go f.reapIdle()
	return f
}

// Close ends every session and stops their servers.
func (f *Front) Close() {
	f.mu.Lock()
	f.closed = true
	all := make([]*session, 0, len(f.sessions))
	for _, s := range f.sessions {
		all = append(all, s)
	}
	var stateless []*statelessConn
	for _, c := range f.stateless {
		stateless = append(stateless, c)
	}
	f.mu.Unlock()
	f.stop()
	for _, s := range all {
		s.cancel()
		<-s.done
	}
	for _, c := range stateless {
		<-c.done
	}
}

func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ident clientauth.Identity
	if f.opts.Auth != nil {
		var rf *clientauth.Refusal
		if ident, rf = f.opts.Auth.Authenticate(r); rf != nil {
			f.opts.Auth.Challenge(w, rf)
			return
		}
	}
	if err := checkHost(r); err != nil {
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if err := checkOrigin(r); err != nil {
		http.Error(w, "Forbidden: "+err.Error(), http.StatusForbidden)
		return
	}
	if v := r.Header.Get(headerProtocol); v != "" && v < revision.Modern && !slices.Contains(f.relay.ProtocolVersions, v) {
		http.Error(w, "Bad Request: unsupported protocol version (supported: "+revision.Modern+", "+strings.Join(f.relay.ProtocolVersions, ", ")+")", http.StatusBadRequest)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, f.opts.MaxBodyBytes)
	}
	id := r.Header.Get(headerSession)
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if id == "" {
		if r.Method != http.MethodPost {
			http.Error(w, "Bad Request: "+headerSession+" is required", http.StatusBadRequest)
			return
		}
		body, ok := readBody(w, r, f.opts.MaxBodyBytes)
		if !ok {
			return
		}
		if revision.IsModernPost(r.Header, body) {
			f.serveStateless(w, r, body, ident)
			return
		}
		f.newSession(w, r, body, ident)
		return
	}
	f.mu.Lock()
	s, ok := f.sessions[id]
	f.mu.Unlock()
	if !ok || s.ident != ident {
		// Another client's session is not found either: its id is no
		// key to its principal's approvals.
		http.Error(w, "Not Found: no such session (it ended or never existed); initialize a new one", http.StatusNotFound)
		return
	}
	if v := r.Header.Get(headerProtocol); v >= revision.Modern {
		http.Error(w, "Bad Request: "+v+" has no sessions; send its requests without "+headerSession, http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodDelete {
		f.end(id, s)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	s.begin()
	defer s.end()
	if r.Method == http.MethodGet {
		s.conn.serveGET(w, r)
		return
	}
	body, ok := readBody(w, r, f.opts.MaxBodyBytes)
	if !ok {
		return
	}
	s.conn.servePOST(w, r, body, false)
}

// readBody reads a POST's body (r.Body is limited to limit bytes),
// answering the client itself when it cannot.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	var buf bytes.Buffer
	if n := r.ContentLength; n > 0 && n <= limit {
		buf.Grow(int(n) + 1) // +1: ReadFrom wants room to see the end
	}
	_, err := buf.ReadFrom(r.Body)
	body := buf.Bytes()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
			return nil, false
		}
		http.Error(w, "Bad Request: the body could not be read", http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// newSession starts a session for a POST that carries initialize.
func (f *Front) newSession(w http.ResponseWriter, r *http.Request, body []byte, ident clientauth.Identity) {
	if !isInitialize(body) {
		http.Error(w, "Bad Request: no "+headerSession+"; a new session starts with initialize", http.StatusBadRequest)
		return
	}
	rc, release, err := f.relayFor(r.Context(), ident)
	if err != nil {
		f.log.Error("a new session was refused: its principal's guard could not be made", "principal", ident.Principal, "err", err)
		http.Error(w, "Service Unavailable: this client's policy could not be loaded", http.StatusServiceUnavailable)
		return
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		release()
		http.Error(w, "Service Unavailable: shutting down", http.StatusServiceUnavailable)
		return
	}
	if len(f.sessions)+len(f.stateless) >= f.opts.MaxSessions {
		f.mu.Unlock()
		release()
		f.log.Warn("a new session was refused: too many sessions", "limit", f.opts.MaxSessions)
		http.Error(w, "Service Unavailable: too many sessions", http.StatusServiceUnavailable)
		return
	}
	id := rand.Text()
	conn := newSessionConn(id, f.log)
	conn.credential = ident.Client
	ctx, cancel := context.WithCancel(f.ctx)
	s := &session{ident: ident, conn: conn, cancel: cancel, done: make(chan struct{})}
	s.touch()
	f.sessions[id] = s
	f.mu.Unlock()
	go func() {
		defer close(s.done)
		// The session holds its principal's guard until it has ended
		// (its executions cancelled, its questions withdrawn).
		defer release()
		if err := relay.Serve(ctx, conn, rc); err != nil {
			f.log.Debug("session ended", "err", err)
		}
		_ = conn.Close()
		f.mu.Lock()
		delete(f.sessions, id)
		f.mu.Unlock()
	}()
	s.begin()
	defer s.end()
	conn.servePOST(w, r, body, true)
}

// relayFor is the relay configuration of ident's sessions, held until
// release is called.
func (f *Front) relayFor(ctx context.Context, ident clientauth.Identity) (*relay.Config, func(), error) {
	if f.opts.RelayFor == nil {
		return f.relay, func() {}, nil
	}
	return f.opts.RelayFor(ctx, ident)
}

func (f *Front) end(id string, s *session) {
	f.mu.Lock()
	delete(f.sessions, id)
	f.mu.Unlock()
	s.cancel()
}

// reapIdle ends sessions nobody has used for IdleTimeout.
func (f *Front) reapIdle() {
	tick := time.NewTicker(min(f.opts.IdleTimeout/4, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-tick.C:
		}
		cutoff := time.Now().Add(-f.opts.IdleTimeout).UnixNano()
		f.mu.Lock()
		var idle []string
		for id, s := range f.sessions {
			if s.idleSince(cutoff) {
				idle = append(idle, id)
			}
		}
		var idleStateless []*statelessConn
		for _, c := range f.stateless {
			if c.idleSince(cutoff) {
				idleStateless = append(idleStateless, c)
			}
		}
		f.mu.Unlock()
		for _, c := range idleStateless {
			f.log.Info("ending an idle session", "idle_for", f.opts.IdleTimeout, "protocol", revision.Modern)
			c.cancel()
		}
		for _, id := range idle {
			f.mu.Lock()
			s := f.sessions[id]
			f.mu.Unlock()
			if s != nil {
				f.log.Info("ending an idle session", "idle_for", f.opts.IdleTimeout)
				f.end(id, s)
			}
		}
	}
}

// use is how a session is used, for idle expiry: both kinds of session
// (Mcp-Session-Id, and a 2026-07-28 client's) embed it.
type use struct {
	last   atomic.Int64 // unix nanoseconds of the last request's start or end
	active atomic.Int32 // requests being served
}

func (u *use) touch() { u.last.Store(time.Now().UnixNano()) }
func (u *use) begin() { u.active.Add(1); u.touch() }
func (u *use) end()   { u.touch(); u.active.Add(-1) }

// idleSince reports whether no request is being served and none came
// after cutoff (unix nanoseconds).
func (u *use) idleSince(cutoff int64) bool { return u.active.Load() == 0 && u.last.Load() < cutoff }

// isInitialize reports whether a POST body holds an initialize request
// (alone, or in a batch of the old revisions).
func isInitialize(body []byte) bool {
	var one struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &one) == nil {
		return one.Method == mcpmethod.Initialize
	}
	var batch []struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &batch) != nil {
		return false
	}
	for _, m := range batch {
		if m.Method == mcpmethod.Initialize {
			return true
		}
	}
	return false
}

// checkHost refuses a request to a loopback listener whose Host is not
// loopback: a web page's DNS name rebound to 127.0.0.1 must not reach
// the guarded servers.
func checkHost(r *http.Request) error {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return nil
	}
	if tcp, isTCP := local.(*net.TCPAddr); isTCP {
		if !tcp.IP.IsLoopback() { // what isLoopbackAddr reads of its text, without writing it
			return nil
		}
	} else if !isLoopbackAddr(local.String()) {
		return nil
	}
	if !isLoopbackHost(r.Host) {
		return errors.New("invalid Host header " + r.Host)
	}
	return nil
}

// checkOrigin refuses browser requests from other origins than the
// loopback ones; clients that are not browsers send no Origin.
func checkOrigin(r *http.Request) error {
	o := r.Header.Get("Origin")
	if o == "" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || !isLoopbackHost(u.Host) {
		return errors.New("cross-origin request from " + o)
	}
	return nil
}

func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func isLoopbackHost(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
