// Package hook puts the tools a client runs itself (Claude Code's Bash,
// Write and Edit; Cursor's shell and file edits; Gemini CLI's
// run_shell_command and write_file) to the same guard as its MCP calls:
// `aqlguard hook CLIENT` reads the client's hook input on stdin, makes
// it a guard.Action (a command is a command, a path written is a path
// judged against the project's roots), has the guard decide it
// (guard.CheckHook: the same policy, state, records and human channel)
// and answers in the client's own format.
//
// Each client is one file (claude.go, cursor.go, gemini.go) holding its
// format as its own documentation gives it, and registers itself in
// clients; nothing else names a client. A client or an event the
// package does not know is an error, which the command answers with a
// deny: never an allow.
package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/policy"
)

// Kind is what a client's tool does, as the hook models it.
type Kind int

const (
	// KindOther is a tool the hook has no model of: the guard judges it
	// by its name (effects guessed, said so).
	KindOther Kind = iota
	// KindShell runs a command line in a shell.
	KindShell
	// KindWrite creates or changes a file.
	KindWrite
	// KindRead reads a file.
	KindRead
	// KindMCP calls a tool of an MCP server.
	KindMCP
)

// Event is one hook input, read: the tool the client is about to run,
// with what the guard needs to judge it.
type Event struct {
	// Client is the client's id ("claude-code"); Name its event's name
	// as it sends it ("PreToolUse", "beforeShellExecution").
	Client, Name string
	// Tool is the client's own name of the tool ("Bash", "write_file").
	Tool string
	Kind Kind
	// Input is the tool's arguments, as the client sent them.
	Input map[string]any
	// Roles are the roles of Input's arguments (a command, a path, the
	// content written), by argument name.
	Roles map[string]policy.Role
	// Server and ServerTool name an MCP tool's server and its own name
	// (KindMCP); Server is "" when the client does not say it.
	Server, ServerTool string
	// ServerCommand is the command line of an MCP server, where the
	// client sends it (Cursor), to tell one aqlguard wraps.
	ServerCommand string
	// Cwd is the directory the tool runs in, where a relative path
	// is read. Roots are the project's roots: the client's own word for
	// them (Cursor's workspace_roots, the project directory a client
	// names in its hook's environment: ProjectEnv), else Cwd. A working
	// directory alone is a weak root: the model may have moved its shell
	// with cd.
	Cwd   string
	Roots []string
	// Session is the client's id of the conversation.
	Session string
	// PermissionMode is the client's own permission mode, where it says
	// it (Claude Code's permission_mode).
	PermissionMode string
}

// Decision is the hook's answer.
type Decision int

const (
	Deny Decision = iota // the zero value: what a failure answers
	Allow
	// Ask: the client asks its user, in its own prompt.
	Ask
	// Defer: the guard asks for a human only because of the call's risk
	// (the risk tolerance, no rule): the client's own permission rules
	// and prompt decide, where it keeps them in force (Client.Defers).
	Defer
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Defer:
		return "defer"
	}
	return "deny"
}

// Answer is what the hook tells the client: a decision and, for a deny
// or an ask, one sentence the model (and the user) can act on.
type Answer struct {
	Decision Decision
	Reason   string
}

// Client is one client's hook format.
type Client interface {
	// ID is the client's id, as `aqlguard hook ID` and init name it
	// (clientconfig's ids).
	ID() string
	// Parse reads one hook input. An event the hook does not judge is an
	// error (ErrUnknownEvent).
	Parse(raw []byte) (Event, error)
	// Asks says whether the client can ask its user itself for e (an
	// "ask" answer it honours).
	Asks(e Event) bool
	// Defers says whether the client, for e, keeps permission rules and
	// a prompt of its own in force that ask before such a tool runs, so
	// that an ask for the risk alone may be left to them (Defer).
	Defers(e Event) bool
	// Render is the answer in the client's format: what goes to stdout
	// and the exit code.
	Render(e Event, a Answer) (stdout []byte, code int)
	// Timeout is the client's own default time limit for a hook.
	Timeout() time.Duration
	// ProjectEnv names the environment variable in which the client
	// gives its hooks the project's directory ("" for none).
	ProjectEnv() string
}

// ErrUnknownEvent is the error of a hook input whose event the hook does
// not judge.
var ErrUnknownEvent = errors.New("unknown hook event")

// clients are the registered formats, by id and alias.
var clients = map[string]Client{}

func register(c Client, aliases ...string) {
	clients[c.ID()] = c
	for _, a := range aliases {
		clients[a] = c
	}
}

// Lookup finds a client's format by its id.
func Lookup(id string) (Client, bool) {
	c, ok := clients[id]
	return c, ok
}

// IDs lists the clients' ids (aliases left out), sorted.
func IDs() []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range clients {
		if !seen[c.ID()] {
			seen[c.ID()] = true
			out = append(out, c.ID())
		}
	}
	sort.Strings(out)
	return out
}

// BlockExit is the exit code every client here documents as "block this
// tool call, the reason is on stderr": what a failure answers with, when
// the input could not even be read.
const BlockExit = 2

// decode reads raw as one JSON object, numbers kept as written.
func decode(raw []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the hook input is not JSON: %w", err)
	}
	if dec.More() {
		return errors.New("the hook input holds more than one JSON value")
	}
	return nil
}

// object reads a tool input that is an object, or (Cursor's
// beforeMCPExecution) a string holding one.
func object(v any) (map[string]any, error) {
	switch t := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return t, nil
	case string:
		var m map[string]any
		if err := decode([]byte(t), &m); err != nil {
			return nil, fmt.Errorf("tool_input: %w", err)
		}
		if m == nil {
			m = map[string]any{}
		}
		return m, nil
	}
	return nil, fmt.Errorf("tool_input is a %T, not an object", v)
}

// firstOf names the first of keys m holds a string under ("" if none).
func firstOf(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if _, ok := m[k].(string); ok {
			return k
		}
	}
	return ""
}

// roles gives each named argument its role (a key "" is skipped).
func roles(pairs ...any) map[string]policy.Role {
	out := map[string]policy.Role{}
	for i := 0; i+1 < len(pairs); i += 2 {
		if k := pairs[i].(string); k != "" {
			out[k] = pairs[i+1].(policy.Role)
		}
	}
	return out
}

// mcpName splits a client's name of an MCP tool, mcp__SERVER__TOOL
// (Claude Code, Gemini CLI), into its server and tool.
func mcpName(tool string) (server, name string, ok bool) {
	rest, found := strings.CutPrefix(tool, "mcp__")
	if !found {
		return "", "", false
	}
	server, name, ok = strings.Cut(rest, "__")
	return server, name, ok && server != "" && name != ""
}
