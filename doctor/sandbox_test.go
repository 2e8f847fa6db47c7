package doctor

import (
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/sandbox"
)

// TestSandboxChecks: doctor says what the machine enforces, each
// server's grant, and loudly the server whose sandbox is off and what an
// entry names that its grant leaves out.
func TestSandboxChecks(t *testing.T) {
	servers := []config.Server{
		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", t.TempDir()}},
		{Name: "loose", Command: "npx", Args: []string{"-y", "x"}, Sandbox: config.Sandbox{Mode: "off"}},
		{Name: "odd", Command: "npx", Args: []string{"-y", "x", "/"}},
		{Name: "remote", URL: "https://example.com/mcp"},
	}
	checks := sandboxChecks(servers, map[string]string{"fs": "filesystem (claude)"})
	byName := map[string][]Check{}
	for _, c := range checks {
		byName[c.Name] = append(byName[c.Name], c)
	}
	if m := byName["sandbox"]; len(m) != 1 || m[0].Detail != sandbox.Support().String() {
		t.Errorf("machine check: %+v", m)
	}
	if c := byName["sandbox of loose"]; len(c) != 1 || c[0].Level != Warn || !strings.Contains(c[0].Detail, "OFF") {
		t.Errorf("off: %+v", c)
	}
	fs := byName["sandbox of filesystem (claude)"]
	if len(fs) != 1 || !strings.Contains(fs[0].Detail, "write") || (sandbox.Support().Confines() && fs[0].Level != OK) {
		t.Errorf("fs: %+v", fs)
	}
	if c := byName["sandbox of odd"]; len(c) != 2 || c[1].Level != Warn || !strings.Contains(c[1].Detail, "is /, everything: not granted") {
		t.Errorf("odd: %+v", c)
	}
	if _, ok := byName["sandbox of remote"]; ok {
		t.Error("a remote server has no sandbox to check")
	}
}
