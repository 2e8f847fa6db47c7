package evaluator

import (
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
)

// Base risk by semantic category. The order follows the danger levels of
// danger-levels.md 3.3 (Read safe; Create, Update, Execute reversible;
// Delete destructive), spread so that, with no other signal, READ and
// CREATE land in the advisory tier and UPDATE, EXECUTE and DELETE in the
// confirm tier.
var baseRisk = withFactors([]baseRiskSaid{
	{category: policy.Read, score: 10},
	{category: policy.Create, score: 25},
	{category: policy.Update, score: 40},
	{category: policy.Execute, score: 45},
	{category: policy.Delete, score: 55},
})

// baseRiskSaid is a category's base risk and the factor that says so,
// made once: this runs for every decision that reaches the risk stage.
type baseRiskSaid struct {
	category policy.Category
	score    int
	factor   string
}

func withFactors(bs []baseRiskSaid) []baseRiskSaid {
	for i, b := range bs {
		bs[i].factor = "risk: category " + string(b.category) + " base " + strconv.Itoa(b.score)
	}
	return bs
}

// baseRiskOf is cat's base risk; ok is false for an unknown category.
// (Five string comparisons cost less than a map lookup.)
func baseRiskOf(cat policy.Category) (baseRiskSaid, bool) {
	for _, b := range baseRisk {
		if b.category == cat {
			return b, true
		}
	}
	return baseRiskSaid{}, false
}

// BaseRisk is a category's base risk, the order of how much a category
// can do (an unknown category is scored as EXECUTE).
func BaseRisk(cat policy.Category) int {
	if b, ok := baseRiskOf(policy.Category(strings.ToUpper(strings.TrimSpace(string(cat))))); ok {
		return b.score
	}
	return unknownCategoryRisk
}

// effectRisk is the base risk of each effect: reading and writing where
// the guard judges the place (paths against roots, stage 3) is advisory;
// sending data out is at the top of the advisory tier (a conservative
// tolerance asks); running commands, deleting, and what could do
// anything are in the confirm tier.
var effectRisk = []struct {
	effect policy.Effect
	score  int
}{
	{policy.EffectRead, 10},
	{policy.EffectWrite, 25},
	{policy.EffectSend, 30},
	{policy.EffectExecute, 45},
	{policy.EffectUnknown, 45},
	{policy.EffectDelete, 55},
}

// publishRisk is the base risk of a tool no person described that sends
// text it is given out of the machine: in the confirm tier.
const publishRisk = 40

