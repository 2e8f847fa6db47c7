package guard

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller forwards a tools/call the loop allowed to a downstream server of
// one client session (each session has servers of its own). The params
// go out re-encoded from args, the very values the policy judged, with
// base's other members (the client's _meta, members aqlguard does not
// know; nil for none), so nothing the policy did not see (a duplicate
// key, another spelling of a number) reaches the server. The result
// comes back as the server sent it; a JSON-RPC error from the server is
// a *jsonrpc.Error, any other error a failure the front explains
// (Outcome.Failed).
type Caller interface {
	CallTool(ctx context.Context, session, server, tool string, args map[string]any, base json.RawMessage) (json.RawMessage, error)
}

// ErrNoDownstream is the failure of an allowed call with no Caller to
// forward it to.
var ErrNoDownstream = errors.New("no downstream caller is configured")

// Outcome is what the guard did with one call.
type Outcome struct {
	// Raw is the downstream result as the server sent it, when forwarded
	// and answered.
	Raw json.RawMessage
	// RPCErr is the server's own JSON-RPC error, as it sent it.
	RPCErr *jsonrpc.Error
	// Failed is why an allowed call got no answer from its server (the
	// Caller's error: unavailable, timed out, cancelled), for the front
	// to explain in fixed sentences; never shown to the model as is.
	Failed       error
	Err          *aql.Error        // why the call was refused
	Confirmation *aql.Confirmation // set with CONFIRMATION_REQUIRED
	Directive    evaluator.Directive
}

