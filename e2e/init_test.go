package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
	"gopkg.in/yaml.v3"
)

// TestInitWrapsRealClientConfigs: for Claude Code, Cursor and VS Code
// configs naming our test server, `aqlguard init --client-config FILE` wraps the
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
				cmd := exec.Command(bins.aqlguard, append(args, "--client-config", path, "--client", c.client, "--state-dir", state)...)
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
			// The wrapped server is new to aqlguard: its tools wait for the
			// human's review, given here at the command line.
			approveReview(t, cmd.Env, "get_item")
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

// TestInitWrapsRemoteEntries: a remote (URL) entry of a JSON, a Codex
// (TOML) and a Continue (YAML) config, sending an API key and a header of
// its own, becomes a local aqlguard that connects to the URL; started as
// each client starts a server (Codex passes only the variables env_vars
// lists), it reaches our test server over Streamable HTTP with both
// headers, its calls go through the guard, and unwrap gives back every
// byte, comments and all.
func TestInitWrapsRemoteEntries(t *testing.T) {
	url := startTestServerHTTP(t, "-name", "notes", "-require-header", "Authorization=Bearer s3cret", "-require-header", "X-Team=blue")
	if resp, err := http.Post(url, "application/json", strings.NewReader(`{}`)); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the server must refuse a request without the headers: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for _, c := range []struct {
		client, file, body string
		parentEnv          []string // the client's own environment
	}{
		{"claude-desktop", "claude_desktop_config.json", `{
  "mcpServers": {
    "notes": {
      "url": "` + url + `",
      "headers": {"Authorization": "Bearer s3cret", "X-Team": "blue"},
      "timeout": 30000
    }
  }
}
`, nil},
		{"codex", "config.toml", `model = "gpt-5-codex"

# the notes server, remote
[mcp_servers.notes]
url = "` + url + `"   # Streamable HTTP
bearer_token_env_var = "NOTES_TOKEN" # from the shell
tool_timeout_sec = 30
[mcp_servers.notes.http_headers]
# the team
X-Team = "blue"
`, []string{"NOTES_TOKEN=s3cret"}},
		{"continue", "config.yaml", `name: assistant
mcpServers:
  # the notes server, remote
  - name: notes
    type: streamable-http # not sse
    url: ` + url + `
    apiKey: s3cret
    requestOptions:
      headers:
        X-Team: blue # the team
    connectionTimeout: 30
`, nil},
	} {
		t.Run(c.client, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, c.file)
			writeFile(t, path, c.body)
			state := filepath.Join(dir, "state")
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(bins.aqlguard, append(args, "--client-config", path, "--client", c.client, "--state-dir", state)...)
				cmd.Env = isolatedEnv(t, dir)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("aqlguard %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			if out := run("init"); !strings.Contains(out, "notes: wrapped") {
				t.Fatalf("init: %s", out)
			}
			wrapped, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(wrapped, []byte(url)) && !bytes.Contains(wrapped, []byte(`"--url", "`+url)) && !bytes.Contains(wrapped, []byte(`"--url","`+url)) {
				t.Errorf("the URL is left somewhere else than aqlguard's arguments:\n%s", wrapped)
			}
			if out := run("init"); !strings.Contains(out, "already wrapped") {
				t.Errorf("init twice: %s", out)
			}
			e := readAnyEntry(t, c.client, wrapped, "notes")
			if e.Command != bins.aqlguard || !slices.Contains(e.Args, "--url") || e.Args[len(e.Args)-1] != "none" {
				t.Fatalf("wrapped entry %+v\n%s", e, wrapped)
			}

			// Start it as the client would: its env on top of the client's
			// own, of which Codex passes only a few variables and those
			// env_vars names.
			env := isolatedEnv(t, dir)
			if c.client == "codex" {
				pass := append([]string{"HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ"}, e.EnvVars...)
				env = slices.DeleteFunc(append(env, c.parentEnv...), func(kv string) bool {
					name, _, _ := strings.Cut(kv, "=")
					return !slices.Contains(pass, name)
				})
				if !slices.Contains(env, "XDG_STATE_HOME="+filepath.Join(dir, "home", ".local", "state")) {
					t.Errorf("Codex would not pass aqlguard its state directory: env_vars %q", e.EnvVars)
				}
			}
			for k, v := range e.Env {
				env = append(env, k+"="+v)
			}
			cmd := exec.Command(e.Command, e.Args...)
			cmd.Env = env
			cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
			defer cs.Close()
			if got := cs.InitializeResult().ServerInfo.Name; got != "notes" {
				t.Errorf("server name through the wrap: %q", got)
			}
			// The wrapped server is new to aqlguard: its tools wait for the
			// human's review, given here at the command line.
			approveReview(t, cmd.Env, "get_item")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "a1"}})
			if err != nil || res.IsError {
				t.Fatalf("a harmless call through the wrap: %v %s", err, jsonString(res))
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "rm -rf /"}})
			if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "PERMISSION_AGENT_BLOCKED") {
				t.Errorf("the default policy must guard the remote server: %v %s", err, jsonString(res))
			}
			cs.Close()

			if out := run("unwrap"); !strings.Contains(out, "notes: restored") {
				t.Fatalf("unwrap: %s", out)
			}
			if now, _ := os.ReadFile(path); string(now) != c.body {
				t.Errorf("unwrap is not byte-identical:\n%s", now)
			}
		})
	}
}

// anyEntry is a server entry as a client reads it: what it starts, with
// what environment (Codex: and which of its own variables it passes on).
type anyEntry struct {
	Command string            `json:"command" toml:"command" yaml:"command"`
	Args    []string          `json:"args" toml:"args" yaml:"args"`
	Env     map[string]string `json:"env" toml:"env" yaml:"env"`
	EnvVars []string          `toml:"env_vars"`
	Name    string            `yaml:"name"`
}

// readAnyEntry reads one server entry from a client's config with that
// format's own library, not aqlguard's editor.
func readAnyEntry(t *testing.T, client string, data []byte, name string) anyEntry {
	t.Helper()
	switch client {
	case "codex":
		var doc struct {
			MCPServers map[string]anyEntry `toml:"mcp_servers"`
		}
		if err := toml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("Codex's config does not parse: %v\n%s", err, data)
		}
		return doc.MCPServers[name]
	case "continue":
		var doc struct {
			MCPServers []anyEntry `yaml:"mcpServers"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("Continue's config does not parse: %v\n%s", err, data)
		}
		for _, e := range doc.MCPServers {
			if e.Name == name {
				return e
			}
		}
		return anyEntry{}
	}
	var doc struct {
		MCPServers map[string]anyEntry `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("the config is not plain JSON: %v\n%s", err, data)
	}
	return doc.MCPServers[name]
}

// approveReview approves, as the user would at the command line with
// `aqlguard pins approve SERVER`, the first-sight review of the server
// whose tool tool a wrapped aqlguard (started with env) lists as new.
func approveReview(t *testing.T, env []string, tool string) {
	t.Helper()
	cmd := exec.Command(bins.aqlguard, "pins", "list")
	cmd.Env = env
	list, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("pins list: %v\n%s", err, list)
	}
	server := ""
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == tool && f[2] == "NEW," {
			server = f[0]
		}
	}
	if server == "" {
		t.Fatalf("no server's %s waits for its review:\n%s", tool, list)
	}
	cmd = exec.Command(bins.aqlguard, "pins", "approve", server)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "approved") {
		t.Fatalf("pins approve %s: %v\n%s", server, err, out)
	}
}
