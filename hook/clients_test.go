package hook

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// Hook inputs as each client's documentation gives them. The examples
// follow the documented fields and the documented tool names; values
// are ours.
//
//   - Claude Code: https://code.claude.com/docs/en/hooks ("PreToolUse
//     input": session_id, transcript_path, cwd, permission_mode,
//     hook_event_name, tool_name, tool_input, tool_use_id).
//   - Cursor: https://cursor.com/docs/agent/hooks (common fields
//     conversation_id, generation_id, workspace_roots, hook_event_name;
//     beforeShellExecution {command, cwd}, beforeMCPExecution
//     {tool_name, tool_input, url | command}, beforeReadFile {file_path,
//     content, attachments}, preToolUse {tool_name, tool_input}).
//   - Gemini CLI: https://geminicli.com/docs/hooks/reference (base
//     fields session_id, transcript_path, cwd, hook_event_name,
//     timestamp; BeforeTool tool_name, tool_input, mcp_context).
var fixtures = []struct {
	name, client, input string
	kind                Kind
	tool, server        string
	roles               map[string]policy.Role
	err                 error // errors.Is; nil: parses
}{
	{name: "claude bash", client: "claude-code", kind: KindShell, tool: "Bash",
		input: `{"session_id":"abc123","transcript_path":"/home/u/.claude/projects/p/abc123.jsonl","cwd":"/home/u/project",` +
			`"permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash",` +
			`"tool_input":{"command":"npm test","description":"Run the tests","timeout":120000},"tool_use_id":"toolu_01"}`,
		roles: map[string]policy.Role{"command": policy.RoleCommand}},
	{name: "claude write", client: "claude-code", kind: KindWrite, tool: "Write",
		input: `{"session_id":"abc123","transcript_path":"/t","cwd":"/home/u/project","permission_mode":"default",` +
			`"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"/home/u/project/file.txt","content":"file content"},"tool_use_id":"toolu_02"}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath, "content": policy.RoleContent}},
	{name: "claude edit", client: "claude-code", kind: KindWrite, tool: "Edit",
		input: `{"session_id":"abc123","cwd":"/home/u/project","permission_mode":"acceptEdits","hook_event_name":"PreToolUse","tool_name":"Edit",` +
			`"tool_input":{"file_path":"/home/u/project/a.go","old_string":"x := 1","new_string":"x := 2","replace_all":false}}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath, "old_string": policy.RoleContent, "new_string": policy.RoleContent}},
	{name: "claude read", client: "claude-code", kind: KindRead, tool: "Read",
		input: `{"session_id":"abc123","cwd":"/home/u/project","hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/home/u/.ssh/id_ed25519"}}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath}},
	{name: "claude mcp", client: "claude-code", kind: KindMCP, tool: "mcp__memory__create_entities", server: "memory",
		input: `{"session_id":"abc123","cwd":"/home/u/project","hook_event_name":"PreToolUse","tool_name":"mcp__memory__create_entities","tool_input":{"entities":[]}}`},
	{name: "claude other tool", client: "claude-code", kind: KindOther, tool: "WebFetch",
		input: `{"session_id":"abc123","cwd":"/p","hook_event_name":"PreToolUse","tool_name":"WebFetch","tool_input":{"url":"https://example.com","prompt":"x"}}`},
	{name: "claude post event", client: "claude-code", err: ErrUnknownEvent,
		input: `{"session_id":"abc123","cwd":"/p","hook_event_name":"PostToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_response":{}}`},
	{name: "claude no tool", client: "claude-code", input: `{"hook_event_name":"PreToolUse","tool_input":{}}`, err: errAny},
	{name: "claude input not an object", client: "claude-code", input: `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":[1]}`, err: errAny},
	{name: "two values", client: "claude-code", input: `{"hook_event_name":"PreToolUse","tool_name":"Bash"} {}`, err: errAny},

	{name: "cursor shell", client: "cursor", kind: KindShell, tool: "Shell",
		input: `{"hook_event_name":"beforeShellExecution","conversation_id":"conv-123","generation_id":"gen-456",` +
			`"workspace_roots":["/path/to/project"],"command":"npm install express","cwd":"/path/to/project"}`,
		roles: map[string]policy.Role{"command": policy.RoleCommand}},
	{name: "cursor mcp, input a string", client: "cursor", kind: KindMCP, tool: "database_query", server: "npx",
		input: `{"hook_event_name":"beforeMCPExecution","conversation_id":"conv-123","generation_id":"gen-456","workspace_roots":["/path/to/project"],` +
			`"tool_name":"database_query","tool_input":"{\"query\": \"SELECT * FROM users\"}","command":"npx mcp-server"}`},
	{name: "cursor mcp, input an object", client: "cursor", kind: KindMCP, tool: "database_query", server: "http://localhost:3000",
		input: `{"hook_event_name":"beforeMCPExecution","conversation_id":"conv-123","generation_id":"gen-456","workspace_roots":["/path/to/project"],` +
			`"tool_name":"database_query","tool_input":{"query":"SELECT * FROM users"},"url":"http://localhost:3000"}`},
	{name: "cursor mcp of a wrapped server", client: "cursor", kind: KindMCP, tool: "read_file", server: "filesystem",
		input: `{"hook_event_name":"beforeMCPExecution","conversation_id":"c","generation_id":"g","workspace_roots":["/p"],` +
			`"tool_name":"read_file","tool_input":{"path":"/p/a"},"command":"/usr/local/bin/aqlguard wrap --name filesystem --agent cursor -- npx -y @modelcontextprotocol/server-filesystem /p"}`},
	{name: "cursor read", client: "cursor", kind: KindRead, tool: "Read",
		input: `{"hook_event_name":"beforeReadFile","conversation_id":"conv-123","generation_id":"gen-456","workspace_roots":["/path/to/project"],` +
			`"file_path":"/path/to/project/secrets.env","content":"API_KEY=...","attachments":[{"type":"file","file_path":"/path/to/project/.cursorrules"}]}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath}},
	{name: "cursor preToolUse write", client: "cursor", kind: KindWrite, tool: "Write",
		input: `{"hook_event_name":"preToolUse","conversation_id":"c","generation_id":"g","workspace_roots":["/p"],"tool_name":"Write",` +
			`"tool_input":{"file_path":"/p/a.txt","contents":"x"},"tool_use_id":"t"}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath, "contents": policy.RoleContent}},
	{name: "cursor stop", client: "cursor", err: ErrUnknownEvent,
		input: `{"hook_event_name":"stop","conversation_id":"c","generation_id":"g","status":"completed","loop_count":0}`},
	{name: "cursor shell without command", client: "cursor", input: `{"hook_event_name":"beforeShellExecution","cwd":"/p"}`, err: errAny},

	{name: "gemini shell", client: "gemini", kind: KindShell, tool: "run_shell_command",
		input: `{"session_id":"s","transcript_path":"/t","cwd":"/home/u/project","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z",` +
			`"tool_name":"run_shell_command","tool_input":{"command":"npm test","description":"run the tests"}}`,
		roles: map[string]policy.Role{"command": policy.RoleCommand}},
	{name: "gemini write", client: "gemini", kind: KindWrite, tool: "write_file",
		input: `{"session_id":"s","cwd":"/home/u/project","hook_event_name":"BeforeTool","timestamp":"2026-01-01T00:00:00Z",` +
			`"tool_name":"write_file","tool_input":{"file_path":"/home/u/project/a.txt","content":"x"}}`,
		roles: map[string]policy.Role{"file_path": policy.RolePath, "content": policy.RoleContent}},
	{name: "gemini read, older name", client: "gemini", kind: KindRead, tool: "read_file",
		input: `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"read_file","tool_input":{"absolute_path":"/p/a"}}`,
		roles: map[string]policy.Role{"absolute_path": policy.RolePath}},
	{name: "gemini mcp", client: "gemini", kind: KindMCP, tool: "mcp__github__create_issue", server: "github",
		input: `{"session_id":"s","cwd":"/p","hook_event_name":"BeforeTool","tool_name":"mcp__github__create_issue","tool_input":{"title":"x"},` +
			`"mcp_context":{"server_name":"github","tool_name":"create_issue"}}`},
	{name: "gemini after", client: "gemini", err: ErrUnknownEvent,
		input: `{"session_id":"s","cwd":"/p","hook_event_name":"AfterTool","tool_name":"read_file","tool_input":{},"tool_response":{}}`},
}

