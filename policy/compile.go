package policy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy/paths"
)

// LoopMode is the execution safety loop mode (MCP-AQL 8.6.1).
type LoopMode string

const (
	// LoopEnforcing evaluates every action; directives are authoritative.
	LoopEnforcing LoopMode = "enforcing"
	// LoopMonitoring evaluates every action but never pauses or blocks.
	LoopMonitoring LoopMode = "monitoring"
	// LoopLogging records actions without evaluating them.
	LoopLogging LoopMode = "logging"
	// LoopDisabled performs no safety evaluation at all.
	LoopDisabled LoopMode = "disabled"
)

// Action is what an argument rule does when it matches.
type Action string

const (
	// ActionDeny blocks the principal until a human's code lifts it
	// (MCP-AQL 8.8's deny pattern).
	ActionDeny Action = "deny"
	// ActionRefuse rejects the one call and records it; the principal
	// goes on (the Gatekeeper's deny).
	ActionRefuse           Action = "refuse"
	ActionRequiresApproval Action = "requires_approval"
	ActionAutoApprove      Action = "auto_approve"
)

// InterpreterCode is what becomes of a call whose shell command line hands
// code to an interpreter (python -c, perl -e, an awk program that runs
// commands, a here-document fed to node): code the guard does not read
// ([safety] interpreter_code). A deny pattern that matches a command the
// guard does read in the line still blocks, whatever this says.
type InterpreterCode string

const (
	// CodeAsk asks a human for the call, as a command that cannot be
	// resolved statically does (the default).
	CodeAsk InterpreterCode = "ask"
	// CodeDeny is the spec's deny pattern: the call is blocked and the
	// agent with it, until the verification code is given.
	CodeDeny InterpreterCode = "deny"
	// CodeAllow treats the line as the commands it runs: patterns and
	// the risk stages decide, as for any command.
	CodeAllow InterpreterCode = "allow"
	// CodeRefuse refuses the call alone (the Gatekeeper's deny); the
	// agent goes on.
	CodeRefuse InterpreterCode = "refuse"
)

// Threshold returns the risk score above which an action pauses for a
// human under a risk tolerance, and false for an unknown tolerance.
//
// Stage 4 of MCP-AQL 8.7.2 pauses the confirm tier (31-60) for human
// review; stage 5 moves only what its table and danger-levels.md 8.1 let
// it move. conservative pauses above 25, so the top of the advisory tier
// asks too. moderate (the default) keeps stage 4 as it is: everything
// from 31 asks. aggressive ("pause only for high risk") lets the
// reversible band (31-40: an UPDATE, a CREATE with side effects) through,
// but never the destructive band (41-60), which danger-levels.md 8.1 says
// requires approval whatever the tolerance. The verify and danger_zone
// tiers are never moved.
func Threshold(tolerance string) (int, bool) {
	switch tolerance {
	case "conservative":
		return 25, true
	case "moderate":
		return 30, true
	case "aggressive":
		return 40, true
	}
	return 0, false
}

// Policy is the effective, compiled safety policy of one principal. It is
// immutable once compiled and safe for concurrent use.
type Policy struct {
	Principal string
	Loop      LoopMode
	MaxSteps  int
	Tolerance string
	Threshold int
	// InterpreterCode is interpreter_code: what becomes of code handed
	// to an interpreter in a shell argument.
	InterpreterCode InterpreterCode

	Deny             []Pattern
	Refuse           []Pattern
	RequiresApproval []Pattern
	AutoApprove      []Pattern
	Rules            []Rule
	RiskRules        []CompiledRiskRule
	// ShellArguments and SecretArguments are the declared shell command
	// lines and secrets (shell_arguments, secret_arguments).
	ShellArguments  []ArgumentSpec
	SecretArguments []ArgumentSpec
	// ArgumentRoles are the roles [servers.arguments] declares.
	ArgumentRoles []RoleSpec
	// SensitivePaths are the places where secrets are kept: the shipped
	// list, then each layer's sensitive_paths, then aqlguard's own
	// configuration files and state directory where they are not the
	// default ones (paths.Guard). Compiled once; a nil list (a Policy
	// not built by Compile) is the shipped one.
	SensitivePaths *paths.List
	// Flows is [flows] compiled (flows.go); nil for a Policy not built
	// by Compile, which has no flow lists.
	Flows *FlowPolicy

	// InForce lists the entries of the lists above (deny to
	// secret_arguments), in that order, each with where it comes from:
	// the shipped rules, the user's file, an [agents.NAME] table, the
	// managed layer. What `policy check` prints; not part of Version,
	// which the entries themselves decide.
	InForce []RuleInForce

	// Titles are the servers' names as their client configs spell them
	// ("notes-desktop"), by name ("notesdesktop"), where the two differ:
	// what a person is shown (Title). Not part of Version: words, not
	// rules.
	Titles map[string]string

	// Version is the hex SHA-256 of the canonical form of everything above.
	// Approvals are bound to it, so editing the policy voids outstanding
	// approvals, while reordering whitespace or comments in the file does not.
	Version string

	// Managed is the managed layer compiled alone (nil without one): the
	// evaluator consults it on every call, reading the call as the
	// managed file alone describes it, and its restrictions stand
	// whatever the merged policy says.
	Managed *Policy
	// SettingLayers say which layer each setting above comes from.
	SettingLayers SettingLayers

	// sensitive are the configured sensitive_paths, for the digest.
	sensitive []string

	// index narrows the lists to the patterns that can match a call
	// (Indexes); built by Compile, so the lists must not change after.
	index *Indexes
}

