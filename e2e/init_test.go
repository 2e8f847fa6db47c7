package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tailscale/hujson"
)

// TestInitWrapsRealClientConfigs: for Claude Code, Cursor and VS Code
// configs naming our test server, `aqlguard init --config FILE` wraps the
// entry in place; the wrapped entry, started exactly as the client would
// start it, is a working guarded server that keeps the server's name and
// tool names; `aqlguard unwrap` gives back every byte; init twice changes
// nothing.
func TestInitWrapsRealClientConfigs(t *testing.T) {
	for _, c := range []struct {
		client, file, layout string
	}{
		{"claude-code", ".mcp.json", "mcpServers"},
		{"cursor", ".cursor/mcp.json", "mcpServers"},
		{"vscode", ".vscode/mcp.json", "servers"},
	} {
		t.Run(c.client, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			orig := `// written by hand
{
  "` + c.layout + `": {
    // our test server
    "notes-server": {
      ` + map[bool]string{true: `"type": "stdio",`, false: ""}[c.client == "vscode"] + `
      "command": ` + jsonString(bins.testserver) + `,
      "args": ["-name", "notes"],
      "env": {"NOTES_MODE": "test"},
    },
  },
}
`
			if c.client != "vscode" {
				// Only VS Code reads JSONC; the others get plain JSON.
				orig = `{
  "` + c.layout + `": {
    "notes-server": {
      "command": ` + jsonString(bins.testserver) + `,
      "args": ["-name", "notes"],
      "env": {"NOTES_MODE": "test"}
    }
  }
}
`
			}
			writeFile(t, path, orig)
			state := filepath.Join(dir, "state")
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(bins.aqlguard, append(args, "--config", path, "--client", c.client, "--state-dir", state)...)
				cmd.Env = isolatedEnv(t, dir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("aqlguard %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			if out := run("init"); !strings.Contains(out, "notes-server: wrapped") {
				t.Fatalf("init: %s", out)
			}
			wrapped, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if out := run("init"); !strings.Contains(out, "already wrapped") || !strings.Contains(out, "unchanged") {
				t.Errorf("init twice: %s", out)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, wrapped) {
				t.Error("init twice changed the file")
			}
			entry := readEntry(t, wrapped, c.layout, "notes-server")
			if entry.Command != bins.aqlguard || entry.Args[0] != "wrap" || entry.Env["NOTES_MODE"] != "test" {
				t.Fatalf("wrapped entry %+v", entry)
			}

			// Start it as the client would.
			cmd := exec.Command(entry.Command, entry.Args...)
			cmd.Env = append(isolatedEnv(t, dir), "NOTES_MODE="+entry.Env["NOTES_MODE"])
			cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
			if got := cs.InitializeResult().ServerInfo.Name; got != "notes" {
				t.Errorf("server name through the wrap: %q", got)
			}
			if !hasTool(listTools(t, cs), "get_item") || hasTool(listTools(t, cs), "ts_get_item") {
				t.Error("the wrapped server must keep its own tool names")
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "a1"}})
			if err != nil || res.IsError {
				t.Fatalf("a harmless call through the wrap: %v %s", err, jsonString(res))
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "rm -rf /"}})
			if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "PERMISSION_AGENT_BLOCKED") {
				t.Errorf("the default policy must guard the wrapped server: %v %s", err, jsonString(res))
			}
			cs.Close()

			if out := run("unwrap"); !strings.Contains(out, "notes-server: restored") {
				t.Fatalf("unwrap: %s", out)
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, []byte(orig)) {
				t.Errorf("unwrap is not byte-identical:\n%s", now)
			}
		})
	}
}

type clientEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// readEntry reads one server entry from a (possibly JSONC) client config.
func readEntry(t *testing.T, data []byte, layout, name string) clientEntry {
	t.Helper()
	std, err := hujson.Standardize(append([]byte(nil), data...))
	if err != nil {
		t.Fatalf("reading the wrapped config: %v\n%s", err, data)
	}
	var doc map[string]json.RawMessage
	var servers map[string]clientEntry
	if err := json.Unmarshal(std, &doc); err != nil {
		t.Fatalf("reading the wrapped config: %v\n%s", err, std)
	}
	if err := json.Unmarshal(doc[layout], &servers); err != nil {
		t.Fatalf("reading the wrapped config's %s: %v\n%s", layout, err, std)
	}
	return servers[name]
}
