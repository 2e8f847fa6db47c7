package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
	"github.com/aqlguard/aqlguard/internal/fixture/xtest"
	"github.com/aqlguard/aqlguard/verify"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDialogAnswersTheGuardedCall: aqlguard on a private Xvfb display with
// the dialog channel. A requires_approval call puts up the zenity
// question; xdotool reads its text and answers as a human would, and the
// call proceeds (Allow once) or is refused (Deny) accordingly.
func TestDialogAnswersTheGuardedCall(t *testing.T) {
	long.Test(t)
	xtest.Require(t)
	display := xtest.StartXvfb(t)
	g, err := launchGuard(t, guardOptions{Config: `
mode = "semantic"
agent = "desk-agent"
[verify]
channel = "dialog"
inline_wait = "45s"
[safety]
requires_approval = ["ts_delete_note"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`, Env: []string{"DISPLAY=" + display}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(id string) <-chan *mcp.CallToolResult {
		out := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, err := g.callRaw("mcp_aql_delete", map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": id}})
			if err != nil {
				t.Errorf("call: %v", err)
			}
			out <- res
		}()
		return out
	}
	result := func(ch <-chan *mcp.CallToolResult) string {
		select {
		case res := <-ch:
			if res == nil {
				t.Fatal("no result")
			}
			return resultText(t, res)
		case <-time.After(60 * time.Second):
			t.Fatal("the guarded call did not return")
			return ""
		}
	}

	pending := call("note-allowed")
	w := xtest.Window(t, "aqlguard: allow this action?")
	xtest.Screenshot(t, "e2e-question")
	xtest.Focus(t, w)
	xtest.Keys(t, "Tab", "Tab", "Tab", "space") // Allow once: never the default
	if text := result(pending); !strings.Contains(text, `"success":true`) {
		t.Errorf("allowed in the dialog, but: %s", text)
	}

	pending = call("note-denied")
	w = xtest.Window(t, "aqlguard: allow this action?")
	text := xtest.CopySelection(t, w)
	for _, want := range []string{"aqlguard-e2e wants to delete something with the ts server (delete_note).",
		"Why you are asked: your policy asks a person before calls like this.",
		`Decided by: requires_approval "ts_delete_note"`, "id:\n  note-denied\n",
		"Agent: desk-agent · client: aqlguard-e2e · server: ts · tool: delete_note"} {
		if !strings.Contains(text, want) {
			t.Errorf("dialog text lacks %q:\n%s", want, text)
		}
	}
	xtest.Window(t, "aqlguard: allow this action?")
	xtest.Keys(t, "Return") // Deny, the default
	if text := result(pending); !strings.Contains(text, "PERMISSION_DENIED") {
		t.Errorf("denied in the dialog, but: %s", text)
	}
	calls := readCalls(t, g.dir+"/calls.jsonl")
	if len(calls) != 1 || !strings.Contains(string(calls[0].Arguments), "note-allowed") {
		t.Errorf("the server saw %v", calls)
	}
}

// TestDialogShowsTheCodeThatUnblocks: a deny match on a private Xvfb
// display. The verification dialog appears with the agent, the action
// and the expiry; xdotool selects and copies its text as a human would,
// and verify_challenge with the code found there lifts the block. The
// code is in nothing aqlguard wrote.
func TestDialogShowsTheCodeThatUnblocks(t *testing.T) {
	long.Test(t)
	xtest.Require(t)
	display := xtest.StartXvfb(t)
	g, err := launchGuard(t, guardOptions{Config: `
mode = "single"
agent = "desk-agent"
[verify]
channel = "dialog"
[safety]
deny = ["*drop_database*"]
auto_approve = ["ts_echo"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`, Env: []string{"DISPLAY=" + display}, TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	id := block(t, g)
	w := xtest.Window(t, "aqlguard: verification code")
	xtest.Focus(t, w)
	digit := `[0-9A-HJKMNP-TV-Z]`
	codeLine := regexp.MustCompile(`(?m)^(` + digit + `{4}(?:-` + digit + `{4}){3}(?:-` + digit + `{5}){2})$`)
	text := xtest.Copy(t, codeLine.MatchString)
	for _, want := range []string{"desk-agent", "drop_database", "xpires"} {
		if !strings.Contains(text, want) {
			t.Errorf("the dialog does not show %q:\n%s", want, text)
		}
	}
	m := codeLine.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no code in the dialog's text:\n%s", text)
	}
	code := m[1]
	xtest.Keys(t, "Return") // Done

	wantCode(t, echo(t, g), "PERMISSION_AGENT_BLOCKED")
	if d := data(t, verifyCode(t, g, id, code)); d["unblocked"] != true {
		t.Fatalf("the code read from the dialog: %v", d)
	}
	if r := echo(t, g); r["success"] != true {
		t.Fatalf("after unblocking: %s", jsonString(r))
	}
	for name, text := range map[string]string{"MCP stream": g.outLog.String(), "stderr": g.stderr()} {
		if strings.Contains(strings.ToUpper(text), verify.NormalizeCode(code)) || strings.Contains(text, code) {
			t.Errorf("the code leaked into aqlguard's %s", name)
		}
	}
}

// TestDialogSaysWhatWillHappen (issue 31, item 4): with the official
// filesystem server (its profile: write_file writes a file) under the
// default policy, a write outside the folder it was given puts up a
// question whose first line says, in the effect's words, what will
// happen: a new file is created, a file that is there is overwritten,
// outside the folder (never "run"). Denied, nothing is written.
func TestDialogSaysWhatWillHappen(t *testing.T) {
	long.Test(t)
	xtest.Require(t)
	command, args := fsServer(t)
	display := xtest.StartXvfb(t)
	root, outside := t.TempDir(), t.TempDir()
	existing := filepath.Join(outside, "plan.md")
	if err := os.WriteFile(existing, []byte("# plan\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := launchGuard(t, guardOptions{Config: `
mode = "transparent"
agent = "words-agent"
[verify]
channel = "dialog"
inline_wait = "30s"
[[servers]]
name = "filesystem"
command = ` + tomlString(command) + `
args = ` + tomlArray(append(args, root)...) + `
`, Env: []string{"DISPLAY=" + display}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
	}{
		{filepath.Join(outside, "todo.txt"), `aqlguard-e2e wants to create the new file "` + filepath.Join(outside, "todo.txt") +
			`" outside the folder you gave the filesystem server (` + root + `).`},
		{existing, `aqlguard-e2e wants to overwrite "` + existing + `" outside the folder you gave the filesystem server (` + root + `).`},
	} {
		done := make(chan string, 1)
		go func() {
			res, err := g.callRaw("write_file", map[string]any{"path": tc.path, "content": "x"})
			if err != nil {
				done <- err.Error()
				return
			}
			done <- resultText(t, res)
		}()
		w := xtest.Window(t, verify.QuestionTitle)
		text := xtest.CopySelection(t, w)
		if first, _, _ := strings.Cut(text, "\n\n"); strings.Join(strings.Fields(first), " ") != tc.want {
			t.Errorf("the question's first line:\n%s\nwant\n%s", first, tc.want)
		}
		if strings.Contains(text, "wants to run") || strings.Contains(text, "could do anything") {
			t.Errorf("a write said as something that runs:\n%s", text)
		}
		xtest.Focus(t, w)
		xtest.Keys(t, "Return") // Deny
		select {
		case got := <-done:
			if !strings.Contains(got, "denied") {
				t.Errorf("denied, but: %s", got)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the call did not return")
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "# plan\n" {
		t.Errorf("a denied write wrote: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "todo.txt")); err == nil {
		t.Error("a denied write created the file")
	}
}
