package corpus

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callTimeout bounds one request of the client (a question to the human
// included: the command channel answers at once).
const callTimeout = 30 * time.Second

// guard is one `aqlguard run` and the client session connected to it:
// the model's side of the protocol.
type guard struct {
	name    string   // which config: the server's name, or "all"
	servers []string // the servers it guards
	cmd     *exec.Cmd
	cs      *mcp.ClientSession
	stderr  *logFile // aqlguard's stderr: its log
	config  string

	semantic bool                 // the client sees mcp_aql_* endpoints
	visible  map[string]*mcp.Tool // tools/list, by name
	ops      map[string]string    // semantic: operation → endpoint
	prompts  map[string]bool      // prompts/list, by name
	changed  chan struct{}        // a tools/list_changed arrived
}

// writeConfig writes the config of one aqlguard: the servers' entries and
// the human channel, nothing else (the default policy).
func (w *world) writeConfig(name string, specs []ServerSpec, readOnly bool, extra string) (string, error) {
	var b strings.Builder
	b.WriteString("# bench/cmd/corpus: the servers and the human channel; the policy is the default.\n")
	if w.env.ExtraConfig != "" {
		b.WriteString("# -extra-config: NOT the default policy\n" + w.env.ExtraConfig + "\n")
	}
	if extra != "" {
		b.WriteString(w.expand(extra) + "\n")
	}
	for _, s := range specs {
		t, err := w.serverTOML(s, readOnly)
		if err != nil {
			return "", err
		}
		b.WriteString("\n" + t)
	}
	b.WriteString("\n" + w.human.verifyTOML())
	path := filepath.Join(w.dir, "config-"+name+".toml")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// startGuard runs `aqlguard run` on config and connects a client. A start
// that fails (aqlguard refused the config, or died) is an error whose
// text holds aqlguard's stderr.
func (w *world) startGuard(ctx context.Context, name, config string, servers []string, extraEnv ...string) (*guard, error) {
	// stderr goes to a file, not a pipe: waiting for aqlguard to end then
	// waits for aqlguard alone, not for every server that inherited the pipe.
	stderr, err := os.CreateTemp(w.dir, "aqlguard-"+name+"-*.log")
	if err != nil {
		return nil, err
	}
	g := &guard{name: name, servers: servers, config: config, stderr: &logFile{f: stderr}, changed: make(chan struct{}, 16)}
	g.cmd = exec.Command(w.env.Aqlguard, "run", "--config", config, "--state-dir", w.state)
	g.cmd.Dir = w.dir
	g.cmd.Env = w.environ(extraEnv...)
	g.cmd.Stderr = stderr
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.cmd.WaitDelay = 3 * time.Second
	client := mcp.NewClient(&mcp.Implementation{Name: "corpus-agent", Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case g.changed <- struct{}{}:
			default:
			}
		},
	})
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: g.cmd, TerminateDuration: 5 * time.Second},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		g.kill()
		return nil, &startError{err: err, stderr: g.stderr.String()}
	}
	g.cs = cs
	return g, nil
}

// startError is aqlguard not starting: for a config attack, the refusal.
type startError struct {
	err    error
	stderr string
}

func (e *startError) Error() string {
	return fmt.Sprintf("aqlguard did not start: %v; stderr: %s", e.err, lastLines(e.stderr, 5))
}

// stop ends the session (aqlguard exits on its stdin's EOF) and makes sure
// nothing of its process group is left.
func (g *guard) stop() {
	if g.cs != nil {
		_ = g.cs.Close()
	}
	g.kill()
}

// abort ends aqlguard and its servers at once (SIGKILL): for a session
// whose state nobody reads again but the verdict's (what aqlguard committed,
// it committed before it answered).
func (g *guard) abort() {
	g.kill()
	if g.cs != nil {
		_ = g.cs.Close()
	}
}

func (g *guard) kill() {
	if g.cmd != nil && g.cmd.Process != nil && g.cmd.ProcessState == nil {
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		_ = g.cmd.Wait()
	}
	g.stderr.close()
}

// list reads what the client sees: tools (and, in semantic mode, the
// operations introspection names), prompts; resources are listed to
// see them as a client would.
func (g *guard) list(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	g.visible = map[string]*mcp.Tool{}
	for t, err := range g.cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		g.visible[t.Name] = t
	}
	g.prompts = map[string]bool{}
	if g.cs.InitializeResult().Capabilities.Prompts != nil {
		for p, err := range g.cs.Prompts(ctx, nil) {
			if err != nil {
				break
			}
			g.prompts[p.Name] = true
		}
	}
	if g.cs.InitializeResult().Capabilities.Resources != nil {
		for _, err := range g.cs.Resources(ctx, nil) {
			if err != nil {
				break
			}
		}
	}
	_, g.semantic = g.visible["mcp_aql_read"]
	if !g.semantic {
		return nil
	}
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_aql_read",
		Arguments: map[string]any{"operation": "introspect", "params": map[string]any{"query": "operations"}}})
	if err != nil {
		return fmt.Errorf("introspect: %w", err)
	}
	var intro struct {
		Data struct {
			Operations []struct {
				Name     string `json:"name"`
				Endpoint string `json:"endpoint"`
			} `json:"operations"`
		} `json:"data"`
	}
	if err := json.Unmarshal([]byte(text(res)), &intro); err != nil {
		return fmt.Errorf("introspect: %w", err)
	}
	g.ops = map[string]string{}
	for _, op := range intro.Data.Operations {
		g.ops[op.Name] = op.Endpoint
	}
	return nil
}

