// Package harness holds what both benchmark programs share: starting an MCP
// server (directly or through aqlguard) as a stdio child, writing the
// aqlguard config for a benchmark run, and a wire tap that keeps the raw
// tools/list results exactly as the client received them.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version every benchmark session negotiates: the
// newest one that npm servers, the go-sdk servers and aqlguard all speak.
const ProtocolVersion = "2025-11-25"

// Server is one downstream MCP server: its aqlguard name and its argv.
type Server struct {
	Name string
	Argv []string
}

var serverName = regexp.MustCompile(`^[a-z0-9]+$`)

// ParseServer parses "name=command arg arg..." (arguments split on white
// space; paths with spaces are not supported).
func ParseServer(spec string) (Server, error) {
	name, cmd, ok := strings.Cut(spec, "=")
	argv := strings.Fields(cmd)
	if !ok || len(argv) == 0 {
		return Server{}, fmt.Errorf("server %q: want name=command [args...]", spec)
	}
	if !serverName.MatchString(name) {
		return Server{}, fmt.Errorf("server %q: name must be lowercase letters and digits", spec)
	}
	return Server{Name: name, Argv: argv}, nil
}

// Servers is a repeatable -server flag.
type Servers []Server

func (s *Servers) String() string {
	parts := make([]string, len(*s))
	for i, v := range *s {
		parts[i] = v.Name + "=" + strings.Join(v.Argv, " ")
	}
	return strings.Join(parts, "; ")
}

// Set implements flag.Value.
func (s *Servers) Set(v string) error {
	srv, err := ParseServer(v)
	if err != nil {
		return err
	}
	for _, o := range *s {
		if o.Name == srv.Name {
			return fmt.Errorf("server name %q given twice", srv.Name)
		}
	}
	*s = append(*s, srv)
	return nil
}

// WriteConfig writes an aqlguard config for mode and servers into dir (with
// its own state directory there) and returns its path. The safety loop is
// enforcing but approves everything, so every call is allowed after passing
// the whole evaluator path.
//
// Each server's first sight is trusted (trust_first_sight), as a test
// server's must be for calls to run without a human's review; an
// aqlguard built before that key existed rejects it, and a config for one
// says legacy.
func WriteConfig(dir, mode string, servers []Server) (string, error) {
	return writeConfig(dir, mode, servers, false)
}

// WriteLegacyConfig is WriteConfig for an aqlguard built before
// trust_first_sight existed (one that pinned every first sight).
func WriteLegacyConfig(dir, mode string, servers []Server) (string, error) {
	return writeConfig(dir, mode, servers, true)
}

func writeConfig(dir, mode string, servers []Server, legacy bool) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "mode = %s\nagent = \"bench\"\nstate_dir = %s\n\n", q(mode), q(dir+"/state"))
	b.WriteString("[safety]\nloop = \"enforcing\"\nmax_autonomous_steps = 1000000\n" +
		"risk_tolerance = \"aggressive\"\nauto_approve = [\"*\"]\n")
	for _, s := range servers {
		args := make([]string, len(s.Argv)-1)
		for i, a := range s.Argv[1:] {
			args[i] = q(a)
		}
		trust := "trust_first_sight = true\n"
		if legacy {
			trust = ""
		}
		fmt.Fprintf(&b, "\n[[servers]]\nname = %s\n%scommand = %s\nargs = [%s]\n",
			q(s.Name), trust, q(s.Argv[0]), strings.Join(args, ", "))
	}
	path := dir + "/aqlguard-" + mode + ".toml"
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// q quotes s as a TOML basic string (JSON string escapes are valid TOML).
func q(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}

// AqlguardArgv is the argv that serves MCP on stdio through aqlguard.
func AqlguardArgv(bin, config string, extra ...string) []string {
	return append([]string{bin, "run", "--config", config}, extra...)
}

// Session is a connected client session to a stdio child.
type Session struct {
	*mcp.ClientSession
	Tap    *Tap
	Pid    int // the child's process id
	stderr *Tail
	argv   []string
}

// Start runs argv as a stdio MCP server and completes the handshake. The
// child's stderr is kept (its last 64 KiB) for error messages.
func Start(ctx context.Context, argv []string) (*Session, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	stderr := &Tail{Max: 64 << 10}
	cmd.Stderr = stderr
	tap := &Tap{Transport: &mcp.CommandTransport{Command: cmd, TerminateDuration: 3 * time.Second}}
	client := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-bench", Version: "1"},
		&mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, tap, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		return nil, fmt.Errorf("starting %s: %w%s", argv[0], err, stderrNote(stderr.String()))
	}
	return &Session{ClientSession: cs, Tap: tap, Pid: cmd.Process.Pid, stderr: stderr, argv: argv}, nil
}

