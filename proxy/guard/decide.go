package guard

import (
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/ruling"
)

// What the guard decides is proxy/ruling's: pure functions of what a
// commit read and what the request asks, tested by tables. A commit of
// the guard reads, calls its ruling and writes what the ruling says.

// call is what the rulings know of a (ruling.Call).
func (a Action) call() ruling.Call {
	op := a.Operation
	if a.reported() {
		op = "" // a reported step is described by its hint alone
	}
	return ruling.Call{Session: a.Session, Server: a.Server, Tool: a.Tool, Operation: a.Operation, Digest: a.argsDigest(),
		Reported: a.reported(), SharedSession: a.SharedSession, Outcome: a.Outcome,
		Step: evaluator.Step{
			Session: a.Session, Operation: op,
			Server: a.Server, Tool: a.Tool, Category: a.Category, ManagedCategory: a.ManagedCategory, Annotations: a.Annotations,
			Arguments: a.Arguments, ActionHint: a.Hint,
			Roles: a.Roles, Modeled: a.Modeled, Effects: a.Effects, EffectSource: a.EffectSource, EffectWhy: a.EffectWhy,
			Places: a.Places, Roots: a.Roots, RootsKnown: a.RootsKnown, RootsOf: a.RootsOf, Home: a.Home, Confined: a.Confined,
			Unresolved: a.Unresolved, Flow: a.Flow,
		}}
}
