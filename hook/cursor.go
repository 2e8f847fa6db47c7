package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/policy"
)

// Cursor's hooks, as its documentation gives them
// (https://cursor.com/docs/agent/hooks): hooks.json, version 1, one
// list of {command, matcher, timeout, failClosed} per event. Every
// input carries {hook_event_name, conversation_id, generation_id,
// workspace_roots}; the events judged here add:
//
//   - beforeShellExecution: {command, cwd}
//   - beforeMCPExecution: {tool_name, tool_input (an object, or a string
//     of JSON), and the server's url or command}
//   - beforeReadFile: {file_path, content, attachments}
//   - preToolUse: {tool_name, tool_input, tool_use_id, cwd}, tool names
//     Shell, Read, Write, Edit, StrReplace, Delete, ...
//
// The answer is {"permission": "allow"|"deny"|"ask", "user_message",
// "agent_message"} (beforeReadFile: permission, allow or deny, alone);
// exit code 2 denies too. A hook's default timeout is 60 s.
type cursor struct{}

func init() { register(cursor{}) }

func (cursor) ID() string             { return "cursor" }
func (cursor) Timeout() time.Duration { return 60 * time.Second }
func (cursor) ProjectEnv() string     { return "" } // workspace_roots says it

// Asks: every event judged here takes "ask" but beforeReadFile.
func (cursor) Asks(e Event) bool { return e.Name != "beforeReadFile" }

// Defers never: Cursor's own run settings (its allowlist, auto-run) may
// run a command unasked, and the hook cannot tell which are in force.
func (cursor) Defers(Event) bool { return false }

type cursorInput struct {
	HookEventName  string   `json:"hook_event_name"`
	ConversationID string   `json:"conversation_id"`
	WorkspaceRoots []string `json:"workspace_roots"`
	Command        string   `json:"command"`
	Cwd            string   `json:"cwd"`
	ToolName       string   `json:"tool_name"`
	ToolInput      any      `json:"tool_input"`
	FilePath       string   `json:"file_path"`
	URL            string   `json:"url"`
}

func (cursor) Parse(raw []byte) (Event, error) {
	var in cursorInput
	if err := decode(raw, &in); err != nil {
		return Event{}, err
	}
	e := Event{Client: "cursor", Name: in.HookEventName, Cwd: in.Cwd, Roots: in.WorkspaceRoots, Session: in.ConversationID}
	if e.Cwd == "" && len(in.WorkspaceRoots) > 0 {
		e.Cwd = in.WorkspaceRoots[0]
	}
	switch in.HookEventName {
	case "beforeShellExecution":
		if in.Command == "" {
			return e, errors.New("beforeShellExecution names no command")
		}
		e.Tool, e.Kind = "Shell", KindShell
		e.Input, e.Roles = map[string]any{"command": in.Command}, roles("command", policy.RoleCommand)
	case "beforeReadFile":
		if in.FilePath == "" {
			return e, errors.New("beforeReadFile names no file_path")
		}
		// The file's content is not the call's: what is judged is the
		// place read.
		e.Tool, e.Kind = "Read", KindRead
		e.Input, e.Roles = map[string]any{"file_path": in.FilePath}, roles("file_path", policy.RolePath)
	case "beforeMCPExecution":
		if in.ToolName == "" {
			return e, errors.New("beforeMCPExecution names no tool (tool_name)")
		}
		input, err := object(in.ToolInput)
		if err != nil {
			return e, err
		}
		e.Tool, e.Kind, e.Input, e.ServerTool = in.ToolName, KindMCP, input, in.ToolName
		e.ServerCommand = in.Command
		switch {
		case in.URL != "":
			e.Server = in.URL
		case len(strings.Fields(in.Command)) > 0:
			// Cursor names the server by its command line: an aqlguard
			// wrap's --name, else the command.
			f := strings.Fields(in.Command)
			e.Server = clientconfig.WrapFlag(f[1:], "--name")
			if e.Server == "" {
				e.Server = filepath.Base(f[0])
			}
		}
	case "preToolUse":
		if in.ToolName == "" {
			return e, errors.New("preToolUse names no tool (tool_name)")
		}
		input, err := object(in.ToolInput)
		if err != nil {
			return e, err
		}
		e.Tool, e.Input = in.ToolName, input
		path := firstOf(input, "file_path", "path", "target_file")
		switch in.ToolName {
		case "Shell":
			e.Kind, e.Roles = KindShell, roles("command", policy.RoleCommand)
		case "Write", "Edit", "StrReplace", "MultiEdit", "Delete":
			e.Kind = KindWrite
			e.Roles = roles(path, policy.RolePath, firstOf(input, "contents", "content", "new_string", "code_edit"), policy.RoleContent,
				firstOf(input, "old_string"), policy.RoleContent)
		case "Read":
			e.Kind, e.Roles = KindRead, roles(path, policy.RolePath)
		}
	default:
		return e, fmt.Errorf("%w %q: Cursor's hook is judged at beforeShellExecution, beforeMCPExecution, beforeReadFile and preToolUse",
			ErrUnknownEvent, in.HookEventName)
	}
	return e, nil
}

type cursorOutput struct {
	Permission   string `json:"permission"`
	UserMessage  string `json:"user_message,omitempty"`
	AgentMessage string `json:"agent_message,omitempty"`
}

func (cursor) Render(e Event, a Answer) ([]byte, int) {
	out := cursorOutput{Permission: a.Decision.String()}
	switch {
	case a.Decision == Defer:
		out.Permission = "ask" // Defers is false; said all the same
	case a.Decision == Ask && e.Name == "beforeReadFile":
		out.Permission = "deny" // it takes allow or deny alone
	}
	if e.Name != "beforeReadFile" && a.Decision != Allow {
		out.UserMessage, out.AgentMessage = a.Reason, a.Reason
	}
	b, _ := json.Marshal(out)
	return append(b, '\n'), 0
}