// Stderr returns the tail of the child's stderr.
func (s *Session) Stderr() string { return s.stderr.String() }

// Errorf wraps a failure with the child's stderr, which usually says why.
func (s *Session) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s%s", s.argv[0], fmt.Sprintf(format, args...), stderrNote(s.Stderr()))
}

// Close ends the session and the child. A child that exits with an error or
// must be killed is reported.
func (s *Session) Close() error {
	if err := s.ClientSession.Close(); err != nil {
		return s.Errorf("close: %v", err)
	}
	return nil
}

func stderrNote(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return "\n--- child stderr (tail) ---\n" + s
}

// ListToolsRaw pages through tools/list and returns every tool object as the
// raw JSON bytes the server sent.
func (s *Session) ListToolsRaw(ctx context.Context) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	for page := 0; ; page++ {
		if page > 100 {
			return nil, s.Errorf("tools/list: more than 100 pages")
		}
		s.Tap.Reset()
		res, err := s.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, s.Errorf("tools/list: %v", err)
		}
		raw := s.Tap.Last()
		if raw == nil {
			return nil, s.Errorf("tools/list: no raw result captured")
		}
		var r struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, s.Errorf("tools/list: decoding raw result: %v", err)
		}
		all = append(all, r.Tools...)
		if cursor = res.NextCursor; cursor == "" {
			return all, nil
		}
	}
}

// CallText calls a tool and returns its result marshalled to JSON. A
// protocol error or a result with isError is a failure.
func (s *Session) CallText(ctx context.Context, tool string, args any) (string, error) {
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return "", s.Errorf("tools/call %s: %v", tool, err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", s.Errorf("tools/call %s: isError: %s", tool, out)
	}
	return string(out), nil
}

// ReadText reads a resource and returns its result marshalled to JSON.
func (s *Session) ReadText(ctx context.Context, uri string) (string, error) {
	res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", s.Errorf("resources/read %s: %v", uri, err)
	}
	out, err := json.Marshal(res)
	return string(out), err
}

// CheckServers asks aqlguard's introspection which operations exist and
// fails unless every server contributed at least one: a server that did not
// start would otherwise silently shrink the measured tool list.
func (s *Session) CheckServers(ctx context.Context, servers []Server) error {
	tools, err := s.ListTools(ctx, nil)
	if err != nil {
		return s.Errorf("tools/list: %v", err)
	}
	tool := ""
	for _, t := range tools.Tools {
		if t.Name == "mcp_aql" || (tool == "" && t.Name == "mcp_aql_read") {
			tool = t.Name
		}
	}
	if tool == "" {
		return s.Errorf("no mcp_aql or mcp_aql_read tool to introspect with")
	}
	out, err := s.CallText(ctx, tool, map[string]any{
		"operation": "introspect", "params": map[string]any{"query": "operations"}})
	if err != nil {
		return err
	}
	for _, srv := range servers {
		if !strings.Contains(out, srv.Name+"_") {
			return s.Errorf("server %q offers no operation (did it fail to start?); introspection: %.2000s", srv.Name, out)
		}
	}
	return nil
}

// Tap is a transport that remembers the raw result of the last response
// carrying a "tools" member, i.e. the last tools/list answer.
type Tap struct {
	Transport mcp.Transport
	mu        sync.Mutex
	last      json.RawMessage
}

// Connect implements mcp.Transport.
func (t *Tap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, tap: t}, nil
}

// Reset forgets the last captured result.
func (t *Tap) Reset() { t.mu.Lock(); t.last = nil; t.mu.Unlock() }

// Last returns the last captured tools/list result.
func (t *Tap) Last() json.RawMessage { t.mu.Lock(); defer t.mu.Unlock(); return t.last }

type tapConn struct {
	mcp.Connection
	tap *Tap
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Response); ok && r.Result != nil {
		var probe struct {
			Tools json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(r.Result, &probe) == nil && probe.Tools != nil {
			c.tap.mu.Lock()
			c.tap.last = bytes.Clone(r.Result)
			c.tap.mu.Unlock()
		}
	}
	return msg, err
}

// Tail is an io.Writer that keeps the last Max bytes written to it (a
// child's stderr, for error messages).
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string { t.mu.Lock(); defer t.mu.Unlock(); return string(t.buf) }

// Bearer sends Token as a bearer token with every request through Base.
type Bearer struct {
	Token string
	Base  http.RoundTripper
}

func (b Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.Token)
	return b.Base.RoundTrip(r)
}

// SnakeCase turns a tool name into the operation-name form aqlguard uses for
// simple names (echo, test_simple_text, fetchRemoteData -> fetch_remote_data).
// It is only a default: pass the operation name explicitly for odd names.
func SnakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
			b.WriteRune(r + 'a' - 'A')
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}
