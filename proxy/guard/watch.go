package guard

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/store"
)

// Watcher sees every guarded call (tool calls, resource reads, prompt
// gets), for the people who run aqlguard
// (metrics, traces: package telemetry). It must be cheap: it runs on
// every call.
type Watcher interface {
	// CallBegins is called as a call reaches the guard. The context it
	// returns is the call's from then on, down to the server (a trace
	// span in it goes to an HTTP server as traceparent).
	CallBegins(ctx context.Context, c WatchedCall) context.Context
	// CallEnded is called once the call was refused, or forwarded and
	// its outcome recorded, with the context CallBegins returned.
	CallEnded(ctx context.Context, c WatchedCall, end CallEnd)
}

// WatchedCall names a call for a Watcher. Method is tools/call,
// resources/read or prompts/get; Server comes from the configuration;
// Tool is the tool's or the prompt's name from the server's catalog ("" for
// a read: a URI is the client's); Params are the client's params besides
// name and arguments (its _meta), as sent (tool calls only).
type WatchedCall struct {
	Method, Server, Operation, Tool string
	Params                          json.RawMessage
}

// The methods a Watcher sees.
const (
	MethodToolsCall     = "tools/call"
	MethodResourcesRead = "resources/read"
	MethodPromptsGet    = "prompts/get"
)

// CallEnd is how a watched call ended.
type CallEnd struct {
	Directive evaluator.Directive
	// Outcome is one of the Outcome constants: a fixed set.
	Outcome string
	// Took is the whole call, the human's answer included; Downstream
	// the server's part of it (zero when it was not forwarded).
	Took, Downstream time.Duration
}

// The outcomes of a watched call.
const (
	OutcomeRefused    = "refused"    // not forwarded: refused, or waiting for a human
	OutcomeOK         = "ok"         // forwarded and answered
	OutcomeToolError  = "tool_error" // answered with isError
	OutcomeRPCError   = "rpc_error"  // answered with a JSON-RPC error
	OutcomeFailed     = "failed"     // not answered (the server unavailable, timed out, cancelled)
	OutcomeUnrecorded = "unrecorded" // answered, but the outcome could not be audited: withheld
)

// Status is the guard's state for the people who run it.
type Status struct {
	// Principal is whose guard this is.
	Principal string
	// PendingQuestions are the questions put to the human that wait for
	// an answer, in this process.
	PendingQuestions int
	// Blocked says the principal is hard-blocked (in the state, so set by
	// any process sharing it).
	Blocked bool
}

// Status reads the guard's state; an error says the state cannot be
// read (a readiness probe's question).
func (g *Guard) Status(ctx context.Context) (Status, error) {
	g.mu.Lock()
	g.init()
	d, unwritten := g.desk, g.unwritten != nil
	g.mu.Unlock()
	pending := d.Waiting()
	principal := g.pol().Principal
	st := Status{Principal: principal, PendingQuestions: pending}
	err := g.State.Load(ctx, func(v store.View) error {
		b, err := v.Block(principal)
		st.Blocked = b != nil
		return err
	})
	st.Blocked = st.Blocked || unwritten // a block not written yet holds here (unwritten.go)
	return st, err
}

// watch follows the state's generation (State.Watch: NOTIFY on
// PostgreSQL, the generation file on bbolt) until ctx ends: a block set
// by any process sharing the state reaches this process's running
// executions as danger_zone at once, not at their next call. Reading the
// block is a commit that changes nothing, so it is ordered with every
// other commit and served from the store's snapshot.
func (g *Guard) watch(ctx context.Context) {
	defer g.running.Done()
	principal := g.pol().Principal
	look := func(uint64) {
		_, err := g.State.Commit(ctx, func(v store.View) (store.Changes, error) {
			b, err := v.Block(principal)
			return store.Changes{Then: func(uint64) {
				g.mu.Lock()
				defer g.mu.Unlock()
				g.observe(b, "")
			}}, err
		})
		if err != nil && ctx.Err() == nil {
			g.log().Debug("reading the block after a state change", "err", err)
		}
	}
	for ctx.Err() == nil {
		err := g.State.Watch(ctx, look)
		if ctx.Err() != nil {
			return
		}
		g.log().Warn("watching the state failed; watching again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
