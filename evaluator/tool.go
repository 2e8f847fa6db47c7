package evaluator

import (
	"strconv"

	"github.com/aqlguard/aqlguard/policy"
)

// toolFacts are what a call's names alone decide, worked out once per
// tool and policy (policy.ToolMemo) instead of at every call: the names'
// folded forms, each pattern list's candidates by name (with the
// patterns that have no literal), and which argument rules' operation
// patterns match. A decision then matches only what depends on the
// arguments. The result is the same either way (FuzzIndexedEvaluate).
type toolFacts struct {
	names policy.CallNames
	// namesSaid are the names as a factor names them (nameSaid).
	namesSaid []string
	// deny, approve, auto, ruleOps and risk are nil where the list has no
	// index (it is scanned in full).
	deny, refuse, approve, auto, ruleOps, risk policy.Candidates
	ruleApplies                                []bool
	// riskNames is, for each risk rule, the first name its pattern
	// matches (firstName), or -1.
	riskNames []int
	// nameRisk is what the risk stage's naming conventions say of the
	// names (safe, dangerous, forbidden).
	nameRisk nameRisk
}

// factsFor returns the memoised facts of s's tool under p, or nil when p
// keeps no memo (a policy Compile did not build, or WithoutIndexes).
func factsFor(p *policy.Policy, s *Step) *toolFacts {
	if p == nil || p.Indexes() == nil || p.Indexes().Tools == nil {
		return nil
	}
	ixs := p.Indexes()
	if v, ok := ixs.Tools.Load(s.Operation, s.Server, s.Tool); ok {
		return v.(*toolFacts)
	}
	f := &toolFacts{names: namesOf(*s), nameRisk: nameRiskOf(s)}
	for _, n := range f.names.Forms {
		f.namesSaid = append(f.namesSaid, sayName(n))
	}
	mark := func(ix *policy.PatternIndex) policy.Candidates {
		if ix == nil {
			return nil
		}
		return markNames(ix, f.names)
	}
	f.deny, f.refuse, f.approve, f.auto, f.ruleOps = mark(ixs.Deny), mark(ixs.Refuse), mark(ixs.RequiresApproval), mark(ixs.AutoApprove), mark(ixs.RuleOperations)
	f.risk = mark(ixs.RiskRules)
	f.riskNames = make([]int, len(p.RiskRules))
	for i := range p.RiskRules {
		f.riskNames[i] = firstName(p.RiskRules[i].Pattern, f.names)
	}
	f.ruleApplies = make([]bool, len(p.Rules))
	for i := range p.Rules {
		f.ruleApplies[i] = p.Rules[i].AppliesTo(f.names)
	}
	return ixs.Tools.Store(s.Operation, s.Server, s.Tool, f).(*toolFacts)
}

// markNames are ix's candidates for names: the patterns without a
// literal, and those whose literal occurs in one of the names.
func markNames(ix *policy.PatternIndex, names policy.CallNames) policy.Candidates {
	set := policy.NewCandidates(ix.Len())
	ix.Always(set)
	for _, n := range names.Forms {
		ix.Mark(n, set)
	}
	return set
}

// ruleApplies reports whether rule i's operation pattern matches the
// call's names.
func (c *call) ruleApplies(i int, r *policy.Rule) bool {
	if c.tool != nil {
		return c.tool.ruleApplies[i]
	}
	return r.AppliesTo(c.sub.Names)
}

// nameSaid is the call's i-th name as a factor names it.
func (c *call) nameSaid(i int) string {
	if c.tool != nil {
		return c.tool.namesSaid[i]
	}
	return sayName(c.sub.Names.Forms[i])
}

func sayName(n string) string { return "the name " + strconv.Quote(n) }

// namesOr are the memoised names, or s's own without a memo.
func (f *toolFacts) namesOr(s *Step) policy.CallNames {
	if f != nil {
		return f.names
	}
	return namesOf(*s)
}
