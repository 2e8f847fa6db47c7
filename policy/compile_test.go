package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

func sources(ps []Pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Source
	}
	return out
}

func mustParse(t *testing.T, doc string) *config.Config {
	t.Helper()
	cfg, err := Parse([]byte(doc), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

const mergeDoc = `agent = "alice"
[safety]
inherit = false # this test is about [safety] and [agents], not the shipped rules
loop = "enforcing"
max_autonomous_steps = 50
risk_tolerance = "moderate"
deny = ["drop_*", "wipe_*"]
requires_approval = ["delete_*"]
auto_approve = ["get_*"]
[[safety.rules]]
action = "deny"
argument = "command"
pattern = "*rm -rf*"
[[safety.risk_rules]]
pattern = "*prod*"
score = 80

[agents.ci]
loop = "monitoring"
risk_tolerance = "conservative"
deny = ["*git push*", "DROP_*"]
auto_approve = ["*.run_tests"]
[[agents.ci.rules]]
action = "requires_approval"
operation = "fs.*"
argument = "path"
pattern = "/etc/*"
[[agents.ci.risk_rules]]
pattern = "*.publish*"
argument = "target"
score = 90
reason = "no publishing"

[agents.bob]
max_autonomous_steps = 5
`

func TestCompileMerge(t *testing.T) {
	cfg := mustParse(t, mergeDoc)

	base, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	if base.Principal != "alice" || base.Loop != LoopEnforcing || base.MaxSteps != 50 || base.Tolerance != "moderate" || base.Threshold != 30 {
		t.Errorf("base = %+v", base)
	}
	if got := sources(base.Deny); !slices.Equal(got, []string{"drop_*", "wipe_*"}) {
		t.Errorf("base deny = %v", got)
	}

	ci, err := Compile(cfg, "ci")
	if err != nil {
		t.Fatal(err)
	}
	// Scalars replace, unless the agent table leaves them out.
	if ci.Principal != "ci" || ci.Loop != LoopMonitoring || ci.Tolerance != "conservative" || ci.Threshold != 25 || ci.MaxSteps != 50 {
		t.Errorf("ci scalars = %+v", ci)
	}
	// Lists append; "DROP_*" is the same pattern as "drop_*" and is dropped.
	if got := sources(ci.Deny); !slices.Equal(got, []string{"drop_*", "wipe_*", "*git push*"}) {
		t.Errorf("ci deny = %v", got)
	}
	if got := sources(ci.RequiresApproval); !slices.Equal(got, []string{"delete_*"}) {
		t.Errorf("ci requires_approval = %v", got)
	}
	if got := sources(ci.AutoApprove); !slices.Equal(got, []string{"get_*", "*.run_tests"}) {
		t.Errorf("ci auto_approve = %v", got)
	}
	if len(ci.Rules) != 2 || ci.Rules[0].Source != `command~"*rm -rf*"` || ci.Rules[1].Source != `operation~"fs.*" path~"/etc/*"` {
		t.Errorf("ci rules = %+v", ci.Rules)
	}
	if ci.Rules[0].Operation.Source != "*" || ci.Rules[1].Action != ActionRequiresApproval {
		t.Errorf("ci rule details = %+v", ci.Rules)
	}
	if len(ci.RiskRules) != 2 || ci.RiskRules[1].Source != `target~"*.publish*"` || ci.RiskRules[1].Reason != "no publishing" || ci.RiskRules[1].Score != 90 {
		t.Errorf("ci risk rules = %+v", ci.RiskRules)
	}

	bob, err := Compile(cfg, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if bob.MaxSteps != 5 || bob.Loop != LoopEnforcing || len(bob.Deny) != 2 {
		t.Errorf("bob = %+v", bob)
	}

	// Merging must not write into the Config's slices.
	if len(cfg.Safety.Deny) != 2 || len(cfg.Safety.Rules) != 1 {
		t.Errorf("Compile modified the config: %+v", cfg.Safety)
	}

	// A principal with no agents table gets [safety] as is.
	other, err := Compile(cfg, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	if other.Principal != "someone-else" || len(other.Deny) != 2 {
		t.Errorf("other = %+v", other)
	}
}

func TestCompileAppendDoesNotAlias(t *testing.T) {
	cfg := &config.Config{
		Safety: config.Safety{Inherit: new(false), Deny: make([]string, 1, 10)},
		Agents: map[string]config.AgentOverride{"a": {Deny: []string{"a_*"}}, "b": {Deny: []string{"b_*"}}},
	}
	cfg.Safety.Deny[0] = "x_*"
	pa, err := Compile(cfg, "a")
	if err != nil {
		t.Fatal(err)
	}
	pb, err := Compile(cfg, "b")
	if err != nil {
		t.Fatal(err)
	}
	if got := sources(pa.Deny); !slices.Equal(got, []string{"x_*", "a_*"}) {
		t.Errorf("a deny = %v", got)
	}
	if got := sources(pb.Deny); !slices.Equal(got, []string{"x_*", "b_*"}) {
		t.Errorf("b deny = %v", got)
	}
}

func TestCompileVersion(t *testing.T) {
	cfg := mustParse(t, mergeDoc)
	a, _ := Compile(cfg, "ci")
	b, _ := Compile(mustParse(t, "# comments and spacing do not matter\n"+strings.ReplaceAll(mergeDoc, " = ", "=")), "ci")
	if len(a.Version) != 64 || a.Version != b.Version {
		t.Errorf("versions %q %q should be equal", a.Version, b.Version)
	}
	c, _ := Compile(cfg, "bob")
	if c.Version == a.Version {
		t.Error("different principals share a version")
	}
	cfg2 := mustParse(t, strings.Replace(mergeDoc, `"wipe_*"`, `"wipe_*", "purge_*"`, 1))
	d, _ := Compile(cfg2, "ci")
	if d.Version == a.Version {
		t.Error("adding a deny pattern did not change the version")
	}
}

func TestCompileHandBuiltConfig(t *testing.T) {
	p, err := Compile(&config.Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Principal != "default" || p.Loop != LoopEnforcing || p.MaxSteps != 100 || p.Tolerance != "moderate" || p.Threshold != 30 || p.Version == "" {
		t.Errorf("zero config policy = %+v", p)
	}

	_, err = Compile(&config.Config{
		Safety: config.Safety{Loop: "loud", Deny: []string{"{"}, Rules: []config.ArgRule{{Action: "deny", Pattern: "x"}}},
		Agents: map[string]config.AgentOverride{"x": {RiskRules: []config.RiskRule{{Pattern: "p", Score: 200}}}},
	}, "x")
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("err = %v", err)
	}
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Key)
		if e.Line != 0 {
			t.Errorf("hand-built config error has a line: %+v", e)
		}
	}
	want := []string{"safety.loop", "safety.deny[0]", "safety.rules[0].argument", "agents.x.risk_rules[0].score"}
	if !slices.Equal(keys, want) {
		t.Errorf("error keys = %v, want %v", keys, want)
	}

	if _, err := Compile(&config.Config{}, "not a name"); err == nil {
		t.Error("invalid principal accepted")
	}
	if _, err := Compile(nil, "x"); err == nil {
		t.Error("nil config accepted")
	}
}

func TestRuleAppliesTo(t *testing.T) {
	op, _ := CompilePattern("shell.*")
	r := Rule{Operation: op}
	if !r.AppliesTo(NameForms("shell_exec", "shell", "exec")) || r.AppliesTo(NameForms("fs_write", "fs", "write")) ||
		r.AppliesTo(NameForms("shell_exec", "", "")) || r.AppliesTo(CallNames{}) {
		t.Error("AppliesTo")
	}
	any, _ := CompilePattern("*")
	if !(Rule{Operation: any}).AppliesTo(CallNames{}) {
		t.Error(`"*" must cover a reported step, which has no names`)
	}
}

// TestCompileSensitivePaths: [safety] sensitive_paths adds to the
// shipped places (which stay), the managed layer's too, and aqlguard's
// own files are kept from the agent; a pattern that cannot match a clean
// absolute path is a config error at its index; the patterns are part
// of the policy's version.
func TestCompileSensitivePaths(t *testing.T) {
	cfg := mustParse(t, "state_dir = \"/srv/aqlguard-state\"\n[safety]\nsensitive_paths = [\"~/work/secrets/**\", \"**/credentials.json\"]\n")
	cfg.Path = "/opt/conf/aqlguard.toml"
	p, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	for clean, want := range map[string]string{
		"/home/u/work/secrets/prod.yaml": "sensitive_paths",
		"/home/u/proj/credentials.json":  "sensitive_paths",
		"/home/u/.ssh/id_rsa":            "SSH",
		"/srv/aqlguard-state/state.db":   "aqlguard",
		"/opt/conf/aqlguard.toml":        "aqlguard",
		"/home/u/work/public/notes.md":   "",
		"/opt/conf/other.toml":           "",
	} {
		got, ok := p.SensitivePaths.Match(clean, "/home/u")
		if ok != (want != "") || !strings.Contains(got.Reason, want) {
			t.Errorf("Match(%q) = %+v, %v; want %q", clean, got, ok, want)
		}
	}
	plain, err := Compile(mustParse(t, "[safety]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Version == p.Version {
		t.Error("sensitive_paths did not change the version")
	}
	if _, ok := plain.SensitivePaths.Match("/home/u/.aws/credentials", "/home/u"); !ok {
		t.Error("a config without sensitive_paths lost the shipped places")
	}
	if _, ok := plain.SensitivePaths.Match("/home/u/work/secrets/x", "/home/u"); ok {
		t.Error("another config's place leaked into this one")
	}

	_, err = Parse([]byte("[safety]\nsensitive_paths = [\"~/ok/**\", \"secrets/**\", \"~/a//b\"]\n"), "t.toml")
	for _, want := range []string{"safety.sensitive_paths[1]", "does not start with", "safety.sensitive_paths[2]", "clean path"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse of bad sensitive_paths: %v; want %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "[0]") {
		t.Errorf("a good pattern was reported: %v", err)
	}

	managed := mustManaged(t, "[safety]\nsensitive_paths = [\"/srv/vault/**\"]\n")
	eff, _ := Overlay(managed, mustUser(t, "[safety]\nsensitive_paths = [\"~/mine/**\"]\n"))
	mp, err := Compile(eff, "")
	if err != nil {
		t.Fatal(err)
	}
	for clean, want := range map[string]string{"/srv/vault/k": "managed policy", "/home/u/mine/x": "the configuration", "/etc/aqlguard/managed.toml": "aqlguard"} {
		if got, ok := mp.SensitivePaths.Match(clean, "/home/u"); !ok || !strings.Contains(got.Reason, want) {
			t.Errorf("managed + user: Match(%q) = %+v, %v; want %q", clean, got, ok, want)
		}
	}
	if got, ok := mp.Managed.SensitivePaths.Match("/srv/vault/k", "/home/u"); !ok || !strings.Contains(got.Reason, "managed") {
		t.Errorf("the managed layer alone: Match = %+v, %v", got, ok)
	}
}

// RootPaths are the clean paths of a server's file: roots, on every
// server: the roots its path arguments are judged against.
func TestServerRootPaths(t *testing.T) {
	cfg := mustParse(t, "[[servers]]\nname = \"fs\"\ncommand = \"x\"\nroots = [\"file:///home/alice/projects/\", \"FILE://localhost/srv//data\", \"https://example.com/repo\"]\n")
	if got, want := cfg.Servers[0].RootPaths(), []string{"/home/alice/projects", "/srv/data"}; !slices.Equal(got, want) {
		t.Errorf("RootPaths() = %q, want %q", got, want)
	}
	if got := (config.Server{}).RootPaths(); got != nil {
		t.Errorf("RootPaths() of a server without roots = %q", got)
	}
}
