package httpfront

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 client has no session (SEP-2575): each POST is one
// request that carries who the client is and what it can do. The POSTs
// of one client (the same clientInfo and capabilities) share a relay
// session — one set of downstream servers, initialized with exactly that
// client's capabilities, started by its first request — through a
// statelessConn, which gives every request an id of its own on the way
// in and takes its answer, and the notifications that belong to it, back
// to its POST. These sessions count against MaxSessions and end when idle
// like the others.

// serveStateless answers one 2026-07-28 POST.
func (f *Front) serveStateless(w http.ResponseWriter, r *http.Request, body []byte, ident clientauth.Identity) {
	msg, err := link.DecodeMessage(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not one JSON-RPC message: " + err.Error()})
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		http.Error(w, "Bad Request: a "+revision.Modern+" client sends requests, not responses", http.StatusBadRequest)
		return
	}
	if !req.IsCall() {
		w.WriteHeader(http.StatusAccepted) // a notification: nothing in 2026-07-28 needs one from the client
		return
	}
	if werr := relay.CheckParams(req.Method, req.Params); werr != nil {
		writeError(w, http.StatusBadRequest, req.ID, werr)
		return
	}
	params := relay.Members(req.Params)
	meta := relay.Members(params["_meta"])
	if werr := revision.CheckHeaders(r.Header, req, params, meta, f.relay.ProtocolVersions); werr != nil {
		writeError(w, revision.Status(werr), req.ID, werr)
		return
	}
	// The POST holds its principal's guard while it is served; a session
	// it starts holds it from then on, until the session ends.
	_, release, err := f.relayFor(r.Context(), ident)
	if err != nil {
		f.log.Error("a new session was refused: its principal's guard could not be made", "principal", ident.Principal, "err", err)
		writeError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "this client's policy could not be loaded"})
		return
	}
	defer release()
	conn, err := f.statelessConn(r.Context(), ident, clientKey(ident, meta))
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()})
		return
	}
	conn.begin()
	defer conn.end()
	conn.serve(w, r, req, meta)
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

