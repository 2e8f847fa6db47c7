package httpfront

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
)

// sessionConn is the mcp.Connection of one Mcp-Session-Id session (MCP
// 2025-11-25 and older): its other side is the session's POSTs and its
// GET stream. The messages of a POST are read in order; the answer to a
// request, and what the relay says belongs to that request
// (link.Related: its progress, a server's question or log message while
// it runs), go back on that request's POST; the rest goes to the GET
// stream, if the client opened one.
//
// It takes the place of the go-sdk's StreamableServerTransport, which
// decodes every POST three times (once into the SDK's own parameter
// types, to check them) and, below a go-sdk server, is the only one that
// can tell which request a message belongs to; behind the relay it sent
// everything that is not an answer to the GET stream, and refused it
// when there was none.
type sessionConn struct {
	id  string
	log *slog.Logger
	// credential names the client that started the session.
	credential string
	link.Inbox
	// receive takes a POST's messages on the POST's goroutine once the
	// relay's Peer has started (link.Pusher); until then they go through
	// the inbox.
	receive atomic.Pointer[func(jsonrpc.Message) bool]

	mu      sync.Mutex
	replies map[jsonrpc.ID]*reply // by the client's request id (a string and a number never equal)
	stream  chan jsonrpc.Message
}

// reply is one POST waiting for the answers to its requests.
type reply struct {
	answers chan *jsonrpc.Response // room for every answer: a write never blocks
	related chan jsonrpc.Message   // nil when the client takes no event stream
	queue   chan jsonrpc.Message   // related's room, kept with a pooled reply
}

// oneCall keeps the replies of POSTs with one request for the next such
// POST: its queue of maxQueued messages is a kilobyte to allocate and
// collect on every call otherwise.
var oneCall = sync.Pool{New: func() any {
	return &reply{answers: make(chan *jsonrpc.Response, 1), queue: make(chan jsonrpc.Message, maxQueued)}
}}

// newReply is a reply for a POST of calls requests, related messages
// queued when the client takes events.
func newReply(calls int, takesEvents bool) *reply {
	var rep *reply
	if calls == 1 {
		rep = oneCall.Get().(*reply)
	} else {
		rep = &reply{answers: make(chan *jsonrpc.Response, calls), queue: make(chan jsonrpc.Message, maxQueued)}
	}
	if takesEvents {
		rep.related = rep.queue
	}
	return rep
}

// release gives back a reply nothing can write to any more (it was
// unregistered, under c.mu): what is left in it is dropped, as a POST
// that went away drops it.
func (rep *reply) release() {
	if cap(rep.answers) != 1 {
		return
	}
	link.Drain(rep.queue, func(jsonrpc.Message) {})
	select {
	case <-rep.answers:
	default:
	}
	rep.related = nil
	oneCall.Put(rep)
}

// maxQueued bounds the messages waiting to be written to one stream; a
// client that does not read its stream loses notifications, not the
// session.
const maxQueued = 64

// Credential names the client that started the session, for the audit
// log ("" without authentication).
func (c *sessionConn) Credential() string { return c.credential }

func newSessionConn(id string, log *slog.Logger) *sessionConn {
	return &sessionConn{id: id, log: log, Inbox: link.NewInbox(), replies: map[jsonrpc.ID]*reply{}}
}

// Write sends msg to the POST it belongs to, else to the GET stream. A
// request (the server asks the client something) that has neither is an
// error, so the server hears that its question went nowhere; a
// notification without either is dropped, as a direct server drops it.
func (c *sessionConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.Closed:
		return errors.New("the session ended")
	default:
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		r, ok := c.replies[resp.ID]
		if !ok {
			c.log.Debug("an answer for a POST that went away", "id", link.IDKey(resp.ID))
			return nil
		}
		delete(c.replies, resp.ID)
		r.answers <- resp
		return nil
	}
	req, _ := msg.(*jsonrpc.Request)
	if id, ok := link.Related(ctx); ok {
		if r := c.replies[id]; r != nil && r.related != nil && queue(r.related, msg) {
			return nil
		}
	}
	if c.stream != nil && queue(c.stream, msg) {
		return nil
	}
	if req != nil && req.IsCall() {
		return fmt.Errorf("%s could not reach the client: it belongs to no open POST and the client has no GET stream open", req.Method)
	}
	c.log.Debug("a notification with no stream to go to", "method", req.Method)
	return nil
}

