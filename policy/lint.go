package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// Tool is what Lint knows of a downstream tool: its names and the
// arguments its schema declares (top level, the server's spelling).
type Tool struct {
	Server, Name, Operation string
	Arguments               []string
}

// Lint finds rules that cannot do what they look like they do: patterns
// that can match nothing, auto_approve entries that can approve no tool
// call, argument rules on arguments no tool declares, and risk rules an
// auto_approve shadows. With tools (the configured servers' real tools)
// it checks against them; without, only what the patterns alone show. It
// checks the effective policy of principal (its [agents] table merged),
// the file's own entries; of the shipped rules beneath them, the
// auto_approve entries that shadow the file's risk rules, when the tools
// are known.
// Findings are warnings: the policy still works, just not as written.
func Lint(cfg *config.Config, principal string, tools []Tool) []config.Error {
	l := linter{cfg: cfg, tools: tools, servers: serverNames(cfg)}
	l.serverNames()
	s := cfg.Safety
	l.lists("safety", s.Deny, s.Refuse, s.RequiresApproval, s.AutoApprove, s.Rules, s.RiskRules)
	autos := []keyed{}
	for i, a := range s.AutoApprove {
		autos = append(autos, keyed{index("safety.auto_approve", i), a})
	}
	risks := []keyedRisk{}
	for i, r := range s.RiskRules {
		risks = append(risks, keyedRisk{index("safety.risk_rules", i), r})
	}
	if o, ok := cfg.Agents[principal]; ok {
		k := joinKey("agents", principal)
		l.lists(k, o.Deny, o.Refuse, o.RequiresApproval, o.AutoApprove, o.Rules, o.RiskRules)
		for i, a := range o.AutoApprove {
			autos = append(autos, keyed{index(k+".auto_approve", i), a})
		}
		for i, r := range o.RiskRules {
			risks = append(risks, keyedRisk{index(k+".risk_rules", i), r})
		}
	}
	// The shipped auto_approve entries decide first too (those the file
	// does not write itself): checked against the tools, where the
	// finding names them; the file's own rules are what Lint checks.
	if cfg.InheritsShipped() {
		own := map[string]bool{}
		for _, a := range autos {
			if pat, err := l.compile(a.src); err == nil {
				own[pat.norm] = true
			}
		}
		for i, a := range shipped().Safety.AutoApprove {
			if pat, err := l.compile(a); err == nil && !own[pat.norm] {
				autos = append(autos, keyed{config.ShippedName + " " + index("safety.auto_approve", i), a})
			}
		}
	}
	l.shadows(autos, risks)
	l.waits()
	slices.SortStableFunc(l.out, func(a, b config.Error) int { return a.Line - b.Line })
	return l.out
}

// ClientTimeout is how long most MCP clients wait for a request's
// answer before they give up on it: the TypeScript SDK's default
// (DEFAULT_REQUEST_TIMEOUT_MSEC), which Claude Desktop, the Inspector
// and most clients built on it keep.
const ClientTimeout = 60 * time.Second

// waits warns of a wait for a human longer than most clients wait for
// the call: the client gives up first and sees a transport error where
// aqlguard's pending answer would have said to repeat the call.
func (l *linter) waits() {
	for _, w := range []struct {
		key string
		d   time.Duration
	}{{"verify.timeout", l.cfg.Verify.Timeout.Duration}, {"verify.inline_wait", l.cfg.Verify.InlineWait.Duration}} {
		if w.d >= ClientTimeout {
			l.warn(w.key, "%s is not below the %s most MCP clients wait for a call (the TypeScript SDK's default): "+
				"the client gives up first and sees an error instead of aqlguard's answer that the call waits for a human; "+
				"keep it below your client's timeout (default %s)", w.d, ClientTimeout, config.DefaultVerifyTimeout)
		}
	}
}

type keyed struct{ key, src string }

type keyedRisk struct {
	key string
	r   config.RiskRule
}

type linter struct {
	cfg     *config.Config
	tools   []Tool
	servers map[string]bool
	out     []config.Error
}

// compile compiles a pattern as Compile does: read for the configured
// servers.
func (l *linter) compile(src string) (Pattern, error) {
	pat, err := CompilePattern(src)
	pat.forServers(l.servers)
	return pat, err
}

func index(key string, i int) string { return key + "[" + strconv.Itoa(i) + "]" }

func (l *linter) warn(key, format string, args ...any) {
	e := config.Error{File: l.cfg.Path, Key: key, Msg: "warning: " + fmt.Sprintf(format, args...)}
	for k := key; k != ""; k = parentKey(k) {
		if n, ok := l.cfg.Line(k); ok {
			e.Line = n
			break
		}
	}
	l.out = append(l.out, e)
}