// hasRole reports whether any argument has role r.
func hasRole(roles map[string]policy.Role, r policy.Role) bool {
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

// confinedDeleteRisk is the base risk of a delete that lands only in
// the server's own store (the memory server's graph): what it costs is
// the server's data, nothing of the user's files or services; it runs
// under the default tolerance and asks under a conservative one.
const confinedDeleteRisk = 30

// EffectsRisk is the base risk of a set of effects: the highest of its
// effects', 0 for a tool that does nothing outside itself. confined:
// its writes and deletes land only in the server's own store.
func EffectsRisk(e policy.Effects, confined bool) int {
	score := 0
	for _, r := range effectRisk {
		if e.Has(r.effect) {
			s := r.score
			if confined && r.effect == policy.EffectDelete {
				s = confinedDeleteRisk
			}
			score = max(score, s)
		}
	}
	return score
}

// effectsRisk is a modelled step's base risk and the factor that says
// what it does and how the guard knows.
func effectsRisk(s *Step, factors []string) (int, []string) {
	score := EffectsRisk(s.Effects, s.Confined)
	if s.Effects.Has(policy.EffectSend) && score < publishRisk && s.EffectSource != policy.SourceProfile &&
		s.EffectSource != policy.SourceConfig && hasRole(s.Roles, policy.RoleContent) {
		// A tool known only from its own words that sends text it is
		// given (a message's body, a comment) out of the machine: the
		// human sees what leaves. A fetch sends its URL alone and runs.
		score = publishRisk
		return score, append(factors, "risk: effects "+s.Effects.String()+" ("+s.EffectSource.String()+"), base "+
			strconv.Itoa(score)+": it sends the text it is given out of this machine; "+s.EffectWhy)
	}
	f := "risk: effects " + s.Effects.String() + " (" + s.EffectSource.String() + "), base " + strconv.Itoa(score)
	if s.Confined {
		f = "risk: effects " + s.Effects.String() + " in the server's own store (" + s.EffectSource.String() + "), base " + strconv.Itoa(score)
	}
	if s.EffectWhy != "" {
		f += ": it " + s.EffectWhy
	}
	return score, append(factors, f)
}

// unknownCategoryRisk applies when a step has no (or an unknown) category:
// danger-levels.md 7.1 forbids treating unlabelled operations as safe, and
// "could do anything" is what EXECUTE means.
const unknownCategoryRisk = 45

const (
	readOnlyCap    = 10
	destructiveMin = 50
	openWorldBonus = 5
	safeNameCap    = 15
	dangerousMin   = 70
	forbiddenMin   = 90
)

func nameMatches(pat, name string) bool {
	if rest, ok := strings.CutPrefix(pat, "*"); ok {
		return strings.HasSuffix(name, rest)
	}
	return strings.HasPrefix(name, strings.TrimSuffix(pat, "*"))
}

// Risk scores a step from 0 to 100 and explains each adjustment; see the
// package documentation for the table. p may be nil (no risk rules).
func Risk(p *policy.Policy, s Step) (score int, factors []string) {
	var c call
	c.prepare(p, &s, new(scratch))
	return c.risk(p, nil)
}

// score is the step's risk, without the factors.
func (c *call) score(p *policy.Policy) int {
	s, _ := c.risk(p, nil)
	return s
}

// risk scores the step and appends what moved the score to factors. A
// decision scores a step at most once: requires_approval for the tier it
// reports, or the risk stage.
func (c *call) risk(p *policy.Policy, factors []string) (int, []string) {
	s := &c.s
	modeled := s.EffectSource != policy.SourceNone
	cat := policy.Category(strings.ToUpper(strings.TrimSpace(string(s.Category))))
	var score int
	if modeled {
		score, factors = effectsRisk(s, factors)
	} else {
		base, known := baseRiskOf(cat)
		score = base.score
		if known {
			factors = append(factors, base.factor)
		} else {
			score = unknownCategoryRisk
			factors = append(factors, "risk: category unknown, base "+strconv.Itoa(score)+" (as EXECUTE)")
		}
	}

	// A server's word never lowers the guard's judgement of a tool it
	// has a model of; without one (a reported step, a policy test case),
	// readOnlyHint is all there is. Where a person said what the tool
	// does (the configuration, a shipped profile), the hints say nothing
	// more: a filesystem's write_file is destructive (it overwrites), and
	// its writes are judged by where they land, not asked about all.
	if s.EffectSource == policy.SourceConfig || s.EffectSource == policy.SourceProfile {
		factors = append(factors, "risk: annotations not read ("+s.EffectSource.String()+" says what it does)")
		return c.finishRisk(p, score, false, factors)
	}
	destructive := isTrue(s.Annotations.Destructive)
	if isTrue(s.Annotations.ReadOnly) && !modeled {
		if cat == policy.Delete {
			factors = append(factors, "risk: readOnlyHint ignored for a DELETE")
		} else if score > readOnlyCap {
			score = readOnlyCap
			factors = append(factors, "risk: readOnlyHint lowers to "+strconv.Itoa(score))
		}
	}
	if destructive && score < destructiveMin {
		score = destructiveMin
		factors = append(factors, "risk: destructiveHint raises to "+strconv.Itoa(score))
	}
	if isTrue(s.Annotations.OpenWorld) && !s.Effects.Has(policy.EffectSend) {
		// (A tool that sends data out is open to the world already.)
		score += openWorldBonus
		factors = append(factors, "risk: openWorldHint adds "+strconv.Itoa(openWorldBonus)+" ("+strconv.Itoa(score)+")")
	}

	return c.finishRisk(p, score, destructive, factors)
}

// finishRisk applies the naming conventions and the risk rules to a
// base score (destructive: the tool says so, and the guard reads it).
func (c *call) finishRisk(p *policy.Policy, score int, destructive bool, factors []string) (int, []string) {
	s := &c.s
	modeled := s.EffectSource != policy.SourceNone
	cat := policy.Category(strings.ToUpper(strings.TrimSpace(string(s.Category))))
	nr := c.nameRisk()
	// A reassuring name must not talk a declared destructive tool, or a
	// DELETE, down: names are chosen by whoever wrote the server. A tool
	// the guard has a model of is judged by what it does, never by a
	// name that sounds safe.
	if !modeled && !destructive && cat != policy.Delete && score > safeNameCap {
		if h := nr.safe; h.ok {
			score = safeNameCap
			factors = append(factors, "risk: "+h.what+" matches safe pattern "+h.pat+", capped at "+strconv.Itoa(score))
		}
	}
	if h := nr.dangerous; h.ok {
		score = max(score, dangerousMin)
		factors = append(factors, "risk: "+h.what+" matches dangerous pattern "+h.pat+", at least "+strconv.Itoa(dangerousMin))
	}
	if h := nr.forbidden; h.ok {
		score = max(score, forbiddenMin)
		factors = append(factors, "risk: "+h.what+" matches forbidden pattern "+h.pat+", at least "+strconv.Itoa(forbiddenMin))
	}

	if p != nil {
		score, factors = c.raiseByRules(p, score, factors)
	}
	return min(max(score, 0), 100), factors
}

// raiseByRules raises score to the risk rules of p that match, appending
// their factors.
func (c *call) raiseByRules(p *policy.Policy, score int, factors []string) (int, []string) {
	var cand policy.Candidates // nil: every rule
	if ixs := p.Indexes(); ixs != nil {
		var byNames policy.Candidates
		if c.tool != nil {
			byNames = c.tool.risk
		}
		cand = c.candidates(ixs, ixs.RiskRules, policy.ListRiskRules, byNames, true)
	}
	for i := nextCandidate(cand, 0, len(p.RiskRules)); i < len(p.RiskRules); i = nextCandidate(cand, i+1, len(p.RiskRules)) {
		r := &p.RiskRules[i]
		h := c.riskRuleMatches(i, r)
		if h.certainty == noMatch {
			continue
		}
		c.riskFromArguments = c.riskFromArguments || h.argumentBound
		c.riskRules = append(c.riskRules, r.Source)
		score = max(score, r.Score)
		f := "risk: rule " + r.Source
		if r.Reason != "" {
			f += " (" + r.Reason + ")"
		}
		factors = append(factors, f+", at least "+strconv.Itoa(r.Score))
	}
	return score, factors
}

// riskRuleMatches matches a risk rule like a requires_approval entry:
// with an argument, that argument's values (and shell commands); without,
// the subjects its pattern's kind names. A possible match counts: a risk
// rule only ever raises the score.
func (c *call) riskRuleMatches(i int, r *policy.CompiledRiskRule) hit {
	if r.Argument == "" {
		if c.tool == nil || !c.proxied {
			return c.restrictive(r.Pattern)
		}
		// The memo knows which name, if any, the rule matches.
		if n := c.tool.riskNames[i]; n >= 0 {
			return hit{c.nameSaid(n), false, definite}
		}
		return c.restrictsArguments(r.Pattern)
	}
	rule := policy.Rule{Path: r.Path, Pattern: r.Pattern, Argument: r.Argument}
	return c.ruleRestricts(&rule)
}

type name struct{ what, value string }

// nameHit is a name that matched one of the naming conventions.
type nameHit struct {
	what, pat string
	ok        bool
}

// nameRisk is what the naming conventions say of a call's names: they
// depend on the tool and operation names alone, so the per-tool memo
// keeps them.
type nameRisk struct{ safe, dangerous, forbidden nameHit }

func nameRiskOf(s *Step) nameRisk {
	names := namesForRisk(s)
	hit := func(pats []string) nameHit {
		what, pat, ok := matchName(names, pats)
		return nameHit{what, pat, ok}
	}
	return nameRisk{hit(policy.SafeNames), hit(policy.DangerousNames), hit(policy.ForbiddenNames)}
}

func (c *call) nameRisk() nameRisk {
	if c.tool != nil {
		return c.tool.nameRisk
	}
	return nameRiskOf(&c.s)
}

// namesForRisk are the identifiers the danger-level patterns apply to:
// the tool's own name as the server spells it, snake-cased
// (deleteAllUsers -> delete_all_users). Never the operation name, which
// starts with the server's: a server named "search" does not make its
// run_command a read, nor one named "drop" every tool forbidden. A step
// with an operation but no tool is known by its operation name.
func namesForRisk(s *Step) []name {
	if policy.IsReadSubject(s.Tool) {
		return nil // a URI or a prompt's name is not a tool name: no naming conventions apply
	}
	if t := policy.SnakeName(s.Tool); t != "" {
		return []name{{"tool name " + strconv.Quote(t), t}}
	}
	if op := policy.SnakeName(s.Operation); op != "" {
		return []name{{"operation name " + strconv.Quote(op), op}}
	}
	return nil
}

func matchName(names []name, pats []string) (what, pat string, ok bool) {
	for _, n := range names {
		for _, p := range pats {
			if nameMatches(p, n.value) {
				return n.what, p, true
			}
		}
	}
	return "", "", false
}

func isTrue(b *bool) bool { return b != nil && *b }
