package evaluator

import (
	"strconv"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/policy"
)

// call is a step prepared for matching: subjects extracted and folded
// once, shell arguments parsed at most once.
type call struct {
	s       Step // a copy: a pointer to the caller's would send it to the heap
	sub     Subjects
	proxied bool
	shell   shellArgs
	// tool is what the call's names alone decide, from the policy's
	// memo; nil without one.
	tool *toolFacts

	// What the risk stage found besides the score.
	riskFromArguments bool
	riskRules         []string

	// sets is where this call's candidate sets are carved from: one
	// allocation for deny's set and one for all the others.
	sets []uint64
	// values are the candidates of every list among the argument values
	// that text patterns see (all but content), found in one pass over
	// each (policy.ValueIndex) when first needed; content those among
	// the content values, which only rules see.
	values, content []uint64
}

// valueCandidates are list's candidates among c's argument values: nil
// when the policy has no value index or the list is not in it. Content
// is looked at only for the rules (an argument rule or a risk rule may
// name it).
func (c *call) valueCandidates(ixs *policy.Indexes, list int) policy.Candidates {
	if ixs.Values == nil || len(c.sub.Values) == 0 {
		return nil
	}
	if c.values == nil {
		c.values = c.markValues(ixs.Values, false)
	}
	if list != policy.ListRuleValues && list != policy.ListRiskRules { // rules may name a content argument
		return ixs.Values.Of(c.values, list)
	}
	if c.content == nil {
		c.content = c.markValues(ixs.Values, true)
		or(c.content, c.values)
	}
	return ixs.Values.Of(c.content, list)
}

// markValues marks the candidates among the content values (content)
// or among the others.
func (c *call) markValues(vi *policy.ValueIndex, content bool) policy.Candidates {
	set := c.newSet(vi.Words() * 64)
	for i := range c.sub.Values {
		v := &c.sub.Values[i]
		if (v.Role == policy.RoleContent || v.Inert) != content {
			continue
		}
		if !v.unfolded || !vi.MarkFolding(v.Raw, set) {
			vi.Mark(c.text(i), set)
		}
	}
	return set
}

// text is the folded text of the call's i-th value, folded now if it
// was not yet.
func (c *call) text(i int) string {
	v := &c.sub.Values[i]
	if v.unfolded {
		v.Text, v.unfolded = policy.Normalize(v.Raw), false
	}
	return v.Text
}

// newSet returns an empty candidate set for n patterns, carved from
// c.sets. Each set has its own capacity, so one never grows into the next.
func (c *call) newSet(n int) policy.Candidates {
	w := (n + 63) / 64
	c.reserve(w)
	at := len(c.sets)
	c.sets = c.sets[:at+w]
	set := c.sets[at : at+w : at+w]
	clear(set)
	return policy.Candidates(set)
}

// reserve makes room in c.sets for w more words. prepare reserves for
// every set a decision can make at once (setWords), in one allocation.
func (c *call) reserve(w int) {
	if cap(c.sets)-len(c.sets) < w {
		c.sets = make([]uint64, 0, w)
	}
}

// setWords is the size of all the candidate sets one decision can make
// together: one per list, the value index's, and two for the rules.
func setWords(ixs *policy.Indexes) int {
	n := words(ixs.Deny) + words(ixs.Refuse) + words(ixs.RequiresApproval) + words(ixs.AutoApprove) + words(ixs.RiskRules)
	if ixs.Values != nil {
		n += 2 * ixs.Values.Words()
	}
	if ixs.RuleOperations != nil {
		n += 2 * words(ixs.RuleValues)
	}
	return n
}

// words is the size of a candidate set for ix's list; 0 without one.
func words(ix *policy.PatternIndex) int {
	if ix == nil {
		return 0
	}
	return (ix.Len() + 63) / 64
}

// cloneSet is newSet holding what from holds.
func (c *call) cloneSet(from policy.Candidates) policy.Candidates {
	set := c.newSet(len(from) * 64)
	copy(set, from)
	return set
}

