package clientconfig

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestWrapFlag(t *testing.T) {
	args := []string{"wrap", "--name", "fs", "-agent=cursor", "--url=https://x", "--", "npx", "--name", "inner"}
	for flag, want := range map[string]string{"--name": "fs", "--agent": "cursor", "--url": "https://x", "--config": ""} {
		if got := WrapFlag(args, flag); got != want {
			t.Errorf("WrapFlag(%s) = %q, want %q", flag, got, want)
		}
	}
}

// TestGuardedServers: the entries init wrote are read back as the
// servers they guard, with their name and principal; a bare entry is not.
func TestGuardedServers(t *testing.T) {
	home := t.TempDir()
	env := Env{GOOS: "linux", Home: home}
	path := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	body := `{"mcpServers": {
  "fs": {"command": "/opt/aqlguard", "args": ["wrap", "--name", "fs", "--agent", "cursor", "--", "npx", "-y", "server-filesystem", "/srv"]},
  "remote": {"command": "/opt/aqlguard", "args": ["wrap", "--name", "remote", "--agent", "cursor", "--url", "https://mcp.example.com/mcp", "--auth", "oauth"]},
  "bare": {"command": "npx", "args": ["-y", "server-memory"]}
}}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	got := GuardedServers(env, "", "cursor")
	if len(got) != 2 {
		t.Fatalf("GuardedServers = %+v, want fs and remote", got)
	}
	for _, g := range got {
		switch g.Entry.Name {
		case "fs":
			if g.Name != "fs" || g.Agent != "cursor" || !slices.Equal(g.Argv, []string{"npx", "-y", "server-filesystem", "/srv"}) || g.URL != "" {
				t.Errorf("fs: %+v", g)
			}
		case "remote":
			if g.URL != "https://mcp.example.com/mcp" || len(g.Argv) != 0 {
				t.Errorf("remote: %+v", g)
			}
		default:
			t.Errorf("not wrapped, listed: %+v", g)
		}
	}
}
