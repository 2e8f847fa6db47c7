package revision

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// An exchange is one call of a 2026-07-28 client that may need the
// client's input (tools/call, prompts/get, resources/read). Its work —
// the guard, the server's call — runs apart from the client's request:
// when a server asks the client something during it, the client's
// request is answered input_required and the work goes on waiting; the
// client's retry, carrying the answers and the requestState it was
// given, picks the same work up again. The guard is not run twice, and a
// retry cannot start anything: it can only resume what is parked under
// its requestState, in its session, for the same call.
type exchange struct {
	method  string
	subject string // what the call is about: name and arguments, or uri

	ctx    context.Context // the work's: ends with the session, a cancel or expiry
	cancel context.CancelFunc

	mu      sync.Mutex
	request jsonrpc.ID                 // the client's request waiting for the work now (invalid while parked)
	servers []any                      // the servers the work called (Used)
	waiting []*inputRequest            // asked by a server, not yet answered by the client
	caps    map[string]json.RawMessage // the client's capabilities, as its latest request declared them
	state   string                     // the requestState the client holds while parked
	expiry  *time.Timer

	asked chan struct{} // a server asked something
	done  chan struct{} // the work ended: res, err
	res   json.RawMessage
	err   error
}

// inputRequest is one server request waiting for the client's answer.
type inputRequest struct {
	id     string
	method string
	params json.RawMessage
	// raw is a 2026-07-28 server's input request as it sent it (method,
	// params and whatever else), passed on as it is.
	raw json.RawMessage
	// partial: the server asked in a round of its own, so the client's
	// retry ends the round whether or not it answered this one (nil).
	partial bool
	answer  chan json.RawMessage
}

// parkedFor is how long a call answered input_required waits for the
// client's retry before it is cancelled: long enough for a person to
// answer a form, short enough not to keep a server's call forever.
const parkedFor = 30 * time.Minute

// gatherFor is how long a round waits, after a server's first question,
// for the others it asks at the same time.
const gatherFor = 20 * time.Millisecond

// Work runs a call of a 2026-07-28 client the way the session runs any
// call (the guard, the server); ctx is the exchange's, which outlives the
// client's request.
type Work func(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error)

// Exchanges are the calls of one 2026-07-28 client's session whose work
// runs apart from the client's requests: the running ones, oldest first,
// and the parked ones by the requestState the client holds. Its state is
// behind its own lock; the session hands it the context its calls' work
// lives in and the function that does that work.
type Exchanges struct {
	life   context.Context
	work   Work
	log    *slog.Logger
	inputN atomic.Int64

	mu     sync.Mutex
	active []*exchange          // calls whose work runs, oldest first
	parked map[string]*exchange // by the requestState the client holds
}

// NewExchanges keeps the exchanges of a session whose calls' work runs
// under life (it ends with the session) and is done by work.
func NewExchanges(life context.Context, work Work, log *slog.Logger) *Exchanges {
	return &Exchanges{life: life, work: work, log: log, parked: map[string]*exchange{}}
}

type exchangeKey struct{}

func exchangeOf(ctx context.Context) (*exchange, bool) {
	x, ok := ctx.Value(exchangeKey{}).(*exchange)
	return x, ok
}

// WaitingRequest is the client's request that waits now for the work of
// the exchange ctx belongs to: what belongs to the work (its progress)
// goes to that request, whichever of the call's retries it is (ok is
// false while the call is parked). inExchange is false when ctx is not
// the work of a 2026-07-28 client's call.
func WaitingRequest(ctx context.Context) (id jsonrpc.ID, ok, inExchange bool) {
	x, inExchange := exchangeOf(ctx)
	if !inExchange {
		return jsonrpc.ID{}, false, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.request, x.request.IsValid(), true
}

// Used records that the work of the exchange ctx belongs to called srv
// (a server, compared by identity: a pointer): srv's requests to the
// client are that exchange's to carry.
func Used(ctx context.Context, srv any) {
	x, ok := exchangeOf(ctx)
	if !ok {
		return
	}
	x.mu.Lock()
	if !slices.Contains(x.servers, srv) {
		x.servers = append(x.servers, srv)
	}
	x.mu.Unlock()
}

// Call serves a tools/call, prompts/get or resources/read of a
// 2026-07-28 client whose capabilities are caps: a first call starts its
// work, a retry resumes the work parked under its requestState.
func (e *Exchanges) Call(ctx context.Context, req *jsonrpc.Request, caps map[string]json.RawMessage) (json.RawMessage, error) {
	state, responses, params, err := Retry(req.Params)
	if err != nil {
		return nil, err
	}
	subject := subjectOf(req.Method, params)
	if state != "" {
		x, err := e.resume(state, req.Method, subject)
		if err != nil {
			return nil, err
		}
		x.mu.Lock()
		x.caps = caps
		x.request = req.ID
		x.mu.Unlock()
		x.deliver(responses)
		return e.await(ctx, x)
	}
	x := &exchange{method: req.Method, subject: subject, caps: caps, request: req.ID, asked: make(chan struct{}, 1), done: make(chan struct{})}
	life := e.life
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// The work outlives the request, but belongs to its trace.
		life = trace.ContextWithSpanContext(life, sc)
	}
	x.ctx, x.cancel = context.WithCancel(context.WithValue(life, exchangeKey{}, x))
	e.mu.Lock()
	e.active = append(e.active, x)
	e.mu.Unlock()
	// A first call goes to the guard, and on to the server, as the client
	// sent it: answers it volunteers (inputResponses without a
	// requestState) are a 2026-07-28 server's to use or ignore. Only a
	// retry of a parked call is taken apart here.
	work := *req
	go func() {
		x.res, x.err = e.work(x.ctx, &work)
		close(x.done)
	}()
	return e.await(ctx, x)
}