// scratch is the memory a decision needs only while it runs, its
// subjects' values and its candidate sets, kept for the next one: they
// were a third of what a decision allocated.
type scratch struct {
	values []Value
	sets   []uint64
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// maxScratchValues bounds the values a pooled scratch keeps room for,
// so that one call with a huge argument does not pin its memory.
const maxScratchValues = 256

// prepare makes c ready to match s under p, with memory from sc. A call
// is a value its caller keeps (on the stack: it does not outlive the
// decision); release gives sc back once the decision is made.
func (c *call) prepare(p *policy.Policy, s *Step, sc *scratch) {
	*c = call{s: *s, tool: factsFor(p, s), sets: sc.sets[:0]}
	if p != nil && p.Indexes() != nil {
		c.reserve(setWords(p.Indexes()))
	}
	names := c.tool.namesOr(s)
	c.sub = subjectsWith(*s, names, sc.values[:0], true, newRoles(p, &c.s, names))
	// A reported step has no names (the loop evaluates it by its hint
	// alone); everything with a name is a call of a tool.
	c.proxied = len(c.sub.Names.Forms) > 0
	c.shell = analyzeShellArgs(p, c.sub)
}

// release gives sc back to the pool with what c grew, holding nothing
// of this decision (the strings of its values would stay reachable).
func (c *call) release(sc *scratch) {
	if cap(c.sub.Values) <= maxScratchValues {
		clear(c.sub.Values)
		sc.values = c.sub.Values[:0]
	}
	sc.sets = c.sets[:0]
	scratches.Put(sc)
}

// certainty is how sure a match is.
type certainty int

const (
	noMatch certainty = iota
	// possible: the pattern matches only if a part of a shell command
	// that is not known statically (a variable, a substitution) takes
	// certain values. A restrictive pattern that possibly matches asks a
	// human; it never blocks and never allows.
	possible
	definite
)

// hit says what matched, for factors and for whether an approval of the
// tool alone can stand for it.
type hit struct {
	what          string
	argumentBound bool
	certainty     certainty
}

// restrictive matches a deny or requires_approval pattern: a name pattern
// against the call's names, a text pattern against every argument value
// and key, and against every command of a shell argument; a reported
// step's hint against any pattern.
func (c *call) restrictive(pat policy.Pattern) hit {
	if !c.proxied {
		if pat.MatchNormalized(c.sub.Hint) {
			return hit{"the action hint", true, definite}
		}
		return hit{}
	}
	if i := firstName(pat, c.sub.Names); i >= 0 {
		return hit{c.nameSaid(i), false, definite}
	}
	return c.restrictsArguments(pat)
}

// firstName is the position of the first of names a restrictive
// pattern matches, as it reads them (policy.Pattern.FirstName), or -1.
func firstName(pat policy.Pattern, names policy.CallNames) int {
	return pat.FirstName(names)
}

// restrictsArguments is restrictive for a proxied call's arguments
// alone: every value and key but content, and every command of a shell
// argument.
func (c *call) restrictsArguments(pat policy.Pattern) hit {
	if pat.Kind&policy.Text == 0 {
		return hit{}
	}
	for i := range c.sub.Values {
		if v := &c.sub.Values[i]; v.Role != policy.RoleContent && !v.Inert && pat.MatchNormalized(c.text(i)) {
			return hit{describeValue(v), true, definite}
		}
	}
	return c.shell.match(pat, "")
}

// approves matches an auto_approve pattern. For a proxied call only the
// names count: the arguments are written by the model, so `*.get_*` must
// not approve fs.write_file {"content":"x.get_y"}. A reported step, with
// no names, is described by its hint alone.
func (c *call) approves(pat policy.Pattern) hit {
	if !c.proxied {
		if pat.MatchNormalized(c.sub.Hint) {
			return hit{"the action hint", true, definite}
		}
		return hit{}
	}
	if i := pat.FirstName(c.sub.Names); i >= 0 {
		return hit{c.nameSaid(i), false, definite}
	}
	return hit{}
}

// ruleCovers reports whether argument rule r is about value v: a value
// or key at or below its argument (not the key naming the argument
// itself), or, for a rule on roles, a value of one of them.
func ruleCovers(r *policy.Rule, path string, v *Value) bool {
	if r.Roles != 0 {
		return !v.Key && r.Roles.Has(v.Role)
	}
	return v.Under(path) && !v.names(path)
}

// ruleShell reports whether a rule sees shell commands, and under
// which path: its argument's, or every command line for a rule on
// roles that include command.
func ruleShell(r *policy.Rule, path string) (string, bool) {
	if r.Roles != 0 {
		return "", r.Roles.Has(policy.RoleCommand)
	}
	return path, true
}

// ruleRestricts matches a deny, refuse or requires_approval argument
// rule: any value it covers, or any command of a shell value there.
func (c *call) ruleRestricts(r *policy.Rule) hit {
	path := strings.Join(r.Path, ".")
	for i := range c.sub.Values {
		v := &c.sub.Values[i]
		if ruleCovers(r, path, v) && r.Pattern.MatchNormalized(c.text(i)) {
			return hit{describeValue(v), true, definite}
		}
	}
	if at, ok := ruleShell(r, path); ok {
		return c.shell.match(r.Pattern, at)
	}
	return hit{}
}

// ruleApproves matches an auto_approve argument rule. It approves only
// what it fully covers: the argument is present, every value and key at or
// below it (canonical forms included) matches, and a shell value there is
// resolved statically and approved command by command.
func (c *call) ruleApproves(r *policy.Rule) hit {
	path := strings.Join(r.Path, ".")
	seen := false
	for i := range c.sub.Values {
		v := &c.sub.Values[i]
		if !ruleCovers(r, path, v) {
			continue
		}
		seen = true
		if !r.Pattern.MatchNormalized(c.text(i)) {
			return hit{}
		}
	}
	if !seen {
		return hit{}
	}
	if at, ok := ruleShell(r, path); ok && !c.shell.approves(r.Pattern, at) {
		return hit{}
	}
	what := "argument " + strconv.Quote(r.Argument)
	if r.Roles != 0 {
		what = "the arguments of its roles"
	}
	return hit{what, true, definite}
}

// textMatchesAny reports whether any of the candidates among pats from
// position from on matches the arguments (not the names).
func (c *call) textMatchesAny(pats []policy.Pattern, from int, cand policy.Candidates) bool {
	for j := nextCandidate(cand, from, len(pats)); j < len(pats); j = nextCandidate(cand, j+1, len(pats)) {
		if h := c.restrictive(pats[j]); h.certainty != noMatch && h.argumentBound {
			return true
		}
	}
	return false
}

// nextCandidate is the first position >= i of a list of n that cand
// holds, or n when none is left; a nil cand (no index) holds them all.
// Positions come in ascending order, so the first match found is the one
// a full scan of the list finds.
func nextCandidate(cand policy.Candidates, i, n int) int {
	if cand != nil {
		if i = cand.Next(i); i < 0 {
			return n
		}
	}
	return min(i, n)
}

// candidates are the positions of the patterns of ix's list that can
// match c: those whose literal occurs in one of its subjects, those
// without a literal, and those read as command lines whose command name
// can match one of its shell commands. nil (no index) means all of them.
func (c *call) candidates(ixs *policy.Indexes, ix *policy.PatternIndex, list int, byNames policy.Candidates, subjects bool) policy.Candidates {
	if ix == nil {
		return nil
	}
	var values policy.Candidates
	if subjects {
		values = c.valueCandidates(ixs, list)
	}
	// Most calls add nothing to what their names make candidates: then
	// the memo's set serves as it is (it is only read).
	if byNames != nil && c.proxied && len(c.shell) == 0 && values.Empty() {
		return byNames
	}
	var set policy.Candidates
	if byNames != nil {
		set = c.cloneSet(byNames)
	} else {
		set = markNames(ix, c.sub.Names)
	}
	c.markCommands(ix, set)
	if !c.proxied {
		ix.Mark(c.sub.Hint, set)
	}
	or(set, values)
	return set
}

// or adds what from holds to set (of the same length; nothing if from
// is nil).
func or(set, from policy.Candidates) {
	for i := range from {
		set[i] |= from[i]
	}
}

// markCommands adds the patterns read as command lines that can match
// one of the call's shell commands.
func (c *call) markCommands(ix *policy.PatternIndex, set policy.Candidates) {
	for _, sv := range c.shell {
		for _, cmd := range sv.script.Commands {
			ix.MarkCommand(cmd.Name, set)
		}
	}
}

// ruleCandidates are the rules whose operation can match the call's
// names and whose pattern can match one of its values or commands.
func (c *call) ruleCandidates(ixs *policy.Indexes) policy.Candidates {
	if ixs == nil || ixs.RuleOperations == nil {
		return nil
	}
	var ops policy.Candidates
	if c.tool != nil {
		ops = c.cloneSet(c.tool.ruleOps)
	} else {
		ops = markNames(ixs.RuleOperations, c.sub.Names)
	}
	vals := c.newSet(ixs.RuleValues.Len())
	ixs.RuleValues.Always(vals)
	c.markCommands(ixs.RuleValues, vals)
	or(vals, c.valueCandidates(ixs, policy.ListRuleValues))
	for i := range ops {
		ops[i] &= vals[i]
	}
	return ops
}

func describeValue(v *Value) string {
	switch {
	case v.Key:
		return "a key in argument " + strconv.Quote(v.Path)
	case v.Derived:
		return "argument " + strconv.Quote(v.Path) + " (in canonical form)"
	}
	return "argument " + strconv.Quote(v.Path)
}

type match struct {
	action  policy.Action
	source  string // Directive.Matched: the pattern or rule as configured
	display string // source, quoted when it is a bare glob
	subject string // what matched, for the factor
	// why replaces the generic reason (a possible deny, an unresolved
	// shell command).
	why           string
	argumentBound bool
	// layer is the configuration layer of what matched ("" for what
	// the guard itself asks about: a shell line it cannot resolve).
	layer string
}

func (m match) factor() string {
	f := "pattern: " + string(m.action) + " " + m.display + " matched " + m.subject
	if m.why != "" {
		f = "pattern: " + m.why
	}
	return f
}

func patternMatch(a policy.Action, pat policy.Pattern, h hit) match {
	return match{action: a, source: pat.Source, display: pat.Quoted(), subject: h.what, argumentBound: h.argumentBound,
		layer: pat.Layer().String()}
}

func ruleMatch(r *policy.Rule, h hit) match {
	return match{action: r.Action, source: r.Source, display: r.Source, subject: h.what, argumentBound: true,
		layer: r.Layer.String()}
}

// matchPatterns resolves stage 3: any deny (pattern or rule) beats any
// requires_approval, which beats any auto_approve. A deny that only
// possibly matches, and a shell command that cannot be resolved
// statically, ask a human (requires_approval): never allowed, never a
// block on a guess.
func (c *call) matchPatterns(p *policy.Policy) (match, bool) {
	var maybe *match // the first deny or refuse that possibly matches
	noteMaybe := func(m match) {
		if maybe == nil {
			m.why = string(m.action) + " " + m.display + " could match " + m.subject + " once its variable parts are known"
			m.action = policy.ActionRequiresApproval
			maybe = &m
		}
	}
	// The indexes narrow each list to its candidates; they are checked
	// in list order, so the first match is the one a full scan finds.
	// Each list's candidates are found when the scan reaches it: a call
	// that a deny pattern stops pays for the deny list alone.
	ixs := p.Indexes()
	var denyC, refuseC, approveC, autoC, ruleC policy.Candidates
	var byNames toolFacts // zero without a memo: candidates marks the names itself
	if c.tool != nil {
		byNames = *c.tool
	}
	if ixs != nil {
		denyC = c.candidates(ixs, ixs.Deny, policy.ListDeny, byNames.deny, true)
	}
	for i := nextCandidate(denyC, 0, len(p.Deny)); i < len(p.Deny); i = nextCandidate(denyC, i+1, len(p.Deny)) {
		pat := p.Deny[i]
		switch h := c.restrictive(pat); h.certainty {
		case definite:
			return patternMatch(policy.ActionDeny, pat, h), true
		case possible:
			noteMaybe(patternMatch(policy.ActionDeny, pat, h))
		}
	}
	// Interpreter code (python -c in a shell argument): a deny of it
	// blocks after the deny patterns and rules, a refuse refuses after
	// the refuse patterns and rules, an ask asks where an unresolved
	// command does.
	var code match
	hasCode := false
	if len(c.shell) > 0 {
		code, hasCode = c.shell.code(p)
	}
	var refuse, approve, auto *match
	if ixs != nil {
		ruleC = c.ruleCandidates(ixs)
	}
	for i := nextCandidate(ruleC, 0, len(p.Rules)); i < len(p.Rules); i = nextCandidate(ruleC, i+1, len(p.Rules)) {
		r := &p.Rules[i]
		if !c.ruleApplies(i, r) {
			continue
		}
		switch r.Action {
		case policy.ActionDeny:
			switch h := c.ruleRestricts(r); h.certainty {
			case definite:
				return ruleMatch(r, h), true
			case possible:
				noteMaybe(ruleMatch(r, h))
			}
		case policy.ActionRefuse:
			if refuse == nil {
				switch h := c.ruleRestricts(r); h.certainty {
				case definite:
					m := ruleMatch(r, h)
					refuse = &m
				case possible:
					noteMaybe(ruleMatch(r, h))
				}
			}
		case policy.ActionRequiresApproval:
			if approve == nil {
				if h := c.ruleRestricts(r); h.certainty != noMatch {
					m := ruleMatch(r, h)
					approve = &m
				}
			}
		case policy.ActionAutoApprove:
			if auto == nil {
				if h := c.ruleApproves(r); h.certainty == definite {
					m := ruleMatch(r, h)
					auto = &m
				}
			}
		}
	}
	if hasCode && code.action == policy.ActionDeny {
		return code, true
	}
	if ixs != nil {
		refuseC = c.candidates(ixs, ixs.Refuse, policy.ListRefuse, byNames.refuse, true)
	}
	for i := nextCandidate(refuseC, 0, len(p.Refuse)); i < len(p.Refuse); i = nextCandidate(refuseC, i+1, len(p.Refuse)) {
		pat := p.Refuse[i]
		switch h := c.restrictive(pat); h.certainty {
		case definite:
			return patternMatch(policy.ActionRefuse, pat, h), true
		case possible:
			noteMaybe(patternMatch(policy.ActionRefuse, pat, h))
		}
	}
	if refuse != nil {
		return *refuse, true
	}
	if hasCode && code.action == policy.ActionRefuse {
		return code, true
	}
	// Where data goes, before any ask of a pattern: the human is told
	// why this call is different from the tool's other calls.
	if m, ok := c.judgeFlow(p); ok {
		return m, true
	}
	if ixs != nil {
		approveC = c.candidates(ixs, ixs.RequiresApproval, policy.ListRequiresApproval, byNames.approve, true)
	}
	for i := nextCandidate(approveC, 0, len(p.RequiresApproval)); i < len(p.RequiresApproval); i = nextCandidate(approveC, i+1, len(p.RequiresApproval)) {
		pat := p.RequiresApproval[i]
		if h := c.restrictive(pat); h.certainty != noMatch {
			m := patternMatch(policy.ActionRequiresApproval, pat, h)
			// An approval of the tool as such may stand for this match
			// only if nothing about the arguments asks as well.
			if !m.argumentBound {
				m.argumentBound = approve != nil || maybe != nil || c.shell.anyUnresolved() || hasCode ||
					c.textMatchesAny(p.RequiresApproval, i+1, approveC)
			}
			return m, true
		}
	}
	if approve != nil {
		return *approve, true
	}
	if maybe != nil {
		return *maybe, true
	}
	if m, ok := c.shell.unresolved(); ok {
		return m, true
	}
	if hasCode {
		return code, true
	}
	if c.s.Unresolved != "" {
		return match{action: policy.ActionRequiresApproval, source: "unresolved", display: "unresolved",
			subject: "the call", why: c.s.Unresolved + "; a human must look at it", argumentBound: true}, true
	}
	if m, ok := c.judgePlaces(p); ok {
		return m, true
	}
	if m, ok := c.judgeURLs(); ok {
		return m, true
	}
	if ixs != nil {
		autoC = c.candidates(ixs, ixs.AutoApprove, -1, byNames.auto, false)
	}
	for i := nextCandidate(autoC, 0, len(p.AutoApprove)); i < len(p.AutoApprove); i = nextCandidate(autoC, i+1, len(p.AutoApprove)) {
		pat := p.AutoApprove[i]
		if h := c.approves(pat); h.certainty == definite {
			return patternMatch(policy.ActionAutoApprove, pat, h), true
		}
	}
	if auto != nil {
		return *auto, true
	}
	return match{}, false
}
