package evaluator

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	if p.Managed != nil {
		applyManaged(p.Managed, s, &d)
	}
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
		d.Factors = append(d.Factors, "step limit: step "+strconv.Itoa(s.StepNumber)+" exceeds max_autonomous_steps "+
			strconv.Itoa(p.MaxSteps)+"; a human must check in")
		if p.Layered() {
			d.Layer = p.SettingLayers.MaxSteps.String()
		}
		return
	}
	// (Concatenation, not fmt: this runs for every call.)
	d.Factors = append(d.Factors, stepFactor(s.StepNumber, p.MaxSteps))

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
	var c call
	sc := scratches.Get().(*scratch)
	c.prepare(p, s, sc)
	defer c.release(sc)
	if m, ok := c.matchPatterns(p); ok {
		decidePattern(p, &c, m, d)
		return
	}
	d.Factors = append(d.Factors, "patterns: no deny, requires_approval or auto_approve pattern matched")

	// Stage 4: safety tier.
	var score int
	score, d.Factors = c.risk(p, d.Factors)
	said := sayScore(p.Threshold, p.Tolerance, score)
	d.Risk, d.Tier, d.RiskRules = score, TierFor(score), c.riskRules
	d.Factors = append(d.Factors, said.tier)
	d.Reason = said.reason
	switch d.Tier {
	case Verify:
		d.Decision, d.Stage = NeedsVerify, StageTier
		return
	case DangerZone:
		d.Stopped, d.Decision, d.Stage = true, Block, StageTier
		return
	}

	// Stage 5: risk tolerance (see policy.Threshold for what it may move).
	d.Stage = StageTolerance
	d.ArgumentBound = c.riskFromArguments
	d.Factors = append(d.Factors, said.tolerance)
	if score > p.Threshold {
		d.Decision = NeedsConfirm
		if p.Layered() {
			d.Layer = p.SettingLayers.Tolerance.String()
		}
		return
	}
	d.Continue, d.Decision = true, Allow
}

// decidePattern is stage 3's directive when m matched.
func decidePattern(p *policy.Policy, c *call, m match, d *Directive) {
	d.Stage, d.Matched, d.ArgumentBound = StagePattern, m.source, m.argumentBound
	d.Factors = append(d.Factors, m.factor())
	if p.Layered() {
		d.Layer = m.layer
	}
	switch m.action {
	case policy.ActionDeny:
		d.Stopped, d.Decision, d.Tier, d.Risk = true, Block, DangerZone, 100
		d.Reason = "Action matches deny pattern " + m.display
	case policy.ActionRefuse:
		// The call is rejected; the principal is not stopped.
		d.Decision, d.Risk = Refuse, c.score(p)
		d.Tier = TierFor(d.Risk)
		d.Reason = "Action matches refuse pattern " + m.display
		if m.source == "flow" {
			d.Reason = "Action refused: " + m.why
		}
	case policy.ActionRequiresApproval:
		d.Decision, d.Tier = NeedsConfirm, Confirm
		d.Reason = "Action requires approval (" + m.display + ")"
		if m.why != "" {
			d.Reason = "Action requires approval: " + m.why
		}
		// The tier reflects the call's own risk too, so a human is
		// not told a destructive call is merely "confirm".
		d.Risk = max(c.score(p), 31)
	default:
		d.Continue, d.Decision = true, Allow
		d.Reason = "Action auto-approved (" + m.display + ")"
	}
}

// stepFactor is "step limit: step N of MAX", made in one allocation
// (strconv.Itoa allocates from 100 on, and a concatenation again).
func stepFactor(step, maxSteps int) string {
	var buf [64]byte
	b := append(buf[:0], "step limit: step "...)
	b = strconv.AppendInt(b, int64(step), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(maxSteps), 10)
	return string(b)
}

// scoreSaid is what the last two stages say of one score.
type scoreSaid struct {
	tier      string // the safety tier factor
	reason    string // the reason of the stage that decides
	tolerance string // the risk tolerance factor (stage 5 only)
}

// toleranceKey names a risk tolerance.
type toleranceKey struct {
	threshold int
	name      string
}

// said holds, per risk tolerance, what the last two stages say of every
// score from 0 to 100: built once, where formatting them at each
// decision was a tenth of its time. lastSaid is the tolerance used last,
// which is nearly always the one asked for next.
var (
	said     sync.Map // toleranceKey → *scoreTexts
	lastSaid atomic.Pointer[scoreTexts]
)

// scoreTexts are one tolerance's sentences, by score.
type scoreTexts struct {
	key     toleranceKey
	byScore [101]scoreSaid
}

func sayScore(threshold int, tolerance string, score int) scoreSaid {
	key := toleranceKey{threshold, tolerance}
	texts := lastSaid.Load()
	if texts == nil || texts.key != key {
		t, ok := said.Load(key)
		if !ok {
			t, _ = said.LoadOrStore(key, newScoreTexts(key))
		}
		texts = t.(*scoreTexts)
		lastSaid.Store(texts)
	}
	return texts.byScore[min(max(score, 0), 100)]
}

func newScoreTexts(key toleranceKey) *scoreTexts {
	threshold, tolerance := key.threshold, key.name
	out := &scoreTexts{key: key}
	for score := range out.byScore {
		tier, n, t := TierFor(score), strconv.Itoa(score), strconv.Itoa(threshold)
		s := scoreSaid{tier: "safety tier: risk " + n + " is " + string(tier)}
		switch {
		case tier == Verify:
			s.reason = "Risk " + n + " requires out-of-band verification (verify tier)"
		case tier == DangerZone:
			s.reason = "Risk " + n + " is in the danger zone"
		case score > threshold:
			s.reason = "Risk " + n + " (" + string(tier) + " tier) needs a human under the " + tolerance +
				" risk tolerance, which lets calls up to " + t + " through"
			s.tolerance = "risk tolerance: " + n + " > " + t + " (" + tolerance + ")"
		default:
			s.reason = "Risk " + n + " is within the " + tolerance + " risk tolerance (" + t + ")"
			s.tolerance = "risk tolerance: " + n + " <= " + t + " (" + tolerance + ")"
		}
		out.byScore[score] = s
	}
	return out
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

// DangerLevel maps a risk score to its danger level's name (MCP-AQL
// danger-levels.md 8.1), as a notification's metadata gives it.
func DangerLevel(score int) string {
	switch {
	case score <= 15:
		return "safe"
	case score <= 40:
		return "reversible"
	case score <= 60:
		return "destructive"
	case score <= 85:
		return "dangerous"
	}
	return "forbidden"
}
