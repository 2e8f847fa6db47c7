package guard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/injection"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/watch"
	"github.com/aqlguard/aqlguard/store"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ErrNoDownstream is the failure of an allowed call with no Forward to
// send it on.
var ErrNoDownstream = errors.New("no downstream caller is configured")

// Outcome is what the guard did with one call.
type Outcome struct {
	// Raw is the downstream result as the server sent it, when forwarded
	// and answered.
	Raw json.RawMessage
	// RPCErr is the server's own JSON-RPC error, as it sent it.
	RPCErr *jsonrpc.Error
	// Failed is why an allowed call got no answer from its server (the
	// Forward's error: unavailable, timed out, cancelled), for the front
	// to explain in fixed sentences; never shown to the model as is.
	Failed error
	// Refusal is why the call was not run, or its answer withheld.
	Refusal   *refusal.Refusal
	Directive evaluator.Directive
}

// Request is one call put to the guard: a tool call, or a read of what
// a server holds (a resource, a prompt).
type Request struct {
	// Method is watch.MethodToolsCall, watch.MethodResourcesRead or watch.MethodPromptsGet.
	Method string
	// Action is what is judged: for a tool call all of it, filled by the
	// front from the catalog, its Arguments in the tool's own names (what
	// the server receives: Forward); for a read, Session, Server and a
	// prompt's Arguments, the rest being the guard's to say (read).
	Action
	// Name is a read's resource URI or prompt name.
	Name string
	// Base holds a tool call's other params members, for the Watcher.
	Base json.RawMessage
	// Forward sends an allowed call on, through the session it came
	// from (its forwarding on the downstream side, handed down with the
	// call): a
	// tool call's sends exactly Action.Arguments, re-encoded, so nothing
	// the policy did not see (a duplicate key, another spelling of a
	// number) reaches the server; a read's forwards the params the relay
	// checked. The result comes back as the server sent it; a JSON-RPC
	// error from the server is a *jsonrpc.Error, any other error a
	// failure the front explains (Outcome.Failed). nil: the call is
	// judged, and an allowed one fails with ErrNoDownstream.
	Forward func(context.Context) (json.RawMessage, error)
	// Scanner returns the injection scanner for what server returns,
	// reading budget bytes (the front's: it knows the other servers'
	// tools); nil: one that knows no tools.
	Scanner func(server string, budget int) *injection.Scanner
}

// read is a read's action: a READ step named resource:<uri> or
// prompt:<name> (policy.IsReadSubject).
func (r Request) read() Action {
	st := evaluator.Prompt(r.Server, r.Name, r.Arguments)
	if r.Method == watch.MethodResourcesRead {
		st = evaluator.Read(r.Server, r.Name)
	}
	a := r.Action
	a.Operation, a.Tool, a.Category, a.Arguments, a.Unresolved = st.Operation, st.Tool, st.Category, st.Arguments, st.Unresolved
	return a
}

// Call checks one call and, if allowed, forwards it and records its
// outcome: every tool call, resource read and prompt get goes this way.
func (g *Guard) Call(ctx context.Context, r Request) Outcome {
	a := r.Action
	if r.Method != watch.MethodToolsCall {
		a = r.read()
	}
	a.Flow = g.flowFor(a)
	began := time.Now()
	var watched watch.Call
	if g.Watch != nil {
		watched = watch.Call{Method: r.Method, Server: a.Server, Operation: a.Operation, Params: r.Base}
		switch r.Method {
		case watch.MethodToolsCall:
			watched.Tool = a.Tool
		case watch.MethodPromptsGet:
			watched.Tool = r.Name
		}
		ctx = g.Watch.CallBegins(ctx, watched)
	}
	out := g.call(ctx, r, a)
	if g.Watch != nil {
		out.watched.Took = time.Since(began)
		g.Watch.CallEnded(ctx, watched, out.watched)
	}
	return out.Outcome
}

// watchedOutcome is an Outcome with what the Watcher is told of it.
type watchedOutcome struct {
	Outcome
	watched watch.End
}

