package evaluator

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy"
)

// roles decides the role of a call's arguments: what the policy declares
// ([servers.arguments], shell_arguments), else the tool's effect model
// (Step.Roles of a Modeled step: every declared argument, nested ones
// by their path; an argument the tool does not declare has no role),
// else, for a step without a model, what the schema says (Step.Roles,
// top level only) and then what the argument's own name says
// (policy.RoleByConvention). A value below an argument that has a role
// keeps it; below one that has none, its own may give one.
type roles struct {
	p     *policy.Policy
	s     *Step
	names policy.CallNames
}

func newRoles(p *policy.Policy, s *Step, names policy.CallNames) roles {
	return roles{p: p, s: s, names: names}
}

// of is the role of the argument named name (SnakeName) at path (""
// for a top-level argument, whose path is its name).
func (r roles) of(name, path string) policy.Role {
	if path == "" {
		path = name
	}
	if role, ok := r.declared(path); ok {
		return role
	}
	if r.s.Modeled {
		return r.s.Roles[path] // RoleOther when the tool does not declare it
	}
	if path == name {
		if role, ok := r.s.Roles[name]; ok {
			return role
		}
	}
	return policy.RoleByConvention(name)
}

// declaredAt reports whether the policy declares the role at path.
func (r roles) declaredAt(path string) bool {
	_, ok := r.declared(path)
	return ok
}

// declared is the role the policy declares for the argument at path:
// [servers.arguments] of the call's server, else command for
// shell_arguments.
func (r roles) declared(path string) (policy.Role, bool) {
	if r.p == nil || len(r.p.ArgumentRoles) == 0 && len(r.p.ShellArguments) == 0 {
		return 0, false
	}
	parts := strings.Split(path, ".")
	for _, spec := range r.p.ArgumentRoles {
		if spec.Server == r.s.Server && spec.Spec.AppliesTo(r.names, parts) {
			return spec.Role, true
		}
	}
	for _, spec := range r.p.ShellArguments {
		if spec.AppliesTo(r.names, parts) {
			return policy.RoleCommand, true
		}
	}
	return 0, false
}
