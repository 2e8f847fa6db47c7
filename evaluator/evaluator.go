package evaluator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
)

// Evaluate runs the five-stage pipeline of MCP-AQL 8.7.2 for one step under
// policy p and returns the directive. It is pure: the same policy and step
// always give the same directive, and nothing outside the returned value is
// touched. A nil policy pauses the step (enforced) rather than letting it
// through unchecked.
func Evaluate(p *policy.Policy, s Step) Directive {
	if p == nil {
		return Directive{
			Decision: NeedsConfirm,
			Stage:    StageNone,
			Reason:   "No policy loaded",
			Factors:  []string{"no policy loaded: pausing instead of acting unchecked"},
			Enforced: true,
		}
	}
	d := Directive{StepsRemaining: max(0, p.MaxSteps-max(s.StepNumber, 0))}
	switch p.Loop {
	case policy.LoopLogging:
		d.Continue, d.Decision, d.Stage = true, Allow, StageNone
		d.Factors = []string{"safety loop in logging mode: the action is recorded, not evaluated"}
		return d
	case policy.LoopDisabled:
		d.Continue, d.Decision, d.Stage = true, Allow, StageNone
		d.Factors = []string{"safety loop disabled: no evaluation"}
		return d
	}
	d.Factors = make([]string, 0, 8)
	pipeline(p, &s, &d)
	if p.Loop == policy.LoopMonitoring {
		d.Factors = append(d.Factors, "monitoring: enforcing would have "+string(d.Decision)+" ("+d.Reason+")")
		d.Continue, d.Stopped, d.Enforced = true, false, false
		return d
	}
	// Enforcing, and any unknown mode: a policy that cannot say what it
	// wants gets the strict reading.
	d.Enforced = true
	return d
}

func pipeline(p *policy.Policy, s *Step, d *Directive) {
	// Stage 1: step limit.
	if s.StepNumber > p.MaxSteps {
		d.Decision, d.Stage, d.Reason = NeedsConfirm, StageStepLimit, "Step limit exceeded"
		d.Factors = append(d.Factors, fmt.Sprintf("step limit: step %d exceeds max_autonomous_steps %d; a human must check in", s.StepNumber, p.MaxSteps))
		return
	}
	d.Factors = append(d.Factors, fmt.Sprintf("step limit: step %d of %d", s.StepNumber, p.MaxSteps))

	// Stage 2: previous outcome.
	switch {
	case strings.EqualFold(s.Outcome, "failure"):
		d.Decision, d.Stage, d.Reason = NeedsConfirm, StageOutcome, "Previous step failed"
		d.Factors = append(d.Factors, "previous outcome: failure; pausing so the failure is reported before any retry")
		return
	case s.Outcome == "":
		d.Factors = append(d.Factors, "previous outcome: not reported")
	default:
		d.Factors = append(d.Factors, "previous outcome: "+s.Outcome)
	}

	// Stage 3: patterns.
	c := newCall(s)
	if m, ok := c.matchPatterns(p); ok {
		d.Stage, d.Matched = StagePattern, m.source
		d.Factors = append(d.Factors, m.factor())
		switch m.action {
		case policy.ActionDeny:
			d.Stopped, d.Decision, d.Tier, d.Risk = true, Block, DangerZone, 100
			d.Reason = "Action matches deny pattern " + m.display
		case policy.ActionRequiresApproval:
			d.Decision, d.Tier = NeedsConfirm, Confirm
			d.Reason = "Action requires approval (" + m.display + ")"
		default:
			d.Continue, d.Decision = true, Allow
			d.Reason = "Action auto-approved (" + m.display + ")"
		}
		return
	}
	d.Factors = append(d.Factors, "patterns: no deny, requires_approval or auto_approve pattern matched")

	// Stage 4: safety tier.
	score, factors := c.risk(p)
	d.Risk, d.Tier = score, TierFor(score)
	d.Factors = append(d.Factors, factors...)
	d.Factors = append(d.Factors, "safety tier: risk "+strconv.Itoa(score)+" is "+string(d.Tier))
	switch d.Tier {
	case Verify:
		d.Decision, d.Stage = NeedsVerify, StageTier
		d.Reason = "Risk " + strconv.Itoa(score) + " requires out-of-band verification (verify tier)"
		return
	case DangerZone:
		d.Stopped, d.Decision, d.Stage = true, Block, StageTier
		d.Reason = "Risk " + strconv.Itoa(score) + " is in the danger zone"
		return
	}

	// Stage 5: risk tolerance.
	d.Stage = StageTolerance
	if score > p.Threshold {
		d.Decision = NeedsConfirm
		d.Reason = fmt.Sprintf("Risk %d exceeds the %s risk tolerance (%d)", score, p.Tolerance, p.Threshold)
		d.Factors = append(d.Factors, "risk tolerance: "+strconv.Itoa(score)+" > "+strconv.Itoa(p.Threshold))
		return
	}
	d.Continue, d.Decision = true, Allow
	d.Reason = fmt.Sprintf("Risk %d is within the %s risk tolerance (%d)", score, p.Tolerance, p.Threshold)
	d.Factors = append(d.Factors, "risk tolerance: "+strconv.Itoa(score)+" <= "+strconv.Itoa(p.Threshold))
}

// TierFor maps a risk score to its safety tier (MCP-AQL 8.7.2 stage 4).
func TierFor(score int) Tier {
	switch {
	case score <= 30:
		return Advisory
	case score <= 60:
		return Confirm
	case score <= 85:
		return Verify
	}
	return DangerZone
}

