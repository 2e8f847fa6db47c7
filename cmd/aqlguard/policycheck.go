package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/evaluator/policytest"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/names"
)

const policyUsage = `usage: aqlguard policy check [--servers] [--strict] [--config FILE] [--managed FILE]
       aqlguard policy explain [--config FILE] [--agent NAME]
       aqlguard policy test [--config FILE] CASES.toml
       aqlguard policy suggest [--since 7d] [--agent NAME] [--min N] [--cases FILE] [--config FILE]
`

// cmdPolicy dispatches the policy verbs.
func cmdPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stderr, policyUsage)
		return 2
	case "check":
		return cmdPolicyCheck(args[1:], stdout, stderr)
	case "explain":
		return cmdPolicyExplain(args[1:], stdout, stderr)
	case "test":
		return cmdPolicyTest(args[1:], stdout, stderr)
	case "suggest":
		return cmdPolicySuggest(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, policyUsage)
	return 2
}

// loadForPolicy loads the config, printing every error with its line.
func loadForPolicy(g *globals, stderr io.Writer) *config.Config {
	cfg, err := loadConfig(g)
	if err != nil {
		var list config.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e.Error())
			}
			fmt.Fprintf(stderr, "%d error(s)\n", len(list))
		} else {
			fmt.Fprintln(stderr, "aqlguard:", err)
		}
		return nil
	}
	return cfg
}

// principals are the configured agent and every [agents.NAME], sorted
// after the first.
func principals(cfg *config.Config) []string {
	out := []string{cfg.Agent}
	for name := range cfg.Agents {
		if name != cfg.Agent {
			out = append(out, name)
		}
	}
	sort.Strings(out[1:])
	return out
}

// connectServers starts the configured servers (quietly: their logs go to
// stderr only at warn level) and derives the catalog.
func connectServers(cfg *config.Config, pol *policy.Policy, stderr io.Writer) (*catalog.Catalog, *downstream.Pool, error) {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cat, pool, err := proxy.StartCatalog(context.Background(), cfg, pol, version(), log)
	if pool != nil {
		for _, s := range pool.Servers() {
			if st := s.State(); st.Status != downstream.Ready {
				fmt.Fprintf(stderr, "server %s: %s\n", s.Name, st.Problem)
			}
		}
	}
	return cat, pool, err
}

func source(cfg *config.Config) string {
	if cfg.Path == "" {
		return "embedded defaults"
	}
	return cfg.Path
}

