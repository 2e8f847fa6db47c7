package evaluator

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/shell"
)

// guessedShell reports whether a parameter's name says its value is a
// shell command line, treated as one when it parses as one without
// being declared in shell_arguments.
func guessedShell(name string) bool {
	switch name {
	case "command", "cmd", "script", "shell", "cmdline", "command_line", "shell_command", "bash_command":
		return true
	}
	return false
}

// shellValue is one argument value that carries a shell command line.
type shellValue struct {
	path   string
	script *shell.Script
}

// shellArgs are the shell command lines among a call's arguments, each
// parsed once (policy/shell).
type shellArgs []shellValue

// argvSiblings name the argument that holds a command's arguments when
// another holds its name ({"command": "rm", "args": ["-rf", "/"]}).
var argvSiblings = []string{"args", "arguments", "argv", "params"}

func analyzeShellArgs(p *policy.Policy, sub Subjects) shellArgs {
	var out shellArgs
	done := map[string]bool{}
	for i := range sub.Values {
		v := &sub.Values[i]
		if v.Key || !v.String || done[v.Path] {
			continue
		}
		// A command role comes from the policy (shell_arguments,
		// [servers.arguments]), the tool's schema or the argument's name
		// (policy.RoleByConvention); a few more names are guessed.
		declared := v.Role == policy.RoleCommand
		last := v.Path[strings.LastIndexByte(v.Path, '.')+1:]
		if !declared && !guessedShell(last) {
			continue
		}
		line := v.Raw
		if v.Element {
			// An argv list: the command and its arguments, one per
			// element, as a shell would receive them quoted.
			line = argvLine(sub.Values, v.Path)
			done[v.Path] = true
		} else if argv := siblingArgv(sub.Values, v.Path); argv != "" {
			line += " " + argv
		}
		if line == "" {
			continue
		}
		sc := scripts.analyze(line)
		// A value that runs nothing (a comment, an assignment) is text. One
		// that does not parse is a shell value all the same, unresolved: a
		// shell runs the commands before the line it cannot parse
		// (`rm -r -f /` and then a stray quote), so it is never read as
		// plain text, whose patterns it would slip past.
		if !declared && len(sc.Commands) == 0 && len(sc.Unresolved) == 0 && len(sc.Code) == 0 {
			continue
		}
		out = append(out, shellValue{path: v.Path, script: sc})
	}
	return out
}

// Limits of the script memo.
const (
	maxMemoScripts = 1024
	maxMemoLine    = 512 // bytes; longer lines are analysed every time
	maxMemoWords   = 64  // commands and arguments of a Script kept
)

// scriptMemo remembers the analysis of recent command lines: an agent
// runs the same few commands again and again (git status, go test ./...)
// and shell.Analyze is a pure function of the line, so its result is
// shared. The memo holds at most maxMemoScripts lines of at most
// maxMemoLine bytes whose Scripts have at most maxMemoWords words (a
// model choosing its lines to fill the memo gets a few MB at most), and
// is emptied when full: simpler to get right than an LRU, and a memo
// that fills up is one whose lines do not repeat.
type scriptMemo struct {
	lines atomic.Pointer[sync.Map] // line → *shell.Script
	n     atomic.Int64             // lines stored in the current map
}

var scripts scriptMemo

func (m *scriptMemo) analyze(line string) *shell.Script {
	if len(line) > maxMemoLine {
		return shell.Analyze(line)
	}
	lines := m.lines.Load()
	if lines != nil {
		if sc, ok := lines.Load(line); ok {
			return sc.(*shell.Script)
		}
	}
	sc := shell.Analyze(line)
	if scriptWords(sc) > maxMemoWords {
		return sc
	}
	if lines == nil || m.n.Add(1) > maxMemoScripts {
		lines = new(sync.Map)
		m.lines.Store(lines)
		m.n.Store(1)
	}
	lines.Store(strings.Clone(line), sc)
	return sc
}

// scriptWords counts a Script's commands, their arguments and wrappers, and
// what it leaves unresolved: a measure of the memory it holds.
func scriptWords(sc *shell.Script) int {
	n := len(sc.Unresolved) + len(sc.Code)
	for _, c := range sc.Commands {
		n += 1 + len(c.Args) + len(c.Via)
	}
	return n
}

// argvLine joins the string elements at path into one command line,
// each quoted, so that the parser sees exactly those words.
func argvLine(values []Value, path string) string {
	var words []string
	for i := range values {
		if v := &values[i]; v.Path == path && v.Element && !v.Key {
			words = append(words, shellQuote(v.Raw))
		}
	}
	return strings.Join(words, " ")
}

// siblingArgv finds an argv list beside a command name and returns it
// quoted, or "".
func siblingArgv(values []Value, path string) string {
	parent := ""
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent = path[:i]
	}
	for _, name := range argvSiblings {
		p := name
		if parent != "" {
			p = parent + "." + name
		}
		if line := argvLine(values, p); line != "" {
			return line
		}
	}
	return ""
}

// shellQuote quotes s as one shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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

// code is what interpreter_code makes of the first interpreter code among
// the shell values (python -c, perl -e, a here-document fed to node): a
// match whose action says what happens, or none when the policy lets
// code through as the commands around it. Each value of the key is one
// case of the switch.
func (sa shellArgs) code(p *policy.Policy) (match, bool) {
	for _, sv := range sa {
		if len(sv.script.Code) == 0 {
			continue
		}
		setting := p.InterpreterCode
		var action policy.Action
		switch setting {
		case policy.CodeAllow:
			return match{}, false
		case policy.CodeDeny:
			action = policy.ActionDeny
		case policy.CodeRefuse:
			action = policy.ActionRefuse
		default:
			// ask, and a policy that does not say (built in Go): a
			// human looks at what the guard cannot read.
			setting, action = policy.CodeAsk, policy.ActionRequiresApproval
		}
		c := sv.script.Code[0]
		where := "argument " + strconv.Quote(sv.path)
		what := "`" + c.String() + "`"
		if len(sv.script.Code) > 1 {
			what += " (and " + strconv.Itoa(len(sv.script.Code)-1) + " more)"
		}
		source := "interpreter_code = " + strconv.Quote(string(setting))
		why := "the shell command in " + where + " hands code to " + c.Interpreter + ": " + what +
			"; the guard does not read interpreter code, and " + source + " says "
		switch action {
		case policy.ActionDeny:
			why += "to block it"
		case policy.ActionRefuse:
			why += "to refuse it"
		default:
			why += "a human must look at it"
		}
		return match{action: action, source: source, display: source + " (" + c.Interpreter + " " + c.Form + " in " + where + ")",
			subject: where, why: why, argumentBound: true, layer: p.SettingLayers.InterpreterCode.String()}, true
	}
	return match{}, false
}
