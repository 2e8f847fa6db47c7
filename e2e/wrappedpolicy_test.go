package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicySeesWrappedServers (issue 31, item 7): after the real
// `aqlguard init` wrapped a Claude Desktop and a Cursor config in a
// temporary HOME, `policy explain` lists every tool of the wrapped
// servers under the principal each entry runs as, and `policy check
// --servers` checks the rules against them: no "no server is
// configured", no warning that only an empty server list would give.
func TestPolicySeesWrappedServers(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	env := isolatedEnv(t, dir)
	entry := func(name string) string {
		return `"` + name + `": {"command": ` + jsonString(bins.testserver) + `, "args": ["-name", "` + name + `"]}`
	}
	for path, body := range map[string]string{
		filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"): `{"mcpServers": {` + entry("notes-desktop") + `}}`,
		filepath.Join(home, ".cursor", "mcp.json"):                             `{"mcpServers": {` + entry("notes-cursor") + `, ` + entry("notes-desktop") + `}}`,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, path, body)
	}
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bins.aqlguard, args...)
		cmd.Env, cmd.Dir = env, dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	for _, client := range []string{"claude-desktop", "cursor"} {
		if out, errOut, code := run("init", "--client", client); code != 0 {
			t.Fatalf("init --client %s: %d\n%s%s", client, code, out, errOut)
		}
	}

	out, errOut, code := run("policy", "explain")
	t.Logf("policy explain:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("policy explain: exit %d", code)
	}
	for _, want := range []string{
		"agent claude-desktop", "agent cursor",
		"notesdesktop.get_item", "notesdesktop.drop_database", "notescursor.run_command",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("policy explain lacks %q", want)
		}
	}
	if strings.Contains(out+errOut, "no server is configured") || strings.Contains(out, "no tools") {
		t.Error("policy explain does not see the wrapped servers")
	}

	out, errOut, code = run("policy", "check", "--servers")
	t.Logf("policy check --servers:\n%s%s", out, errOut)
	if code != 0 {
		t.Fatalf("policy check --servers: exit %d", code)
	}
	if !strings.Contains(out, "0 warning(s)") || !strings.Contains(out, "of 3 server(s)") {
		t.Errorf("policy check --servers: want the 3 wrapped servers' tools checked with no warning:\n%s", out)
	}
}