// clientKey names a 2026-07-28 client by who it authenticated as and
// what it says it is and can do: clients of two identities never share
// a session (nor its principal's guard).
func clientKey(ident clientauth.Identity, meta map[string]json.RawMessage) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s;%d:%s;", len(ident.Principal), ident.Principal, len(ident.Client), ident.Client)
	for _, key := range []string{"io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities"} {
		var b bytes.Buffer
		if json.Compact(&b, meta[key]) != nil {
			b.Write(meta[key])
		}
		fmt.Fprintf(h, "%d:%s;", b.Len(), b.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// statelessConn is the session of the client key, started on first use.
// A session it starts holds its principal's guard until it ends.
func (f *Front) statelessConn(rctx context.Context, ident clientauth.Identity, key string) (*statelessConn, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, errors.New("shutting down")
	}
	if c, ok := f.stateless[key]; ok {
		f.mu.Unlock()
		return c, nil
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
	if c, ok := f.stateless[key]; ok { // started meanwhile by another POST
		release()
		return c, nil
	}
	if len(f.sessions)+len(f.stateless) >= f.opts.MaxSessions {
		release()
		f.log.Warn("a new session was refused: too many sessions", "limit", f.opts.MaxSessions)
		return nil, errors.New("too many sessions")
	}
	ctx, cancel := context.WithCancel(f.ctx)
	c := &statelessConn{inbox: newInbox(), done: make(chan struct{}), cancel: cancel, posts: map[string]*post{}, credential: ident.Client}
	c.touch()
	f.stateless[key] = c
	go func() {
		defer close(c.done)
		defer release()
		if err := relay.Serve(ctx, c, rc); err != nil {
			f.log.Debug("a stateless session ended", "err", err)
		}
		_ = c.Close()
		f.mu.Lock()
		if f.stateless[key] == c {
			delete(f.stateless, key)
		}
		f.mu.Unlock()
	}()
	return c, nil
}

// SharedByClients: every client that sends the same clientInfo and
// capabilities reaches this session; none holds a secret of its own.
func (c *statelessConn) SharedByClients() bool { return true }

// Credential names the client all of this session's POSTs authenticated
// as, for the audit log ("" without authentication).
func (c *statelessConn) Credential() string { return c.credential }

// statelessConn is an mcp.Connection whose other side is many POSTs.
type statelessConn struct {
	inbox
	done   chan struct{} // the session ended
	cancel context.CancelFunc
	n      atomic.Int64
	use

	credential string

	mu    sync.Mutex
	posts map[string]*post // by the id the relay sees
}

// post is one POST waiting for its answer.
type post struct {
	clientID jsonrpc.ID
	ourID    string
	progress string // the client's progress token, as JSON, if any
	logs     bool   // the request asked for a log level
	notes    chan jsonrpc.Message
	answer   chan *jsonrpc.Response // one, never blocks
}

// Write takes the relay's messages to the POSTs they belong to: an answer
// to the request it answers, progress to the request whose token it
// carries, a listen stream's notifications to that stream, log messages
// to the requests that asked for a level.
func (c *statelessConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Response:
		p, ok := c.posts[ourKey(m.ID)]
		if !ok {
			return nil // its POST went away
		}
		delete(c.posts, p.ourID)
		resp := *m
		resp.ID = p.clientID
		p.answer <- &resp
	case *jsonrpc.Request:
		if m.IsCall() {
			return nil // a 2026-07-28 session never calls the client
		}
		if m.Method == "notifications/progress" {
			// Only to the request it belongs to: the POSTs of clients
			// alike share this session, and their tokens may be the same.
			id, ok := link.Related(ctx)
			if p := c.posts[ourKey(id)]; ok && p != nil && p.progress != "" {
				if out, err := relay.SetMember(m.Params, "progressToken", json.RawMessage(p.progress)); err == nil {
					select {
					case p.notes <- &jsonrpc.Request{Method: m.Method, Params: out}:
					default:
					}
				}
			}
			return nil
		}
		for _, p := range c.posts {
			if out, ok := p.owns(m); ok {
				select {
				case p.notes <- out:
				default: // a POST that does not read its stream loses notifications, not the session
				}
			}
		}
	}
	return nil
}

func (c *statelessConn) SessionID() string { return "" }

// owns reports whether a notification belongs to p's request, and how
// it reads for p's client.
func (p *post) owns(n *jsonrpc.Request) (jsonrpc.Message, bool) {
	params := relay.Members(n.Params)
	switch n.Method {
	case "notifications/message":
		return n, p.logs
	}
	meta := relay.Members(params["_meta"])
	sub, ok := meta["io.modelcontextprotocol/subscriptionId"]
	if !ok || string(sub) != strconv.Quote(p.ourID) {
		return nil, false
	}
	id, _ := json.Marshal(p.clientID.Raw())
	metaRaw, err := relay.SetMember(params["_meta"], "io.modelcontextprotocol/subscriptionId", json.RawMessage(id))
	if err != nil {
		return nil, false
	}
	out, err := relay.SetMember(n.Params, "_meta", metaRaw)
	if err != nil {
		return nil, false
	}
	return &jsonrpc.Request{Method: n.Method, Params: out}, true
}

func ourKey(id jsonrpc.ID) string {
	s, _ := id.Raw().(string)
	return s
}

// serve hands one request to the shared session and writes what comes
// back: a single answer as JSON (an error with the status 2026-07-28
// gives it), or, once a notification comes first, a stream of events.
func (c *statelessConn) serve(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, meta map[string]json.RawMessage) {
	p := &post{clientID: req.ID, ourID: "h-" + strconv.FormatInt(c.n.Add(1), 10),
		notes: make(chan jsonrpc.Message, 64), answer: make(chan *jsonrpc.Response, 1)}
	if tok, ok := meta["progressToken"]; ok {
		p.progress = string(tok)
	}
	_, p.logs = meta["io.modelcontextprotocol/logLevel"]
	ours := *req
	ours.ID, _ = jsonrpc.MakeID(p.ourID)
	ours.Extra = &revision.HTTPHeaders{Header: r.Header}
	c.mu.Lock()
	c.posts[p.ourID] = p
	c.mu.Unlock()
	select {
	case c.in <- &ours:
	case <-c.closed:
		c.forget(p)
		writeError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"})
		return
	case <-r.Context().Done():
		c.forget(p)
		return
	}
	events := eventWriter{w: w}
	for {
		select {
		case m := <-p.notes:
			events.send(m)
		case resp := <-p.answer:
			drain(p.notes, events.send)
			status := http.StatusOK
			var werr *jsonrpc.Error
			if errors.As(resp.Error, &werr) {
				status = revision.Status(werr)
			}
			// Events when the client names them; JSON for one that takes
			// anything (*/*, as curl sends).
			if events.started || status == http.StatusOK && names(r, "text/event-stream") {
				events.send(resp)
				return
			}
			data, _ := link.EncodeMessage(resp)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(data)
			return
		case <-c.done:
			if !events.started {
				writeError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"})
			}
			return
		case <-r.Context().Done():
			// The client hung up: in 2026-07-28 that cancels the request.
			c.forget(p)
			params, _ := json.Marshal(map[string]any{"requestId": p.ourID, "reason": "the HTTP request ended"})
			select {
			case c.in <- &jsonrpc.Request{Method: "notifications/cancelled", Params: params}:
			case <-c.closed:
			}
			return
		}
	}
}

func (c *statelessConn) forget(p *post) {
	c.mu.Lock()
	delete(c.posts, p.ourID)
	c.mu.Unlock()
}
