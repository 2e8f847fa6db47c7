package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// managedFile writes a managed policy where aqlguard accepts one: a file
// root owns and only root can write, in directories only root can write.
func managedFile(t *testing.T, content string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIP: a managed policy must be a file only root can write; this test needs root to make one")
	}
	dir := filepath.Join(t.TempDir(), "etc-aqlguard")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(dir), 0o755)
	path := filepath.Join(dir, "managed.toml")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// aqlguardCLI runs aqlguard with args in g's environment.
func aqlguardCLI(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	return aqlguardCLIEnv(t, dir, nil, args...)
}

// aqlguardCLIEnv is aqlguardCLI with env (KEY=VALUE) added.
func aqlguardCLIEnv(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bins.aqlguard, args...)
	cmd.Env = append(isolatedEnv(t, dir), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestManagedPolicyCannotBeLoosened: a user's config that tries to
// switch a managed deny off (the loop disabled, the command declared
// content, an auto_approve of everything, its own human channel, the
// command hidden as a secret) is refused by policy check, line by line;
// aqlguard runs with the managed policy in force all the same, the deny
// blocks, the call never reaches the server, and the audit records which
// layer decided and what the user's file tried.
func TestManagedPolicyCannotBeLoosened(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "deny")
	managed := managedFile(t, `
[safety]
deny = ["*rm -rf /*"]
`+h.config())
	user := `
mode = "all"
agent = "dev"

[safety]
loop = "disabled"
auto_approve = ["*"]
secret_arguments = ["command"]

[verify]
channel = "command"
command = ["/bin/echo"]

[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
arguments = { "run_command:command" = "content" }
`
	g := startGuard(t, user, "--managed", managed)

	out, errOut, code := aqlguardCLI(t, g.dir, "policy", "check", "--config", g.config, "--managed", managed)
	if code != 1 {
		t.Fatalf("policy check passed a config that loosens the managed policy: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"safety.loop", "safety.secret_arguments[0]", "verify.command", "not in effect"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("policy check does not report %s:\n%s", want, errOut)
		}
	}
	if !strings.Contains(errOut, "config.toml:6: safety.loop") {
		t.Errorf("policy check does not name the line:\n%s", errOut)
	}

	g.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": "rm -rf /"})
	rec := decisionRecord(t, g, "ts_run_command")
	if rec["decision"] != "block" || rec["layer"] != "managed" || rec["tool"] != "run_command" {
		t.Fatalf("decision record: %v", rec)
	}
	if args, _ := rec["args"].(map[string]any); args["command"] != "rm -rf /" {
		t.Fatalf("the user's secret_arguments hid the command from the audit: %v", rec["args"])
	}
	if b, err := os.ReadFile(filepath.Join(g.dir, "calls.jsonl")); err == nil && strings.Contains(string(b), "rm -rf") {
		t.Fatal("the denied call reached the server")
	}
	found := false
	for _, r := range auditRecords(t, g) {
		if r["kind"] == "policy" && r["operation"] == "not_in_effect" {
			found = strings.Contains(jsonString(r["factors"]), "safety.loop")
		}
	}
	if !found {
		t.Fatal("the audit does not record what the user's file tried")
	}
	if !strings.Contains(g.stderr(), "the managed policy does not let this setting take effect") {
		t.Fatalf("no warning at start:\n%s", g.stderr())
	}

	// --managed cannot be a file the user can write.
	mine := filepath.Join(t.TempDir(), "mine.toml")
	writeFile(t, mine, "[safety]\n")
	if err := os.Chmod(mine, 0o666); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = aqlguardCLI(t, g.dir, "policy", "check", "--config", g.config, "--managed", mine)
	if code == 0 || !strings.Contains(errOut, "refused") {
		t.Fatalf("a managed file everyone can write was accepted: exit %d %s", code, errOut)
	}
}
