// Package link is one end of an MCP connection at the JSON-RPC level: it
// sends requests and notifications with their parameters as raw bytes,
// matches responses to requests, and hands the other side's requests and
// notifications to a Handler, also as raw bytes. Nothing is decoded into
// Go types on the way through, so a relay built on two Peers passes on
// fields, content types and numbers it does not know, exactly as sent.
//
// The connection (framing, HTTP, stdio) is the go-sdk's mcp.Connection or
// one of ours; a Peer works the same over either.
package link

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler serves what the other side sends. Request runs on a goroutine
// of its own for each request; its ctx ends when the other side cancels
// the request (notifications/cancelled) or the connection closes. It
// returns the raw result or an error: a *jsonrpc.Error is sent as it is
// (code, message, data); an error with a PublicMessage() string method
// as an internal error with that message; any other error as an
// internal error with a fixed message (its text goes to the log). Notification runs on the reading
// goroutine, in order, and must not block for long.
type Handler interface {
	Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error)
	Notification(ctx context.Context, req *jsonrpc.Request)
}

// Arrivals is a Handler that wants to see each request as it is read, in
// the order the other side sent them, before the request's handler runs on
// its goroutine (and only for requests whose handler will run): handlers run concurrently, so without it a request sent
// after another may be served before the first has begun. Arrived runs on
// the reading goroutine and must not block.
type Arrivals interface {
	Arrived(req *jsonrpc.Request)
}

// Pusher is a connection whose messages arrive on goroutines of their
// own (a Streamable HTTP session's POSTs). Start gives it the Peer's
// receive, which takes a message on the goroutine that brings it, where
// handing it to Read would wake the Peer's reading goroutine for every
// message. The messages pushed are taken one at a time, in the order
// they are pushed, as the reading goroutine takes those of Read: a
// notification's handler has returned, and a request's has been given
// its goroutine, when receive returns. receive reports false once the
// Peer is done (the message was not taken). Read still says when the
// connection ends (and may bring messages too).
type Pusher interface {
	PushTo(receive func(jsonrpc.Message) bool)
}

// ErrClosed is returned by calls on a closed Peer, and by calls that were
// waiting for an answer when it closed.
var ErrClosed = errors.New("connection closed")

// MethodCancelled is the notification that cancels a request.
const MethodCancelled = "notifications/cancelled"

// Peer is one side of a JSON-RPC connection.
type Peer struct {
	conn    mcp.Connection
	handler Handler
	log     *slog.Logger
	// IDPrefix makes this peer's request ids its own ("a-1", "a-2", ...),
	// so ids seen in logs say where they came from. Set before Start.
	IDPrefix string
	// FinishOnEOF says the end of the other side's input is a shutdown
	// that still wants its answers, as MCP's stdio transport has it (the
	// client closes the server's stdin, then waits for it to exit): the
	// requests already received are served and answered before the Peer
	// is done. Otherwise they are cancelled. Calls of ours waiting for an
	// answer fail either way: none can come. Set before Start.
	FinishOnEOF bool

	nextID atomic.Int64

	// takeMu makes the messages of Read and of a Pusher's pushes taken
	// one at a time; takeCtx is the context of their notifications,
	// ended when the connection's reading ends.
	takeMu     sync.Mutex
	takeCtx    context.Context
	takeCancel context.CancelFunc

	mu sync.Mutex
	// Both by request id: a string and a number are different ids, as
	// idKey writes them apart.
	pending  map[jsonrpc.ID]chan *jsonrpc.Response
	incoming map[jsonrpc.ID]*incomingCall // requests from the other side being served
	closed   bool
	// finishing: the other side's input ended and the requests it sent
	// are being finished (FinishOnEOF); serving counts them.
	finishing bool
	serving   sync.WaitGroup
	workers   workers

	done     chan struct{}
	closeErr error
	once     sync.Once
}

type incomingCall struct {
	cancel    context.CancelFunc
	cancelled bool // by the other side: no response is sent
}

// New returns a Peer on conn; it does nothing until Start.
func New(conn mcp.Connection, h Handler, log *slog.Logger) *Peer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Peer{conn: conn, handler: h, log: log,
		pending: map[jsonrpc.ID]chan *jsonrpc.Response{}, incoming: map[jsonrpc.ID]*incomingCall{},
		done: make(chan struct{})}
	p.takeCtx, p.takeCancel = context.WithCancel(context.Background())
	return p
}

// Start reads the connection until it fails or the Peer is closed (and
// takes what a Pusher pushes from then on).
func (p *Peer) Start() {
	if c, ok := p.conn.(Pusher); ok {
		c.PushTo(p.receive)
	}
	go p.read()
}

// receive takes one message a Pusher pushes.
func (p *Peer) receive(msg jsonrpc.Message) bool {
	p.takeMu.Lock()
	defer p.takeMu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	p.take(msg)
	return true
}

// Done is closed when the connection has ended; Err then says why.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Err is why the connection ended (nil before Done is closed, or after a
// Close).
func (p *Peer) Err() error {
	select {
	case <-p.done:
		return p.closeErr
	default:
		return nil
	}
}