// call is Call without the Watcher.
func (g *Guard) call(ctx context.Context, r Request, a Action) watchedOutcome {
	v := g.Check(ctx, a)
	d := v.Directive
	principal := g.CurrentPolicy().Principal
	// One log line per call, built once (no per-call Logger.With): the
	// refusal, or the call and how it ended: at info, but for a plain
	// allowed call (debug: the audit log has every call) and a failure
	// (error). What monitoring or logging let through, or a human
	// allowed, stays at info. The factors behind an allowed call are at
	// debug level; the audit log has them all.
	if !v.Proceed {
		g.log().Info("call refused", "principal", principal, "session", a.Session, "operation", a.Operation, "server", g.pol().Title(a.Server),
			"tool", a.Tool, "decision", d.Decision, "stopped", d.Stopped, "stage", d.Stage, "tier", d.Tier,
			"risk", d.Risk, "matched", d.Matched, "enforced", d.Enforced, "factors", d.Factors)
		// The model is told the refusal and its reason; the factors behind
		// it are in the log line above and in the audit record.
		return watchedOutcome{Outcome{Refusal: v.Refusal, Directive: d}, watch.End{Directive: d, Outcome: watch.OutcomeRefused}}
	}
	if g.log().Enabled(ctx, slog.LevelDebug) {
		g.log().Debug("call allowed", "principal", principal, "session", a.Session, "operation", a.Operation,
			"decision", d.Decision, "stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched, "factors", d.Factors)
	}
	began := time.Now()
	var raw json.RawMessage
	var err error
	if r.Forward != nil {
		raw, err = r.Forward(ctx)
	} else {
		err = ErrNoDownstream
	}
	took := time.Since(began)
	// What comes back is read before anyone else sees it (flows.go).
	var findings []store.Finding
	if err == nil {
		raw, findings = g.readResult(r, a, raw)
	}
	out := Outcome{Raw: raw, Directive: d}
	end := watch.End{Directive: d, Outcome: watch.OutcomeOK, Downstream: took}
	result := "ok"
	level := slog.LevelInfo
	if d.Enforced && d.Decision == evaluator.Allow {
		level = slog.LevelDebug
	}
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr):
		out = Outcome{RPCErr: rpcErr, Directive: d}
		result = "rpc_error " + strconv.FormatInt(rpcErr.Code, 10)
		end.Outcome = watch.OutcomeRPCError
	case err != nil:
		out = Outcome{Failed: err, Directive: d}
		result = refusal.Failed.String()
		level = slog.LevelError
		end.Outcome = watch.OutcomeFailed
	case r.Method == watch.MethodToolsCall && isToolError(raw):
		result = "tool_error"
		end.Outcome = watch.OutcomeToolError
	}
	if err != nil && rpcErr == nil {
		g.log().Log(ctx, level, "call failed", "principal", principal, "session", a.Session, "operation", a.Operation,
			"server", g.pol().Title(a.Server), "tool", a.Tool, "decision", d.Decision, "result", result, "err", err, "elapsed", took)
	} else {
		g.log().Log(ctx, level, "call", "principal", principal, "session", a.Session, "operation", a.Operation,
			"server", g.pol().Title(a.Server), "tool", a.Tool, "decision", d.Decision, "stage", d.Stage, "enforced", d.Enforced,
			"result", result, "elapsed", took)
	}
	// Every outcome is audited, with a context of its own: a call the
	// client cancelled has still happened. One that cannot be audited is
	// not handed on.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := g.outcome(rctx, a, v, result, took, findings); err != nil {
		g.log().Error("the outcome could not be recorded; the result is withheld", "operation", a.Operation, "err", err)
		end.Outcome = watch.OutcomeUnrecorded
		return watchedOutcome{Outcome{Directive: d, Refusal: refusal.Fail("the call ran, but its outcome could not be recorded in the audit log; the result is withheld",
			map[string]any{"server": a.Server, "tool": a.Tool, "executed": true, "fail_closed": true})}, end}
	}
	if err == nil && raw == nil {
		return watchedOutcome{Outcome{Directive: d, Refusal: refusal.Fail("the call ran, but its result could not be read and written again; it is withheld",
			map[string]any{"server": a.Server, "tool": a.Tool, "executed": true, "fail_closed": true})}, end}
	}
	return watchedOutcome{out, end}
}

// isToolError reports whether a tools/call result says isError.
func isToolError(raw json.RawMessage) bool {
	var r struct {
		IsError bool `json:"isError"`
	}
	return json.Unmarshal(raw, &r) == nil && r.IsError
}
