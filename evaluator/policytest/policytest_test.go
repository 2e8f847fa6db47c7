package policytest

import (
	"github.com/aqlguard/aqlguard/internal/fixture/exampleconfig"

	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
)

// TestStarterCases: the shipped case file passes against the shipped
// example config, and every rule of that config (and so every rule of the
// built-in defaults, which it contains) decides or scores some case.
func TestStarterCases(t *testing.T) {
	// The cases are written for the example's own rules: its examples on.
	data, err := exampleconfig.WithExamples()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := policy.Parse(data, "config.example.toml (examples on)")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Load("../../policy-cases.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	results := runPassing(t, cfg, f)
	covered := Covered(results)
	for _, agent := range []string{cfg.Agent, "ci-bot"} {
		p, err := policy.Compile(cfg, agent)
		if err != nil {
			t.Fatal(err)
		}
		var sources []string
		for _, l := range [][]policy.Pattern{p.Deny, p.RequiresApproval, p.AutoApprove} {
			for _, pat := range l {
				sources = append(sources, pat.Source)
			}
		}
		for _, r := range p.Rules {
			sources = append(sources, r.Source)
		}
		for _, r := range p.RiskRules {
			sources = append(sources, r.Source)
		}
		for _, s := range sources {
			if !covered[s] {
				t.Errorf("agent %s: no case exercises %s", agent, s)
			}
		}
	}
	// The defaults are a subset of the example, so they are covered too.
	def, err := policy.Compile(policy.Default(), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range [][]policy.Pattern{def.Deny, def.RequiresApproval, def.AutoApprove} {
		for _, pat := range l {
			if !covered[pat.Source] {
				t.Errorf("default rule %q is in no case (is it missing from config.example.toml?)", pat.Source)
			}
		}
	}
	if len(def.Rules)+len(def.RiskRules) > 0 {
		t.Error("the defaults grew argument or risk rules: add them to config.example.toml and the case file")
	}
}

func TestParseErrors(t *testing.T) {
	for doc, want := range map[string]string{
		``:                                  "no [[cases]]",
		"[[cases]]\nexpect = \"allowed\"\n": "exactly one of tool",
		"[[cases]]\ntool = \"x\"\nexpect = \"allowed\"\n":                        "server.tool",
		"[[cases]]\ntool = \"a.b\"\nexpect = \"maybe\"\n":                        `expect "maybe"`,
		"[[cases]]\ntool = \"a.b\"\nexpect = \"asks\"\ncategory = \"WRITE\"\n":   `category "WRITE"`,
		"[[cases]]\ntool = \"a.b\"\nexpect = \"asks\"\nbogus = 1\n":              "bogus",
		"[[cases]]\nhint = \"h\"\nexpect = \"asks\"\narguments = { a = 1 }\n":    "no arguments",
		"[[cases]]\ntool = \"a.b\"\nexpect = \"asks\"\nannotations = {x=true}\n": `annotation "x"`,
	} {
		_, err := Parse([]byte(doc), "c.toml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", doc, err, want)
		}
	}
}

func TestCasesWithWhatTheSessionRead(t *testing.T) {
	bad := `
[[cases]]
tool = "web.fetch"
effects = "sends"
expect = "asks"
[[cases.before]]
tool = "read_file"
flow = "secret"
`
	_, err := Parse([]byte(bad), "bad.toml")
	for _, want := range []string{`effects "sends"`, "before[0]: tool must be server.tool", `flow "secret"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: want %q", err, want)
		}
	}
	good := `
[[cases]]
name = "send after both"
tool = "web.fetch"
effects = "send"
arguments = { url = "https://paste.example/" }
expect = "asks"
rule = "flow"
[[cases.before]]
tool = "gh.get_file_contents"
result = "private code"
flow = "private"
[[cases.before]]
tool = "gh.get_issue"
result = "an issue"
flow = "untrusted"

[[cases]]
name = "the same send, nothing read before"
tool = "web.fetch"
effects = "send"
arguments = { url = "https://paste.example/" }
expect = "allowed"
`
	f, err := Parse([]byte(good), "good.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := policy.Parse(nil, "empty.toml")
	if err != nil {
		t.Fatal(err)
	}
	runPassing(t, cfg, f)
}

// runPassing runs f against cfg and fails the test for every case that
// does not pass.
func runPassing(t *testing.T, cfg *config.Config, f *File) []Result {
	t.Helper()
	results, err := Run(cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if !r.Pass {
			t.Errorf("%s: %s", r.Label, r.Why)
		}
	}
	return results
}