// errAny marks a fixture that must fail to parse, whatever the error.
var errAny = errors.New("any error")

func TestParseDocumentedInputs(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			c, ok := Lookup(f.client)
			if !ok {
				t.Fatalf("no client %q", f.client)
			}
			e, err := c.Parse([]byte(f.input))
			switch {
			case f.err == errAny && err != nil:
				return
			case f.err != nil && errors.Is(err, f.err):
				return
			case f.err != nil:
				t.Fatalf("err = %v, want %v", err, f.err)
			case err != nil:
				t.Fatalf("Parse: %v", err)
			}
			if e.Kind != f.kind || e.Tool != f.tool || e.Server != f.server {
				t.Errorf("kind %v tool %q server %q, want %v %q %q", e.Kind, e.Tool, e.Server, f.kind, f.tool, f.server)
			}
			for arg, r := range f.roles {
				if e.Roles[arg] != r {
					t.Errorf("role of %s = %v, want %v", arg, e.Roles[arg], r)
				}
			}
			if len(e.Roles) != len(f.roles) && f.kind != KindOther {
				t.Errorf("roles %v, want %v", e.Roles, f.roles)
			}
			if e.Cwd == "" {
				t.Errorf("no working directory read")
			}
		})
	}
}

// Answers as each client's documentation says it reads them.
func TestRenderDocumentedAnswers(t *testing.T) {
	cases := []struct {
		client, event string
		a             Answer
		want          string
	}{
		// Claude Code: hookSpecificOutput.permissionDecision; allow (and
		// defer) say nothing, so Claude Code's own rules stay.
		{"claude-code", "PreToolUse", Answer{Deny, "no"}, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}`},
		{"claude-code", "PreToolUse", Answer{Ask, "sure?"}, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"sure?"}}`},
		{"claude-code", "PreToolUse", Answer{Allow, ""}, `{"hookSpecificOutput":{"hookEventName":"PreToolUse"}}`},
		{"claude-code", "PreToolUse", Answer{Defer, "risk"}, `{"hookSpecificOutput":{"hookEventName":"PreToolUse"}}`},
		// Cursor: permission, user_message, agent_message.
		{"cursor", "beforeShellExecution", Answer{Deny, "no"}, `{"permission":"deny","user_message":"no","agent_message":"no"}`},
		{"cursor", "beforeShellExecution", Answer{Ask, "sure?"}, `{"permission":"ask","user_message":"sure?","agent_message":"sure?"}`},
		{"cursor", "preToolUse", Answer{Allow, ""}, `{"permission":"allow"}`},
		{"cursor", "beforeReadFile", Answer{Deny, "no"}, `{"permission":"deny"}`},
		{"cursor", "beforeReadFile", Answer{Ask, "no"}, `{"permission":"deny"}`},
		// Gemini CLI: decision and reason; allow says nothing.
		{"gemini", "BeforeTool", Answer{Deny, "no"}, `{"decision":"deny","reason":"no"}`},
		{"gemini", "BeforeTool", Answer{Allow, ""}, `{}`},
		{"gemini", "BeforeTool", Answer{Ask, "?"}, `{"decision":"deny","reason":"?"}`},
	}
	for _, c := range cases {
		cl, _ := Lookup(c.client)
		out, code := cl.Render(Event{Client: c.client, Name: c.event}, c.a)
		if code != 0 || string(out) != c.want+"\n" {
			t.Errorf("%s %s %v: %s (exit %d), want %s", c.client, c.event, c.a.Decision, out, code, c.want)
		}
		if !json.Valid(out) {
			t.Errorf("%s: not JSON: %s", c.client, out)
		}
	}
}

func TestUnknownClient(t *testing.T) {
	if _, ok := Lookup("windsurf"); ok {
		t.Fatal("a client whose hook format aqlguard does not know was found")
	}
	for _, alias := range []string{"claude", "gemini-cli"} {
		if _, ok := Lookup(alias); !ok {
			t.Errorf("alias %q not found", alias)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, fx := range fixtures {
		f.Add(fx.client, fx.input)
	}
	f.Add("cursor", `{"hook_event_name":"beforeMCPExecution","tool_name":"x","command":"  "}`)
	f.Fuzz(func(t *testing.T, client, input string) {
		c, ok := Lookup(client)
		if !ok {
			return
		}
		e, err := c.Parse([]byte(input))
		if err != nil {
			return
		}
		if e.Tool == "" || e.Input == nil {
			t.Fatalf("parsed with no tool or no input: %+v", e)
		}
		out, code := c.Render(e, Answer{Decision: Deny, Reason: "x"})
		if code != 0 || !json.Valid(out) {
			t.Fatalf("render: %s %d", out, code)
		}
	})
}