func (l *linter) lists(key string, deny, refuse, approve, auto []string, rules []config.ArgRule, risk []config.RiskRule) {
	for name, list := range map[string][]string{"deny": deny, "refuse": refuse, "requires_approval": approve} {
		for i, src := range list {
			l.namePattern(index(key+"."+name, i), src)
		}
	}
	for i, src := range auto {
		k := index(key+".auto_approve", i)
		pat, err := l.compile(src)
		if err != nil {
			continue
		}
		if pat.Kind&Names == 0 {
			l.warn(k, "%q is a text pattern: auto_approve never matches a tool call by its arguments (the model writes them), so it only approves reported steps; use a name pattern such as \"read_*\", or an auto_approve rule on one argument", src)
			continue
		}
		l.namePattern(k, src)
	}
	for i, r := range rules {
		k := index(key+".rules", i)
		op := r.Operation
		if op == "" {
			op = "*"
		}
		if pat, err := l.compile(op); err == nil && pat.Kind&Names == 0 {
			l.warn(k+".operation", "%q is not a name pattern (it has a space or other characters no name has), so the rule applies to no call", op)
			continue
		}
		l.namePattern(k+".operation", op)
		l.seesContent(k, r)
		if len(r.Roles) == 0 {
			l.argument(k+".argument", op, r.Argument)
		}
	}
	for i, r := range risk {
		k := index(key+".risk_rules", i)
		if r.Argument != "" {
			l.argument(k+".argument", "*", r.Argument)
			continue
		}
		pat, err := l.compile(r.Pattern)
		if err != nil {
			continue
		}
		if pat.Kind == Names && strings.HasPrefix(pat.norm, "*.") && !strings.ContainsAny(pat.norm[2:], "*?[{_") {
			l.warn(k+".pattern", "%q is a name pattern: it matches tools named like it, not file names in arguments; set argument = \"path\" (or the argument's name) to match values", r.Pattern)
			continue
		}
		l.namePattern(k+".pattern", r.Pattern)
	}
}

// seesContent warns about a restrictive rule whose pattern sees what a
// tool writes (content): a file or a message that only mentions the
// words is stopped as if it ran them.
func (l *linter) seesContent(key string, r config.ArgRule) {
	if Action(r.Action) == ActionAutoApprove {
		return
	}
	if slices.Contains(r.Roles, RoleContent.String()) {
		l.warn(key+".roles", "%s %q sees content (what tools write: file contents, message bodies): writing a file that mentions it is stopped as if it ran; leave content out unless that is meant", r.Action, r.Pattern)
		return
	}
	if path, err := ArgumentPath(r.Argument); err == nil && len(r.Roles) == 0 && RoleByConvention(path[len(path)-1]) == RoleContent {
		l.warn(key+".argument", "%s %q on argument %q sees content (what tools write, by its name): writing a file that mentions it is stopped as if it ran", r.Action, r.Pattern, r.Argument)
	}
}

// namePattern warns about a name pattern no name form can match: one that
// starts with '.', or has "..", statically; one that names a server that
// is not configured; one that matches none of the tools, when they are
// known. And about one whose head is a server's name without a
// separator ("fs*"), which reads every name, other servers' included.
func (l *linter) namePattern(key, src string) {
	pat, err := l.compile(src)
	if err != nil || pat.Kind&Names == 0 {
		return
	}
	if pat.Kind == Names && (strings.HasPrefix(pat.norm, ".") || strings.Contains(pat.norm, "..")) {
		l.warn(key, "%q can match no name: operation names, tool names and server.tool never start with '.' or contain \"..\"", src)
		return
	}
	word, next := headWord(pat.norm)
	if pat.reading == readQualified && len(l.cfg.Servers) > 0 && !l.servers[word] {
		l.warn(key, "%q reads as server.tool of a server named %q, and no server has that name: it matches nothing "+
			"(a tool whose own name has a dot is matched as <server>.<its name>, or by a pattern starting with \"*.\")", src, word)
		return
	}
	if pat.reading == readAll && strings.IndexByte("*?[{", next) >= 0 && next != 0 {
		var like []string
		for _, s := range l.cfg.Servers {
			if strings.HasPrefix(s.Name, word) {
				like = append(like, s.Name)
			}
		}
		if len(like) > 0 {
			l.warn(key, "%q starts like the name of server %s but reads every name: it also matches any tool whose own name starts with %q%s; "+
				"write %s.* (or %s_*) for the tools of that server", src, like[0], word, alsoServers(like[1:]), like[0], like[0])
		}
	}
	if l.tools == nil || pat.norm == "*" || pat.Kind&Text != 0 {
		return
	}
	for _, t := range l.tools {
		if pat.MatchesName(NameForms(t.Operation, t.Server, t.Name)) {
			return
		}
	}
	l.warn(key, "%q matches none of the %d tools of the configured servers (it is read against %s)", src, len(l.tools), pat.Reading())
}

