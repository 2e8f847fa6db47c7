package evaluator

import (
	"strconv"

	"github.com/aqlguard/aqlguard/policy"
)

// A managed policy layer (policy.Overlay) is consulted on every call
// besides the merged policy: its restrictions are evaluated on the call
// as the managed file alone describes it (its servers' argument roles,
// the category without the user's override, name patterns read against
// its own servers), and stand whatever the merged evaluation says. So
// nothing the user's file declares can hide an argument or a name from
// a managed rule, and a user's auto_approve, which ends the merged
// evaluation before the risk stages, does not skip a managed risk rule.
//
// What the managed layer alone has to say is only what it restricts:
// stage 3's deny, refuse and requires_approval (with interpreter_code and
// the fail-closed asks), and its risk rules' scores through its tiers
// and tolerance. The built-in risk of a call's category is not a
// managed restriction: a user's auto_approve may lift it, as it may
// without a managed layer; the floors on the settings (policy.floor)
// keep the merged evaluation's own tiers at least as strict.

// applyManaged makes the managed layer's verdict on s stand in d when it
// is stricter than d (or, as strict, another kind of refusal).
func applyManaged(mp *policy.Policy, s Step, d *Directive) {
	m := managedVerdict(mp, s)
	if m.Decision == Allow {
		return
	}
	sd, sm := severity(d.Decision), severity(m.Decision)
	if sm < sd {
		return
	}
	if sm == sd && m.Decision == d.Decision && d.Stage != StageStepLimit && d.Stage != StageOutcome {
		// The same answer: an approval of the tool alone must not stand
		// for it if either view rests on the arguments.
		d.ArgumentBound = d.ArgumentBound || m.ArgumentBound
		return
	}
	factors := d.Factors
	for _, f := range m.Factors {
		factors = append(factors, "managed layer: "+f)
	}
	m.Factors, m.StepsRemaining = factors, d.StepsRemaining
	*d = m
}

// severity orders decisions by how much they stop: a refused call and a
// verify pause stop differently, and neither stands for the other.
func severity(dec Decision) int {
	switch dec {
	case Allow:
		return 0
	case NeedsConfirm:
		return 1
	case Refuse, NeedsVerify:
		return 2
	}
	return 3 // Block, and anything unknown
}

// managedVerdict is what the managed layer alone restricts s to: Allow
// when it says nothing against it.
func managedVerdict(mp *policy.Policy, s Step) Directive {
	if s.ManagedCategory != "" {
		s.Category = s.ManagedCategory
	}
	var d Directive
	var c call
	sc := scratches.Get().(*scratch)
	c.prepare(mp, &s, sc)
	defer c.release(sc)
	if m, ok := c.matchPatterns(mp); ok {
		if m.action == policy.ActionAutoApprove {
			return Directive{Continue: true, Decision: Allow} // the managed layer approves it
		}
		decidePattern(mp, &c, m, &d)
		d.Layer = policy.LayerManaged.String()
		return d
	}
	score, factors := c.raiseByRules(mp, 0, nil)
	if len(c.riskRules) == 0 {
		return Directive{Continue: true, Decision: Allow}
	}
	d.Risk, d.Tier, d.RiskRules, d.Factors = score, TierFor(score), c.riskRules, factors
	d.ArgumentBound, d.Layer = c.riskFromArguments, policy.LayerManaged.String()
	d.Stage = StageTier
	n := strconv.Itoa(score)
	switch {
	case d.Tier == Verify:
		d.Decision, d.Reason = NeedsVerify, "Risk "+n+" requires out-of-band verification (verify tier)"
	case d.Tier == DangerZone:
		d.Stopped, d.Decision, d.Reason = true, Block, "Risk "+n+" is in the danger zone"
	case score > mp.Threshold:
		d.Decision, d.Stage = NeedsConfirm, StageTolerance
		d.Reason = "Risk " + n + " (" + string(d.Tier) + " tier) needs a human under the managed " + mp.Tolerance +
			" risk tolerance, which lets calls up to " + strconv.Itoa(mp.Threshold) + " through"
	default:
		return Directive{Continue: true, Decision: Allow}
	}
	return d
}
