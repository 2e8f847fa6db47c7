package redact

import (
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
)

// TestDisplayRoles: the role an argument is shown in comes from the
// tool's model (Call.Roles), else from what the evaluator reads today:
// the policy's declarations, then the name. Only what runs and where it
// acts is shown whole.
func TestDisplayRoles(t *testing.T) {
	cfg, err := policy.Parse([]byte(`
[safety]
shell_arguments = ["db.exec:line"]
[[servers]]
name = "db"
command = "x"
[servers.arguments]
"run:input" = "code"
"run:path" = "content"
`), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	run, exec := Call{Operation: "db_run", Server: "db", Tool: "run"}, Call{Operation: "db_exec", Server: "db", Tool: "exec"}
	run.Roles = map[string]policy.Role{"endpoint_ref": policy.RoleURL, "path": policy.RolePath}
	for _, c := range []struct {
		a    Call
		name string
		want policy.Role
	}{
		{run, "endpointRef", policy.RoleURL},  // the model, in the server's spelling
		{run, "path", policy.RoleContent},     // [servers.arguments] over the model, as the evaluator reads it
		{run, "input", policy.RoleCode},       // [servers.arguments]
		{exec, "line", policy.RoleCommand},    // shell_arguments
		{exec, "cmd", policy.RoleCommand},     // the name
		{exec, "api_token", policy.RoleOther}, // the name says nothing of a role
		{exec, "input", policy.RoleOther},     // declared for another tool
		{Call{Operation: "x_run", Server: "db", Tool: "x_run"}, "input", policy.RoleOther},
	} {
		if got := DisplayRole(pol, c.a, c.name); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.a.Tool, c.name, got, c.want)
		}
	}
	for r, whole := range map[policy.Role]bool{policy.RoleCommand: true, policy.RoleCode: true, policy.RolePath: true,
		policy.RoleURL: true, policy.RoleQuery: false, policy.RoleContent: false, policy.RoleOther: false, policy.RoleIdentifier: false} {
		if ShownInFull(r) != whole {
			t.Errorf("%s shown whole: %v", r, !whole)
		}
	}
}

// A cap keeps the first bytes of the redacted arguments and the size.
func TestArgumentsCap(t *testing.T) {
	w := ForRecord(map[string]any{"x": strings.Repeat("é", 1000)}, 1024)
	args, text, total := w.Args, w.Text, w.Bytes
	if args != nil || total <= 1024 || len(text) > 1024+len("…") || !strings.HasPrefix(text, `{"x":"éé`) {
		t.Errorf("capped: %q %d", text, total)
	}
	w = ForRecord(map[string]any{"x": "<y>"}, 1024)
	args, text = w.Args, w.Text
	if string(args) != `{"x":"<y>"}` || text != "" {
		t.Errorf("uncapped: %s %q", args, text)
	}
}

// TestArguments: every secret becomes its keyed digest (by the schema,
// by its name, nested under a secret name, or a credential the ruleset
// knows wherever it stands); a role shown in full is shown whole to the
// human alone; nothing is changed in place.
func TestArguments(t *testing.T) {
	key := []byte("audit key")
	pol, err := policy.Compile(&config.Config{}, "")
	if err != nil {
		t.Fatal(err)
	}
	const aws = "AKIAQYLPMN5HHHFPZAM2"
	a := Call{Operation: "db_exec", Server: "db", Tool: "exec", Secrets: []string{"dsn"},
		Arguments: map[string]any{"dsn": "postgres://u:pw@h/db", "api_token": "tok-123", "note": "key " + aws,
			"auth": map[string]any{"password": "hunter2", "user": "bob"}, "command": "DB_PASSWORD=hunter2 psql", "limit": 3}}
	got := Arguments(key, pol, a)
	digest := func(v any) string { return Digest(key, v) }
	for name, want := range map[string]any{"dsn": digest("postgres://u:pw@h/db"), "api_token": digest("tok-123"), "limit": 3} {
		if got[name] != want {
			t.Errorf("%s: %v, want %v", name, got[name], want)
		}
	}
	if auth := got["auth"].(map[string]any); auth["password"] != digest("hunter2") || auth["user"] != "bob" {
		t.Errorf("auth %v", auth)
	}
	for _, s := range []string{aws, "hunter2", "tok-123", "pw@h"} {
		if strings.Contains(Preview(a, got), s) {
			t.Errorf("the preview holds %q: %s", s, Preview(a, got))
		}
	}
	if a.Arguments["api_token"] != "tok-123" {
		t.Error("the arguments were changed in place")
	}
	once, again := digest("x"), Digest(key, "x")
	if once == Digest([]byte("other key"), "x") || once != again {
		t.Error("a digest is not keyed, or not stable")
	}
	s := Show(key, pol, a, got, Preview(a, got), "d")
	cmd, _ := s.args["command"].(string)
	if !strings.HasPrefix(cmd, "DB_PASSWORD=[secret redacted") || strings.Contains(cmd, "hunter2") || s.args["api_token"] != digest("tok-123") {
		t.Errorf("shown %v", s.args)
	}
	if Show(key, pol, Call{Reported: true, Hint: "x"}, nil, "x", "d") != nil {
		t.Error("a reported step is shown as a call")
	}
}
