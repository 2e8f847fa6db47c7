package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestClientHookIsTheGuard: `aqlguard hook claude-code` with Claude
// Code's documented PreToolUse input (https://code.claude.com/docs/en/hooks)
// lets `npm test` go without a word, asks for an edit outside the project,
// denies `rm -rf ~`, and the block it sets stops the same agent's next
// MCP call through `aqlguard wrap`; every failure answers deny (exit 2,
// one sentence), never allow. A few seconds: one wrapped server.
func TestClientHookIsTheGuard(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o700); err != nil {
		t.Fatal(err)
	}
	env := isolatedEnv(t, dir)
	state := filepath.Join(dir, "home", ".local", "state", "aqlguard") // the default, which pins list reads
	hook := func(t *testing.T, input string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(bins.aqlguard, append([]string{"hook"}, args...)...)
		if !slices.Contains(args, "--state-dir") {
			cmd.Args = append(cmd.Args, "--state-dir", state)
		}
		cmd.Env = env
		cmd.Stdin = strings.NewReader(strings.ReplaceAll(input, "PROJECT", project))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code = cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("aqlguard hook: %v", err)
		}
		return out.String(), errb.String(), code
	}
	pre := func(mode, tool, input string) string {
		return `{"session_id":"abc123","transcript_path":"/tmp/t.jsonl","cwd":"PROJECT","permission_mode":"` + mode +
			`","hook_event_name":"PreToolUse","tool_name":"` + tool + `","tool_input":` + input + `,"tool_use_id":"toolu_01"}`
	}

	out, errs, code := hook(t, pre("default", "Bash", `{"command":"npm test","description":"Run the tests"}`), "claude-code")
	if code != 0 || strings.Contains(out, "permissionDecision") || errs != "" {
		t.Errorf("npm test: exit %d, %s %s", code, out, errs)
	}
	out, _, code = hook(t, pre("acceptEdits", "Edit", `{"file_path":"PROJECT/../elsewhere/notes.md","old_string":"a","new_string":"b"}`), "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"ask"`) || !strings.Contains(out, "outside") {
		t.Errorf("an edit outside the project: exit %d, %s", code, out)
	}
	// The project Claude Code names is the root, wherever the model
	// moved its shell.
	env = append(env, "CLAUDE_PROJECT_DIR="+project)
	out, _, code = hook(t, strings.Replace(pre("default", "Write", `{"file_path":"etc/cron.d/x","content":"* * * * * root sh"}`), `"cwd":"PROJECT"`, `"cwd":"/"`, 1), "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"ask"`) {
		t.Errorf("a write outside the project from a shell moved to /: exit %d, %s", code, out)
	}
	// MCP calls stay with the proxy: a tool of the project's server that
	// aqlguard wraps is let through and said so in the audit log; one of
	// a server it does not wrap is judged here (delete_all* is refused).
	writeFile(t, filepath.Join(project, ".mcp.json"), `{"mcpServers": {"notes": {"command": `+jsonString(bins.aqlguard)+
		`, "args": ["wrap", "--name", "notes", "--agent", "claude-code", "--", `+jsonString(bins.testserver)+`]}}}`)
	out, _, code = hook(t, pre("bypassPermissions", "mcp__notes__delete_all_items", `{}`), "claude-code")
	if code != 0 || strings.Contains(out, "permissionDecision") {
		t.Errorf("a wrapped server's tool: exit %d, %s", code, out)
	}
	if log, _ := os.ReadFile(filepath.Join(state, "audit", "audit-00000001.jsonl")); !strings.Contains(string(log), `"result":"left_to_proxy"`) {
		t.Errorf("no audit record of the call left to the proxy")
	}
	out, _, code = hook(t, pre("bypassPermissions", "mcp__other__delete_all_items", `{}`), "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Errorf("an unwrapped server's tool: exit %d, %s", code, out)
	}
	out, _, code = hook(t, pre("bypassPermissions", "Bash", `{"command":"rm -rf ~"}`), "claude-code")
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) {
		t.Fatalf("rm -rf ~: exit %d, %s", code, out)
	}

	// The same agent's MCP server, as init wraps it: blocked too.
	cmd := exec.Command(bins.aqlguard, "wrap", "--name", "notes", "--agent", "claude-code", "--state-dir", state, "--", bins.testserver, "-name", "notes")
	cmd.Env = env
	cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
	approveReview(t, env, "get_item")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "a1"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "PERMISSION_AGENT_BLOCKED") {
		t.Errorf("the next MCP call after the hook's block: %v %s", err, jsonString(res))
	}
	cs.Close()

	// The block's code goes through aqlguard's own channel (here the
	// command channel), by a process that outlives the hook, never into
	// the client's prompt.
	got := filepath.Join(dir, "code.json")
	script := filepath.Join(dir, "channel.sh")
	writeFile(t, script, "#!/bin/sh\ncat > "+got+".part && mv "+got+".part "+got+"\necho '{}'\n")
	if err := os.Chmod(script, 0o700); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "command-channel.toml")
	writeFile(t, config, "[verify]\nchannel = \"command\"\ncommand = ["+jsonString(script)+"]\n")
	out, _, code = hook(t, pre("default", "Bash", `{"command":"rm -rf ~"}`), "claude-code", "--config", config, "--state-dir", filepath.Join(dir, "state-2"))
	if code != 0 || !strings.Contains(out, `"permissionDecision":"deny"`) || !strings.Contains(out, "approval channel") {
		t.Errorf("rm -rf ~ with the command channel: exit %d, %s", code, out)
	}
	var shown []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if shown, _ = os.ReadFile(got); len(shown) > 0 {
			break
		}
	}
	if !strings.Contains(string(shown), `"kind":"challenge"`) || !strings.Contains(string(shown), `"code":"`) {
		t.Errorf("the code did not reach the channel: %q", shown)
	}
	var req struct{ Code string }
	if err := json.Unmarshal(shown, &req); err != nil || req.Code == "" || strings.Contains(out, req.Code) {
		t.Errorf("the code (%v) is in the client's answer, or was not sent: %s", err, out)
	}

	// init installs the hook in Claude Code's user settings, keeping the
	// rest; unwrap gives back every byte.
	settings := filepath.Join(dir, "home", ".claude", "settings.json")
	orig := "{\n  // mine\n  \"permissions\": {\"allow\": [\"Bash(npm test:*)\"]}\n}\n"
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, settings, orig)
	for _, verb := range []string{"init", "unwrap"} {
		c := exec.Command(bins.aqlguard, verb, "--client", "claude-code")
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil || !strings.Contains(string(out), "PreToolUse: hook") {
			t.Fatalf("%s: %v\n%s", verb, err, out)
		}
		now, _ := os.ReadFile(settings)
		if verb == "init" && (!strings.Contains(string(now), bins.aqlguard+" hook claude-code --agent claude-code") || !strings.Contains(string(now), "// mine")) {
			t.Errorf("installed:\n%s", now)
		}
		if verb == "unwrap" && string(now) != orig {
			t.Errorf("unwrap is not byte-identical:\n%s", now)
		}
	}

	// Fail closed: each failure is exit 2 (a block in every client's
	// format) with one sentence on stderr, and nothing on stdout.
	unreachable := filepath.Join(dir, "not-a-dir")
	writeFile(t, unreachable, "a file where the state directory should be")
	slow := exec.Command(bins.aqlguard, "hook", "claude-code", "--within", "300ms", "--state-dir", state)
	slow.Env = env
	stdin, _ := slow.StdinPipe() // never closed: the input never ends
	var slowErr bytes.Buffer
	slow.Stderr = &slowErr
	began := time.Now()
	_ = slow.Run()
	_ = stdin.Close()
	if slow.ProcessState.ExitCode() != 2 || !strings.Contains(slowErr.String(), "in time") || time.Since(began) > 10*time.Second {
		t.Errorf("no answer in time: exit %d after %v, %s", slow.ProcessState.ExitCode(), time.Since(began), slowErr.String())
	}
	for _, c := range []struct{ name, input, client, want string }{
		{"unparsable input", "{not json", "claude-code", "could not read"},
		{"an event it does not judge", `{"hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{},"cwd":"PROJECT"}`, "claude-code", "does not judge"},
		{"a client it does not know", pre("default", "Bash", `{"command":"ls"}`), "windsurf", "not a client"},
	} {
		out, errs, code := hook(t, c.input, c.client)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", c.name, code, out, errs)
		}
	}
	cmd = exec.Command(bins.aqlguard, "hook", "claude-code", "--state-dir", unreachable)
	cmd.Env, cmd.Stdin = env, strings.NewReader(strings.ReplaceAll(pre("default", "Bash", `{"command":"ls"}`), "PROJECT", project))
	if out, err := cmd.Output(); cmd.ProcessState.ExitCode() != 2 || len(out) != 0 {
		t.Errorf("state unreachable: %v, stdout %q", err, out)
	}
}
