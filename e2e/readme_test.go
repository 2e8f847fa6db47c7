package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
	"github.com/aqlguard/aqlguard/internal/fixture/xtest"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReadmeQuickStart runs the README's quick start as written, block by
// block, on a machine with one config file per client (each naming our
// test server): the install block from the repository root, each
// client's block from a project directory. Then every client's entry is
// started as that client would start it and must be a working guarded
// server with the server's own name and tools; `aqlguard unwrap` gives
// every file back byte for byte.
func TestReadmeQuickStart(t *testing.T) {
	long.Test(t)
	xtest.Require(t) // doctor checks that a dialog can be shown
	xtest.StartXvfb(t)
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := quickStartBlocks(t, string(readme))

	dir := t.TempDir()
	env := isolatedEnv(t, dir)
	home := filepath.Join(dir, "home")
	gopath := filepath.Join(dir, "go")
	// The module and build caches are the developer's: the test must not
	// download the world again, only install into a GOPATH of its own.
	env = append(env, "GOPATH="+gopath, "GOMODCACHE="+goEnv(t, "GOMODCACHE"), "GOCACHE="+goEnv(t, "GOCACHE"),
		"DISPLAY="+os.Getenv("DISPLAY"))
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}

	server := func(name string) string {
		return `"` + name + `": {"command": ` + jsonString(bins.testserver) + `, "args": ["-name", "` + name + `"]}`
	}
	files := map[string]struct{ path, layout, entry, body string }{
		"claude-desktop": {filepath.Join(home, ".config", "Claude", "claude_desktop_config.json"), "mcpServers", "notes-desktop",
			"{\n  \"mcpServers\": {\n    " + server("notes-desktop") + ",\n    \"remote\": {\"url\": \"https://mcp.example.com/mcp\"}\n  }\n}\n"},
		"claude-code": {filepath.Join(home, ".claude.json"), "mcpServers", "notes-code",
			"{\n  \"numStartups\": 12,\n  \"mcpServers\": {\n    " + server("notes-code") + "\n  },\n  \"projects\": {}\n}\n"},
		"cursor": {filepath.Join(home, ".cursor", "mcp.json"), "mcpServers", "notes-cursor",
			"{\n  \"mcpServers\": {\n    " + server("notes-cursor") + "\n  }\n}\n"},
		"vscode": {filepath.Join(home, ".config", "Code", "User", "mcp.json"), "servers", "notes-vscode",
			"// VS Code reads JSONC\n{\n  \"servers\": {\n    // the notes server\n    " + server("notes-vscode") + ",\n  },\n}\n"},
		// "Codex ... and Continue work the same way": run as the README
		// says, with their --client.
		"codex": {filepath.Join(home, ".codex", "config.toml"), "", "notes-codex",
			"model = \"gpt-5-codex\"\n\n[mcp_servers.notes-codex]  # the notes server\ncommand = " + jsonString(bins.testserver) +
				"\nargs = [\"-name\", \"notes-codex\"]\n\n[mcp_servers.remote]\nurl = \"https://mcp.example.com/mcp\"\n"},
		"continue": {filepath.Join(home, ".continue", "config.yaml"), "", "notes-continue",
			"name: assistant\nmcpServers:\n  - name: notes-continue # the notes server\n    command: " + jsonString(bins.testserver) +
				"\n    args: [\"-name\", \"notes-continue\"]\n  - name: remote\n    type: streamable-http\n    url: https://mcp.example.com/mcp\n"},
	}
	for _, f := range files {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, f.path, f.body)
	}

	// The other clients "work the same way": the first client's block with
	// their --client.
	for _, client := range []string{"codex", "continue"} {
		blocks = append(blocks, strings.ReplaceAll(blocks[1], "--client claude-desktop", "--client "+client))
	}
	for i, block := range blocks {
		wd := project
		if i == 0 {
			wd = ".." // `go install ./cmd/aqlguard` runs in the clone
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", block)
		cmd.Dir = wd
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		t.Logf("README block %d:\n%s\n---\n%s", i, block, out)
		if err != nil {
			t.Fatalf("README block %d failed: %v", i, err)
		}
	}

	self := filepath.Join(gopath, "bin", "aqlguard")
	for client, f := range files {
		t.Run(client, func(t *testing.T) {
			data, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			var e clientEntry
			if f.layout == "" {
				a := readAnyEntry(t, client, data, f.entry)
				e = clientEntry{Command: a.Command, Args: a.Args, Env: a.Env}
				if r := readAnyEntry(t, client, data, "remote"); r.Command != self || !slices.Contains(r.Args, "https://mcp.example.com/mcp") {
					t.Errorf("the remote entry is not a local aqlguard connecting to its URL:\n%s", data)
				}
			} else {
				e = readEntry(t, data, f.layout, f.entry)
			}
			if e.Command != self || len(e.Args) == 0 || e.Args[0] != "wrap" {
				t.Fatalf("%s: entry not wrapped by %s: %+v", f.path, self, e)
			}
			if client == "claude-desktop" && !bytes.Contains(data, []byte(`"--url",`)) && !bytes.Contains(data, []byte(`"https://mcp.example.com/mcp"`)) {
				t.Errorf("the remote entry is not a local aqlguard connecting to its URL:\n%s", data)
			}
			if (client == "codex" || client == "continue") && !bytes.Contains(data, []byte("# the notes server")) {
				t.Error("the comment is gone")
			}
			if client == "vscode" && !bytes.Contains(data, []byte("// the notes server")) {
				t.Error("the comment is gone")
			}
			cmd := exec.Command(e.Command, e.Args...)
			cmd.Env = env
			cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
			defer cs.Close()
			if got := cs.InitializeResult().ServerInfo.Name; got != f.entry {
				t.Errorf("server name through the wrap: %q", got)
			}
			// The server is new to aqlguard: its tools wait for one review,
			// given here as the README says, at the command line.
			approve := exec.Command(self, "pins", "approve", policy.ServerNameFrom(f.entry))
			approve.Env = env
			if out, err := approve.CombinedOutput(); err != nil {
				t.Fatalf("pins approve: %v\n%s", err, out)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "a1"}})
			if err != nil || res.IsError {
				t.Fatalf("a harmless call: %v %s", err, jsonString(res))
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop_database", Arguments: map[string]any{"name": "x"}})
			if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "PERMISSION_DENIED") {
				t.Errorf("drop_database must be refused: %v %s", err, jsonString(res))
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": "sudo rm -rf /"}})
			if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "verify_challenge") {
				t.Errorf("rm -rf / must block and ask for the code: %v %s", err, jsonString(res))
			}
		})
	}

	unwrap := exec.Command(self, "unwrap")
	unwrap.Dir, unwrap.Env = project, env
	if out, err := unwrap.CombinedOutput(); err != nil {
		t.Fatalf("aqlguard unwrap: %v\n%s", err, out)
	}
	for client, f := range files {
		if data, _ := os.ReadFile(f.path); string(data) != f.body {
			t.Errorf("%s: unwrap did not restore the file:\n%s", client, data)
		}
	}
}

// quickStartBlocks are the sh blocks of the README's quick start section.
func quickStartBlocks(t *testing.T, readme string) []string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## Quick start")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) != 5 || !strings.Contains(blocks[0], "go install") {
		t.Fatalf("the quick start has %d sh blocks, want the install block and one per client: %q", len(blocks), blocks)
	}
	return blocks
}

func goEnv(t *testing.T, key string) string {
	t.Helper()
	out, err := exec.Command("go", "env", key).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", key, err)
	}
	return strings.TrimSpace(string(out))
}
