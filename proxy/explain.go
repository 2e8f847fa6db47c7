package proxy

import (
	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/guard"
)

// Explanation is what the policy does with one tool called with no
// arguments (aqlguard policy explain): what it does (its effects, and
// where the guard has them from), its category and where it came from,
// its risk and tier, what decides, and the outcome. ArgumentRules
// are the argument rules whose operation covers the tool: they may change
// the outcome for some arguments.
type Explanation struct {
	Operation, Server, Tool string
	Category                policy.Category
	ClassifiedBy            string
	// Model is what the tool does (its effects and where they come from).
	Model         effects.Model
	Directive     evaluator.Directive
	ArgumentRules []string
}

// Explain evaluates every downstream operation of cat under p, as the
// first step of a session.
func Explain(p *policy.Policy, cat *catalog.Catalog) []Explanation {
	var out []Explanation
	for _, op := range cat.Downstream() {
		s := evaluator.Step{Principal: p.Principal, Operation: op.Name, Server: op.Server, Tool: op.Tool.Name,
			Category: op.Category, Annotations: guard.Annotations(op.Tool.Annotations), StepNumber: 1,
			Effects: op.Model.Effects, EffectSource: op.Model.Source, EffectWhy: op.Model.Why, Roles: op.Model.Roles, Modeled: true,
			Confined: op.Model.Confined}
		e := Explanation{Operation: op.Name, Server: op.Server, Tool: op.Tool.Name, Category: op.Category,
			ClassifiedBy: op.ClassifiedBy, Model: op.Model, Directive: evaluator.Evaluate(p, s)}
		names := policy.NameForms(op.Name, op.Server, op.Tool.Name)
		for _, r := range p.Rules {
			if r.AppliesTo(names) {
				e.ArgumentRules = append(e.ArgumentRules, string(r.Action)+" "+r.Source)
			}
		}
		out = append(out, e)
	}
	return out
}