// cmdPolicyCheck loads a config and reports every error with its line. It
// compiles the effective policy of the configured agent and of every
// [agents.NAME] override, so a pattern that only one agent sees is checked
// too, lists the rules in force for each with where each comes from, and
// lints each: dead and shadowed rules are warnings, errors with --strict.
// A file that turns the shipped rules off (inherit = false) is warned
// about, naming the shipped rules not in force. --servers connects to
// the configured servers and checks against their real tools. Server
// names that pass for another's are reported, and with --servers the
// tool and prompt names two servers offer (reports, never a failure:
// names.go). Exit status 1 on any error.
func cmdPolicyCheck(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("policy check", stderr)
	servers := fs.Bool("servers", false, "connect to the configured servers and check the rules against their tools")
	strict := fs.Bool("strict", false, "treat warnings (dead or shadowed rules) as errors")
	verbose := fs.Bool("v", false, "print how each pattern and rule was read: what it is matched against")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !noWords("policy check", fs.Args(), stderr) {
		return 2
	}
	cfg := loadForPolicy(g, stderr)
	if cfg == nil {
		return 1
	}
	failed := false
	var tools []policy.Tool
	var first *policy.Policy
	for i, p := range principals(cfg) {
		pol, err := policy.Compile(cfg, p)
		if err != nil {
			fmt.Fprintf(stderr, "agent %s: %v\n", p, err)
			failed = true
			continue
		}
		if i == 0 {
			first = pol
		}
		printInForce(stdout, pol)
		if *verbose {
			printReading(stdout, pol)
		}
	}
	// The servers the rules are checked against: the config's own and
	// those the client configs run behind aqlguard wrap.
	lintCfg := cfg
	var sets []serverSet
	listings := map[int][]names.Listing{} // by set: a client sees its own servers only
	if *servers && !failed {
		var remote []string
		sets, remote = serverSets(cfg, clientconfig.DefaultEnv())
		for _, r := range remote {
			fmt.Fprintf(stderr, "remote server %s: not connected (it may ask for consent in a browser); its tools are not checked\n", r)
		}
		for i, set := range sets {
			pol, err := policy.Compile(set.cfg, set.agent)
			if err != nil {
				fmt.Fprintf(stderr, "agent %s: %v\n", set.agent, err)
				return 1
			}
			cat, pool, err := connectServers(set.cfg, pol, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "aqlguard: %v\n", err)
				return 1
			}
			tools = append(tools, cat.PolicyTools()...)
			for _, s := range pool.Servers() {
				listings[i] = append(listings[i], proxy.Listed(context.Background(), s))
			}
			_ = pool.Close()
		}
		lintCfg = withAllServers(cfg, sets)
	}
	for _, e := range cfg.NotInEffect {
		fmt.Fprintln(stderr, e.Error())
	}
	if n := len(cfg.NotInEffect); n > 0 {
		fmt.Fprintf(stderr, "%d setting(s) of %s would loosen the managed policy %s: they are not in effect\n",
			n, source(cfg), cfg.Managed.Path)
		failed = true
	}
	if failed {
		return 1
	}
	if *verbose {
		fmt.Fprint(stdout, readingLegend+"\n")
	}
	inherit := ""
	if where, off := cfg.InheritOff(); off && first != nil {
		// Said loudly, but not a --strict failure: starting from nothing
		// is a choice the file makes in so many words.
		var names []string
		for _, r := range policy.ShippedNotInForce(cfg, first) {
			names = append(names, r.List+" "+r.Rule)
		}
		where.Msg = "warning: " + where.Msg + fmt.Sprintf("; %d shipped rule(s) not in force: %s", len(names), strings.Join(names, ", "))
		fmt.Fprintln(stderr, where.Error())
		inherit = ", shipped rules NOT in force (inherit = false)"
	}
	warnings := 0
	seen := map[string]bool{}
	for _, p := range principals(cfg) {
		for _, w := range policy.Lint(lintCfg, p, tools) {
			if line := w.Error(); !seen[line] {
				seen[line] = true
				fmt.Fprintln(stderr, line)
				warnings++
			}
		}
	}
	if warnings > 0 && *strict {
		fmt.Fprintf(stderr, "%d warning(s), failing: --strict\n", warnings)
		return 1
	}
	var reports int
	if len(sets) == 0 || sets[0].cfg != cfg { // no [[servers]] of its own: its names, and those recorded
		reports += reportNames(cfg, *servers, nil, stderr)
	}
	for i, set := range sets {
		if set.cfg == cfg {
			reports += reportNames(cfg, true, listings[i], stderr)
		} else {
			reports += reportNamesOf(set.from, set.cfg, false, listings[i], stderr)
		}
	}
	checked := "patterns alone"
	if *servers {
		n := 0
		for _, set := range sets {
			n += len(set.cfg.Servers)
		}
		checked = fmt.Sprintf("%d tool(s) of %d server(s), the configured and those aqlguard init wrapped", len(tools), n)
	}
	managed := ""
	if cfg.Managed != nil {
		managed = ", under the managed policy " + cfg.Managed.Path
	}
	loop, code := cfg.Safety.Loop, cfg.Safety.InterpreterCode
	if pol, err := policy.Compile(cfg, cfg.Agent); err == nil {
		loop, code = string(pol.Loop), string(pol.InterpreterCode)
	}
	fmt.Fprintf(stdout, "%s: OK (mode %s, agent %s, %d server(s), loop %s, interpreter_code %s%s%s; %d warning(s), %d name report(s), checked against %s)\n",
		source(cfg), cfg.Mode, cfg.Agent, len(cfg.Servers), loop, code, managed, inherit, warnings, reports, checked)
	return 0
}

