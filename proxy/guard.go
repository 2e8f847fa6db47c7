package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/safety"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller forwards a call to a downstream server.
type Caller interface {
	Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// Guard sits on the path of every downstream call: it hands the call to
// the safety loop (evaluator, human, blocks) and forwards only what the
// loop lets through. Its collaborators are plain fields so a test can swap
// any of them.
type Guard struct {
	Loop       *safety.Loop
	Downstream Caller
	Log        *slog.Logger
}

// Outcome is what the guard did with one call.
type Outcome struct {
	Result       *mcp.CallToolResult // the downstream answer, when forwarded
	Err          *aql.Error          // why the call failed or was refused
	Confirmation *aql.Confirmation   // set with CONFIRMATION_REQUIRED
	Directive    evaluator.Directive
}

// Call checks and, if allowed, forwards one downstream call. args use the
// downstream tool's own argument names; token is an explicit confirmation
// token ("" if none).
func (g *Guard) Call(ctx context.Context, session string, op *catalog.Operation, args map[string]any, token string) Outcome {
	a := safety.Action{
		Session: session, Operation: op.Name, Server: op.Server, Tool: op.Tool.Name,
		Category: op.Category, Annotations: annotations(op.Tool.Annotations), Arguments: args,
		Token: token, Secrets: secretParams(op), Client: clientOf(ctx),
	}
	v := g.Loop.Check(ctx, a)
	d := v.Directive
	log := g.Log.With("principal", g.Loop.Policy.Principal, "session", session, "operation", op.Name,
		"server", op.Server, "tool", op.Tool.Name)
	log.Info("safety decision", "proceed", v.Proceed, "decision", d.Decision, "stopped", d.Stopped,
		"stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched, "enforced", d.Enforced,
		"factors", d.Factors)
	if !v.Proceed {
		return Outcome{Err: withFactors(v.Err, d.Factors), Confirmation: v.Confirmation, Directive: d}
	}
	began := time.Now()
	res, err := g.Downstream.Call(ctx, op.Server, op.Tool.Name, args)
	took := time.Since(began)
	out := Outcome{Result: res, Directive: d}
	result := "ok"
	switch {
	case err != nil:
		log.Error("downstream call failed", "err", err, "elapsed", took)
		out = Outcome{Err: downstreamFailure(op, err), Directive: d}
		result = string(out.Err.Code)
	case res.IsError:
		result = "tool_error"
	}
	if err == nil {
		log.Info("downstream call done", "is_error", res.IsError, "elapsed", took)
	}
	// Every outcome is audited; one that cannot be is not handed on.
	if err := g.Loop.Outcome(ctx, a, v, result, took); err != nil {
		log.Error("the outcome could not be recorded; the result is withheld", "err", err)
		return Outcome{Directive: d, Err: &aql.Error{Code: aql.CodeInternal,
			Message: "Internal error: 'the call ran, but its outcome could not be recorded in the audit log; the result is withheld'",
			Details: map[string]any{"server": op.Server, "tool": op.Tool.Name, "executed": true, "fail_closed": true}}}
	}
	return out
}

// withFactors adds the evaluator's factors to a refusal's details, so the
// model and the human reading the transcript see why (e.g. that the code
// could not be shown), as a reported step's directive would say. The
// error is copied: the loop may share its details.
func withFactors(e *aql.Error, factors []string) *aql.Error {
	if e == nil || len(factors) == 0 {
		return e
	}
	if _, ok := e.Details["factors"]; ok {
		return e
	}
	out := *e
	out.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		out.Details[k] = v
	}
	out.Details["factors"] = factors
	return &out
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

func annotations(a *mcp.ToolAnnotations) evaluator.Annotations {
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

func downstreamFailure(op *catalog.Operation, err error) *aql.Error {
	d := map[string]any{"server": op.Server, "tool": op.Tool.Name}
	if errors.Is(err, downstream.ErrUnavailable) {
		return &aql.Error{Code: aql.CodeInternal, Details: d,
			Message: fmt.Sprintf("Internal error: 'downstream server %s is unavailable'", op.Server)}
	}
	return &aql.Error{Code: aql.CodeInternal, Details: d,
		Message: fmt.Sprintf("Internal error: 'the call to %s on %s did not complete'", op.Tool.Name, op.Server)}
}

type clientKey struct{}

// withClient notes the MCP client's own name for the human's questions.
func withClient(ctx context.Context, ss *mcp.ServerSession) context.Context {
	if ss == nil {
		return ctx
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		name := p.ClientInfo.Name
		if p.ClientInfo.Title != "" {
			name = p.ClientInfo.Title
		}
		return context.WithValue(ctx, clientKey{}, name)
	}
	return ctx
}

func clientOf(ctx context.Context) string {
	s, _ := ctx.Value(clientKey{}).(string)
	return s
}