// call is a step prepared for matching: subjects normalised once, argument
// values rendered at most once each.
type call struct {
	s         *Step
	op        string // normalised operation name
	qualified string // normalised server.tool, "" without a server
	hint      string // normalised action hint
	subjects  [3]subject
	n         int
	args      map[string]argValue
}

type subject struct {
	kind, value string
}

type argValue struct {
	value string
	ok    bool
}

func newCall(s *Step) *call {
	c := &call{s: s, op: policy.Normalize(s.Operation), hint: policy.Normalize(s.ActionHint)}
	if s.Server != "" {
		c.qualified = policy.Normalize(s.Server + "." + s.Tool)
	}
	for _, sub := range []subject{{"operation", c.op}, {"tool", c.qualified}, {"action hint", c.hint}} {
		if sub.value != "" {
			c.subjects[c.n] = sub
			c.n++
		}
	}
	if c.n == 0 {
		// Nothing to describe the action: still let catch-all patterns
		// such as deny = ["*"] see it.
		c.subjects[0] = subject{"action", ""}
		c.n = 1
	}
	return c
}

// firstMatch returns the first pattern matching any subject (of only, when
// given, else of all the call's subjects).
func (c *call) firstMatch(pats []policy.Pattern, only ...subject) (policy.Pattern, subject, bool) {
	subjects := c.subjects[:c.n]
	if len(only) > 0 {
		subjects = only
	}
	for _, pat := range pats {
		for _, sub := range subjects {
			if pat.MatchNormalized(sub.value) {
				return pat, sub, true
			}
		}
	}
	return policy.Pattern{}, subject{}, false
}

// approvable are the subjects auto_approve may match. Restrictive lists
// (deny, requires_approval) see everything, the hint included; the
// permissive one must not, for a proxied call: its hint carries the
// arguments, which the model writes, so `*.get_*` would otherwise approve
// fs.write_file {"content":"x.get_y"} and skip risk scoring. A reported
// step (no server) is described by its hint alone, so there it stays.
func (c *call) approvable() []subject {
	if c.qualified == "" {
		return nil
	}
	return []subject{{"operation", c.op}, {"tool", c.qualified}}
}

// arg renders one argument for matching: strings as they are, every other
// JSON value in its JSON encoding (without HTML escaping, so `*>*` means
// what it says), then normalised like any subject.
func (c *call) arg(name string) (string, bool) {
	if v, ok := c.args[name]; ok {
		return v.value, v.ok
	}
	raw, ok := c.s.Arguments[name]
	var out argValue
	if ok {
		if str, isStr := raw.(string); isStr {
			out = argValue{policy.Normalize(str), true}
		} else {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			// Values JSON cannot encode cannot come from a decoded request;
			// if one does, it matches no rule.
			if enc.Encode(raw) == nil {
				out = argValue{policy.Normalize(strings.TrimSuffix(buf.String(), "\n")), true}
			}
		}
	}
	if c.args == nil {
		c.args = make(map[string]argValue, 2)
	}
	c.args[name] = out
	return out.value, out.ok
}

type match struct {
	action  policy.Action
	source  string // Directive.Matched: the pattern or rule as configured
	display string // source, quoted when it is a bare glob
	subject string // what matched, for the factor
}

func (m match) factor() string {
	return "pattern: " + string(m.action) + " " + m.display + " matched the " + m.subject
}

func patternMatch(a policy.Action, pat policy.Pattern, sub subject) match {
	return match{a, pat.Source, strconv.Quote(pat.Source), sub.describe()}
}

func ruleMatch(r *policy.Rule) match {
	return match{r.Action, r.Source, r.Source, "argument " + strconv.Quote(r.Argument)}
}

// matchPatterns resolves stage 3: any deny (pattern or rule) beats any
// requires_approval, which beats any auto_approve.
func (c *call) matchPatterns(p *policy.Policy) (match, bool) {
	if pat, sub, ok := c.firstMatch(p.Deny); ok {
		return patternMatch(policy.ActionDeny, pat, sub), true
	}
	var approve, auto *policy.Rule
	for i := range p.Rules {
		r := &p.Rules[i]
		if (r.Action == policy.ActionRequiresApproval && approve != nil) || (r.Action == policy.ActionAutoApprove && auto != nil) {
			continue // a rule of this action already matched; only deny can still change the answer
		}
		if !r.AppliesTo(c.op, c.qualified) {
			continue
		}
		v, ok := c.arg(r.Argument)
		if !ok || !r.Pattern.MatchNormalized(v) {
			continue
		}
		switch r.Action {
		case policy.ActionDeny:
			return ruleMatch(r), true
		case policy.ActionRequiresApproval:
			approve = r
		case policy.ActionAutoApprove:
			auto = r
		}
	}
	if pat, sub, ok := c.firstMatch(p.RequiresApproval); ok {
		return patternMatch(policy.ActionRequiresApproval, pat, sub), true
	}
	if approve != nil {
		return ruleMatch(approve), true
	}
	if pat, sub, ok := c.firstMatch(p.AutoApprove, c.approvable()...); ok {
		return patternMatch(policy.ActionAutoApprove, pat, sub), true
	}
	if auto != nil {
		return ruleMatch(auto), true
	}
	return match{}, false
}

// describe names the subject without repeating free text (hints can be
// long, and factors travel back to the model and into the audit log).
func (s subject) describe() string {
	if s.kind == "operation" || s.kind == "tool" {
		return s.kind + " " + strconv.Quote(s.value)
	}
	return s.kind
}
