package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/policy"
)

func find(checks []Check, name string) Check {
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestDoctor(t *testing.T) {
	home := t.TempDir()
	env := clientconfig.Env{GOOS: "linux", Home: home}
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(cursor), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cursor, []byte(`{"mcpServers": {"a": {"command": "/bin/true"}, "b": {"command": "/opt/aqlguard", "args": ["wrap", "--name", "b", "--", "/bin/false"]}, "r": {"url": "https://mcp.example.com/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(home, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "aqlguard.db"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	checks := Run(context.Background(), Input{Self: "/opt/aqlguard", Config: policy.Default(), StateDir: state, Env: env})
	if c := find(checks, "client cursor"); c.Level != Warn || !strings.Contains(c.Detail, "1 server(s) guarded") || !strings.Contains(c.Detail, "not guarded: a, r") {
		t.Errorf("client check: %+v", c)
	}
	if c := find(checks, "state"); c.Level != Warn || !strings.Contains(c.Detail, "want 0700") || !strings.Contains(c.Detail, "want 0600") {
		t.Errorf("state check: %+v", c)
	}
	if c := find(checks, "human channel"); c.Level != Fail || !strings.Contains(c.Detail, "no graphical display") {
		t.Errorf("channel check: %+v", c)
	}
	if c := find(checks, "policy"); c.Level != OK {
		t.Errorf("policy check: %+v", c)
	}
	// The wrapped server (b: /bin/false) is started, and fails.
	var server Check
	for _, c := range checks {
		if strings.HasPrefix(c.Name, "server ") {
			server = c
		}
	}
	if server.Level != Fail {
		t.Errorf("the wrapped server's check: %+v", server)
	}
}
