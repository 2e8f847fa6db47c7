package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/verify"
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
	if err := os.WriteFile(cursor, []byte(`{"mcpServers": {"a": {"command": "/bin/true"}, "b": {"command": "/opt/aqlguard", "args": ["wrap", "--name", "b", "--", "/bin/false"]}, "r": {"url": "https://mcp.example.com/mcp"}, "w": {"command": "/opt/aqlguard", "args": ["wrap", "--name", "w", "--agent", "cursor", "--url", "https://w.example.com/mcp", "--auth", "oauth"]}}}`), 0o600); err != nil {
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
	if c := find(checks, "client cursor"); c.Level != Warn || !strings.Contains(c.Detail, "2 server(s) guarded") || !strings.Contains(c.Detail, "not guarded: a, r") {
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
	if c := find(checks, "server b (cursor)"); c.Level != Fail {
		t.Errorf("the wrapped server's check: %+v", c)
	}
	// The wrapped remote one is named, with what doctor did not do.
	if c := find(checks, "server w (cursor)"); c.Level != OK || !strings.Contains(c.Detail, "https://w.example.com/mcp") || !strings.Contains(c.Detail, "doctor does not") {
		t.Errorf("the wrapped remote server's check: %+v", c)
	}
	// Where Cursor keeps aqlguard's log (issue 31, item 3).
	if c := find(checks, "log cursor"); c.Level != OK || !strings.Contains(c.Detail, "MCP Logs") {
		t.Errorf("the log check: %+v", c)
	}
}

// A server that a package runner fetches first gets a hint when its
// start times out; other commands do not.
func TestFirstRunHint(t *testing.T) {
	for _, tc := range []struct {
		argv    []string
		timeout time.Duration
		want    string
	}{
		{[]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}, 10 * time.Second,
			"npx downloads @modelcontextprotocol/server-filesystem on its first run, which can take longer than 10s: " +
				"start it once yourself, or wait longer with aqlguard doctor --timeout 2m"},
		{[]string{"/usr/local/bin/uvx", "mcp-server-git"}, 5 * time.Minute, "uvx downloads mcp-server-git on its first run, " +
			"which can take longer than 5m: start it once yourself, or wait longer with aqlguard doctor --timeout 10m"},
		{[]string{"/usr/bin/bunx", "pkg"}, time.Hour, "bunx downloads pkg on its first run, which can take longer than 1h: start it once yourself, or wait longer with aqlguard doctor --timeout 2h"},
		{[]string{"node", "server.js"}, 10 * time.Second, ""},
		{[]string{"npx", "-y"}, 10 * time.Second, ""},
		{nil, 10 * time.Second, ""},
	} {
		got := firstRunHint(tc.argv, tc.timeout)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("firstRunHint(%q, %s) = %q, want %q", tc.argv, tc.timeout, got, tc.want)
		}
	}
}

// --client limits the checks to that client's files.
func TestDoctorOneClient(t *testing.T) {
	home := t.TempDir()
	env := clientconfig.Env{GOOS: "linux", Home: home}
	for _, p := range []string{filepath.Join(home, ".cursor", "mcp.json"), filepath.Join(home, ".claude.json")} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DISPLAY", "")
	checks := Run(context.Background(), Input{Self: "/opt/aqlguard", Config: policy.Default(), StateDir: t.TempDir(), Env: env,
		Clients: []string{"cursor"}})
	if c := find(checks, "client cursor"); c.Level == "" {
		t.Errorf("cursor was not checked: %+v", checks)
	}
	if c := find(checks, "client claude-code"); c.Level != "" {
		t.Errorf("claude-code was checked too: %+v", c)
	}
}

// What the last start of each client's aqlguard could reach is
// reported beside what doctor's own shell can, with the fix for one
// that reached nobody.
func TestDoctorReportsWhatClientsReached(t *testing.T) {
	state := t.TempDir()
	dir := verify.ReachDir(state)
	at := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	for _, r := range []verify.Reach{
		{Agent: "claude-desktop", StartedBy: "claude (pid 7)", PID: 8, At: at, Channel: "dialog", Reached: true,
			Where: "DISPLAY=:0", From: "the environment of claude (pid 7), which started aqlguard"},
		{Agent: "inspector", StartedBy: "node (pid 9)", PID: 10, At: at.Add(time.Minute), Channel: "dialog",
			Problem: "dialog channel: no graphical display; neither aqlguard's environment nor the processes that started it name a display that answers"},
	} {
		if err := verify.WriteReach(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("DISPLAY", ":7")
	t.Setenv("WAYLAND_DISPLAY", "")
	checks := reaches(Input{StateDir: state})
	if len(checks) != 2 {
		t.Fatalf("checks: %+v", checks)
	}
	if c := find(checks, "human channel (claude-desktop's aqlguard)"); c.Level != OK ||
		!strings.Contains(c.Detail, "dialogs go to DISPLAY=:0 (the environment of claude (pid 7), which started aqlguard); last started by claude (pid 7)") {
		t.Errorf("reached: %+v", c)
	}
	c := find(checks, "human channel (inspector's aqlguard)")
	for _, want := range []string{"no dialog could be put up", "no graphical display", "last started by node (pid 9)",
		`"env": {"DISPLAY": ":7"}`, `channel = "command"`} {
		if c.Level != Fail || !strings.Contains(c.Detail, want) {
			t.Errorf("not reached: %+v lacks %q", c, want)
		}
	}
	if checks[0].Name != "human channel (inspector's aqlguard)" {
		t.Errorf("not newest first: %+v", checks)
	}
}
