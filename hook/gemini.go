package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/policy"
)

// Gemini CLI's BeforeTool hook, as its hooks reference gives it
// (https://geminicli.com/docs/hooks/reference, "BeforeTool"): hooks in
// settings.json, {"hooks": {"BeforeTool": [{matcher, hooks: [{type:
// "command", command, timeout (ms, default 60000)}]}]}}. The input is
// {session_id, transcript_path, cwd, hook_event_name, timestamp,
// tool_name, tool_input, mcp_context}; built-in tools are named
// run_shell_command, write_file, replace, read_file, ..., MCP tools
// mcp__<server>__<tool>. The answer, with exit code 0, is {"decision":
// "allow"|"deny", "reason"}: a deny's reason goes to the agent; the
// guard's allow is answered {} (no decision). Exit
// code 2 blocks with stderr as the reason. There is no "ask": where the
// guard asks a human, it asks through its own channel, within the
// hook's time.
type gemini struct{}

func init() { register(gemini{}, "gemini-cli") }

func (gemini) ID() string             { return "gemini" }
func (gemini) Timeout() time.Duration { return 60 * time.Second }
func (gemini) Asks(Event) bool        { return false }

// ProjectEnv: Gemini CLI gives its hooks GEMINI_PROJECT_DIR (writing
// hooks guide).
func (gemini) ProjectEnv() string { return "GEMINI_PROJECT_DIR" }
func (gemini) Defers(Event) bool  { return false }

type geminiInput struct {
	SessionID     string `json:"session_id"`
	Cwd           string `json:"cwd"`
	HookEventName string `json:"hook_event_name"`
	ToolName      string `json:"tool_name"`
	ToolInput     any    `json:"tool_input"`
	MCPContext    *struct {
		ServerName string `json:"server_name"`
		ToolName   string `json:"tool_name"`
		Command    string `json:"command"`
	} `json:"mcp_context"`
}

func (gemini) Parse(raw []byte) (Event, error) {
	var in geminiInput
	if err := decode(raw, &in); err != nil {
		return Event{}, err
	}
	e := Event{Client: "gemini", Name: in.HookEventName, Tool: in.ToolName, Cwd: in.Cwd, Session: in.SessionID}
	if in.HookEventName != "BeforeTool" {
		return e, fmt.Errorf("%w %q: Gemini CLI's hook is judged at BeforeTool", ErrUnknownEvent, in.HookEventName)
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
	case "run_shell_command":
		e.Kind, e.Roles = KindShell, roles("command", policy.RoleCommand, firstOf(input, "dir_path", "directory"), policy.RolePath)
	case "write_file":
		e.Kind, e.Roles = KindWrite, roles("file_path", policy.RolePath, "content", policy.RoleContent)
	case "replace":
		e.Kind, e.Roles = KindWrite, roles("file_path", policy.RolePath, "old_string", policy.RoleContent, "new_string", policy.RoleContent)
	case "read_file":
		e.Kind, e.Roles = KindRead, roles(firstOf(input, "file_path", "absolute_path"), policy.RolePath)
	default:
		if server, tool, ok := mcpName(in.ToolName); ok {
			e.Kind, e.Server, e.ServerTool = KindMCP, server, tool
		}
		if c := in.MCPContext; c != nil && c.ServerName != "" {
			e.Kind, e.Server, e.ServerCommand = KindMCP, c.ServerName, c.Command
			if c.ToolName != "" {
				e.ServerTool = c.ToolName
			}
			if e.ServerTool == "" {
				e.ServerTool = in.ToolName
			}
		}
	}
	return e, nil
}

type geminiOutput struct {
	Decision string `json:"decision,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

func (gemini) Render(_ Event, a Answer) ([]byte, int) {
	// The guard's allow says nothing ({}): Gemini CLI's own confirmation
	// of a tool stays as it is without the hook. Ask and Defer are never
	// given (Asks, Defers); were they, they deny.
	var out geminiOutput
	if a.Decision != Allow {
		out.Decision, out.Reason = "deny", a.Reason
	}
	b, _ := json.Marshal(out)
	return append(b, '\n'), 0
}
