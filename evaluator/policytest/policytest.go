// Package policytest runs policy test cases: calls and reported steps
// with the outcome a security team expects, evaluated offline against a
// policy (aqlguard policy test CASES.toml). It is how a policy is tested
// before it guards anything, and how the shipped policy is kept honest.
//
// A case file is TOML:
//
//	[[cases]]
//	name = "rm -rf / through sudo"          # optional, for the report
//	tool = "shell.run_command"              # server.tool of a call, or
//	hint = "deleting the cache"             # a reported step's hint
//	category = "EXECUTE"                    # optional; unset scores as EXECUTE
//	annotations = { destructive = true }    # read_only, destructive, idempotent, open_world
//	arguments = { command = "sudo rm -r -f /" }
//	agent = "ci-bot"                        # optional: the principal ([agents.NAME])
//	expect = "blocks"                       # allowed | asks | verify | refuses | blocks
//	rule = "*rm -rf /"                      # optional: the rule that must decide
//	effects = "send"                        # optional: what the tool does, as [servers.effects] says it
//
// Every case is one first step: no step limit, no earlier failure. A
// case may say what its session read before it ([[cases.before]]: calls,
// each with the text its tool returned), which the guard's own flows
// (package flows) read as they would in a session: a secret in a result,
// injected instructions, a private or untrusted source; the case's call is
// then judged with what the session holds (docs/policy.md, "Flows"):
//
//	[[cases.before]]
//	tool = "fs.read_file"
//	effects = "read"
//	arguments = { path = "~/.aws/credentials" }
//	result = "aws_access_key_id = AKIA…"    # the text the tool returned
//	flow = "private"                        # optional: private, untrusted (as a profile says)
package policytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/proxy/results"
	"github.com/pelletier/go-toml/v2"
)

// Case is one [[cases]] entry.
type Case struct {
	Name        string          `toml:"name"`
	Tool        string          `toml:"tool"`
	Hint        string          `toml:"hint"`
	Category    string          `toml:"category"`
	Annotations map[string]bool `toml:"annotations"`
	Arguments   map[string]any  `toml:"arguments"`
	Agent       string          `toml:"agent"`
	Expect      string          `toml:"expect"`
	Rule        string          `toml:"rule"`
	// Effects are the tool's effects, as [servers.effects] writes them
	// ("read", "send"); unset: scored by Category.
	Effects string `toml:"effects"`
	// Before are the calls of the session before this one, with their
	// results.
	Before []Earlier `toml:"before"`
}

// Earlier is one call a case's session made before it, and what its
// tool returned.
type Earlier struct {
	Tool      string         `toml:"tool"`
	Effects   string         `toml:"effects"`
	Arguments map[string]any `toml:"arguments"`
	// Result is the text the tool returned (one text block).
	Result string `toml:"result"`
	// Flow is what a profile would say of the tool's results:
	// "private", "untrusted", both or "".
	Flow string `toml:"flow"`
}

// File is a case file.
type File struct {
	Cases []Case `toml:"cases"`
}

// Outcomes are the values expect may take.
var Outcomes = []string{"allowed", "asks", "verify", "refuses", "blocks"}

