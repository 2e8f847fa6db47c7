package evaluator

import "github.com/aqlguard/aqlguard/policy"

// Commands lists, for a person, what the shell arguments of step would
// run (the same reading the policy's command patterns get: policy/shell),
// one command a line, each once, and what could not be read statically.
// At most max lines; the question a human answers shows them before the
// arguments, so that the curl | bash at the end of a long script is seen
// first.
func Commands(p *policy.Policy, s Step, max int) []string {
	var out []string
	seen := map[string]bool{}
	add := func(line string) bool {
		if seen[line] {
			return true
		}
		if len(out) == max {
			return false
		}
		seen[line] = true
		out = append(out, line)
		return true
	}
	for _, sv := range analyzeShellArgs(p, SubjectsOf(p, s)) {
		for _, c := range sv.script.Commands {
			if !add(c.String()) {
				return out
			}
		}
		for _, c := range sv.script.Code {
			if !add("(code handed to " + c.Interpreter + ", which aqlguard does not read: " + c.String() + ")") {
				return out
			}
		}
		for _, u := range sv.script.Unresolved {
			if !add("(unknown until it runs: " + u + ")") {
				return out
			}
		}
	}
	return out
}