// await waits for the work's end or for a server's question, which it
// turns into an input_required answer.
func (e *Exchanges) await(ctx context.Context, x *exchange) (json.RawMessage, error) {
	for {
		select {
		case <-x.done:
			e.forget(x)
			return x.res, x.err
		default:
		}
		x.mu.Lock()
		asking := slices.Clone(x.waiting)
		x.mu.Unlock()
		if len(asking) > 0 {
			return e.park(x, asking)
		}
		select {
		case <-x.done:
		case <-x.asked:
			// A server that needs several answers asks for them at
			// once: gather what comes together into one round.
			select {
			case <-x.done:
			case <-time.After(gatherFor):
			}
		case <-ctx.Done():
			x.cancel()
			e.forget(x)
			return nil, ctx.Err()
		}
	}
}

// park answers the client's request input_required with the server
// requests waiting, under a fresh requestState.
func (e *Exchanges) park(x *exchange, asking []*inputRequest) (json.RawMessage, error) {
	state := newState()
	requests := make(map[string]any, len(asking))
	for _, ir := range asking {
		if ir.raw != nil {
			requests[ir.id] = ir.raw
			continue
		}
		// params always: a server's roots/list may have none, and a
		// client that reads an input request's params as an object (the
		// Go SDK) fails on the retry's whole call without them.
		r := map[string]any{"method": ir.method, "params": json.RawMessage(`{}`)}
		if len(ir.params) > 0 && string(ir.params) != "null" {
			r["params"] = ir.params
		}
		requests[ir.id] = r
	}
	x.mu.Lock()
	x.state = state
	x.request = jsonrpc.ID{}
	x.expiry = time.AfterFunc(parkedFor, func() {
		if e.unpark(state) == x {
			e.log.Info("a call waiting for the client's input was cancelled: no retry came", "method", x.method, "after", parkedFor)
			x.cancel()
			e.forget(x)
		}
	})
	x.mu.Unlock()
	e.mu.Lock()
	e.parked[state] = x
	e.mu.Unlock()
	return json.Marshal(map[string]any{"resultType": "input_required", "inputRequests": requests, "requestState": state})
}

// resume takes the exchange parked under state. A requestState is good
// for one retry: the next round gets a new one.
func (e *Exchanges) resume(state, method, subject string) (*exchange, error) {
	x := e.unpark(state)
	if x == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "requestState is not one aqlguard gave this session, or it was used already, or it expired"}
	}
	if x.method != method || x.subject != subject {
		e.mu.Lock()
		e.parked[state] = x // a wrong retry does not cost the right one its call
		e.mu.Unlock()
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "requestState belongs to another call: a retry must repeat the call it continues"}
	}
	x.mu.Lock()
	if x.expiry != nil {
		x.expiry.Stop()
	}
	x.state = ""
	x.mu.Unlock()
	return x, nil
}

func (e *Exchanges) unpark(state string) *exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.parked[state]
	delete(e.parked, state)
	return x
}

func (e *Exchanges) forget(x *exchange) {
	e.mu.Lock()
	e.active = slices.DeleteFunc(e.active, func(a *exchange) bool { return a == x })
	e.mu.Unlock()
}

// deliver hands the client's answers to the servers that asked; a
// request the client left unanswered is asked again in the next round.
func (x *exchange) deliver(responses map[string]json.RawMessage) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.waiting = slices.DeleteFunc(x.waiting, func(ir *inputRequest) bool {
		r, ok := responses[ir.id]
		switch {
		case ok:
			ir.answer <- r
		case ir.partial:
			ir.answer <- nil
		}
		return ok || ir.partial
	})
}

