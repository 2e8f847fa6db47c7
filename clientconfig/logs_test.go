package clientconfig

import (
	"strings"
	"testing"
)

// TestWhereLogs (issue 31, item 3): doctor and the README say where
// each client keeps aqlguard's log.
func TestWhereLogs(t *testing.T) {
	for _, tt := range []struct {
		env    Env
		client string
		want   string
	}{
		{Env{GOOS: "darwin", Home: "/Users/me"}, "claude-desktop", "/Users/me/Library/Logs/Claude/mcp-server-NAME.log"},
		{Env{GOOS: "windows", Home: `C:\Users\me`, AppData: `C:\Users\me\AppData\Roaming`}, "claude-desktop", `C:\Users\me\AppData\Roaming\Claude\logs\mcp-server-NAME.log`},
		{Env{GOOS: "linux", Home: t.TempDir()}, "claude-desktop", "no Linux build of its own"},
		{Env{GOOS: "linux", Home: "/home/me"}, "cursor", `"MCP Logs"`},
		{Env{GOOS: "linux", Home: "/home/me"}, "vscode", "Show Output"},
		{Env{GOOS: "linux", Home: "/home/me"}, "claude-code", "claude --debug"},
	} {
		if got := WhereLogs(tt.env, tt.client); !strings.Contains(got, tt.want) {
			t.Errorf("WhereLogs(%s, %s) = %q, want %q in it", tt.env.GOOS, tt.client, got, tt.want)
		}
	}
}
