package hook

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/policy/shell"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/store"
)

// Judge decides hook events with the guard: the decision is the
// guard's own (guard.CheckHook), on an Action made as the front makes
// one for an MCP tool.
type Judge struct {
	Guard *guard.Guard
	// Wrapped reports whether the MCP tool of e belongs to a server the
	// client runs behind aqlguard wrap (the proxy judges its calls); nil:
	// none is.
	Wrapped func(e Event) bool
	// Voice is how a refusal addresses the model.
	Voice proxy.Voice
	// Home is the user's home directory ("~" in a path).
	Home string
}

// Decide is the answer to e. It returns an error only when nothing could
// be decided (the state could not record that a wrapped server's call was
// left to the proxy); the guard's own failures are its refusals.
func (j *Judge) Decide(ctx context.Context, c Client, e Event) (Answer, error) {
	if e.Kind == KindMCP && j.Wrapped != nil && j.Wrapped(e) {
		return j.leaveToProxy(ctx, e)
	}
	a := j.action(e)
	v := j.Guard.CheckHook(ctx, a, c.Asks(e))
	switch {
	case v.Proceed:
		return Answer{Decision: Allow}, nil
	case v.ClientAsks && v.Directive.Stage == evaluator.StageTolerance && c.Defers(e):
		return Answer{Decision: Defer, Reason: "aqlguard asks you to confirm: " + v.Directive.Reason}, nil
	case v.ClientAsks:
		return Answer{Decision: Ask, Reason: "aqlguard asks you to confirm: " + v.Directive.Reason}, nil
	case v.Refusal != nil:
		return Answer{Decision: Deny, Reason: "aqlguard: " + proxy.RefusalText(v.Refusal, j.Voice)}, nil
	}
	return Answer{Decision: Deny, Reason: "aqlguard refused this call: " + v.Directive.Reason}, nil
}

// leaveToProxy answers allow for a call of a server aqlguard wraps, which
// its own aqlguard judges when the client sends it, and records that in
// the audit log. A record that cannot be written fails closed.
func (j *Judge) leaveToProxy(ctx context.Context, e Event) (Answer, error) {
	g := j.Guard
	pol := g.CurrentPolicy()
	rec := store.NewRecord(time.Now(), store.KindDecision, pol.Principal, g.Process, e.Session)
	rec.Server, rec.Tool, rec.Operation = policy.ServerNameFrom(e.Server), e.ServerTool, e.Tool
	rec.Decision, rec.Result = "allow", "left_to_proxy"
	rec.Factors = []string{"hook: " + e.Client + "'s " + e.Name + " for an MCP tool of " + e.Server +
		", which aqlguard wraps: the proxy judges the call when the client sends it"}
	if err := store.AppendRecords(ctx, g.State, rec); err != nil {
		return Answer{}, fmt.Errorf("recording that %s's call is left to the proxy: %w", e.Server, err)
	}
	return Answer{Decision: Allow}, nil
}

// Servers under which a client's own tools are judged: the client's id
// made a server name ("claudecode", "cursor", "gemini"), so a rule can
// name them (claudecode.Bash) and never another server's.
func serverOf(e Event) string { return policy.ServerNameFrom(e.Client) }

// action is e as the guard's Action: its effects, the roles of its
// arguments and its paths read against the project's roots, as the
// front reads an MCP tool's.
func (j *Judge) action(e Event) guard.Action {
	server, tool := serverOf(e), e.Tool
	if e.Kind == KindMCP {
		server, tool = policy.ServerNameFrom(e.Server), e.ServerTool
	}
	if server == "" {
		server = "mcp"
	}
	a := guard.Action{Session: e.Session, Server: server, Tool: tool, Operation: server + "_" + policy.SnakeName(tool),
		Arguments: e.Input, Client: e.Client, Modeled: true, Roles: e.Roles}
	switch e.Kind {
	case KindShell:
		a.Category, a.Effects, a.EffectSource = policy.Execute, policy.Effects(policy.EffectExecute), policy.SourceProfile
		a.EffectWhy = "runs a shell command (" + e.Client + "'s " + e.Tool + " tool)"
	case KindWrite:
		a.Category, a.Effects, a.EffectSource = policy.Update, policy.Effects(policy.EffectWrite), policy.SourceProfile
		a.EffectWhy = "writes a file (" + e.Client + "'s " + e.Tool + " tool)"
	case KindRead:
		a.Category, a.Effects, a.EffectSource = policy.Read, policy.Effects(policy.EffectRead), policy.SourceProfile
		a.EffectWhy = "reads a file (" + e.Client + "'s " + e.Tool + " tool)"
	default:
		// Nothing but its name tells: the effects are a guess from it (or
		// unknown), as for an MCP tool no profile or schema describes.
		m := effects.Resolve(effects.Definition{Name: tool}, effects.Config{})
		a.Category, a.Effects, a.EffectSource, a.EffectWhy = policy.Execute, m.Effects, m.Source, m.Why
		a.Roles = m.Roles
	}
	j.readPlaces(&a, e)
	return a
}