// WaitServed waits, at most d, until the handlers of the other side's
// requests have returned (Close and the connection's end cancel their
// contexts; a guarded call still records its decision). It reports
// whether they all did.
func (p *Peer) WaitServed(d time.Duration) bool {
	done := make(chan struct{})
	go func() { p.serving.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// Close ends the connection: pending calls fail with ErrClosed, requests
// being served have their contexts cancelled.
func (p *Peer) Close() error {
	p.shutdown(nil)
	return p.conn.Close()
}

func (p *Peer) shutdown(err error) {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.closeErr = err
		p.failPending()
		for _, c := range p.incoming {
			c.cancel()
		}
		p.workers.stop()
		p.mu.Unlock()
		close(p.done)
	})
}

func (p *Peer) read() {
	defer p.takeCancel()
	for {
		msg, err := p.conn.Read(p.takeCtx)
		if err != nil {
			if p.FinishOnEOF && errors.Is(err, io.EOF) {
				p.finish()
			}
			p.shutdown(fmt.Errorf("reading: %w", err))
			_ = p.conn.Close()
			return
		}
		p.takeMu.Lock()
		p.take(msg)
		p.takeMu.Unlock()
	}
}

// take serves one message of the other side's; p.takeMu is held.
func (p *Peer) take(msg jsonrpc.Message) {
	switch m := msg.(type) {
	case *jsonrpc.Response:
		p.deliver(m)
	case *jsonrpc.Request:
		if !m.IsCall() {
			if m.Method == MethodCancelled {
				p.cancelIncoming(m.Params)
			}
			p.handler.Notification(p.takeCtx, m)
			return
		}
		p.serve(m)
	}
}

// finish serves out the requests the other side sent before its input
// ended (see FinishOnEOF); a Close meanwhile cancels them.
func (p *Peer) finish() {
	p.mu.Lock()
	p.finishing = true
	p.failPending() // no answer can come
	p.mu.Unlock()
	p.serving.Wait()
}

// failPending ends the calls of ours that wait for an answer: they fail
// with the Peer's close error. p.mu is held.
func (p *Peer) failPending() {
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
}

func (p *Peer) deliver(r *jsonrpc.Response) {
	p.mu.Lock()
	ch, ok := p.pending[r.ID]
	delete(p.pending, r.ID)
	p.mu.Unlock()
	if !ok {
		p.log.Debug("a response to no request of ours", "id", idKey(r.ID))
		return
	}
	ch <- r
}

// serve runs the handler for one request from the other side.
func (p *Peer) serve(req *jsonrpc.Request) {
	key := req.ID
	base := context.Background()
	if c, ok := req.Extra.(Contexter); ok {
		base = c.RequestContext(base)
	}
	ctx, cancel := context.WithCancel(WithRelated(base, req.ID))
	call := &incomingCall{cancel: cancel}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cancel()
		return
	}
	if _, dup := p.incoming[key]; dup {
		p.mu.Unlock()
		cancel()
		p.respond(req.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "request id " + idKey(key) + " is already in use"})
		return
	}
	p.incoming[key] = call
	p.serving.Add(1)
	if a, ok := p.handler.(Arrivals); ok {
		a.Arrived(req) // its handler is sure to run
	}
	p.workers.run(func() {
		defer p.serving.Done()
		defer cancel()
		result, err := p.handler.Request(ctx, req)
		p.mu.Lock()
		delete(p.incoming, key)
		skip := call.cancelled || p.closed
		p.mu.Unlock()
		if skip {
			return // cancelled by the other side: no response (MCP cancellation)
		}
		p.respond(req.ID, result, err)
	})
	p.mu.Unlock()
}

// workers run the handlers of incoming requests, each on a goroutine of
// its own, as the Handler contract says. A goroutine that finished one is
// kept for the next (up to maxIdleWorkers wait), so the stack it grew
// serving one request is there for the next: a fresh goroutine starts
// small and copies its stack as it grows, on every request. The zero
// value is ready; run and stop are called with Peer.mu held, stop once
// (by shutdown) and run never after it.
type workers struct {
	jobs chan func()
	idle atomic.Int32
}

const maxIdleWorkers = 4

func (w *workers) run(f func()) {
	if w.jobs == nil {
		w.jobs = make(chan func())
	}
	select {
	case w.jobs <- f: // an idle worker takes it
	default:
		go w.work(w.jobs, f)
	}
}

func (w *workers) work(jobs chan func(), f func()) {
	for {
		f()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		var ok bool
		f, ok = <-jobs
		w.idle.Add(-1)
		if !ok {
			return
		}
	}
}

// stop lets the idle workers go.
func (w *workers) stop() {
	if w.jobs != nil {
		close(w.jobs)
	}
}

