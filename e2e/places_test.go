package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPathsJudgedAgainstRoots (issue 29, items 1 and 3): with the
// official filesystem server under the default policy (its profile
// matches: no review, no config beyond its entry), honest work inside
// its allowed directory runs without a question: reads, listings,
// searches for dangerous-sounding text, new files, edits and moves. A
// write outside it, a path that climbs out with "..", and reads of
// sensitive places (through a symbolic link too) ask the human, who is
// told why in plain words; denied, nothing reaches the server.
func TestPathsJudgedAgainstRoots(t *testing.T) {
	command, args := fsServer(t)
	root, outside := t.TempDir(), t.TempDir()
	h := newHuman(t)
	h.answer(t, "deny")
	g := startGuard(t, `
mode = "transparent"
`+h.config()+`
[[servers]]
name = "fs"
command = `+tomlString(command)+`
args = `+tomlArray(append(args, root)...)+`
`)
	home := filepath.Join(g.dir, "home")
	mustWrite := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite(filepath.Join(root, "README.md"), "DROP TABLE is in the migration notes; never rm -rf /.\n")
	mustWrite(filepath.Join(root, ".env"), "API_KEY=secret\n")
	mustWrite(filepath.Join(home, ".ssh", "id_rsa"), "-----BEGIN OPENSSH PRIVATE KEY-----\n")
	mustWrite(filepath.Join(home, ".ssh", "authorized_keys"), "ssh-ed25519 AAAA\n")
	mustWrite(filepath.Join(outside, "notes.txt"), "outside\n")
	mustWrite(filepath.Join(outside, ".env"), "OTHER_KEY=secret\n")
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(root, "keys")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	call := func(tool string, a map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	honest := []struct {
		tool string
		args map[string]any
	}{
		{"read_text_file", map[string]any{"path": filepath.Join(root, "README.md")}},
		{"list_directory", map[string]any{"path": root}},
		{"search_files", map[string]any{"path": root, "pattern": "drop table"}},
		{"search_files", map[string]any{"path": root, "pattern": "rm -rf"}},
		{"write_file", map[string]any{"path": filepath.Join(root, "todo.txt"), "content": "- rm -rf build/ before release\n"}},
		{"edit_file", map[string]any{"path": filepath.Join(root, "todo.txt"),
			"edits": []any{map[string]any{"oldText": "build/", "newText": "dist/"}}}},
		{"create_directory", map[string]any{"path": filepath.Join(root, "done")}},
		{"move_file", map[string]any{"source": filepath.Join(root, "todo.txt"), "destination": filepath.Join(root, "done", "todo.txt")}},
		// ".." that stays inside the root is no escape.
		{"read_text_file", map[string]any{"path": root + "/done/../README.md"}},
		// The project's own .env (issue 30: the flow judgement follows
		// what it holds).
		{"read_text_file", map[string]any{"path": filepath.Join(root, ".env")}},
		{"edit_file", map[string]any{"path": filepath.Join(root, ".env"),
			"edits": []any{map[string]any{"oldText": "API_KEY=secret", "newText": "API_KEY=secret\nLOG_LEVEL=debug"}}}},
	}
	for _, c := range honest {
		if res := call(c.tool, c.args); res.IsError {
			t.Errorf("honest %s %v: %s", c.tool, c.args, jsonString(res))
		}
	}
	if n := len(h.requests(t)); n != 0 {
		t.Fatalf("honest work inside the root asked the human %d times: %v", n, h.requests(t))
	}
	if got := readFile(t, filepath.Join(root, "done", "todo.txt")); !strings.Contains(got, "dist/") {
		t.Errorf("the moved, edited file holds %q", got)
	}

	asks := []struct {
		name, tool string
		args       map[string]any
		reason     string
	}{
		{"a write outside the root", "write_file", map[string]any{"path": filepath.Join(outside, "x.txt"), "content": "x"},
			"outside the fs server's roots"},
		{"a path that climbs out", "read_text_file", map[string]any{"path": root + "/../" + filepath.Base(outside) + "/notes.txt"},
			`climbs out with ".."`},
		{"an SSH key", "read_text_file", map[string]any{"path": filepath.Join(home, ".ssh", "id_rsa")}, "SSH"},
		{"an SSH key through a link inside the root", "read_text_file", map[string]any{"path": filepath.Join(root, "keys", "authorized_keys")},
			"a link to " + filepath.Join(home, ".ssh")},
		{"a .env file outside the root", "read_text_file", map[string]any{"path": filepath.Join(outside, ".env")}, "a .env file"},
	}
	for i, c := range asks {
		res := call(c.tool, c.args)
		if !res.IsError {
			t.Errorf("%s ran: %s", c.name, jsonString(res))
			continue
		}
		reqs := h.requests(t)
		if len(reqs) != i+1 {
			t.Fatalf("%s: %d questions, want %d", c.name, len(reqs), i+1)
		}
		if reason, _ := reqs[i]["reason"].(string); !strings.Contains(reason, c.reason) {
			t.Errorf("%s: the human is told %q, want it to say %q", c.name, reason, c.reason)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x.txt")); err == nil {
		t.Error("the denied write outside the root reached the server")
	}
}

// TestSensitiveResourceReadAsks: a resources/read of a file: URI is a
// read of the place it names: an SSH key asks (and, denied, is not
// read); an ordinary file is read.
func TestSensitiveResourceReadAsks(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "deny")
	g := startGuard(t, `
mode = "transparent"
`+h.config()+`
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-resources", "-log", "{{.dir}}/calls.jsonl"]
`)
	home := filepath.Join(g.dir, "home")
	ctx := context.Background()
	if _, err := g.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///srv/readme.txt"}); err != nil {
		t.Fatalf("an ordinary file: %v", err)
	}
	if n := len(h.requests(t)); n != 0 {
		t.Fatalf("an ordinary read asked %d times", n)
	}
	_, err := g.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file://" + home + "/.ssh/id_rsa"})
	if err == nil {
		t.Fatal("the SSH key was read")
	}
	reqs := h.requests(t)
	if len(reqs) != 1 || !strings.Contains(reqs[0]["reason"].(string), "SSH") {
		t.Errorf("the human was asked %v", reqs)
	}
}
