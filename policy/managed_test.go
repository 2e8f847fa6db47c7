package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

func mustManaged(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := parse([]byte(src), "/etc/aqlguard/managed.toml", true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustUser(t *testing.T, src string) *config.Config {
	t.Helper()
	c, err := Parse([]byte(src), "config.toml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestOverlayReportsEveryLoosening: each setting a user's file could use
// to loosen the managed layer is reported at its line and not in effect.
func TestOverlayReportsEveryLoosening(t *testing.T) {
	managed := mustManaged(t, `
agent = "team"
[safety]
risk_tolerance = "moderate"
[audit]
sync = "always"
[audit.forward]
to = "syslog"
address = "tls://siem.example:6514"
[verify]
session_approval_ttl = "1h"
[[servers]]
name = "git"
command = "/usr/bin/mcp-git"
`)
	tests := []struct {
		user, key string
		check     func(*config.Config) bool
	}{
		{"agent = \"me\"", "agent", func(c *config.Config) bool { return c.Agent == "team" }},
		{"[safety]\nloop = \"disabled\"", "safety.loop", nil},
		{"[safety]\nmax_autonomous_steps = 1000", "safety.max_autonomous_steps", nil},
		{"[safety]\nrisk_tolerance = \"aggressive\"", "safety.risk_tolerance", nil},
		{"[safety]\ninterpreter_code = \"allow\"", "safety.interpreter_code", nil},
		{"[agents.team]\nloop = \"monitoring\"", "agents.team.loop", nil},
		{"[agents.other]\ninterpreter_code = \"allow\"", "agents.other.interpreter_code", nil},
		{"[safety]\nsecret_arguments = [\"command\"]", "safety.secret_arguments[0]",
			func(c *config.Config) bool { return len(c.Safety.SecretArguments) == 0 }},
		{"[agents.team]\nsecret_arguments = [\"command\"]", "agents.team.secret_arguments[0]",
			func(c *config.Config) bool { return len(c.Agents["team"].SecretArguments) == 0 }},
		{"[verify]\nchannel = \"command\"\ncommand = [\"/home/me/yes.sh\"]", "verify.channel",
			func(c *config.Config) bool { return c.Verify.Channel == "dialog" && len(c.Verify.Command) == 0 }},
		{"[verify]\nsession_approval_ttl = \"8h\"", "verify.session_approval_ttl",
			func(c *config.Config) bool { return c.Verify.SessionApprovalTTL.Duration == time.Hour }},
		{"[verify]\nconfirmation_ttl = \"15m\"", "verify.confirmation_ttl",
			func(c *config.Config) bool { return c.Verify.ConfirmationTTL.Duration == config.DefaultConfirmationTTL }},
		{"[audit]\nsync = \"grouped\"", "audit.sync", func(c *config.Config) bool { return c.Audit.Sync == "always" }},
		{"[audit]\nmax_argument_bytes = 1024", "audit.max_argument_bytes",
			func(c *config.Config) bool { return c.Audit.MaxArgumentBytes == config.DefaultMaxArgumentBytes }},
		{"[audit.forward]\nto = \"file\"\npath = \"/dev/null\"", "audit.forward",
			func(c *config.Config) bool { return c.Audit.Forward.To == "syslog" }},
		{"[serve]\nauth = \"none\"", "serve.auth", func(c *config.Config) bool { return c.Serve.Auth == "token" }},
		{"[[servers]]\nname = \"git\"\ncommand = \"/home/me/fake-git\"", "servers[0].name",
			func(c *config.Config) bool {
				return len(c.Servers) == 1 && c.Servers[0].Command == "/usr/bin/mcp-git" && c.Servers[0].Managed
			}},
	}
	for _, tc := range tests {
		user := mustUser(t, tc.user)
		eff, errs := Overlay(managed, user)
		found := false
		for _, e := range errs {
			if e.Key == tc.key {
				found = true
				if e.Line == 0 || e.File != "config.toml" || !strings.Contains(e.Msg, "not in effect") {
					t.Errorf("%q: report %q lacks its line or says nothing of the effect", tc.user, e.Error())
				}
			}
		}
		if !found {
			t.Errorf("%q: %s not reported (got %v)", tc.user, tc.key, errs)
		}
		if tc.check != nil && !tc.check(eff) {
			t.Errorf("%q: in effect anyway", tc.user)
		}
		if !reflect.DeepEqual(eff.NotInEffect, errs) {
			t.Errorf("%q: NotInEffect differs from what Overlay returned", tc.user)
		}
		// The floors hold in the compiled policy too.
		p, err := Compile(eff, "team")
		if err != nil {
			t.Fatal(err)
		}
		if p.Loop != LoopEnforcing || p.MaxSteps != config.DefaultMaxAutonomousSteps || p.Tolerance != "moderate" || p.InterpreterCode != CodeAsk {
			t.Errorf("%q: settings in force %s %d %s %s", tc.user, p.Loop, p.MaxSteps, p.Tolerance, p.InterpreterCode)
		}
	}
}

// TestOverlayTightening: what is as strict or stricter is no finding and
// takes effect; the user's own servers and rules are added.
func TestOverlayTightening(t *testing.T) {
	managed := mustManaged(t, "[safety]\ndeny = [\"*rm -rf /*\"]\n[verify]\nsession_approval_ttl = \"1h\"\n")
	user := mustUser(t, `
[safety]
loop = "enforcing"
max_autonomous_steps = 20
risk_tolerance = "conservative"
interpreter_code = "deny"
deny = ["*shutdown*"]
[audit]
sync = "always"
max_argument_bytes = 1048576
[verify]
session_approval_ttl = "30m"
[[servers]]
name = "fs"
command = "mcp-fs"
`)
	eff, errs := Overlay(managed, user)
	if len(errs) > 0 {
		t.Fatalf("tightening reported: %v", errs)
	}
	if eff.Audit.Sync != "always" || eff.Audit.MaxArgumentBytes != 1048576 || eff.Verify.SessionApprovalTTL.Duration != 30*time.Minute {
		t.Fatalf("stricter settings not in effect: %+v %+v", eff.Audit, eff.Verify)
	}
	p, err := Compile(eff, "")
	if err != nil {
		t.Fatal(err)
	}
	shippedDeny := len(shipped().Safety.Deny)
	if p.MaxSteps != 20 || p.Tolerance != "conservative" || p.InterpreterCode != CodeDeny || len(p.Deny) != 2+shippedDeny {
		t.Fatalf("policy: %d %s %s %d", p.MaxSteps, p.Tolerance, p.InterpreterCode, len(p.Deny))
	}
	// The managed layer's first, then the shipped rules, then the user's.
	if last := p.Deny[len(p.Deny)-1]; p.Deny[0].Layer() != LayerManaged || last.Layer() != LayerUser || last.Source != "*shutdown*" {
		t.Fatalf("layers: %v %v", p.Deny[0].Layer(), last.Layer())
	}
	for _, d := range p.Deny[1 : 1+shippedDeny] {
		if d.Layer() != LayerShipped {
			t.Fatalf("%s: layer %v, want shipped", d.Source, d.Layer())
		}
	}
	if user.Servers[0].Managed || len(user.NotInEffect) > 0 || user.Managed != nil {
		t.Fatal("Overlay changed the user's Config")
	}
}

// TestLocked: a locked key of the user's file, or of an agent table
// beside it, is reported once and not in effect; a user's file cannot
// lock; locked names known keys only.
func TestLocked(t *testing.T) {
	managed := mustManaged(t, `locked = ["safety.auto_approve", "safety.rules", "servers.categories", "verify"]`)
	user := mustUser(t, `
[safety]
auto_approve = ["*"]
[[safety.rules]]
action = "auto_approve"
argument = "command"
pattern = "*"
[agents.default]
auto_approve = ["git.*"]
[verify]
timeout = "1m"
[[servers]]
name = "fs"
command = "mcp-fs"
categories = { write_file = "READ" }
`)
	eff, errs := Overlay(managed, user)
	var keys []string
	for _, e := range errs {
		keys = append(keys, e.Key)
	}
	want := []string{"safety.auto_approve", "safety.rules", "agents.default.auto_approve", "verify", "servers[0].categories"}
	for _, k := range want {
		found := false
		for _, got := range keys {
			found = found || got == k
		}
		if !found {
			t.Errorf("%s not reported; got %v", k, keys)
		}
	}
	if len(eff.Safety.AutoApprove)+len(eff.Safety.Rules)+len(eff.Agents["default"].AutoApprove) > 0 ||
		eff.Servers[0].Categories != nil || eff.Verify.Timeout.Duration != config.DefaultVerifyTimeout {
		t.Fatalf("locked keys in effect: %+v", eff.Safety)
	}
	if user.Servers[0].Categories == nil {
		t.Fatal("the user's Config was changed")
	}

	whole := mustManaged(t, `locked = ["safety"]`)
	eff, errs = Overlay(whole, mustUser(t, "[safety]\nauto_approve = [\"*\"]\n[agents.x]\nauto_approve = [\"*\"]\n"))
	if len(errs) != 2 || len(eff.Safety.AutoApprove) > 0 || len(eff.Agents) > 0 {
		t.Fatalf("locking [safety] leaves an agent table in effect: %v %+v", errs, eff.Agents)
	}
	if _, err := Parse([]byte(`locked = ["safety.deny"]`), "config.toml"); err == nil || !strings.Contains(err.Error(), "only the managed") {
		t.Fatalf("a user's file may lock: %v", err)
	}
	for _, bad := range []string{"safety.nope", "servers.env.HOME", "locked", ""} {
		if _, err := parse([]byte(`locked = ["`+bad+`"]`), "m.toml", true); err == nil {
			t.Errorf("locked %q accepted", bad)
		}
	}
}

// TestMergeRulesCoverEveryKey: every key of the configuration has a rule
// for how the user's file meets the managed layer, so a key added later
// cannot slip past it.
func TestMergeRulesCoverEveryKey(t *testing.T) {
	covered := map[string]bool{"locked": true, "servers": true, "agents": true}
	for _, r := range mergeRules {
		covered[r.key] = true
	}
	for _, s := range safetySettings {
		covered["safety."+s.key] = true
	}
	for _, k := range []string{"deny", "refuse", "requires_approval", "auto_approve", "rules", "risk_rules",
		"shell_arguments", "secret_arguments", "sensitive_paths"} {
		covered["safety."+k] = true // lists: added after the managed layer's; secret_arguments dropped
	}
	covered["safety.inherit"] = true // the managed file's (layering.safety)
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		typ = deref(typ)
		for f := range typ.Fields() {
			name := tomlName(f)
			if name == "" {
				continue
			}
			key := joinKey(prefix, name)
			if covered[key] {
				continue
			}
			if ft := deref(f.Type); ft.Kind() == reflect.Struct && isTable(ft) && ft != reflect.TypeFor[config.Duration]() {
				walk(key, ft)
				continue
			}
			t.Errorf("%s has no rule for a managed layer (mergeRules in managed.go)", key)
		}
	}
	walk("", configType)
}

// TestWritableBy: who may write a managed file or a directory above it.
func TestWritableBy(t *testing.T) {
	me := user{uid: 1000, groups: []int{1000, 27}}
	root := user{uid: 0, groups: []int{0}}
	tests := []struct {
		st   fileStat
		who  user
		want bool
	}{
		{fileStat{uid: 0, gid: 0, mode: 0o644}, me, false},
		{fileStat{uid: 0, gid: 0, mode: 0o664}, me, false},             // root's group, not mine
		{fileStat{uid: 0, gid: 27, mode: 0o664}, me, true},             // a group of mine
		{fileStat{uid: 0, gid: 0, mode: 0o646}, me, true},              // everyone
		{fileStat{uid: 1000, gid: 1000, mode: 0o444}, me, true},        // mine: I can chmod it
		{fileStat{uid: 1001, gid: 1001, mode: 0o644}, me, false},       // a service user's
		{fileStat{uid: 0, gid: 0, mode: 0o1777, dir: true}, me, false}, // /tmp
		{fileStat{uid: 0, gid: 0, mode: 0o777, dir: true}, me, true},
		{fileStat{uid: 0, gid: 0, mode: 0o644}, root, false},
		{fileStat{uid: 1000, gid: 0, mode: 0o644}, root, true},
		{fileStat{uid: 0, gid: 27, mode: 0o664}, root, true},
		{fileStat{uid: 0, gid: 0, mode: 0o664}, root, false},
		{fileStat{uid: 0, gid: 0, mode: 0o1777, dir: true}, root, false},
	}
	for _, tc := range tests {
		if got := writableBy(tc.st, tc.who) != ""; got != tc.want {
			t.Errorf("%+v by %+v: writable %v, want %v", tc.st, tc.who, got, tc.want)
		}
	}
}

// TestLoadManagedChecksTheFile: a real file, as root: root's 0644 file
// loads; one others can write, or in a directory others can write, is
// refused, and so is a link to one.
func TestLoadManagedChecksTheFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: the managed file's owner check needs root to make a root-owned file")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "managed.toml")
	if err := os.WriteFile(good, []byte("[safety]\ndeny = [\"*rm -rf /*\"]\nlocked = []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManaged(good); err == nil || !strings.Contains(err.Error(), "locked") {
		// locked under [safety] is an unknown key there: the file's own errors are reported
		t.Fatalf("a bad managed file loaded: %v", err)
	}
	if err := os.WriteFile(good, []byte("locked = [\"verify\"]\n[safety]\ndeny = [\"*rm -rf /*\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadManaged(good); err != nil || c.Locked[0] != "verify" {
		t.Fatalf("root's 0644 file: %v", err)
	}
	if err := os.Chmod(good, 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManaged(good); !errors.Is(err, ErrManagedWritable) {
		t.Fatalf("a world-writable file loaded: %v", err)
	}
	_ = os.Chmod(good, 0o644)
	open := filepath.Join(dir, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	inOpen := filepath.Join(open, "managed.toml")
	_ = os.WriteFile(inOpen, []byte("[safety]\n"), 0o644)
	if _, err := LoadManaged(inOpen); !errors.Is(err, ErrManagedWritable) {
		t.Fatalf("a file in a world-writable directory loaded: %v", err)
	}
	link := filepath.Join(dir, "link.toml")
	if err := os.Symlink(inOpen, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadManaged(link); !errors.Is(err, ErrManagedWritable) {
		t.Fatalf("a link to a file in a world-writable directory loaded: %v", err)
	}
	if err := os.Chown(good, 1000, 1000); err == nil {
		if _, err := LoadManaged(good); !errors.Is(err, ErrManagedWritable) {
			t.Fatalf("a file another user owns loaded, as root: %v", err)
		}
	}
	if _, err := LoadManaged(filepath.Join(dir, "missing.toml")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}

// TestFlagsAreTheUsers: --agent and --state-dir set what the user's file
// would; where the managed file fixes them, they are reported too.
func TestFlagsAreTheUsers(t *testing.T) {
	managed := mustManaged(t, "agent = \"team\"\nstate_dir = \"/var/lib/aqlguard\"\n")
	user := mustUser(t, "")
	user.Agent, user.StateDir = "me", "/tmp/fresh"
	user.SetOnCommandLine("agent")
	user.SetOnCommandLine("state_dir")
	eff, errs := Overlay(managed, user)
	if len(errs) != 2 || eff.Agent != "team" || eff.StateDir != "/var/lib/aqlguard" {
		t.Fatalf("flags: %v, agent %s, state %s", errs, eff.Agent, eff.StateDir)
	}
}
