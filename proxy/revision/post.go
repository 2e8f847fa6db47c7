package revision

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

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 client has no session over Streamable HTTP (SEP-2575):
// each POST is one request that carries who the client is and what it
// can do. The POSTs of one client (the same identity, clientInfo and
// capabilities: ClientKey) share a relay session — one set of downstream
// servers, initialized with exactly that client's capabilities, started
// by its first request — through a Conn, which gives every request an id
// of its own on the way in and takes its answer, and the notifications
// that belong to it, back to its POST. Which sessions exist, how many,
// and when an idle one ends is the HTTP front's (PostHost).

// PostHost is what an HTTP front does for one 2026-07-28 POST.
type PostHost interface {
	// CheckParams refuses params aqlguard would read one way and a
	// server another (the relay's check, before headers are compared
	// with the body).
	CheckParams(method string, params json.RawMessage) *jsonrpc.Error
	// Open holds, while the POST is served, what it needs: its
	// principal's guard and the session of its client (meta is the
	// request's _meta, for ClientKey), started on first use; release
	// ends the hold. A refusal is answered with status and werr.
	Open(ctx context.Context, meta map[string]json.RawMessage) (conn *Conn, release func(), status int, werr *jsonrpc.Error)
	// WriteError answers a POST with a JSON-RPC error and an HTTP status.
	WriteError(w http.ResponseWriter, status int, id jsonrpc.ID, werr *jsonrpc.Error)
	// Events writes server-sent events on w, starting the stream with
	// the first; takesEvents reports whether the client names
	// text/event-stream in Accept (one that takes anything gets JSON).
	Events(w http.ResponseWriter) Events
	TakesEvents(r *http.Request) bool
}

// Events writes a POST's answer as server-sent events.
type Events interface {
	Send(m jsonrpc.Message)
	Started() bool
}

// ServePost answers one 2026-07-28 POST whose body is body: a JSON-RPC
// request, its params read as the relay reads them, its headers as its
// body says (versions are the older revisions the front speaks), handed
// to its client's session.
func ServePost(w http.ResponseWriter, r *http.Request, body []byte, versions []string, host PostHost) {
	msg, err := link.DecodeMessage(body)
	if err != nil {
		host.WriteError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "the body is not one JSON-RPC message: " + err.Error()})
		return
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		http.Error(w, "Bad Request: a "+Modern+" client sends requests, not responses", http.StatusBadRequest)
		return
	}
	if !req.IsCall() {
		w.WriteHeader(http.StatusAccepted) // a notification: nothing in 2026-07-28 needs one from the client
		return
	}
	if werr := host.CheckParams(req.Method, req.Params); werr != nil {
		host.WriteError(w, http.StatusBadRequest, req.ID, werr)
		return
	}
	params := rawjson.Members(req.Params)
	meta := rawjson.Members(params["_meta"])
	if werr := CheckHeaders(r.Header, req, params, meta, versions); werr != nil {
		host.WriteError(w, Status(werr), req.ID, werr)
		return
	}
	conn, release, status, werr := host.Open(r.Context(), meta)
	if werr != nil {
		host.WriteError(w, status, req.ID, werr)
		return
	}
	defer release()
	conn.serve(w, r, req, meta, host)
}

