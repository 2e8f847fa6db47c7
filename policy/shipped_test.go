package policy

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// withShipped ships doc instead of default.toml for the rest of the test.
func withShipped(t *testing.T, doc string) {
	t.Helper()
	cfg, err := Parse([]byte(doc), config.ShippedName)
	if err != nil {
		t.Fatal(err)
	}
	old := shipped
	shipped = func() *config.Config { return cfg }
	t.Cleanup(func() { shipped = old })
}

// inForce renders p's entries of one layer as "list rule".
func inForce(p *Policy, layer Layer) []string {
	var out []string
	for _, r := range p.InForce {
		if r.Origin.Layer == layer {
			out = append(out, r.List+" "+r.Rule)
		}
	}
	return out
}

// shippedEntries are the shipped configuration's entries as "list rule",
// each once, in list order.
func shippedEntries(t *testing.T) []string {
	t.Helper()
	c := &config.Config{Path: config.ShippedName, Safety: shipped().Safety}
	for k, n := range shipped().Lines() {
		c.SetLine(k, n)
	}
	p, err := Compile(c, "")
	if err != nil {
		t.Fatal(err)
	}
	return inForce(p, LayerShipped)
}

// TestShippedRulesStayOn: a configuration file adds to the shipped rules
// (issue 29, item 8). On f3570ff a file replaced them: a file that names
// an agent and a server had no deny, refuse or requires_approval at all.
func TestShippedRulesStayOn(t *testing.T) {
	const twoLines = "agent = \"me\"\n[[servers]]\nname = \"shell\"\ncommand = \"mcp-shell\"\n"
	all := shippedEntries(t)
	if len(all) == 0 {
		t.Fatal("default.toml ships no rules")
	}
	tests := []struct {
		name, doc, principal string
		shipped              []string // the shipped entries in force (nil: all)
		user                 []string // the user's entries in force, in order
	}{
		{name: "a two-line file keeps every shipped rule", doc: twoLines},
		{name: "a file's lists are added", doc: twoLines + "[safety]\ndeny = [\"*shutdown*\"]\nauto_approve = [\"*.run_tests\"]\n",
			user: []string{`deny "*shutdown*"`, `auto_approve "*.run_tests"`}},
		{name: "an entry the file repeats counts once, as the shipped one",
			doc:  twoLines + "[safety]\nrequires_approval = [\"DEPLOY_*\", \"*reboot*\"]\n",
			user: []string{`requires_approval "*reboot*"`}},
		{name: "rules and risk rules are added", doc: twoLines + "[[safety.rules]]\naction = \"deny\"\nargument = \"branch\"\npattern = \"main\"\n" +
			"[[safety.risk_rules]]\npattern = \"*prod*\"\nscore = 80\n",
			user: []string{`rules deny branch~"main"`, `risk_rules score 80 "*prod*"`}},
		{name: "an agent table adds to both", doc: twoLines + "[agents.me]\nrefuse = [\"*curl*\"]\n", principal: "me",
			user: []string{`refuse "*curl*"`}},
		{name: "inherit = true says what the default says", doc: twoLines + "[safety]\ninherit = true\n"},
		{name: "inherit = false starts from nothing", doc: twoLines + "[safety]\ninherit = false\ndeny = [\"*shutdown*\"]\n",
			shipped: []string{}, user: []string{`deny "*shutdown*"`}},
		{name: "inherit = false keeps what the file writes itself",
			doc: twoLines + "[safety]\ninherit = false\nrefuse = [\"drop_*\"]\n", shipped: []string{}, user: []string{`refuse "drop_*"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Compile(mustParse(t, tt.doc), tt.principal)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.shipped
			if want == nil {
				want = all
			}
			if got := inForce(p, LayerShipped); !slices.Equal(got, want) && len(got)+len(want) > 0 {
				t.Errorf("shipped entries in force:\n%q\nwant\n%q", got, want)
			}
			if got := inForce(p, LayerUser); !slices.Equal(got, tt.user) && len(got)+len(tt.user) > 0 {
				t.Errorf("the file's entries in force: %q, want %q", got, tt.user)
			}
			// What InForce lists is what the policy holds.
			n := len(p.Deny) + len(p.Refuse) + len(p.RequiresApproval) + len(p.AutoApprove) + len(p.Rules) + len(p.RiskRules) +
				len(p.ShellArguments) + len(p.SecretArguments)
			if n != len(p.InForce) {
				t.Errorf("InForce has %d entries, the policy %d", len(p.InForce), n)
			}
		})
	}
}

// TestInForceOrigins: each entry says where it comes from, with its line;
// a repeated entry says where else it is written.
func TestInForceOrigins(t *testing.T) {
	withShipped(t, "[safety]\ndeny = [\"*rm -rf /\"]\nrequires_approval = [\"delete_*\"]\n")
	cfg := mustParse(t, "agent = \"me\"\n[safety]\nrequires_approval = [\n  \"delete_*\",\n  \"*reboot*\",\n]\n[agents.me]\ndeny = [\"*halt*\"]\n")
	p, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.InForce {
		got = append(got, r.String())
	}
	want := []string{
		`deny "*rm -rf /", from shipped default.toml:2 (safety.deny[0])`,
		`deny "*halt*", from t.toml:8 (agents.me.deny[0])`,
		`requires_approval "delete_*", from shipped default.toml:3 (safety.requires_approval[0]); also t.toml:4 (safety.requires_approval[0])`,
		`requires_approval "*reboot*", from t.toml:5 (safety.requires_approval[1])`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("InForce:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestEveryShippedListIsInForce: whatever list default.toml fills (the
// lists are edited apart from this mechanism), each of its entries is in
// force under a file that says nothing of it. A list of [safety] that
// Compile did not take from the shipped layer fails here.
func TestEveryShippedListIsInForce(t *testing.T) {
	withShipped(t, `[safety]
deny = ["*rm -rf /"]
refuse = ["drop_*"]
requires_approval = ["delete_*"]
auto_approve = ["read_*"]
shell_arguments = ["runner.*:steps"]
secret_arguments = ["db.*:dsn"]
[[safety.rules]]
action = "requires_approval"
roles = ["path"]
pattern = "*/.ssh/*"
[[safety.risk_rules]]
pattern = "*prod*"
score = 70
`)
	for _, doc := range []string{"agent = \"me\"\n", string(defaultTOML)} {
		p, err := Compile(mustParse(t, doc), "")
		if err != nil {
			t.Fatal(err)
		}
		lists := map[string]int{}
		for _, r := range p.InForce {
			if r.Origin.Layer == LayerShipped {
				lists[r.List]++
			}
		}
		for f := range reflect.TypeFor[config.Safety]().Fields() {
			if f.Type.Kind() != reflect.Slice || tomlName(f) == "sensitive_paths" {
				// (The shipped sensitive places are paths.Shipped, each
				// with the reason the human is told; default.toml writes
				// none. TestShippedSensitivePlacesAreInForce holds them.)
				continue
			}
			if name := tomlName(f); lists[name] != 1 {
				t.Errorf("%s: %d shipped entries in force, want 1 (a new list of [safety]: give it an entry in this test's "+
					"shipped file, and take it from each layer in layerOf and build)", name, lists[name])
			}
		}
	}
}

// TestShippedSettingsAreTheDefaults: default.toml's settings are what a
// file that leaves them out gets, so "a file may set them" and "they are
// the defaults" are one statement.
func TestShippedSettingsAreTheDefaults(t *testing.T) {
	empty := mustParse(t, "")
	def := Default()
	for _, c := range []*config.Config{empty, def} {
		c.Path = ""
		c.ClearLines()
		s := &c.Safety
		s.Deny, s.Refuse, s.RequiresApproval, s.AutoApprove, s.Rules, s.RiskRules, s.ShellArguments, s.SecretArguments =
			nil, nil, nil, nil, nil, nil, nil, nil
	}
	if !reflect.DeepEqual(empty, def) {
		t.Errorf("default.toml sets other values than a file that leaves them out gets:\n%+v\n%+v", def, empty)
	}
}

// TestVersionFollowsShippedRules: approvals are bound to Version, so a
// change of the shipped rules is a change of the policy.
func TestVersionFollowsShippedRules(t *testing.T) {
	const doc = "agent = \"me\"\n[safety]\ndeny = [\"*halt*\"]\n"
	version := func(shippedDoc string) string {
		withShipped(t, shippedDoc)
		p, err := Compile(mustParse(t, doc), "")
		if err != nil {
			t.Fatal(err)
		}
		return p.Version
	}
	a := version("[safety]\nrequires_approval = [\"delete_*\"]\n")
	if b := version("[safety]\nrequires_approval = [\"delete_*\"]\n"); a != b {
		t.Error("the same shipped rules give another version")
	}
	for _, other := range []string{
		"[safety]\nrequires_approval = [\"delete_*\", \"deploy_*\"]\n",
		"[safety]\nrequires_approval = [\"remove_*\"]\n",
		"[safety]\nrequires_approval = [\"delete_*\"]\n[[safety.risk_rules]]\npattern = \"*prod*\"\nscore = 70\n",
	} {
		if version(other) == a {
			t.Errorf("shipping %q did not change the version", other)
		}
	}
	off := mustParse(t, doc+"inherit = false\n")
	p, _ := Compile(off, "")
	if p.Version == a {
		t.Error("inherit = false did not change the version")
	}
}

// TestInheritUnderAManagedLayer: the managed file decides whether the
// shipped rules are in force; a user's inherit = false is reported and
// not in effect; the managed layer alone (Policy.Managed) never holds
// them.
func TestInheritUnderAManagedLayer(t *testing.T) {
	withShipped(t, "[safety]\ndeny = [\"*rm -rf /\"]\n")
	tests := []struct {
		name, managed, user string
		on                  bool
		reported            string
	}{
		{"both say nothing", "[safety]\ndeny = [\"*mkfs*\"]\n", "agent = \"me\"\n", true, ""},
		{"the user's false is not in effect", "[safety]\ndeny = [\"*mkfs*\"]\n", "[safety]\ninherit = false\n", true,
			"config.toml:2: safety.inherit: false would take away the rules aqlguard ships"},
		{"the managed file's false turns them off", "[safety]\ninherit = false\n", "agent = \"me\"\n", false, ""},
		{"a user's true turns them on again", "[safety]\ninherit = false\n", "[safety]\ninherit = true\n", true, ""},
		{"a locked inherit stays on", "locked = [\"safety.inherit\"]\n", "[safety]\ninherit = false\n", true,
			"safety.inherit: is locked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eff, errs := Overlay(mustManaged(t, tt.managed), mustUser(t, tt.user))
			if tt.reported == "" && len(errs) > 0 || tt.reported != "" && (len(errs) == 0 || !strings.Contains(errs.Error(), tt.reported)) {
				t.Errorf("reported %v, want %q", errs, tt.reported)
			}
			p, err := Compile(eff, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := len(inForce(p, LayerShipped)) > 0; got != tt.on {
				t.Errorf("shipped rules in force: %v, want %v", got, tt.on)
			}
			if _, off := eff.InheritOff(); off == tt.on {
				t.Errorf("InheritOff says off = %v", off)
			}
			if len(inForce(p.Managed, LayerShipped)) > 0 {
				t.Error("the managed layer alone holds shipped rules")
			}
			if tt.on && (p.Deny[0].Layer() == LayerShipped) != (len(eff.Managed.Safety.Deny) == 0) {
				t.Errorf("the managed layer's deny is not first: %v", inForce(p, LayerShipped))
			}
		})
	}
}

// TestShippedNotInForce: with inherit = false, policy check can name the
// shipped rules that are not in force, and where the file said so.
func TestShippedNotInForce(t *testing.T) {
	withShipped(t, "[safety]\ndeny = [\"*rm -rf /\"]\nrefuse = [\"drop_*\"]\n")
	cfg := mustParse(t, "agent = \"me\"\n[safety]\ninherit = false\nrefuse = [\"DROP_*\"]\n")
	p, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	where, off := cfg.InheritOff()
	if !off || where.Line != 3 || !strings.Contains(where.Error(), "t.toml:3: safety.inherit: inherit = false") {
		t.Errorf("InheritOff = %v, %v", where, off)
	}
	var got []string
	for _, r := range ShippedNotInForce(cfg, p) {
		got = append(got, r.String())
	}
	if want := []string{`deny "*rm -rf /", from shipped default.toml:2 (safety.deny[0])`}; !slices.Equal(got, want) {
		t.Errorf("not in force: %q, want %q", got, want)
	}
	on := mustParse(t, "agent = \"me\"\n")
	if p, _ := Compile(on, ""); len(ShippedNotInForce(on, p)) > 0 {
		t.Error("rules not in force while inheriting")
	}
	if _, off := on.InheritOff(); off {
		t.Error("InheritOff while inheriting")
	}
}

// TestDuplicatesDropped: an entry written twice, in one layer or two,
// is in force once, for every kind of entry.
func TestDuplicatesDropped(t *testing.T) {
	withShipped(t, "[safety]\nshell_arguments = [\"runner.*:steps\"]\n[[safety.rules]]\naction = \"deny\"\nargument = \"branch\"\npattern = \"main\"\n")
	p, err := Compile(mustParse(t, `[safety]
shell_arguments = ["RUNNER.*:steps", "x"]
secret_arguments = ["db.*:dsn", "db.*:dsn"]
[[safety.rules]]
action = "deny"
argument = "branch"
pattern = "MAIN"
[[safety.risk_rules]]
pattern = "*prod*"
score = 70
[[safety.risk_rules]]
pattern = "*Prod*"
score = 70
[[safety.risk_rules]]
pattern = "*prod*"
score = 80
`), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ShellArguments) != 2 || len(p.SecretArguments) != 1 || len(p.Rules) != 1 || len(p.RiskRules) != 2 {
		t.Errorf("shell %d secret %d rules %d risk %d", len(p.ShellArguments), len(p.SecretArguments), len(p.Rules), len(p.RiskRules))
	}
}

// TestShippedUnderAManagedLock: a managed file that locks the user's
// approvals does not get the shipped ones in their place (on f3570ff a
// user without a file had the shipped lists as their own, and the lock
// cleared them), and never the shipped secret_arguments; the shipped
// restrictions stay.
func TestShippedUnderAManagedLock(t *testing.T) {
	withShipped(t, `[safety]
deny = ["*rm -rf /"]
auto_approve = ["read_*"]
secret_arguments = ["db.*:dsn"]
[[safety.rules]]
action = "auto_approve"
argument = "command"
pattern = "ls"
[[safety.rules]]
action = "deny"
argument = "branch"
pattern = "main"
`)
	tests := []struct {
		locked               string
		auto, rules, secrets int
	}{
		{"", 1, 2, 0},
		{`"safety.auto_approve"`, 0, 2, 0},
		{`"safety.rules"`, 1, 1, 0},
		{`"safety"`, 0, 1, 0},
		{`"safety.auto_approve", "safety.rules"`, 0, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.locked, func(t *testing.T) {
			eff, _ := Overlay(mustManaged(t, "locked = ["+tt.locked+"]\n"), Default())
			p, err := Compile(eff, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(p.AutoApprove) != tt.auto || len(p.Rules) != tt.rules || len(p.SecretArguments) != tt.secrets || len(p.Deny) != 1 {
				t.Errorf("auto_approve %d, rules %d, secret_arguments %d, deny %d; want %d, %d, %d, 1",
					len(p.AutoApprove), len(p.Rules), len(p.SecretArguments), len(p.Deny), tt.auto, tt.rules, tt.secrets)
			}
		})
	}
	// Without a managed layer the shipped secret_arguments are in force.
	if p, _ := Compile(Default(), ""); len(p.SecretArguments) != 1 {
		t.Errorf("secret_arguments %d, want 1", len(p.SecretArguments))
	}
}

// TestShippedSensitivePlacesAreInForce: a file that says nothing of
// sensitive places keeps the shipped ones, and one that adds a place
// keeps them too.
func TestShippedSensitivePlacesAreInForce(t *testing.T) {
	for _, doc := range []string{"agent = \"me\"\n", "[safety]\nsensitive_paths = [\"~/work/secrets/**\"]\n"} {
		p, err := Compile(mustParse(t, doc), "")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.SensitivePaths.Match("/home/u/.ssh/id_rsa", "/home/u"); !ok {
			t.Errorf("%q: ~/.ssh is not a sensitive place", doc)
		}
	}
}