// Indexes are the policy's pattern indexes: nil for a Policy that Compile
// did not build, whose lists are then scanned in full.
func (p *Policy) Indexes() *Indexes { return p.index }

// WithoutIndexes is a copy of p that scans its lists in full: the
// reference the indexed evaluation is checked against.
func (p *Policy) WithoutIndexes() *Policy {
	q := *p
	q.index = nil
	return &q
}

// WithoutToolMemo is a copy of p whose indexes keep no per-tool memo:
// the baseline the memo is measured against.
func (p *Policy) WithoutToolMemo() *Policy {
	q := *p
	if p.index != nil {
		ix := *p.index
		ix.Tools = nil
		q.index = &ix
	}
	return &q
}

// Rule is a compiled argument rule.
type Rule struct {
	Action Action
	// Operation matches any of the call's names (operation, bare tool
	// name in snake_case and as the server spells it, server.tool); "*"
	// when the configuration left it empty.
	Operation Pattern
	// Argument is the argument as configured; Path is its SnakeName form.
	// A rule with Roles instead matches every argument of those roles
	// (Path is nil).
	Argument string
	Path     []string
	Roles    RoleSet
	Pattern  Pattern
	// Layer is the configuration layer the rule comes from.
	Layer Layer
	// Source renders the rule for audit records and messages:
	// command~"rm -rf*", prefixed with operation~"shell_*" when the rule
	// is limited to some operations.
	Source string
}

// AppliesTo reports whether the rule covers a call with these names.
func (r Rule) AppliesTo(names CallNames) bool {
	if len(names.Forms) == 0 {
		return r.Operation.MatchNormalized("")
	}
	return r.Operation.MatchesName(names)
}

// CompiledRiskRule is a compiled [[safety.risk_rules]] entry.
type CompiledRiskRule struct {
	Pattern Pattern
	// Argument, when set, makes the rule match that argument's values
	// instead of the subjects its pattern's Kind names; Path is its
	// SnakeName form.
	Argument string
	Path     []string
	Score    int
	Reason   string
	Source   string
	Layer    Layer
}

