package evaluator

import (
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/shell"
)

// guessedShell are parameter names whose values are treated as shell
// command lines when they parse as one, without being declared in
// shell_arguments.
var guessedShell = map[string]bool{"command": true, "cmd": true, "script": true, "shell": true, "cmdline": true,
	"command_line": true, "shell_command": true, "bash_command": true}

// shellValue is one argument value that carries a shell command line.
type shellValue struct {
	path   string
	script *shell.Script
}

// shellArgs are the shell command lines among a call's arguments, each
// parsed once (policy/shell).
type shellArgs []shellValue

func analyzeShellArgs(p *policy.Policy, sub Subjects) shellArgs {
	var out shellArgs
	for i := range sub.Values {
		v := &sub.Values[i]
		if v.Key || !v.String || v.Raw == "" {
			continue
		}
		path := strings.Split(v.Path, ".")
		declared := false
		if p != nil {
			for _, spec := range p.ShellArguments {
				if spec.AppliesTo(sub.Names, path) {
					declared = true
					break
				}
			}
		}
		if !declared && !(guessedShell[path[len(path)-1]] && shell.LooksLikeShell(v.Raw)) {
			continue
		}
		out = append(out, shellValue{path: v.Path, script: shell.Analyze(v.Raw)})
	}
	return out
}

func (sv shellValue) under(path string) bool {
	return path == "" || sv.path == path || strings.HasPrefix(sv.path, path+".")
}

// match matches a restrictive pattern's command form against every
// command of the shell values at or below path ("" for all).
func (sa shellArgs) match(pat policy.Pattern, path string) hit {
	cp := pat.Command()
	if cp == nil {
		return hit{}
	}
	var maybe hit
	for _, sv := range sa {
		if !sv.under(path) {
			continue
		}
		for _, c := range sv.script.Commands {
			switch cp.Match(c) {
			case shell.Definite:
				return hit{"the command `" + c.String() + "` in argument " + strconv.Quote(sv.path), true, definite}
			case shell.Possible:
				if maybe.certainty == noMatch {
					maybe = hit{"the command `" + c.String() + "` in argument " + strconv.Quote(sv.path), true, possible}
				}
			}
		}
	}
	return maybe
}

// approves reports whether an auto_approve rule's pattern covers every
// shell value at or below path: resolved statically, and every command
// approved exactly (or, for a pattern not shaped like a command, a
// single command whose text the value match already approved).
func (sa shellArgs) approves(pat policy.Pattern, path string) bool {
	cp := pat.Command()
	for _, sv := range sa {
		if !sv.under(path) {
			continue
		}
		if len(sv.script.Unresolved) > 0 {
			return false
		}
		if cp == nil {
			if len(sv.script.Commands) > 1 {
				return false
			}
			continue
		}
		for _, c := range sv.script.Commands {
			if cp.MatchExact(c) != shell.Definite {
				return false
			}
		}
	}
	return true
}

// unresolved is the requires_approval match of the first shell value
// that cannot be resolved statically.
func (sa shellArgs) unresolved() (match, bool) {
	for _, sv := range sa {
		if len(sv.script.Unresolved) > 0 {
			why := "the shell command in argument " + strconv.Quote(sv.path) + " cannot be resolved statically (" +
				strings.Join(sv.script.Unresolved, "; ") + "); a human must look at it"
			return match{action: policy.ActionRequiresApproval, source: "shell: unresolved", display: "shell: unresolved",
				subject: "argument " + strconv.Quote(sv.path), why: why, argumentBound: true}, true
		}
	}
	return match{}, false
}

func (sa shellArgs) anyUnresolved() bool {
	for _, sv := range sa {
		if len(sv.script.Unresolved) > 0 {
			return true
		}
	}
	return false
}
