package proxy

import (
	"strings"

	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/catalog"
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
	// Flow is what the tool is to a session's flows: "private source",
	// "untrusted source", "exit", joined by ", "; "-" for none
	// (FlowRole).
	Flow string
}

// FlowRole says what a tool is to a session's flows, and from where:
// its results private data or untrusted content, its calls an exit
// (its effects, its profile, [flows]).
func FlowRole(p *policy.Policy, op *catalog.Operation) string {
	role := p.Flows.FlowRoleOf(policy.NameForms(op.Name, op.Server, op.Tool.Name))
	var out []string
	switch {
	case role.Private:
		out = append(out, "private source ([flows])")
	case op.Model.Private:
		out = append(out, "private source (the "+op.Model.Profile+" profile)")
	}
	send := op.Model.Effects.Has(policy.EffectSend)
	switch {
	case role.Untrusted:
		out = append(out, "untrusted source ([flows])")
	case op.Model.Untrusted:
		out = append(out, "untrusted source (the "+op.Model.Profile+" profile)")
	case send:
		out = append(out, "untrusted source (it sends: what it fetches comes from outside)")
	}
	switch {
	case send:
		out = append(out, "exit (it sends)")
	case role.Exit:
		out = append(out, "exit ([flows])")
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}

// Explain evaluates every downstream operation of cat under p, as the
// first step of a session.
func Explain(p *policy.Policy, cat *catalog.Catalog) []Explanation {
	var out []Explanation
	for _, op := range cat.Downstream() {
		s := evaluator.Step{Principal: p.Principal, Operation: op.Name, Server: op.Server, Tool: op.Tool.Name,
			Category: op.Category, Annotations: toolAnnotations(op.Tool.Annotations), StepNumber: 1,
			Effects: op.Model.Effects, EffectSource: op.Model.Source, EffectWhy: op.Model.Why, Roles: op.Model.Roles, Modeled: true,
			Confined: op.Model.Confined}
		e := Explanation{Operation: op.Name, Server: op.Server, Tool: op.Tool.Name, Category: op.Category,
			ClassifiedBy: op.ClassifiedBy, Model: op.Model, Directive: evaluator.Evaluate(p, s), Flow: FlowRole(p, op)}
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