// Compile merges [safety] with [agents.<principal>] and compiles every glob.
// An empty principal means cfg.Agent. Scalars in the agent table replace
// [safety]'s; pattern lists, rules and risk rules are appended to [safety]'s
// (an agent table can add restrictions and exemptions, and deny still wins
// over anything it adds). Zero values in a Config built in Go take the
// documented defaults. Errors are reported as Errors without line numbers.
//
// The shipped rules (default.toml) come first, unless the file or its
// managed layer says inherit = false (shipped.go): a configuration adds
// to them, the first of two equal entries stands, and Policy.InForce
// says where each entry in force comes from.
//
// With a managed layer (cfg.Managed, see Overlay) the managed file's own
// [safety] and [agents.<principal>] come first, marked as the managed
// layer's; its settings are floors the user's can only tighten (see
// floor); and Policy.Managed holds the managed layer compiled alone, which
// the evaluator consults on every call so that nothing in the user's file
// (a server's categories or argument roles, the servers that decide what
// a name pattern reads, an auto_approve) can weaken a managed restriction.
func Compile(cfg *config.Config, principal string) (*Policy, error) {
	if cfg == nil {
		return nil, errors.New("policy: nil config")
	}
	if principal == "" {
		principal = cfg.Agent
	}
	if principal == "" {
		principal = config.DefaultAgent
	}
	v := &validator{file: cfg.Path}
	if !config.ValidAgentName(principal) {
		v.errf("agent", "%q is not a valid agent name", principal)
	}
	user := layerOf(cfg, principal, v)
	user.servers = serverNames(cfg)
	if len(v.errs) > 0 {
		return nil, v.errs
	}
	// The shipped rules, beneath the user's file (shipped.go), read for
	// the same servers as the user's own rules.
	var base []layerInput
	if cfg.InheritsShipped() {
		base = append(base, shippedLayer(user.servers))
	}
	if cfg.Managed == nil {
		p := build(principal, user.settings, append(base, user), cfg.Servers)
		return p, nil
	}
	if len(base) > 0 {
		base[0] = base[0].underManaged(cfg.Managed)
	}
	mv := &validator{file: cfg.Managed.Path}
	managed := layerOf(cfg.Managed, principal, mv)
	if len(mv.errs) > 0 {
		return nil, mv.errs
	}
	managed.layer, managed.servers = LayerManaged, serverNames(cfg.Managed)
	// The managed layer alone, as the evaluator consults it: its servers,
	// its roles, its settings.
	alone := build(principal, managed.settings, []layerInput{managed}, managedServers(cfg))
	settings, from := floor(managed.settings, user.settings)
	p := build(principal, settings, append(append([]layerInput{managed}, base...), user), cfg.Servers)
	p.Managed, p.SettingLayers = alone, from
	p.Version = p.digest() // the layers' marks included
	return p, nil
}

// managedServers are the managed layer's servers: those of the managed
// file itself, as Overlay marked them in the effective configuration.
func managedServers(cfg *config.Config) []config.Server {
	var out []config.Server
	for _, s := range cfg.Servers {
		if s.Managed {
			out = append(out, s)
		}
	}
	if out == nil {
		out = cfg.Managed.Servers
	}
	return out
}

// settings are a layer's scalar safety settings for one principal.
type settings struct {
	loop  string
	steps int
	tol   string
	code  string
}

// layerInput is what one configuration layer says for one principal:
// its [safety] with its [agents.<principal>] on top, each entry with its
// key path in file (lines says where each is).
type layerInput struct {
	settings
	layer                       Layer
	file                        string
	lines                       map[string]int
	servers                     map[string]bool // the servers that decide what its name patterns read
	deny, refuse, approve, auto []keyed
	rules                       []keyedRule
	risk                        []keyedRisk
	shellArgs, secretArgs       []keyed
	// sensitive are the layer's sensitive_paths; own its own files
	// (the config file, the state directory), kept from the agent.
	sensitive, own []string
	// flows is the layer's [flows] (the file's, for every principal).
	flows config.Flows
}

type keyedRule struct {
	key string
	r   config.ArgRule
}

// origin is where the entry at key comes from.
func (in *layerInput) origin(key string) Origin {
	return Origin{Layer: in.layer, File: in.file, Line: in.lines[key], Key: key}
}

// layerOf is cfg's [safety] merged with its [agents.<principal>],
// defaults applied and values checked (v collects the problems).
func layerOf(cfg *config.Config, principal string, v *validator) layerInput {
	s := cfg.Safety
	v.safety(&s) // defaults and value checks for hand-built configs
	in := layerInput{
		settings: settings{loop: s.Loop, steps: s.MaxAutonomousSteps, tol: s.RiskTolerance, code: s.InterpreterCode},
		file:     cfg.Path, lines: cfg.Lines(),
		sensitive: s.SensitivePaths, own: []string{cfg.Path, cfg.StateDir},
		flows: cfg.Flows,
	}
	add := func(table string, deny, refuse, approve, auto []string, rules []config.ArgRule, risk []config.RiskRule, shellArgs, secretArgs []string) {
		in.deny = appendKeyed(in.deny, table+".deny", deny)
		in.refuse = appendKeyed(in.refuse, table+".refuse", refuse)
		in.approve = appendKeyed(in.approve, table+".requires_approval", approve)
		in.auto = appendKeyed(in.auto, table+".auto_approve", auto)
		for i, r := range rules {
			in.rules = append(in.rules, keyedRule{index(table+".rules", i), r})
		}
		for i, r := range risk {
			in.risk = append(in.risk, keyedRisk{index(table+".risk_rules", i), r})
		}
		in.shellArgs = appendKeyed(in.shellArgs, table+".shell_arguments", shellArgs)
		in.secretArgs = appendKeyed(in.secretArgs, table+".secret_arguments", secretArgs)
	}
	add("safety", s.Deny, s.Refuse, s.RequiresApproval, s.AutoApprove, s.Rules, s.RiskRules, s.ShellArguments, s.SecretArguments)
	if o, ok := cfg.Agents[principal]; ok {
		okey := joinKey("agents", principal)
		v.override(okey, o)
		if o.Loop != nil {
			in.loop = *o.Loop
		}
		if o.MaxAutonomousSteps != nil {
			in.steps = *o.MaxAutonomousSteps
		}
		if o.RiskTolerance != nil {
			in.tol = *o.RiskTolerance
		}
		if o.InterpreterCode != nil {
			in.code = *o.InterpreterCode
		}
		add(okey, o.Deny, o.Refuse, o.RequiresApproval, o.AutoApprove, o.Rules, o.RiskRules, o.ShellArguments, o.SecretArguments)
	}
	return in
}