func alsoServers(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " and the tools of server(s) " + strings.Join(names, ", ")
}

// serverNames warns about server names that make patterns ambiguous to
// a reader: a name that is a word of the naming vocabulary ("search":
// "search_*" means tools whose own name starts with search_, never this
// server's operations), and, with the tools known, a server's name at
// the head of another server's tool names ("fs" and a tool
// other.fs_sync, which "fs_*" and "fs.*" do not match).
func (l *linter) serverNames() {
	for i, s := range l.cfg.Servers {
		key := index("servers", i) + ".name"
		if ConventionWord(s.Name) {
			l.warn(key, "the server name %q is also a verb of tool names (%s_*): a pattern %q means tools whose own name starts with %q, "+
				"never this server's operations, and the naming conventions read its tools by their own names; write %s.* for this server's tools, "+
				"or give the server another name", s.Name, s.Name, s.Name+"_*", s.Name+"_", s.Name)
			continue
		}
		var others []string
		for _, t := range l.tools {
			if t.Server == s.Name {
				continue
			}
			own := Normalize(t.Name)
			if strings.HasPrefix(own, s.Name+".") || strings.HasPrefix(own, s.Name+"_") || strings.HasPrefix(SnakeName(t.Name), s.Name+"_") {
				others = append(others, t.Server+"."+t.Name)
			}
		}
		if len(others) > 0 {
			slices.Sort(others)
			shown := others
			if len(shown) > 3 {
				shown = shown[:3]
			}
			more := ""
			if len(others) > len(shown) {
				more = fmt.Sprintf(" (and %d more)", len(others)-len(shown))
			}
			l.warn(key, "tools of other servers start with this server's name %q: %s%s; the patterns %s.* and %s_* mean this server "+
				"and do not match them (name them by their own server: <server>.<tool>)", s.Name, strings.Join(shown, ", "), more, s.Name, s.Name)
		}
	}
}

// argument warns about an argument no tool in the rule's scope declares.
func (l *linter) argument(key, op, arg string) {
	if l.tools == nil {
		return
	}
	path, err := ArgumentPath(arg)
	if err != nil {
		return
	}
	scope, _ := l.compile(op)
	inScope := 0
	for _, t := range l.tools {
		if !scope.MatchesName(NameForms(t.Operation, t.Server, t.Name)) {
			continue
		}
		inScope++
		for _, a := range t.Arguments {
			if SnakeName(a) == path[0] {
				return
			}
		}
	}
	if inScope == 0 {
		return // namePattern already said the operation matches nothing
	}
	l.warn(key, "no tool this rule applies to (%d) declares an argument %q (or %q in another spelling)", inScope, path[0], arg)
}

// shadows warns about risk rules that cannot apply to a tool because an
// auto_approve entry decides it first (stage 3 ends the evaluation before
// the risk score of stage 4 is computed).
func (l *linter) shadows(autos []keyed, risks []keyedRisk) {
	for _, a := range autos {
		apat, err := l.compile(a.src)
		if err != nil || apat.Kind&Names == 0 {
			continue
		}
		for _, rk := range risks {
			rpat, err := l.compile(rk.r.Pattern)
			if err != nil {
				continue
			}
			if l.tools == nil {
				if rk.r.Argument != "" && !strings.HasPrefix(a.key, config.ShippedName+" ") {
					l.warn(rk.key, "auto_approve %q (%s) decides first for the tools it matches, so this risk rule never raises their risk", a.src, a.key)
				}
				continue
			}
			var hit []string
			for _, t := range l.tools {
				names := NameForms(t.Operation, t.Server, t.Name)
				if !apat.MatchesName(names) {
					continue
				}
				applies := rpat.Kind&Text != 0 || rpat.MatchesName(names)
				if rk.r.Argument != "" {
					path, _ := ArgumentPath(rk.r.Argument)
					applies = slices.ContainsFunc(t.Arguments, func(x string) bool { return len(path) > 0 && SnakeName(x) == path[0] })
				}
				if applies {
					hit = append(hit, t.Server+"."+t.Name)
				}
			}
			if len(hit) > 0 {
				slices.Sort(hit)
				hit = slices.Compact(hit)
				l.warn(rk.key, "auto_approve %q (%s) decides first for %s, so this risk rule never raises their risk",
					a.src, a.key, strings.Join(hit, ", "))
			}
		}
	}
}