// Result decodes Raw for the modes that wrap it (MCP-AQL endpoints).
func (o Outcome) Result() (*mcp.CallToolResult, error) {
	var r mcp.CallToolResult
	if err := json.Unmarshal(o.Raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Call checks and, if allowed, forwards one downstream call. args use the
// downstream tool's own argument names and are what the server receives
// (Caller). base holds the other members of the params; token is an
// explicit confirmation token ("" if none).
func (g *Guard) Call(ctx context.Context, session string, op *catalog.Operation, args map[string]any, token string, base json.RawMessage) Outcome {
	a := Action{
		Session: session, Operation: op.Name, Server: op.Server, Tool: op.Tool.Name,
		Category: op.Category, ManagedCategory: op.ManagedCategory, Annotations: Annotations(op.Tool.Annotations), Arguments: args,
		Token: token, Secrets: secretParams(op), Roles: schemaRoles(op), Client: ClientOf(ctx),
		SharedSession: sharedSession(ctx),
	}
	began := time.Now()
	var watched WatchedCall
	if g.Watch != nil {
		watched = WatchedCall{Method: MethodToolsCall, Server: op.Server, Operation: op.Name, Tool: op.Tool.Name, Params: base}
		ctx = g.Watch.CallBegins(ctx, watched)
	}
	out := g.call(ctx, session, op, a, base)
	if g.Watch != nil {
		out.watched.Took = time.Since(began)
		g.Watch.CallEnded(ctx, watched, out.watched)
	}
	return out.Outcome
}

// watchedOutcome is an Outcome with what the Watcher is told of it.
type watchedOutcome struct {
	Outcome
	watched CallEnd
}

// call is Call without the Watcher.
func (g *Guard) call(ctx context.Context, session string, op *catalog.Operation, a Action, base json.RawMessage) watchedOutcome {
	args := a.Arguments
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
		g.log().Info("call refused", "principal", principal, "session", session, "operation", op.Name, "server", op.Server,
			"tool", op.Tool.Name, "decision", d.Decision, "stopped", d.Stopped, "stage", d.Stage, "tier", d.Tier,
			"risk", d.Risk, "matched", d.Matched, "enforced", d.Enforced, "factors", d.Factors)
		// The model is told the refusal and its reason; the factors behind
		// it are in the log line above and in the audit record.
		return watchedOutcome{Outcome{Err: v.Err, Confirmation: v.Confirmation, Directive: d},
			CallEnd{Directive: d, Outcome: OutcomeRefused}}
	}
	if g.log().Enabled(ctx, slog.LevelDebug) {
		g.log().Debug("call allowed", "principal", principal, "session", session, "operation", op.Name,
			"decision", d.Decision, "stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched, "factors", d.Factors)
	}
	began := time.Now()
	raw, err := g.forward(ctx, session, op.Server, op.Tool.Name, args, base)
	took := time.Since(began)
	out := Outcome{Raw: raw, Directive: d}
	end := CallEnd{Directive: d, Outcome: OutcomeOK, Downstream: took}
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
		end.Outcome = OutcomeRPCError
	case err != nil:
		out = Outcome{Failed: err, Directive: d}
		result = string(aql.CodeInternal)
		level = slog.LevelError
		end.Outcome = OutcomeFailed
	case isToolError(raw):
		result = "tool_error"
		end.Outcome = OutcomeToolError
	}
	if err != nil && rpcErr == nil {
		g.log().Log(ctx, level, "call failed", "principal", principal, "session", session, "operation", op.Name,
			"server", op.Server, "tool", op.Tool.Name, "decision", d.Decision, "result", result, "err", err, "elapsed", took)
	} else {
		g.log().Log(ctx, level, "call", "principal", principal, "session", session, "operation", op.Name,
			"server", op.Server, "tool", op.Tool.Name, "decision", d.Decision, "stage", d.Stage, "enforced", d.Enforced,
			"result", result, "elapsed", took)
	}
	// Every outcome is audited, with a context of its own: a call the
	// client cancelled has still happened. One that cannot be audited is
	// not handed on.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := g.Outcome(rctx, a, v, result, took); err != nil {
		g.log().Error("the outcome could not be recorded; the result is withheld", "operation", op.Name, "err", err)
		end.Outcome = OutcomeUnrecorded
		return watchedOutcome{Outcome{Directive: d, Err: &aql.Error{Code: aql.CodeInternal,
			Message: "Internal error: 'the call ran, but its outcome could not be recorded in the audit log; the result is withheld'",
			Details: map[string]any{"server": op.Server, "tool": op.Tool.Name, "executed": true, "fail_closed": true}}}, end}
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

// secretParams are the arguments the tool's schema declares secret, in
// the server's spelling.
func secretParams(op *catalog.Operation) []string {
	var out []string
	for _, p := range op.Params {
		if p.Sensitive {
			name := p.Name
			if p.MapTo != "" {
				name = p.MapTo
			}
			out = append(out, name)
		}
	}
	return out
}

// schemaRoles are the roles the tool's schema gives its arguments (by
// SnakeName of the server's spelling): a string of format uri is a URL.
// The names and [servers.arguments] say the rest (evaluator roles).
func schemaRoles(op *catalog.Operation) map[string]policy.Role {
	var out map[string]policy.Role
	for _, p := range op.Params {
		switch p.Format {
		case "uri", "uri-reference", "iri", "iri-reference", "url":
			name := p.Name
			if p.MapTo != "" {
				name = p.MapTo
			}
			if out == nil {
				out = map[string]policy.Role{}
			}
			out[policy.SnakeName(name)] = policy.RoleURL
		}
	}
	return out
}

// Annotations are a tool's MCP annotations as the evaluator reads them.
func Annotations(a *mcp.ToolAnnotations) evaluator.Annotations {
	if a == nil {
		return evaluator.Annotations{}
	}
	out := evaluator.Annotations{Destructive: a.DestructiveHint, OpenWorld: a.OpenWorldHint}
	// The SDK decodes these as plain bools, so only true is a statement.
	if a.ReadOnlyHint {
		t := true
		out.ReadOnly = &t
	}
	if a.IdempotentHint {
		t := true
		out.Idempotent = &t
	}
	return out
}

type clientKey struct{}

type sharedKey struct{}

// WithSharedSession says the call's session is shared by clients that
// hold no secret of their own (relay.Session.Shared): a human is not
// offered "allow for this session", and no standing approval applies.
func WithSharedSession(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedKey{}, true)
}

func sharedSession(ctx context.Context) bool {
	shared, _ := ctx.Value(sharedKey{}).(bool)
	return shared
}

// WithClient notes the MCP client's own name for the human's questions.
func WithClient(ctx context.Context, name string) context.Context {
	if name == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, name)
}

func ClientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}

// forward hands an allowed call to the downstream caller; without one
// there is nowhere to send it.
func (g *Guard) forward(ctx context.Context, session, server, tool string, args map[string]any, base json.RawMessage) (json.RawMessage, error) {
	if g.Downstream == nil {
		return nil, ErrNoDownstream
	}
	if args == nil {
		args = map[string]any{}
	}
	return g.Downstream.CallTool(ctx, session, server, tool, args, base)
}