// appendKeyed appends list's entries, each with its key path (key[i]).
func appendKeyed(to []keyed, key string, list []string) []keyed {
	for i, src := range list {
		to = append(to, keyed{index(key, i), src})
	}
	return to
}

// build compiles the layers' lists, in order, under settings s. servers
// are the configured servers whose [servers.arguments] declare roles. An
// entry that an earlier entry already says (the same pattern, rule, risk
// rule or argument in the same list, as the digest sees it) is dropped:
// the first stands, and InForce records where else it is written.
func build(principal string, s settings, layers []layerInput, servers []config.Server) *Policy {
	threshold, _ := Threshold(s.tol) // validated
	p := &Policy{
		Principal: principal,
		Loop:      LoopMode(s.loop),
		MaxSteps:  s.steps,
		Tolerance: s.tol,
		Threshold: threshold,

		InterpreterCode: InterpreterCode(s.code),
	}
	for _, srv := range servers {
		if srv.Title != "" && srv.Title != srv.Name {
			if p.Titles == nil {
				p.Titles = map[string]string{}
			}
			p.Titles[srv.Name] = srv.Title
		}
	}
	// seen maps an entry (its list and its digest form) to its place in
	// p.InForce.
	seen := map[string]int{}
	var same string
	first := func(list, form string, in *layerInput, key string) bool {
		same = list + "\x00" + form
		if i, dup := seen[same]; dup {
			p.InForce[i].Also = append(p.InForce[i].Also, in.origin(key))
			return false
		}
		seen[same] = len(p.InForce)
		return true
	}
	inForce := func(list, rule string, in *layerInput, key string) { // after first
		p.InForce = append(p.InForce, RuleInForce{List: list, Rule: rule, Origin: in.origin(key), same: same})
	}
	for i := range layers {
		in := &layers[i]
		namePattern := func(src string) (Pattern, error) {
			pat, err := CompilePattern(src)
			pat.forServers(in.servers)
			pat.layer = in.layer
			return pat, err
		}
		compileList := func(list []Pattern, name string, srcs []keyed) []Pattern {
			for _, e := range srcs {
				pat, err := namePattern(e.src)
				if err != nil { // already reported by validation
					continue
				}
				if !first(name, pat.norm, in, e.key) {
					continue
				}
				inForce(name, pat.Quoted(), in, e.key)
				list = append(list, pat)
			}
			return list
		}
		p.Deny = compileList(p.Deny, "deny", in.deny)
		p.Refuse = compileList(p.Refuse, "refuse", in.refuse)
		p.RequiresApproval = compileList(p.RequiresApproval, "requires_approval", in.approve)
		p.AutoApprove = compileList(p.AutoApprove, "auto_approve", in.auto)
		for _, e := range in.rules {
			r := e.r
			op := r.Operation
			if op == "" {
				op = "*"
			}
			opPat, err1 := namePattern(op)
			valPat, err2 := CompilePattern(r.Pattern)
			if err1 != nil || err2 != nil {
				continue
			}
			valPat.layer = in.layer
			rule := Rule{Action: Action(r.Action), Operation: opPat, Argument: r.Argument, Pattern: valPat, Layer: in.layer}
			subject := r.Argument
			if len(r.Roles) > 0 {
				for _, name := range r.Roles {
					role, err := ParseRole(name)
					if err != nil {
						continue // reported by validation
					}
					rule.Roles = rule.Roles.With(role)
				}
				subject = "roles(" + strings.Join(r.Roles, ",") + ")"
			} else if rule.Path, err1 = ArgumentPath(r.Argument); err1 != nil {
				continue
			}
			rule.Source = subject + "~" + strconv.Quote(r.Pattern)
			if opPat.norm != "*" {
				rule.Source = "operation~" + strconv.Quote(op) + " " + rule.Source
			}
			if !first("rules", rule.sameForm(), in, e.key) {
				continue
			}
			inForce("rules", string(rule.Action)+" "+rule.Source, in, e.key)
			p.Rules = append(p.Rules, rule)
		}
		for _, e := range in.risk {
			r := e.r
			pat, err := namePattern(r.Pattern)
			if err != nil {
				continue
			}
			src := strconv.Quote(r.Pattern)
			var path []string
			if r.Argument != "" {
				if path, err = ArgumentPath(r.Argument); err != nil {
					continue
				}
				src = r.Argument + "~" + src
			}
			rr := CompiledRiskRule{Pattern: pat, Argument: r.Argument, Path: path,
				Score: r.Score, Reason: r.Reason, Source: src, Layer: in.layer}
			if !first("risk_rules", rr.sameForm(), in, e.key) {
				continue
			}
			inForce("risk_rules", "score "+strconv.Itoa(r.Score)+" "+src, in, e.key)
			p.RiskRules = append(p.RiskRules, rr)
		}
		specs := func(list []ArgumentSpec, name string, srcs []keyed) []ArgumentSpec {
			for _, e := range srcs {
				spec, err := ParseArgumentSpec(e.src)
				if err != nil {
					continue
				}
				spec.Tool.forServers(in.servers)
				if !first(name, spec.sameForm(), in, e.key) {
					continue
				}
				inForce(name, strconv.Quote(e.src), in, e.key)
				list = append(list, spec)
			}
			return list
		}
		p.ShellArguments = specs(p.ShellArguments, "shell_arguments", in.shellArgs)
		p.SecretArguments = specs(p.SecretArguments, "secret_arguments", in.secretArgs)
	}
	// Listed as evaluation reads them: by list, each in layer order.
	slices.SortStableFunc(p.InForce, func(a, b RuleInForce) int {
		return slices.Index(inForceLists, a.List) - slices.Index(inForceLists, b.List)
	})
	for _, srv := range servers {
		for _, key := range slices.Sorted(maps.Keys(srv.Arguments)) {
			spec, err1 := ParseArgumentSpec(key)
			role, err2 := ParseRole(srv.Arguments[key])
			if err1 == nil && err2 == nil {
				p.ArgumentRoles = append(p.ArgumentRoles, RoleSpec{Server: srv.Name, Spec: spec, Role: role})
			}
		}
	}
	p.SensitivePaths, p.sensitive = sensitivePaths(layers)
	p.Flows = compileFlows(layers)
	p.Version = p.digest()
	p.index = newIndexes(p)
	return p
}