func (p *Peer) respond(id jsonrpc.ID, result json.RawMessage, err error) {
	resp := &jsonrpc.Response{ID: id}
	if err != nil {
		var werr *jsonrpc.Error
		var public interface{ PublicMessage() string }
		switch {
		case errors.As(err, &werr):
		case errors.As(err, &public):
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: public.PublicMessage()}
		default:
			// A Go error chain is for the log, not the other side: it
			// names files and processes, and says nothing to a model.
			p.log.Error("a request failed", "id", idKey(id), "err", err)
			werr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error (aqlguard's log has the details)"}
		}
		resp.Error = werr
	} else {
		if result == nil {
			result = json.RawMessage(`{}`)
		}
		resp.Result = result
	}
	if werr := p.conn.Write(context.Background(), resp); werr != nil {
		p.log.Debug("a response could not be written", "id", idKey(id), "err", werr)
	}
}

// cancelIncoming cancels the request a notifications/cancelled names.
func (p *Peer) cancelIncoming(params json.RawMessage) {
	id, ok := CancelledID(params)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if call, ok := p.incoming[id]; ok {
		call.cancelled = true
		call.cancel()
	}
}

// CancelledID is the request a notifications/cancelled names (its
// requestId), if its params name one. The member is read exactly, like
// every member that decides: "RequestId", or requestId twice, names no
// request, since the other side may read another one than we would.
func CancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	vals, err := rawjson.Exact(params, "requestId")
	if err != nil || vals[0] == nil {
		return jsonrpc.ID{}, false
	}
	var raw any
	if json.Unmarshal(vals[0], &raw) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(raw)
	return id, err == nil && id.IsValid()
}

// Call sends a request and waits for its response. A JSON-RPC error from
// the other side comes back as a *jsonrpc.Error (code, message and data as
// sent). When ctx ends first, the other side is sent
// notifications/cancelled and Call returns ctx's error.
func (p *Peer) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return p.CallAs(ctx, p.NewID(), method, params)
}

// NewID is a request id of this peer's that no call has used.
func (p *Peer) NewID() jsonrpc.ID {
	id, _ := jsonrpc.MakeID(p.IDPrefix + strconv.FormatInt(p.nextID.Add(1), 10)) // a string id never fails
	return id
}

// CallAs is Call under an id from NewID, for a caller that must know the
// id before the answer comes (a subscription's notifications name it).
func (p *Peer) CallAs(ctx context.Context, id jsonrpc.ID, method string, params json.RawMessage) (json.RawMessage, error) {
	key := id
	ch := make(chan *jsonrpc.Response, 1)
	p.mu.Lock()
	if p.closed || p.finishing {
		p.mu.Unlock()
		return nil, p.closedErr()
	}
	p.pending[key] = ch
	p.mu.Unlock()
	if err := p.conn.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: params}); err != nil {
		p.forget(key)
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, p.closedErr()
		}
		if r.Error != nil {
			var werr *jsonrpc.Error
			if errors.As(r.Error, &werr) {
				return nil, werr
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: r.Error.Error()}
		}
		return r.Result, nil
	case <-ctx.Done():
		p.forget(key)
		cancelled, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": context.Cause(ctx).Error()})
		_ = p.Notify(context.Background(), MethodCancelled, cancelled)
		return nil, ctx.Err()
	}
}

func (p *Peer) forget(key jsonrpc.ID) {
	p.mu.Lock()
	delete(p.pending, key)
	p.mu.Unlock()
}

func (p *Peer) closedErr() error {
	<-p.done
	if p.closeErr != nil {
		return fmt.Errorf("%w: %w", ErrClosed, p.closeErr)
	}
	return ErrClosed
}

// Notify sends a notification.
func (p *Peer) Notify(ctx context.Context, method string, params json.RawMessage) error {
	select {
	case <-p.done:
		return p.closedErr()
	default:
	}
	if err := p.conn.Write(ctx, &jsonrpc.Request{Method: method, Params: params}); err != nil {
		return fmt.Errorf("sending %s: %w", method, err)
	}
	return nil
}

// idKey is a request id as a map key: numbers and strings never collide
// (the string "1" is "s1", the number 1 is "n1").
func idKey(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case string:
		return "s" + v
	case int64:
		return "n" + strconv.FormatInt(v, 10)
	}
	return fmt.Sprintf("?%v", id.Raw())
}

// IDKey exposes idKey for relays that map ids between connections.
func IDKey(id jsonrpc.ID) string { return idKey(id) }

type relatedKey struct{}

// Contexter is a request's Extra that knows more of the request than its
// message: what the HTTP request that carried it says (its W3C trace
// context). The handler's context starts from RequestContext.
type Contexter interface {
	RequestContext(ctx context.Context) context.Context
}

// WithRelated says that what is written with ctx belongs to the other
// side's request id: a transport that answers each request on a stream of
// its own (Streamable HTTP) sends it there. An invalid id says it belongs
// to no request. A handler's ctx already names the request it serves.
func WithRelated(ctx context.Context, id jsonrpc.ID) context.Context {
	return context.WithValue(ctx, relatedKey{}, id)
}

// Related reports the other side's request that a message written with
// ctx belongs to, if any (see WithRelated).
func Related(ctx context.Context) (jsonrpc.ID, bool) {
	id, _ := ctx.Value(relatedKey{}).(jsonrpc.ID)
	return id, id.IsValid()
}