// queue adds msg to a stream unless the stream is full.
func queue(to chan jsonrpc.Message, msg jsonrpc.Message) bool {
	select {
	case to <- msg:
		return true
	default:
		return false
	}
}

func (c *sessionConn) SessionID() string { return c.id }

// servePOST answers one POST of the session: 202 when it holds no
// request, else the answers, as JSON when nothing else comes first and
// as a stream of events once something does. A client that hangs up
// does not cancel its requests (2025-11-25 says a disconnection is not a
// cancellation); their answers are dropped.
func (c *sessionConn) servePOST(w http.ResponseWriter, r *http.Request, body []byte, initialize bool) {
	if r.Header.Get("Last-Event-ID") != "" {
		http.Error(w, "Bad Request: a POST cannot resume a stream (Last-Event-ID)", http.StatusBadRequest)
		return
	}
	msgs, batch, err := decodeBody(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, jsonrpc.ID{}, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: err.Error()})
		return
	}
	if v := r.Header.Get(headerProtocol); batch && v >= "2025-06-18" {
		http.Error(w, "Bad Request: JSON-RPC batches are not part of MCP "+v, http.StatusBadRequest)
		return
	}
	var calls []jsonrpc.ID
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, req.ID)
			if r.Header.Get("Traceparent") != "" {
				req.Extra = postContext{r.Header}
			}
		}
	}
	if len(calls) == 0 {
		if !c.deliver(msgs) {
			http.Error(w, "Not Found: the session ended", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	takesEvents := accepts(r, "text/event-stream")
	rep := newReply(len(calls), takesEvents)
	if id, ok := c.register(calls, rep); !ok {
		rep.release()
		writeError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("request id %v is already in use in this session", id.Raw())})
		return
	}
	defer func() {
		c.unregister(calls, rep)
		rep.release()
	}()
	if initialize {
		w.Header().Set(headerSession, c.id)
	}
	if !c.deliver(msgs) {
		writeError(w, http.StatusNotFound, calls[0], &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"})
		return
	}
	c.answer(w, r, rep, len(calls), batch, accepts(r, "application/json") || !takesEvents)
}

// answer writes what comes back for a POST's requests until every one
// of them is answered: the answers as JSON (an object, or the batch's
// array) when nothing else comes first and the client takes JSON
// (asJSON), else everything as events from the first related message
// on, answers held until then included.
func (c *sessionConn) answer(w http.ResponseWriter, r *http.Request, rep *reply, want int, batch, asJSON bool) {
	events := eventWriter{w: w}
	var held []*jsonrpc.Response // answers waiting for the JSON body
	related := func(m jsonrpc.Message) {
		for _, a := range held {
			events.Send(a)
		}
		held = nil
		events.Send(m)
	}
	for answered := 0; answered < want; {
		select {
		case m := <-rep.related:
			related(m)
		case resp := <-rep.answers:
			link.Drain(rep.related, related)
			answered++
			if events.started || !asJSON {
				events.Send(resp)
			} else {
				held = append(held, resp)
			}
		case <-c.Closed:
			if !events.started {
				http.Error(w, "Not Found: the session ended", http.StatusNotFound)
			}
			return
		case <-r.Context().Done():
			return
		}
	}
	if events.started {
		return
	}
	data, err := encodeAnswers(held, batch)
	if err != nil {
		http.Error(w, "Internal Server Error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// encodeAnswers is the JSON body of a POST's answers: the one answer, or
// a batch's array.
func encodeAnswers(answers []*jsonrpc.Response, batch bool) ([]byte, error) {
	if !batch {
		return link.EncodeMessage(answers[0])
	}
	return link.EncodeBatch(answers)
}

// serveGET holds the session's one stream of messages that belong to no
// request. Nothing is stored for a client to resume with, so a
// Last-Event-ID is refused rather than ignored.
func (c *sessionConn) serveGET(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Accept") != "" && !accepts(r, "text/event-stream") {
		http.Error(w, "Not Acceptable: a GET opens an event stream; send Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	if r.Header.Get("Last-Event-ID") != "" {
		http.Error(w, "Bad Request: aqlguard keeps no events to resume a stream with", http.StatusBadRequest)
		return
	}
	stream := make(chan jsonrpc.Message, maxQueued)
	c.mu.Lock()
	if c.stream != nil {
		c.mu.Unlock()
		http.Error(w, "Conflict: this session's GET stream is already open", http.StatusConflict)
		return
	}
	c.stream = stream
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.stream == stream {
			c.stream = nil
		}
		c.mu.Unlock()
	}()
	events := eventWriter{w: w}
	events.start()
	for {
		select {
		case m := <-stream:
			events.Send(m)
		case <-c.Closed:
			return
		case <-r.Context().Done():
			return
		}
	}
}

// register makes rep the POST of every request in calls, unless one of
// their ids is in use already (returned).
func (c *sessionConn) register(calls []jsonrpc.ID, rep *reply) (jsonrpc.ID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, id := range calls {
		if _, dup := c.replies[id]; dup || slices.Contains(calls[:i], id) {
			return id, false
		}
	}
	for _, id := range calls {
		c.replies[id] = rep
	}
	return jsonrpc.ID{}, true
}

// unregister forgets the requests of a POST that is done, answered or not.
func (c *sessionConn) unregister(calls []jsonrpc.ID, rep *reply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range calls {
		if c.replies[id] == rep {
			delete(c.replies, id)
		}
	}
}

// PushTo is link.Pusher: the relay's Peer takes each POST's messages on
// the POST's goroutine, one goroutine hand-off less per message than
// through Read.
func (c *sessionConn) PushTo(receive func(jsonrpc.Message) bool) { c.receive.Store(&receive) }

// deliver hands a POST's messages to the relay, in order; false when the
// session ended first. All of them go one way (a batch's first message
// through the inbox and the next pushed could be taken out of order).
func (c *sessionConn) deliver(msgs []jsonrpc.Message) bool {
	receive := c.receive.Load()
	for _, m := range msgs {
		if receive != nil {
			if !(*receive)(m) {
				return false
			}
			continue
		}
		select {
		case c.In <- m:
		case <-c.Closed:
			return false
		}
	}
	return true
}

// decodeBody reads a POST's message, or the messages of a batch. The
// body is the POST's own (readBody): the message keeps its bytes.
func decodeBody(body []byte) (msgs []jsonrpc.Message, batch bool, err error) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, false, errors.New("the body is empty")
	}
	if trimmed[0] != '[' {
		m, err := link.DecodeOwned(trimmed)
		if err != nil {
			return nil, false, fmt.Errorf("the body is not a JSON-RPC message: %w", err)
		}
		return []jsonrpc.Message{m}, false, nil
	}
	if msgs, err = link.DecodeBatch(trimmed); err != nil {
		return nil, true, fmt.Errorf("the body is not a JSON-RPC batch: %w", err)
	}
	return msgs, true, nil
}

// eventWriter writes server-sent events, starting the stream (headers,
// status) with the first.
type eventWriter struct {
	w       http.ResponseWriter
	started bool
}

func (e *eventWriter) start() {
	if e.started {
		return
	}
	e.started = true
	h := e.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache, no-transform")
	e.w.WriteHeader(http.StatusOK)
	if fl, ok := e.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// Started reports whether an event was sent.
func (e *eventWriter) Started() bool { return e.started }

func (e *eventWriter) Send(m jsonrpc.Message) {
	data, err := link.EncodeMessage(m)
	if err != nil {
		return
	}
	e.start()
	buf := make([]byte, 0, len(data)+len("event: message\ndata: \n\n"))
	buf = append(buf, "event: message\ndata: "...)
	buf = append(buf, data...)
	buf = append(buf, "\n\n"...)
	_, _ = e.w.Write(buf)
	if fl, ok := e.w.(http.Flusher); ok {
		fl.Flush()
	}
}

// accepts reports whether the request's Accept header takes mediaType,
// by name or by a wildcard.
func accepts(r *http.Request, mediaType string) bool { return acceptsType(r, mediaType, true) }

// names reports whether the request's Accept header names mediaType
// itself (a client that takes anything, */*, does not).
func names(r *http.Request, mediaType string) bool { return acceptsType(r, mediaType, false) }

func acceptsType(r *http.Request, mediaType string, wildcards bool) bool {
	major, _, _ := strings.Cut(mediaType, "/")
	for _, v := range r.Header.Values("Accept") {
		for more := true; more; {
			var part string
			part, v, more = strings.Cut(v, ",")
			t, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if t == mediaType || wildcards && (t == "*/*" || len(t) == len(major)+2 && strings.HasPrefix(t, major) && t[len(major):] == "/*") {
				return true
			}
		}
	}
	return false
}

// postContext is the request's Extra: the POST's W3C trace context goes
// with it to its handler (link.Contexter).
type postContext struct{ header http.Header }

func (p postContext) RequestContext(ctx context.Context) context.Context {
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(p.header))
}
