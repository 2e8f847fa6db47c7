package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/policy"
)

// Claude Code's PreToolUse hook, as its hooks reference documents it
// (https://code.claude.com/docs/en/hooks, "PreToolUse"): the input is
// {session_id, transcript_path, cwd, permission_mode, hook_event_name,
// tool_name, tool_input, tool_use_id}; the answer is, with exit code 0,
// {"hookSpecificOutput": {"hookEventName": "PreToolUse",
// "permissionDecision": "allow"|"deny"|"ask", "permissionDecisionReason":
// ...}}: a deny's reason is shown to Claude, an ask's to the user in the
// permission prompt. Exit code 2 blocks the call with stderr as the
// reason. A hook's default timeout is 60 s. MCP tools are named
// mcp__<server>__<tool>.
//
// The guard's allow, and an ask for the risk alone in a mode where
// Claude Code asks by itself (Defers), are answered with no
// permissionDecision: Claude Code then goes on as it would without the
// hook (its own permission rules and prompt stay), since "allow" would
// skip the user's own prompt for a call the guard merely has no
// objection to.
type claudeCode struct{}

func init() { register(claudeCode{}, "claude") }

func (claudeCode) ID() string             { return "claude-code" }
func (claudeCode) Timeout() time.Duration { return 60 * time.Second }
func (claudeCode) Asks(Event) bool        { return true }

// ProjectEnv: "CLAUDE_PROJECT_DIR ... the project root" (hooks reference).
func (claudeCode) ProjectEnv() string { return "CLAUDE_PROJECT_DIR" }

// Defers: in its default and plan modes Claude Code asks before a tool
// runs unless the user's own rules allow it, and in acceptEdits before
// anything but an edit; bypassPermissions and dontAsk run tools unasked,
// and so does a mode it does not name: there the guard asks.
func (claudeCode) Defers(e Event) bool {
	switch e.PermissionMode {
	case "default", "plan":
		return true
	case "acceptEdits":
		return e.Kind != KindWrite
	}
	return false
}

type claudeInput struct {
	SessionID      string `json:"session_id"`
	PermissionMode string `json:"permission_mode"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	ToolName       string `json:"tool_name"`
	ToolInput      any    `json:"tool_input"`
}

func (claudeCode) Parse(raw []byte) (Event, error) {
	var in claudeInput
	if err := decode(raw, &in); err != nil {
		return Event{}, err
	}
	e := Event{Client: "claude-code", Name: in.HookEventName, Tool: in.ToolName, Cwd: in.Cwd, Session: in.SessionID,
		PermissionMode: in.PermissionMode}
	if in.HookEventName != "PreToolUse" {
		return e, fmt.Errorf("%w %q: Claude Code's hook is judged at PreToolUse", ErrUnknownEvent, in.HookEventName)
	}
	if in.ToolName == "" {
		return e, errors.New("the hook input names no tool (tool_name)")
	}
	input, err := object(in.ToolInput)
	if err != nil {
		return e, err
	}
	e.Input = input
	switch in.ToolName {
	case "Bash":
		e.Kind, e.Roles = KindShell, roles("command", policy.RoleCommand)
	case "Write":
		e.Kind, e.Roles = KindWrite, roles("file_path", policy.RolePath, "content", policy.RoleContent)
	case "Edit":
		e.Kind, e.Roles = KindWrite, roles("file_path", policy.RolePath, "old_string", policy.RoleContent, "new_string", policy.RoleContent)
	case "MultiEdit":
		e.Kind, e.Roles = KindWrite, roles("file_path", policy.RolePath, "edits", policy.RoleContent)
	case "NotebookEdit":
		e.Kind, e.Roles = KindWrite, roles("notebook_path", policy.RolePath, "new_source", policy.RoleContent)
	case "Read":
		e.Kind, e.Roles = KindRead, roles("file_path", policy.RolePath)
	case "Grep":
		// Grep shows the lines of the files under its path that match:
		// a read of them (a pattern of "." is the whole file).
		e.Kind, e.Roles = KindRead, roles("path", policy.RolePath, "pattern", policy.RoleQuery)
	default:
		if server, tool, ok := mcpName(in.ToolName); ok {
			e.Kind, e.Server, e.ServerTool = KindMCP, server, tool
		}
	}
	return e, nil
}

type claudeOutput struct {
	HookSpecificOutput claudeDecision `json:"hookSpecificOutput"`
}

type claudeDecision struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"`
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
}

func (claudeCode) Render(_ Event, a Answer) ([]byte, int) {
	out := claudeOutput{claudeDecision{HookEventName: "PreToolUse"}}
	if a.Decision != Allow && a.Decision != Defer {
		out.HookSpecificOutput.PermissionDecision = a.Decision.String()
		out.HookSpecificOutput.PermissionDecisionReason = a.Reason
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return append(b, '\n'), 0
}
