package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/aql"
)

// Read puts a resources/read (kind "resource", name the URI) or a
// prompts/get (kind "prompt") to the loop as a READ step named
// resource:<uri> or prompt:<name> (policy.IsReadSubject). It returns the
// refusal, or done, to be called with how the read ended: the outcome is
// audited like a tool call's. The context it returns carries the read's
// trace span, if it has one (Watcher).
func (g *Guard) Read(ctx context.Context, session, server, kind, name string, args map[string]any) (span context.Context, done func(error), refusal *aql.Result) {
	st := evaluator.Prompt(server, name, args)
	if kind == "resource" {
		st = evaluator.Read(server, name)
	}
	a := Action{Session: session, Operation: st.Operation, Server: server, Tool: st.Tool,
		Category: st.Category, Arguments: st.Arguments, Client: ClientOf(ctx), Unresolved: st.Unresolved,
		SharedSession: sharedSession(ctx)}
	asked := time.Now()
	var watched WatchedCall
	if g.Watch != nil {
		watched = WatchedCall{Method: MethodResourcesRead, Server: server, Operation: a.Operation}
		if kind != "resource" {
			watched.Method, watched.Tool = MethodPromptsGet, name
		}
		ctx = g.Watch.CallBegins(ctx, watched)
	}
	v := g.Check(ctx, a)
	d := v.Directive
	g.log().Info("safety decision", "principal", g.CurrentPolicy().Principal, "session", session, "operation", a.Operation,
		"proceed", v.Proceed, "decision", d.Decision, "stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched)
	if !v.Proceed {
		if g.Watch != nil {
			g.Watch.CallEnded(ctx, watched, CallEnd{Directive: d, Outcome: OutcomeRefused, Took: time.Since(asked)})
		}
		return ctx, nil, &aql.Result{Err: v.Err, Confirmation: v.Confirmation}
	}
	began := time.Now()
	return ctx, func(err error) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		if g.Watch != nil {
			end := CallEnd{Directive: d, Outcome: OutcomeOK, Took: time.Since(asked), Downstream: time.Since(began)}
			if err != nil {
				end.Outcome = OutcomeFailed
			}
			g.Watch.CallEnded(ctx, watched, end)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := g.Outcome(rctx, a, v, result, time.Since(began)); rerr != nil {
			g.log().Error("the outcome of a read could not be recorded", "operation", a.Operation, "err", rerr)
		}
	}, nil
}