// printInForce prints the rules in force for pol's principal, each with
// where it comes from: the shipped rules, the file and line, an
// [agents.NAME] table, the managed layer.
func printInForce(w io.Writer, pol *policy.Policy) {
	fmt.Fprintf(w, "rules in force for agent %s (policy %s):\n", pol.Principal, pol.Version[:12])
	if len(pol.InForce) == 0 {
		fmt.Fprintln(w, "  none")
		fmt.Fprintln(w)
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LIST\tRULE\tFROM")
	for _, r := range pol.InForce {
		from := r.Origin.String()
		for _, o := range r.Also {
			from += "; also " + o.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r.List, r.Rule, from)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// printReading prints, per list, each pattern and rule of pol as the
// evaluator reads it (policy.Kind, and the command reading of a text
// pattern shaped like a command line), with a legend.
func printReading(w io.Writer, pol *policy.Policy) {
	fmt.Fprintf(w, "agent %s (policy %s):\n", pol.Principal, pol.Version[:12])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  LIST\tPATTERN\tREAD AS")
	list := func(name string, ps []policy.Pattern) {
		for _, p := range ps {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, p.Quoted(), patternReading(p))
		}
	}
	list("deny", pol.Deny)
	list("requires_approval", pol.RequiresApproval)
	list("auto_approve", pol.AutoApprove)
	for _, r := range pol.Rules {
		fmt.Fprintf(tw, "  rule (%s)\t%s\targument %s of %s\n", r.Action, r.Source, r.Argument, r.Operation.Quoted())
	}
	for _, r := range pol.RiskRules {
		what := patternReading(r.Pattern)
		if r.Argument != "" {
			what = "argument " + r.Argument
		}
		fmt.Fprintf(tw, "  risk rule (%+d)\t%s\t%s\n", r.Score, r.Pattern.Quoted(), what)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
}

// readingLegend says what the words of printReading mean.
const readingLegend = `name      the operation name (fs_write_file), the tool's own name and server.tool
text      every argument value and key, as the server receives it
command   in shell arguments, each command that would run, however it is spelled
          (flags in any order; sudo, env, sh -c and other wrappers looked through)
argument  that argument's value, as text
`

// patternReading says what a pattern list entry is matched against.
func patternReading(p policy.Pattern) string {
	var parts []string
	if p.Kind&policy.Names != 0 {
		parts = append(parts, "name")
	}
	if p.Kind&policy.Text != 0 {
		parts = append(parts, "text")
	}
	if p.Command() != nil {
		parts = append(parts, "command")
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// cmdPolicyExplain connects to the configured servers and prints, per
// tool, what the policy does when it is called.
func cmdPolicyExplain(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("policy explain", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !noWords("policy explain", fs.Args(), stderr) {
		return 2
	}
	cfg := loadForPolicy(g, stderr)
	if cfg == nil {
		return 1
	}
	sets, remote := serverSets(cfg, clientconfig.DefaultEnv())
	for _, r := range remote {
		fmt.Fprintf(stderr, "remote server %s: not connected (it may ask for consent in a browser); judged when a client starts it\n", r)
	}
	if len(sets) == 0 {
		pol, err := policy.Compile(cfg, cfg.Agent)
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
		explainHeader(stdout, cfg, pol)
		fmt.Fprintln(stdout, noServers(cfg))
		return 0
	}
	for i, set := range sets {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "== %s\n", set.from)
		if code := explainSet(set, stdout, stderr); code != 0 {
			return code
		}
	}
	fmt.Fprintln(stdout, "\nEFFECTS is what the tool does and where aqlguard has it from (config, profile,")
	fmt.Fprintln(stdout, "schema, guess: a guess from its name); the call is judged by it, not by its name.")
	fmt.Fprintln(stdout, "FLOW is what its results are to a session (private data, untrusted content) and")
	fmt.Fprintln(stdout, "whether it sends data out: a send after both asks; a secret a result handed the")
	fmt.Fprintln(stdout, "session is refused on its way out (docs/policy.md, Flows).")
	fmt.Fprintln(stdout, "WHEN CALLED is for a call with no arguments; text patterns, argument rules and")
	fmt.Fprintln(stdout, "paths judged against the server's roots can make a call ask or block depending")
	fmt.Fprintln(stdout, "on what it carries (aqlguard policy test).")
	return 0
}

func explainHeader(w io.Writer, cfg *config.Config, pol *policy.Policy) {
	fmt.Fprintf(w, "%s, agent %s, risk_tolerance %s (a call above risk %d asks), loop %s, interpreter_code %s\n\n",
		source(cfg), pol.Principal, pol.Tolerance, pol.Threshold, pol.Loop, pol.InterpreterCode)
}

// explainSet connects to one set's servers and prints, per tool, what
// the policy does when it is called.
func explainSet(set serverSet, stdout, stderr io.Writer) int {
	pol, err := policy.Compile(set.cfg, set.agent)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	cat, pool, err := connectServers(set.cfg, pol, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	defer pool.Close()
	ex := proxy.Explain(pol, cat)
	explainHeader(stdout, set.cfg, pol)
	if len(ex) == 0 {
		fmt.Fprintln(stdout, "no tools: none of these servers started (see above)")
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tEFFECTS\tFLOW\tCATEGORY\tRISK\tTIER\tDECIDED BY\tWHEN CALLED\tARGUMENT RULES")
	for _, e := range ex {
		d := e.Directive
		tier := string(d.Tier)
		if tier == "" {
			tier = "-"
		}
		rules := "-"
		if len(e.ArgumentRules) > 0 {
			rules = strings.Join(e.ArgumentRules, "; ")
		}
		fmt.Fprintf(tw, "%s.%s\t%s (%s)\t%s\t%s (%s)\t%d\t%s\t%s\t%s\t%s\n", e.Server, e.Tool, e.Model.Effects, e.Model.Source,
			e.Flow, e.Category, e.ClassifiedBy, d.Risk, tier, policytest.Decider(d), d.Outcome(), rules)
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	return 0
}

// cmdPolicyTest runs a case file against the policy and prints a table;
// exit status 1 on any mismatch.
func cmdPolicyTest(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("policy test", stderr)
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) != 1 {
		fmt.Fprint(stderr, policyUsage)
		return 2
	}
	cfg := loadForPolicy(g, stderr)
	if cfg == nil {
		return 1
	}
	f, err := policytest.Load(rest[0])
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return 1
	}
	results, err := policytest.Run(cfg, f)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tCASE\tEXPECTED\tGOT\tDECIDED BY")
	failed := 0
	for _, r := range results {
		mark := "ok"
		if !r.Pass {
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", mark, r.Label, r.Case.Expect, r.Got, r.Rule)
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	for _, r := range results {
		if !r.Pass {
			fmt.Fprintf(stderr, "FAIL %s: %s\n", r.Label, r.Why)
		}
	}
	fmt.Fprintf(stdout, "\n%d case(s), %d failed (%s)\n", len(results), failed, source(cfg))
	if failed > 0 {
		return 1
	}
	return 0
}