// Ask carries a server's request to the client in the answer to a call
// that the server (srv, as Used was told) is working on, and waits for
// the client's answer. Without such a call the request cannot reach a
// 2026-07-28 client at all.
func (e *Exchanges) Ask(ctx context.Context, srv any, req *jsonrpc.Request) (json.RawMessage, error) {
	// A server's request does not say which call it is part of (2025-11-25
	// over stdio has no field for it): it goes with the oldest call to
	// that server whose client is waiting for an answer, else with the
	// oldest one parked for a retry.
	e.mu.Lock()
	var x, parked *exchange
	for _, a := range e.active {
		a.mu.Lock()
		mine, waiting := slices.Contains(a.servers, srv), a.state == ""
		a.mu.Unlock()
		if mine && waiting {
			x = a
			break
		}
		if mine && parked == nil {
			parked = a
		}
	}
	if x == nil {
		x = parked
	}
	e.mu.Unlock()
	if x == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: "the client speaks MCP " + Modern + ": it takes " + req.Method + " only while one of its calls to this server runs"}
	}
	if !x.can(req.Method) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "the client did not declare the capability " + req.Method + " needs"}
	}
	return e.putInCall(ctx, x, req)
}

// AskInCall puts req to the client in the call ctx belongs to (an
// input_required round of that call) and waits for its answer; ok is
// false when ctx is no call of a 2026-07-28 client or the client did not
// declare what req needs, and nothing was asked.
func (e *Exchanges) AskInCall(ctx context.Context, req *jsonrpc.Request) (res json.RawMessage, ok bool, err error) {
	x, ok := exchangeOf(ctx)
	if !ok || !x.can(req.Method) {
		return nil, false, nil
	}
	res, err = e.putInCall(ctx, x, req)
	return res, true, err
}

// can reports whether the client's capabilities, as its latest request
// of the call declared them, cover a server's request to it.
func (x *exchange) can(method string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return clientCan(x.caps, method)
}

// clientCan reports whether a client's capabilities cover a server's
// request to it.
func clientCan(caps map[string]json.RawMessage, method string) bool {
	need := map[string]string{"elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots"}[method]
	raw, ok := caps[need]
	return need != "" && ok && string(raw) != "null"
}

// putInCall makes req a question of the exchange's next round and waits
// for the client's answer to it.
func (e *Exchanges) putInCall(ctx context.Context, x *exchange, req *jsonrpc.Request) (json.RawMessage, error) {
	ir := &inputRequest{id: "aqlguard-i-" + strconv.FormatInt(e.inputN.Add(1), 10), method: req.Method,
		params: req.Params, answer: make(chan json.RawMessage, 1)}
	x.mu.Lock()
	x.waiting = append(x.waiting, ir)
	x.mu.Unlock()
	select {
	case x.asked <- struct{}{}:
	default:
	}
	select {
	case r := <-ir.answer:
		return r, nil
	case <-ctx.Done():
	case <-x.ctx.Done():
	}
	x.mu.Lock()
	x.waiting = slices.DeleteFunc(x.waiting, func(w *inputRequest) bool { return w == ir })
	x.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client's call this request belonged to ended"}
}

// Round makes one round of a 2026-07-28 server's input requests (its
// input_required answer) the next round of the client's call ctx belongs
// to, under the server's own names, and waits for the client's retry:
// what it answered comes back (a request it left unanswered is the
// server's to ask again).
func Round(ctx context.Context, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	x, ok := exchangeOf(ctx)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server asked for input outside a call that can carry it"}
	}
	irs := make([]*inputRequest, 0, len(asked))
	for _, m := range asked {
		irs = append(irs, &inputRequest{id: m.Key, raw: m.Value, partial: true, answer: make(chan json.RawMessage, 1)})
	}
	x.mu.Lock()
	x.waiting = append(x.waiting, irs...)
	x.mu.Unlock()
	select {
	case x.asked <- struct{}{}:
	default:
	}
	out := map[string]json.RawMessage{}
	for _, ir := range irs {
		select {
		case r := <-ir.answer:
			if r != nil {
				out[ir.id] = r
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}

// subjectOf is what a retry must repeat: the call's name or uri and its
// arguments, compacted (a retry may space them differently).
func subjectOf(method string, params json.RawMessage) string {
	ms := rawjson.Members(params)
	var b bytes.Buffer
	b.WriteString(method)
	for _, key := range []string{"name", "uri", "arguments"} {
		b.WriteByte(0)
		if raw, ok := ms[key]; ok {
			if json.Compact(&b, raw) != nil {
				b.Write(raw)
			}
		}
	}
	return b.String()
}

func newState() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return "aqlguard-" + base64.RawURLEncoding.EncodeToString(b)
}
