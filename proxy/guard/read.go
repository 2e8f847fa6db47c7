package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
)

// Read puts a resources/read (kind "resource", name the URI) or a
// prompts/get (kind "prompt") to the loop as a READ step named
// resource:<uri> or prompt:<name> (policy.IsReadSubject). It returns the
// refusal, or done, to be called with how the read ended: the outcome is
// audited like a tool call's.
func (g *Guard) Read(ctx context.Context, session, server, kind, name string, args map[string]any) (done func(error), refusal *aql.Result) {
	tool := policy.ResourcePrefix + name
	if kind == "prompt" {
		tool = policy.PromptPrefix + name
	}
	if args == nil {
		args = map[string]any{}
	}
	if kind == "resource" {
		args = map[string]any{"uri": name}
	}
	a := Action{Session: session, Operation: server + "." + tool, Server: server, Tool: tool,
		Category: policy.Read, Arguments: args, Client: ClientOf(ctx)}
	v := g.Check(ctx, a)
	d := v.Directive
	g.log().Info("safety decision", "principal", g.CurrentPolicy().Principal, "session", session, "operation", a.Operation,
		"proceed", v.Proceed, "decision", d.Decision, "stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched)
	if !v.Proceed {
		return nil, &aql.Result{Err: v.Err, Confirmation: v.Confirmation}
	}
	began := time.Now()
	return func(err error) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := g.Outcome(rctx, a, v, result, time.Since(began)); rerr != nil {
			g.log().Error("the outcome of a read could not be recorded", "operation", a.Operation, "err", rerr)
		}
	}, nil
}
