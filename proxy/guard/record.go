package guard

import (
	"context"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/confirm"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
)

// observe broadcasts a block not seen before. operation names the call
// that set it, when this process did.
func (g *Guard) observe(b *store.Block, operation string) {
	if b == nil {
		g.seenBlock = ""
		return
	}
	if b.VerificationID == g.seenBlock {
		return
	}
	g.seenBlock = b.VerificationID
	if operation == "" {
		operation = b.Operation
	}
	g.broadcast(g.notification("danger_zone",
		fmt.Sprintf("Agent '%s' is hard-blocked: %s", b.Principal, b.Reason),
		map[string]any{"operation": operation, "reason": b.Reason, "verificationId": b.VerificationID}, b.VerificationID))
}

// blockedVerdict refuses an action because the principal is blocked.
func (g *Guard) blockedVerdict(a Action, b *store.Block, factors ...string) Verdict {
	d := evaluator.Directive{Stopped: true, Decision: evaluator.Block, Enforced: true, Tier: evaluator.DangerZone,
		Reason:  fmt.Sprintf("Agent '%s' is hard-blocked: %s; verification %s", g.pol().Principal, b.Reason, b.VerificationID),
		Factors: factors}
	return Verdict{Directive: d, VerificationID: b.VerificationID, Refusal: challenge.Blocked(a.Operation, g.pol().Principal, b)}
}

// unavailable is the fail-closed verdict when the store cannot be used.
func (g *Guard) unavailable(err error, what string) Verdict {
	g.log().Error("the state database could not be used; the action is refused", "err", err)
	d := evaluator.Directive{Enforced: true, Reason: "state database unavailable",
		Factors: []string{"fail closed: " + refusal.StateProblem(err)}}
	return Verdict{Directive: d, Refusal: refusal.StateUnavailable(err, what)}
}

// decisionRecord is the audit record of one check.
func (g *Guard) decisionRecord(a Action, v Verdict, began time.Time) store.Record {
	d := v.Directive
	a = g.prepare(a)
	r := g.record(store.KindDecision, a.Session)
	r.Server, r.Operation, r.ArgsSHA256, r.Decision = a.Server, a.Operation, a.digest, decisionWord(v)
	if !a.reported() {
		r.Tool = a.Tool
	}
	r.Stage, r.Tier, r.Risk, r.Factors, r.Layer = string(d.Stage), string(d.Tier), d.Risk, d.Factors, d.Layer
	r.ChallengeID, r.Token, r.Approval, r.DurationMS = v.VerificationID, v.Token, v.Approval, ms(r.Time.Sub(began))
	r.Args, r.ArgsText, r.ArgsBytes = a.written.Args, a.written.Text, a.written.Bytes
	if a.reported() {
		r.Execution = a.Execution.ID
	}
	if v.Refusal != nil {
		r.Result = v.Refusal.Kind.String()
	}
	return r
}

// record is the start of every audit record the guard writes: when,
// what kind, whose, from which process and session.
func (g *Guard) record(kind store.RecordKind, session string) store.Record {
	r := store.NewRecord(g.now(), kind, g.Principal(), g.Process, session)
	if g.SessionClient != nil && session != "" {
		r.Client = g.SessionClient(session)
	}
	return r
}

// decisionWord is the decision record's word for v.
func decisionWord(v Verdict) string {
	switch {
	case v.Proceed:
		return "allow"
	case v.ClientAsks:
		return "ask_client"
	case v.Refusal == nil, v.Directive.Decision == evaluator.Refuse && v.Directive.Enforced:
		return "refuse" // a refuse pattern or rule: this call alone
	}
	return v.Refusal.Kind.Decision()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Outcome records what became of an action v allowed: result is "ok",
// "tool_error" or an error code. If the record cannot be written the
// caller must not hand the result on (fail closed).
func (g *Guard) Outcome(ctx context.Context, a Action, v Verdict, result string, took time.Duration) error {
	return g.outcome(ctx, a, v, result, took, nil)
}

// outcome is Outcome with what the result held (flows.go).
func (g *Guard) outcome(ctx context.Context, a Action, v Verdict, result string, took time.Duration, findings []store.Finding) error {
	digest := v.argsDigest
	if digest == "" {
		digest = confirm.Digest(a.Arguments)
	}
	rec := g.record(store.KindOutcome, a.Session)
	rec.Server, rec.Operation, rec.ArgsSHA256, rec.Result, rec.DurationMS = a.Server, a.Operation, digest, result, ms(took)
	rec.Findings = findings
	err := g.appendRecords(ctx, rec)
	if err != nil {
		return fmt.Errorf("recording the outcome of %s: %w", a.Operation, err)
	}
	return nil
}