// sameForm is a rule as duplicates are found: the same action on the
// same names, argument or roles and pattern, folded, is the same rule,
// whichever layer writes it (the first stands).
func (r Rule) sameForm() string {
	b, _ := json.Marshal([]any{r.Action, r.Operation.norm, strings.Join(r.Path, "."), r.Pattern.norm, r.Roles})
	return string(b)
}

// sameForm is a risk rule as duplicates are found.
func (r CompiledRiskRule) sameForm() string {
	b, _ := json.Marshal([]any{r.Pattern.norm, strings.Join(r.Path, "."), r.Score})
	return string(b)
}

// sameForm is an argument declaration as duplicates are found.
func (a ArgumentSpec) sameForm() string {
	return a.Tool.norm + "\x00" + strings.Join(a.Path, ".")
}

// sensitivePaths compiles the shipped sensitive places with those the
// layers add, and returns the added patterns as the digest sees them.
func sensitivePaths(layers []layerInput) (*paths.List, []string) {
	list := slices.Clone(paths.Shipped)
	var forms []string
	for _, in := range layers {
		reason := "the configuration names it a sensitive place ([safety] sensitive_paths)"
		if in.layer == LayerManaged {
			reason = "the managed policy names it a sensitive place ([safety] sensitive_paths)"
		}
		for _, src := range in.sensitive {
			if paths.CheckPattern(src) != nil {
				continue // reported by validation
			}
			list = append(list, paths.Sensitive{Pattern: src, Reason: reason})
			form := src
			if in.layer == LayerManaged {
				form += "\x00managed"
			}
			forms = append(forms, form)
		}
	}
	for _, in := range layers {
		list = append(list, paths.Guard(in.own...)...)
	}
	return paths.MustCompile(list), forms
}