// Load reads and checks a case file.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse decodes and checks a case file; name is used in messages.
func Parse(data []byte, name string) (*File, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var serr *toml.StrictMissingError
		if errors.As(err, &serr) {
			var keys []string
			for _, e := range serr.Errors {
				row, _ := e.Position()
				keys = append(keys, fmt.Sprintf("%s:%d: unknown key %s", name, row, strings.Join(e.Key(), ".")))
			}
			return nil, errors.New(strings.Join(keys, "\n"))
		}
		var derr *toml.DecodeError
		if errors.As(err, &derr) {
			row, col := derr.Position()
			return nil, fmt.Errorf("%s:%d:%d: %s", name, row, col, derr.Error())
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(f.Cases) == 0 {
		return nil, fmt.Errorf("%s: no [[cases]]", name)
	}
	var problems []string
	for i, c := range f.Cases {
		where := fmt.Sprintf("%s: cases[%d] (%s)", name, i, c.label(i))
		switch {
		case (c.Tool == "") == (c.Hint == ""):
			problems = append(problems, where+": give exactly one of tool (server.tool) or hint")
		case c.Tool != "" && !strings.Contains(c.Tool, "."):
			problems = append(problems, where+": tool must be server.tool, e.g. \"fs.write_file\"")
		case c.Hint != "" && len(c.Arguments) > 0:
			problems = append(problems, where+": a reported step (hint) has no arguments")
		}
		if !slices.Contains(Outcomes, c.Expect) {
			problems = append(problems, fmt.Sprintf("%s: expect %q: use one of %s", where, c.Expect, strings.Join(Outcomes, ", ")))
		}
		if c.Category != "" && !slices.Contains(categories(), strings.ToUpper(c.Category)) {
			problems = append(problems, fmt.Sprintf("%s: category %q: use one of %s", where, c.Category, strings.Join(categories(), ", ")))
		}
		if _, err := policy.ParseEffects(c.Effects); c.Effects != "" && err != nil {
			problems = append(problems, fmt.Sprintf("%s: effects %q: %v", where, c.Effects, err))
		}
		for j, e := range c.Before {
			at := fmt.Sprintf("%s: before[%d]", where, j)
			if !strings.Contains(e.Tool, ".") {
				problems = append(problems, at+": tool must be server.tool, e.g. \"fs.read_file\"")
			}
			if _, err := policy.ParseEffects(e.Effects); e.Effects != "" && err != nil {
				problems = append(problems, fmt.Sprintf("%s: effects %q: %v", at, e.Effects, err))
			}
			if _, _, err := effects.ParseFlow(e.Flow); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", at, err))
			}
		}
		if c.Hint != "" && len(c.Before) > 0 {
			problems = append(problems, where+": a reported step (hint) has no session to read before it")
		}
		for k := range c.Annotations {
			if !slices.Contains([]string{"read_only", "destructive", "idempotent", "open_world"}, k) {
				problems = append(problems, fmt.Sprintf("%s: annotation %q: use read_only, destructive, idempotent or open_world", where, k))
			}
		}
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	return &f, nil
}

func (c Case) label(i int) string {
	if c.Name != "" {
		return c.Name
	}
	if c.Tool != "" {
		return c.Tool
	}
	return fmt.Sprintf("case %d", i+1)
}

// Result is one case's evaluation.
type Result struct {
	Case      Case
	Label     string
	Got       string
	Rule      string // what decided: the rule's source, or the stage
	Directive evaluator.Directive
	Pass      bool
	Why       string // set when it fails
}

// Run evaluates every case against cfg. Policies are compiled per
// principal (the case's agent, else the config's).
func Run(cfg *config.Config, f *File) ([]Result, error) {
	policies := map[string]*policy.Policy{}
	out := make([]Result, 0, len(f.Cases))
	for i, c := range f.Cases {
		agent := c.Agent
		if agent == "" {
			agent = cfg.Agent
		}
		p, ok := policies[agent]
		if !ok {
			var err error
			if p, err = policy.Compile(cfg, agent); err != nil {
				return nil, fmt.Errorf("agent %s: %w", agent, err)
			}
			policies[agent] = p
		}
		s, err := c.step(agent)
		if err != nil {
			return nil, fmt.Errorf("cases[%d] (%s): %w", i, c.label(i), err)
		}
		if len(c.Before) > 0 {
			var session flows.Session
			for j, e := range c.Before {
				if err := observe(&session, p, agent, e); err != nil {
					return nil, fmt.Errorf("cases[%d] (%s): before[%d]: %w", i, c.label(i), j, err)
				}
			}
			s.Flow = session.Flow(s.Arguments)
		}
		d := evaluator.Evaluate(p, s)
		r := Result{Case: c, Label: c.label(i), Got: d.Outcome(), Directive: d, Rule: Decider(d)}
		r.Pass = r.Got == c.Expect
		if !r.Pass {
			r.Why = "expected " + c.Expect + ", got " + r.Got + " (" + d.Reason + ")"
		} else if c.Rule != "" && d.Matched != c.Rule && !slices.Contains(d.RiskRules, c.Rule) {
			r.Pass = false
			r.Why = fmt.Sprintf("decided by %s, expected %s", r.Rule, c.Rule)
		}
		out = append(out, r)
	}
	return out, nil
}

// Decider names what decided a directive: the rule or pattern, the
// risk rules that set the score, or the stage.
func Decider(d evaluator.Directive) string {
	switch {
	case d.Matched != "":
		return d.Matched
	case len(d.RiskRules) > 0:
		return "risk " + strings.Join(d.RiskRules, ", ")
	case d.Stage == evaluator.StageTier || d.Stage == evaluator.StageTolerance:
		return fmt.Sprintf("%s (risk %d, %s)", d.Stage, d.Risk, d.Tier)
	}
	return string(d.Stage)
}

// Covered lists the rule sources that decided or scored at least one
// result.
func Covered(results []Result) map[string]bool {
	out := map[string]bool{}
	for _, r := range results {
		if r.Directive.Matched != "" {
			out[r.Directive.Matched] = true
		}
		for _, s := range r.Directive.RiskRules {
			out[s] = true
		}
	}
	return out
}

func (c Case) step(agent string) (evaluator.Step, error) {
	s := evaluator.Step{Principal: agent, StepNumber: 1, Category: policy.Category(strings.ToUpper(c.Category)), ActionHint: c.Hint}
	if c.Tool != "" {
		server, tool, _ := strings.Cut(c.Tool, ".")
		s.Server, s.Tool = server, tool
		s.Operation = server + "_" + policy.SnakeName(tool)
		if uri, ok := strings.CutPrefix(tool, policy.ResourcePrefix); ok {
			read := evaluator.Read(server, uri) // as aqlguard judges a resources/read
			s.Tool, s.Operation, s.Category, s.Unresolved = read.Tool, read.Operation, read.Category, read.Unresolved
			c.Arguments = nil
			s.Arguments = read.Arguments
		} else if policy.IsReadSubject(tool) {
			s.Operation, s.Category = server+"."+tool, policy.Read
		}
	}
	b := func(k string) *bool {
		if v, ok := c.Annotations[k]; ok {
			return &v
		}
		return nil
	}
	s.Annotations = evaluator.Annotations{ReadOnly: b("read_only"), Destructive: b("destructive"),
		Idempotent: b("idempotent"), OpenWorld: b("open_world")}
	if c.Effects != "" {
		s.Effects, _ = policy.ParseEffects(c.Effects) // checked by Parse
		s.EffectSource, s.EffectWhy = policy.SourceConfig, s.Effects.String()+" (the case says so)"
	}
	if len(c.Arguments) > 0 {
		var err error
		if s.Arguments, err = asRequest(c.Arguments); err != nil {
			return s, err
		}
	}
	return s, nil
}

// asRequest is arguments as a request would carry them: decoded JSON,
// numbers as json.Number.
func asRequest(args map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	return out, nil
}

// caseTime is when a case's earlier calls are said to have happened
// (the questions' words say a time).
var caseTime = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// observe hands the session what an earlier call returned, as the guard
// would: the paths its path arguments name are read lexically (no file
// is touched; "~" is this user's home).
func observe(session *flows.Session, p *policy.Policy, agent string, e Earlier) error {
	server, tool, _ := strings.Cut(e.Tool, ".")
	st := evaluator.Step{Principal: agent, Server: server, Tool: tool, Operation: server + "_" + policy.SnakeName(tool), StepNumber: 1}
	if e.Effects != "" {
		st.Effects, _ = policy.ParseEffects(e.Effects)
		st.EffectSource = policy.SourceConfig
	}
	var err error
	if st.Arguments, err = asRequest(e.Arguments); err != nil {
		return err
	}
	home, _ := os.UserHomeDir()
	var places []evaluator.Place
	for _, v := range evaluator.PathValues(p, st) {
		pl := paths.Canonical(v.Raw, home, "")
		places = append(places, evaluator.Place{Arg: v.Arg, Lexical: pl, Resolved: pl})
	}
	private, untrusted, _ := effects.ParseFlow(e.Flow)
	raw, err := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": e.Result}}})
	if err != nil {
		return err
	}
	session.Observe(flows.Read{Method: results.ToolsCall, Server: server, Tool: tool, Operation: st.Operation,
		Effects: st.Effects, PrivateSource: private, UntrustedSource: untrusted, Places: places, Home: home,
		Raw: raw, At: caseTime}, p)
	return nil
}

func categories() []string {
	out := make([]string, len(policy.Categories))
	for i, c := range policy.Categories {
		out[i] = string(c)
	}
	return out
}