// ClientKey names a 2026-07-28 client by who it authenticated as
// (principal, client) and what it says it is and can do: clients of two
// identities never share a session (nor its principal's guard).
func ClientKey(principal, client string, meta map[string]json.RawMessage) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s;%d:%s;", len(principal), principal, len(client), client)
	for _, key := range []string{MetaClientInfo, MetaClientCapabilities} {
		var b bytes.Buffer
		if json.Compact(&b, meta[key]) != nil {
			b.Write(meta[key])
		}
		fmt.Fprintf(h, "%d:%s;", b.Len(), b.Bytes())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Conn is an mcp.Connection whose other side is many POSTs: the shared
// session of one 2026-07-28 client over HTTP. Its state (the POSTs
// waiting) is behind its own lock.
type Conn struct {
	link.Inbox
	done  chan struct{} // the session ended (End)
	ended sync.Once
	n     atomic.Int64

	credential string

	mu    sync.Mutex
	posts map[string]*post // by the id the relay sees
}

// NewConn is the connection of a session whose POSTs authenticated as
// credential ("" without authentication).
func NewConn(credential string) *Conn {
	return &Conn{Inbox: link.NewInbox(), done: make(chan struct{}),
		posts: map[string]*post{}, credential: credential}
}

// SharedByClients: every client that sends the same clientInfo and
// capabilities reaches this session; none holds a secret of its own.
func (c *Conn) SharedByClients() bool { return true }

// Credential names the client all of this session's POSTs authenticated
// as, for the audit log ("" without authentication).
func (c *Conn) Credential() string { return c.credential }

func (c *Conn) SessionID() string { return "" }

// End says the session ended (once the relay session is over): the
// POSTs still waiting are answered so.
func (c *Conn) End() { c.ended.Do(func() { close(c.done) }) }

// Done is closed once the session ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

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
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
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
				if out, err := rawjson.Set(m.Params, "progressToken", json.RawMessage(p.progress)); err == nil {
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

// owns reports whether a notification belongs to p's request, and how
// it reads for p's client.
func (p *post) owns(n *jsonrpc.Request) (jsonrpc.Message, bool) {
	params := rawjson.Members(n.Params)
	switch n.Method {
	case "notifications/message":
		return n, p.logs
	}
	meta := rawjson.Members(params["_meta"])
	sub, ok := meta[MetaSubscriptionID]
	if !ok || string(sub) != strconv.Quote(p.ourID) {
		return nil, false
	}
	id, _ := json.Marshal(p.clientID.Raw())
	metaRaw, err := rawjson.Set(params["_meta"], MetaSubscriptionID, json.RawMessage(id))
	if err != nil {
		return nil, false
	}
	out, err := rawjson.Set(n.Params, "_meta", metaRaw)
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
func (c *Conn) serve(w http.ResponseWriter, r *http.Request, req *jsonrpc.Request, meta map[string]json.RawMessage, host PostHost) {
	p := &post{clientID: req.ID, ourID: "h-" + strconv.FormatInt(c.n.Add(1), 10),
		notes: make(chan jsonrpc.Message, 64), answer: make(chan *jsonrpc.Response, 1)}
	if tok, ok := meta["progressToken"]; ok {
		p.progress = string(tok)
	}
	_, p.logs = meta[MetaLogLevel]
	ours := *req
	ours.ID, _ = jsonrpc.MakeID(p.ourID)
	ours.Extra = &HTTPHeaders{Header: r.Header}
	c.mu.Lock()
	c.posts[p.ourID] = p
	c.mu.Unlock()
	select {
	case c.In <- &ours:
	case <-c.Closed:
		c.forget(p)
		host.WriteError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"})
		return
	case <-r.Context().Done():
		c.forget(p)
		return
	}
	events := host.Events(w)
	for {
		select {
		case m := <-p.notes:
			events.Send(m)
		case resp := <-p.answer:
			link.Drain(p.notes, events.Send)
			status := http.StatusOK
			var werr *jsonrpc.Error
			if errors.As(resp.Error, &werr) {
				status = Status(werr)
			}
			// Events when the client names them; JSON for one that takes
			// anything (*/*, as curl sends).
			if events.Started() || status == http.StatusOK && host.TakesEvents(r) {
				events.Send(resp)
				return
			}
			data, _ := link.EncodeMessage(resp)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(data)
			return
		case <-c.done:
			if !events.Started() {
				host.WriteError(w, http.StatusServiceUnavailable, req.ID, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"})
			}
			return
		case <-r.Context().Done():
			// The client hung up: in 2026-07-28 that cancels the request.
			c.forget(p)
			params, _ := json.Marshal(map[string]any{"requestId": p.ourID, "reason": "the HTTP request ended"})
			select {
			case c.In <- &jsonrpc.Request{Method: "notifications/cancelled", Params: params}:
			case <-c.Closed:
			}
			return
		}
	}
}

func (c *Conn) forget(p *post) {
	c.mu.Lock()
	delete(c.posts, p.ourID)
	c.mu.Unlock()
}