// digestForm is a pattern as the digest sees it: its folded source, and,
// where the configured servers decide what it reads ("fs_*" with a
// server fs), that reading, so that adding or removing that server is a
// change of the policy. What the source alone decides needs no mark.
func (p Pattern) digestForm() string {
	form := p.norm
	if p.reading == readOperation {
		form += "\x00operations"
	}
	if p.layer == LayerManaged {
		form += "\x00managed"
	}
	return form
}

// digest hashes a canonical JSON rendering of the effective policy.
// Patterns are hashed in normalised form: "DROP_*" and "drop_*" behave the
// same, so they are the same policy.
// Title is a server's name as a person knows it: as its client config
// spells it, else its name.
func (p *Policy) Title(server string) string {
	if p == nil {
		return server
	}
	if t, ok := p.Titles[server]; ok {
		return t
	}
	return server
}

func (p *Policy) digest() string {
	type rule struct {
		Action, Operation, Argument, Pattern string
		Roles                                RoleSet `json:",omitempty"`
	}
	type roleSpec struct {
		Server, Tool, Path string
		Role               Role
	}
	type riskRule struct {
		Pattern, Argument string
		Score             int
	}
	type argSpec struct{ Tool, Path string }
	specs := func(list []ArgumentSpec) []argSpec {
		out := []argSpec{}
		for _, a := range list {
			out = append(out, argSpec{a.Tool.digestForm(), strings.Join(a.Path, ".")})
		}
		return out
	}
	norm := func(ps []Pattern) []string {
		out := make([]string, len(ps))
		for i, x := range ps {
			out[i] = x.digestForm()
		}
		return out
	}
	c := struct {
		Format                              string
		Principal                           string
		Loop                                LoopMode
		MaxSteps                            int
		Tolerance                           string
		Threshold                           int
		Deny, RequiresApproval, AutoApprove []string
		Refuse                              []string `json:",omitempty"`
		Rules                               []rule
		RiskRules                           []riskRule
		ShellArguments, SecretArguments     []argSpec
		ArgumentRoles                       []roleSpec `json:",omitempty"`
		// Only when it is not the default: policies that do not set it
		// keep the version they had.
		InterpreterCode InterpreterCode `json:",omitempty"`
		SensitivePaths  []string        `json:",omitempty"`
		Flows           string          `json:",omitempty"`
	}{
		Format: "aqlguard-policy/2", Principal: p.Principal, Loop: p.Loop, MaxSteps: p.MaxSteps,
		Tolerance: p.Tolerance, Threshold: p.Threshold,
		Deny: norm(p.Deny), Refuse: norm(p.Refuse), RequiresApproval: norm(p.RequiresApproval), AutoApprove: norm(p.AutoApprove),
		Rules: []rule{}, RiskRules: []riskRule{},
		ShellArguments: specs(p.ShellArguments), SecretArguments: specs(p.SecretArguments),
	}
	if p.InterpreterCode != CodeAsk {
		c.InterpreterCode = p.InterpreterCode
	}
	c.SensitivePaths = p.sensitive
	if f := p.Flows.digestForm(); f != (&FlowPolicy{ScanBytes: config.DefaultFlowScanBytes}).digestForm() && f != (&FlowPolicy{}).digestForm() {
		c.Flows = f // only when set: policies without [flows] keep their version
	}
	for _, r := range p.Rules {
		c.Rules = append(c.Rules, rule{string(r.Action), r.Operation.digestForm(), strings.Join(r.Path, "."), r.Pattern.norm, r.Roles})
	}
	for _, r := range p.ArgumentRoles {
		c.ArgumentRoles = append(c.ArgumentRoles, roleSpec{r.Server, r.Spec.Tool.norm, strings.Join(r.Spec.Path, "."), r.Role})
	}
	for _, r := range p.RiskRules {
		c.RiskRules = append(c.RiskRules, riskRule{r.Pattern.digestForm(), strings.Join(r.Path, "."), r.Score})
	}
	b, err := json.Marshal(c)
	if err != nil { // plain strings and ints: cannot happen
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