// readPlaces fills the action's places and the project's roots: each
// value in a path role made one clean absolute place in the hook's
// working directory, its links followed (proxy.ResolvePlace), as the
// front does for a server's path arguments.
func (j *Judge) readPlaces(a *guard.Action, e Event) {
	a.Home = j.Home
	var roots []string
	for _, r := range e.Roots {
		if filepath.IsAbs(r) {
			roots = append(roots, filepath.Clean(r))
		}
	}
	if len(roots) == 0 && e.Cwd != "" && filepath.IsAbs(e.Cwd) {
		roots = append(roots, filepath.Clean(e.Cwd))
	}
	a.Roots, a.RootsKnown = proxy.ResolveRoots(roots), len(roots) > 0
	a.RootsOf = "the project" // a client's own tool has no server whose roots these are
	values := evaluator.PathValues(j.Guard.CurrentPolicy(), evaluator.Step{Operation: a.Operation, Server: a.Server,
		Tool: a.Tool, Category: a.Category, Arguments: a.Arguments, Roles: a.Roles, Modeled: a.Modeled,
		Effects: a.Effects, EffectSource: a.EffectSource})
	cwd := e.Cwd
	if !filepath.IsAbs(cwd) && len(roots) > 0 {
		cwd = roots[0]
	}
	if e.Kind == KindShell {
		values = append(values, commandPaths(a.Arguments, a.Roles, j.Home)...)
	}
	for _, v := range values {
		lex := paths.Canonical(v.Raw, j.Home, cwd)
		a.Places = append(a.Places, evaluator.Place{Arg: v.Arg, Lexical: lex, Resolved: proxy.ResolvePlace(lex)})
	}
}

// commandPaths are the words of a shell command that name files, as
// places to judge: every static operand, and the value of every
// --option=value, that holds a "/" or starts with "~" or ".". A client's
// own shell tool is otherwise judged only as "runs a command", which the
// client may be left to confirm (Defer): `cat ~/.ssh/id_rsa` must meet
// the same place question as a Read of the same file. A word that is no
// path (a URL, a sed expression, a message) reads as a relative place
// inside the project, which asks nothing; a URL is left out.
//
// $HOME and ${HOME} are read as the home directory they name (the
// analyser sees any variable as unknown): "$HOME/.ssh/id_rsa" is the key.
func commandPaths(args map[string]any, roles map[string]policy.Role, home string) []evaluator.PathValue {
	var out []evaluator.PathValue
	for arg, role := range roles {
		line, ok := args[arg].(string)
		if role != policy.RoleCommand || !ok {
			continue
		}
		if home != "" && !strings.ContainsAny(home, "$`\"'\\ \t\n") {
			line = homeVar.ReplaceAllLiteralString(line, home)
		}
		for _, c := range shell.Analyze(line).Commands {
			for _, w := range c.Args {
				text := w.Text
				if w.Kind == shell.Long {
					_, v, ok := strings.Cut(text, "=")
					if !ok {
						continue
					}
					text = v
				} else if w.Kind != shell.Operand {
					continue
				}
				if w.Dynamic {
					text = staticPrefix(text)
				}
				if text == "" || strings.Contains(text, "://") {
					continue // nothing known, or a URL (the places judge files)
				}
				if strings.ContainsRune(text, '/') || text[0] == '~' || text[0] == '.' {
					out = append(out, evaluator.PathValue{Arg: arg, Raw: text})
				}
			}
		}
	}
	return out
}

// homeVar is $HOME or ${HOME}, not $HOMEDIR.
var homeVar = regexp.MustCompile(`\$\{HOME\}|\$HOME\b`)

// staticPrefix is what a word the shell expands says of the place it
// names: the directory of the part before the first expansion
// ("~/.ssh/*" is in ~/.ssh), "" when that part names no directory.
func staticPrefix(word string) string {
	if i := strings.IndexAny(word, "$`*?[{"); i >= 0 {
		word = word[:i]
	}
	if i := strings.LastIndexByte(word, '/'); i > 0 {
		return word[:i]
	}
	return ""
}
