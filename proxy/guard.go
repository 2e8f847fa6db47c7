package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caller forwards a call to a downstream server.
type Caller interface {
	Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error)
}

// Guard sits on the path of every downstream call: it builds the Step,
// asks the evaluator, and forwards only what is allowed. Its collaborators
// are plain fields so a test can swap any of them.
type Guard struct {
	Policy     *policy.Policy
	Downstream Caller
	Log        *slog.Logger
	// Evaluate defaults to evaluator.Evaluate.
	Evaluate func(*policy.Policy, evaluator.Step) evaluator.Directive

	mu    sync.Mutex
	steps int // the principal's step count: every proxied call is a step
}

// Outcome is what the guard did with one call.
type Outcome struct {
	Result    *mcp.CallToolResult // the downstream answer, when forwarded
	Err       *aql.Error          // why the call failed or was refused
	Directive evaluator.Directive
}

// Call evaluates and, if allowed, forwards one downstream call. args use
// the downstream tool's own argument names.
func (g *Guard) Call(ctx context.Context, session string, op *catalog.Operation, args map[string]any) Outcome {
	eval := g.Evaluate
	if eval == nil {
		eval = evaluator.Evaluate
	}
	step := g.step(session, op, args)
	d := eval(g.Policy, step)
	log := g.Log.With("principal", step.Principal, "session", session, "operation", op.Name,
		"server", op.Server, "tool", op.Tool.Name, "step", step.StepNumber)
	log.Info("safety decision", "decision", d.Decision, "continue", d.Continue, "stopped", d.Stopped,
		"stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched, "enforced", d.Enforced,
		"factors", d.Factors)
	if !d.Continue {
		return Outcome{Err: refusal(step, d), Directive: d}
	}
	began := time.Now()
	res, err := g.Downstream.Call(ctx, op.Server, op.Tool.Name, args)
	if err != nil {
		log.Error("downstream call failed", "err", err, "elapsed", time.Since(began))
		return Outcome{Err: downstreamFailure(op, err), Directive: d}
	}
	log.Info("downstream call done", "is_error", res.IsError, "elapsed", time.Since(began))
	return Outcome{Result: res, Directive: d}
}

// step builds the evaluator's input. The principal is the configured
// agent, never anything the model sent.
func (g *Guard) step(session string, op *catalog.Operation, args map[string]any) evaluator.Step {
	g.mu.Lock()
	g.steps++
	n := g.steps
	g.mu.Unlock()
	return evaluator.Step{
		Principal:   g.Policy.Principal,
		Session:     session,
		Operation:   op.Name,
		Server:      op.Server,
		Tool:        op.Tool.Name,
		Category:    op.Category,
		Annotations: annotations(op.Tool.Annotations),
		Arguments:   args,
		ActionHint:  ActionHint(op.Server, op.Tool.Name, args),
		StepNumber:  n,
	}
}

// ActionHint renders a proxied call the way the spec's nextActionHint
// describes an action, so one set of patterns covers both: the
// server-qualified tool name, then its arguments as canonical JSON
// (encoding/json sorts object keys). Nothing is truncated: a pattern must
// be able to see every byte the downstream server will see.
func ActionHint(server, tool string, args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil || len(args) == 0 {
		return server + "." + tool
	}
	return server + "." + tool + " " + string(b)
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

// refusal is the structured error for a call the evaluator did not allow,
// per the tier (DESIGN.md). Until the confirmation and verification flows
// exist, refusing is all aqlguard can do: the call is never forwarded.
func refusal(s evaluator.Step, d evaluator.Directive) *aql.Error {
	reasons := append([]string{d.Reason}, d.Factors...)
	switch d.Decision {
	case evaluator.Block:
		return &aql.Error{Code: aql.CodeAgentBlocked,
			Message: fmt.Sprintf("Agent '%s' is blocked: %s. A human must clear the block out of band.", s.Principal, d.Reason),
			Details: map[string]any{"agent": s.Principal, "operation": s.Operation, "reason": d.Reason,
				"tier": string(d.Tier), "risk": d.Risk, "stage": string(d.Stage),
				"blocked_at": time.Now().UTC().Format(time.RFC3339)}}
	case evaluator.NeedsVerify:
		return &aql.Error{Code: aql.CodeVerification,
			Message: fmt.Sprintf("Operation '%s' needs out-of-band verification by a human: %s", s.Operation, d.Reason),
			Details: map[string]any{"agent": s.Principal, "operation": s.Operation, "reason": d.Reason,
				"tier": string(d.Tier), "risk": d.Risk, "stage": string(d.Stage)}}
	}
	return &aql.Error{Code: aql.CodeConfirmation,
		Message: "This operation requires confirmation",
		Details: map[string]any{"operation": s.Operation, "danger_level": dangerLevel(d.Risk),
			"reasons": reasons, "tier": string(d.Tier), "risk": d.Risk, "stage": string(d.Stage),
			"confirmation_message": fmt.Sprintf("A human must confirm '%s'; the model cannot confirm it.", s.Operation)}}
}

// dangerLevel maps a risk score to the danger-level names of
// danger-levels.md 8.1.
func dangerLevel(risk int) string {
	switch {
	case risk <= 15:
		return "safe"
	case risk <= 40:
		return "reversible"
	case risk <= 60:
		return "destructive"
	case risk <= 85:
		return "dangerous"
	}
	return "forbidden"
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
