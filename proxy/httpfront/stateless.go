package httpfront

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 client has no session (SEP-2575): each POST is one
// request, answered by revision.ServePost through the shared session of
// its client (revision.Conn). What is the front's is here: those
// sessions are counted against MaxSessions with the others, hold their
// principal's guard, and end when idle like the others.

// statelessConn is the relay session of one 2026-07-28 client: its
// connection, and how the front ends it.
type statelessConn struct {
	*revision.Conn
	cancel context.CancelFunc
	done   <-chan struct{} // the session ended
	use
}

// serveStateless answers one 2026-07-28 POST.
func (f *Front) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, ident clientauth.Identity) {
	revision.ServePost(w, r, body, f.relay.ProtocolVersions, &statelessPost{f: f, ident: ident})
}

// statelessPost is the front as one POST's revision.PostHost.
type statelessPost struct {
	f     *Front
	ident clientauth.Identity
}

func (p *statelessPost) CheckParams(method string, params json.RawMessage) *jsonrpc.Error {
	return relay.CheckParams(method, params)
}

func (p *statelessPost) WriteError(w http.ResponseWriter, status int, id jsonrpc.ID, werr *jsonrpc.Error) {
	writeError(w, status, id, werr)
}

func (p *statelessPost) Events(w http.ResponseWriter) revision.Events { return &eventWriter{w: w} }

func (p *statelessPost) TakesEvents(r *http.Request) bool { return names(r, "text/event-stream") }

// Open holds the POST's principal's guard while it is served (a session
// it starts holds it from then on, until the session ends) and the
// session of its client.
func (p *statelessPost) Open(ctx context.Context, meta map[string]json.RawMessage) (*revision.Conn, func(), int, *jsonrpc.Error) {
	f := p.f
	_, release, err := f.relayFor(ctx, p.ident)
	if err != nil {
		f.log.Error("a new session was refused: its principal's guard could not be made", "principal", p.ident.Principal, "err", err)
		return nil, nil, http.StatusServiceUnavailable, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "this client's policy could not be loaded"}
	}
	s, err := f.statelessConn(ctx, p.ident, revision.ClientKey(p.ident.Principal, p.ident.Client, meta))
	if err != nil {
		release()
		return nil, nil, http.StatusServiceUnavailable, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	s.begin()
	return s.Conn, func() { s.end(); release() }, 0, nil
}

func writeError(w http.ResponseWriter, status int, id jsonrpc.ID, werr *jsonrpc.Error) {
	data, err := link.EncodeMessage(&jsonrpc.Response{ID: id, Error: werr})
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// statelessConn is the session of the client key, started on first
// use. A session it starts holds its principal's guard until it ends.
func (f *Front) statelessConn(rctx context.Context, ident clientauth.Identity, key string) (*statelessConn, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("shutting down")
	}
	if s, ok := f.stateless[key]; ok {
		f.mu.Unlock()
		return s, nil
	}
	f.mu.Unlock()
	// The caller holds the guard: this hold of the session's own finds
	// it at once.
	rc, release, err := f.relayFor(rctx, ident)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		release()
		return nil, errors.New("shutting down")
	}
	if s, ok := f.stateless[key]; ok { // started meanwhile by another POST
		release()
		return s, nil
	}
	if len(f.sessions)+len(f.stateless) >= f.opts.MaxSessions {
		release()
		f.log.Warn("a new session was refused: too many sessions", "limit", f.opts.MaxSessions)
		return nil, errors.New("too many sessions")
	}
	ctx, cancel := context.WithCancel(f.ctx)
	conn := revision.NewConn(ident.Client)
	s := &statelessConn{Conn: conn, cancel: cancel, done: conn.Done()}
	s.touch()
	f.stateless[key] = s
	go func() {
		defer s.Conn.End()
		defer release()
		if err := relay.Serve(ctx, s.Conn, rc); err != nil {
			f.log.Debug("a stateless session ended", "err", err)
		}
		_ = s.Conn.Close()
		f.mu.Lock()
		if f.stateless[key] == s {
			delete(f.stateless, key)
		}
		f.mu.Unlock()
	}()
	return s, nil
}