// outcome is what the client got back for one request.
type outcome struct {
	Text    string // the result's text, or the error's
	IsError bool   // a tool error, or a JSON-RPC error
	RPC     bool   // a JSON-RPC error
	Visible bool   // the tool was in tools/list (or the operation in introspection)
	// Notice is aqlguard's notice to the model beside the content (a
	// text item of its own that starts with "aqlguard:", issue 30): the
	// result holds instructions aimed at the model. "" when none.
	Notice string
}

// noticePrefix starts the text item aqlguard adds beside a result that
// holds instructions for the model.
const noticePrefix = "aqlguard:"

// notice finds aqlguard's notice in a result (a tool result, a resource's
// contents, a prompt's messages): a "text" member of its own that starts
// with noticePrefix, also inside a text that is JSON (semantic mode hands
// the client the server's content inside its JSON envelope).
func notice(res any) string {
	b, err := json.Marshal(res)
	if err != nil {
		return ""
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return ""
	}
	var find func(any) string
	find = func(v any) string {
		switch x := v.(type) {
		case map[string]any:
			if t, ok := x["text"].(string); ok {
				if strings.HasPrefix(t, noticePrefix) {
					return t
				}
				var inner any
				if t = strings.TrimSpace(t); (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Unmarshal([]byte(t), &inner) == nil {
					if n := find(inner); n != "" {
						return n
					}
				}
			}
			for _, e := range x {
				if n := find(e); n != "" {
					return n
				}
			}
		case []any:
			for _, e := range x {
				if n := find(e); n != "" {
					return n
				}
			}
		}
		return ""
	}
	return find(v)
}

// call makes a tools/call as the model would: the tool by the name the
// client sees (transparent mode: its own name, or server__tool where
// names collide), or through the endpoint introspection names (semantic
// mode). A tool the client does not see is called by its own name anyway:
// a manipulated model may.
func (g *guard) call(ctx context.Context, server, tool string, args json.RawMessage) outcome {
	var params map[string]any
	if len(args) > 0 {
		_ = json.Unmarshal(args, &params)
	}
	if params == nil {
		params = map[string]any{}
	}
	var name string
	var arguments any = params
	visible := false
	if g.semantic {
		op := server + "_" + snake(tool)
		endpoint, ok := g.ops[op]
		if !ok {
			for name, ep := range g.ops {
				if strings.HasPrefix(name, op+"_") && len(name) == len(op)+7 { // a collision's hash suffix
					op, endpoint, ok = name, ep, true
					break
				}
			}
		}
		visible = ok
		if !ok {
			endpoint = "execute"
		}
		name = "mcp_aql_" + endpoint
		arguments = map[string]any{"operation": op, "params": params}
	} else {
		name = tool
		if _, ok := g.visible[server+"__"+tool]; ok {
			name = server + "__" + tool
		}
		_, visible = g.visible[name]
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		return outcome{Text: err.Error(), IsError: true, RPC: true, Visible: visible}
	}
	return outcome{Text: text(res), IsError: res.IsError, Visible: visible, Notice: notice(res)}
}

// read is a resources/read.
func (g *guard) read(ctx context.Context, uri string) outcome {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return outcome{Text: err.Error(), IsError: true, RPC: true, Visible: true}
	}
	b, _ := json.Marshal(res)
	return outcome{Text: string(b), Visible: true, Notice: notice(res)}
}

// prompt is a prompts/get.
func (g *guard) prompt(ctx context.Context, name string, args json.RawMessage) outcome {
	var a map[string]string
	if len(args) > 0 {
		_ = json.Unmarshal(args, &a)
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := g.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: a})
	if err != nil {
		return outcome{Text: err.Error(), IsError: true, RPC: true, Visible: g.prompts[name]}
	}
	b, _ := json.Marshal(res)
	return outcome{Text: string(b), Visible: g.prompts[name], Notice: notice(res)}
}

// text is a result's text blocks joined (its JSON when it has none).
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 {
		b, _ := json.Marshal(res)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// snake is aqlguard's snake_case of a tool name (docs/design.md,
// "Operation names"), for the simple names of the corpus.
func snake(s string) string {
	var b strings.Builder
	prevLower := false
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if prevLower {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
			prevLower = false
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			prevLower = true
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			prevLower = false
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// warnings are aqlguard's log lines at level WARN or ERROR.
var logLevel = regexp.MustCompile(`\blevel=(WARN|ERROR)\b`)

func warnings(stderr string) []string {
	var out []string
	for line := range strings.Lines(stderr) {
		if logLevel.MatchString(line) && !machineWarning(line) {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// machineWarning says whether a warning is about this machine, not about
// any server: the system log missing here (audit anchors) names no server
// but holds common words ("check").
func machineWarning(line string) bool {
	return strings.Contains(line, "audit anchors are off")
}

// logFile is a process's stderr written to a file.
type logFile struct{ f *os.File }

// String is what was written so far.
func (l *logFile) String() string {
	b, _ := os.ReadFile(l.f.Name())
	return string(b)
}

func (l *logFile) close() { _ = l.f.Close() }

// lockedBuffer is a goroutine-safe buffer for a process's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 4<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
