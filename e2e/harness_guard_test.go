//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all

// Harness: the aqlguard process under test and its client session (see harness_test.go).

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---------------------------------------------------------------------------
// aqlguard under test

// guard is one running `aqlguard run` with a connected go-sdk client session.
// Its stderr (aqlguard's log) is captured and printed with t.Log if the test
// fails. Use it from the test's own goroutine (its helpers call t.Fatal);
// concurrent tests should use callRaw.
type guard struct {
	session *mcp.ClientSession // the client's MCP session with aqlguard
	cmd     *exec.Cmd          // the aqlguard process
	dir     string             // HOME and XDG_* dirs live here; also config.toml
	config  string             // path of the config file written for this run
	errLog  *syncBuffer
	outLog  *syncBuffer // aqlguard's stdout, with guardOptions.TapStdout
	// mark is in the environment of aqlguard and so of every process it
	// starts, in whatever process group: what is left with it is a leak.
	mark string

	stopOnce sync.Once
	stopErr  error
}

// guardOptions configures launchGuard. Only Config is required.
type guardOptions struct {
	// Config is the TOML config. It is first expanded as a text/template (see
	// renderConfig), then written to Dir/config.toml.
	Config string
	// Verb is aqlguard's verb: "run" (default) or "wrap".
	Verb string
	// Args are appended after `VERB --config FILE`.
	Args []string
	// Env is added (KEY=VALUE) to aqlguard's environment, which otherwise is
	// the test's environment without AQLGUARD_* and with HOME and
	// XDG_{CONFIG,STATE,DATA,CACHE}_HOME pointing inside Dir.
	Env []string
	// Dir is the per-run directory. Default: a fresh t.TempDir(). Pass the
	// previous guard's dir to restart aqlguard over the same state.
	Dir string
	// ProtocolVersion the client asks for. Default "2025-11-25".
	ProtocolVersion string
	// Client options (notification handlers, capabilities...). May be nil.
	Client *mcp.ClientOptions
	// TapStdout copies every byte aqlguard writes to stdout (the MCP
	// stream) into guard.stdout, for leak checks.
	TapStdout bool
}

// startGuard writes configTOML (expanded by renderConfig) to a temp dir and
// launches `aqlguard run --config FILE extraArgs...` over stdio, connecting a
// go-sdk client that asks for protocol 2025-11-25. It fails the test if
// aqlguard cannot be built, started or initialized. Cleanup closes the session
// and checks that aqlguard exited cleanly on stdin EOF and left no process of
// its process group behind.
func startGuard(t *testing.T, configTOML string, extraArgs ...string) *guard {
	t.Helper()
	g, err := launchGuard(t, guardOptions{Config: configTOML, Args: extraArgs})
	if err != nil {
		t.Fatalf("starting aqlguard: %v", err)
	}
	return g
}

// launchGuard is startGuard with options, and it returns a failed connect as
// an error (with aqlguard's stderr appended) instead of failing the test, for
// tests where aqlguard is meant to refuse to start. It still fails the test if
// aqlguard did not build or the config cannot be written.
func launchGuard(t *testing.T, o guardOptions) (*guard, error) {
	t.Helper()
	if bins.aqlguardErr != nil {
		t.Fatalf("aqlguard did not build:\n%v", bins.aqlguardErr)
	}
	trackSources()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = protocolVersion
	}
	g := &guard{dir: o.Dir, config: filepath.Join(o.Dir, "config.toml"), errLog: &syncBuffer{}}
	if err := os.WriteFile(g.config, []byte(renderConfig(t, o.Config, o.Dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // registered first, so it runs last and sees everything
		if t.Failed() {
			t.Logf("aqlguard stderr (%s):\n%s", g.config, g.stderr())
		}
	})

	if o.Verb == "" {
		o.Verb = "run"
	}
	g.cmd = exec.Command(bins.aqlguard, append([]string{o.Verb, "--config", g.config}, o.Args...)...)
	g.cmd.Dir = o.Dir
	g.mark = processMark()
	g.cmd.Env = append(append(isolatedEnv(t, o.Dir), o.Env...), g.mark)
	g.cmd.Stderr = g.errLog
	g.cmd.WaitDelay = 3 * time.Second // if a grandchild keeps our stderr pipe open
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	diesWithTest(g.cmd)

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, o.Client)
	var transport mcp.Transport = &mcp.CommandTransport{Command: g.cmd, TerminateDuration: 5 * time.Second}
	if o.TapStdout {
		g.outLog = &syncBuffer{}
		transport = &tappedCommand{cmd: g.cmd, tap: g.outLog}
	}
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion})
	if err != nil {
		if g.cmd.Process != nil {
			pgid := g.cmd.Process.Pid
			t.Cleanup(func() { checkProcessGroup(t, pgid) })
		}
		return nil, fmt.Errorf("connecting to aqlguard: %w\naqlguard stderr:\n%s", err, g.stderr())
	}
	g.session = cs
	t.Cleanup(func() {
		if err := g.stop(t); err != nil {
			t.Errorf("aqlguard did not exit cleanly when its stdin closed: %v", err)
		}
	})
	return g, nil
}

// stop closes the client session (closing aqlguard's stdin), waits for
// aqlguard to exit (SIGTERM after 5s, then SIGKILL) and returns its exit error,
// nil for a clean exit. It then fails the test if any process of aqlguard's
// process group (its downstream servers, unless they made their own) is still
// alive 3s later. Safe to call more than once; cleanup calls it.
func (g *guard) stop(t *testing.T) error {
	t.Helper()
	g.stopOnce.Do(func() {
		g.stopErr = g.session.Close()
		checkProcessGroup(t, g.cmd.Process.Pid)
		checkMarked(t, g.mark)
	})
	return g.stopErr
}

// tappedCommand is mcp.CommandTransport with the process's stdout copied
// to tap on its way to the client. Closing it closes aqlguard's stdin and
// waits for it to exit (SIGKILL after 5s).
type tappedCommand struct {
	cmd *exec.Cmd
	tap io.Writer
}

func (tc *tappedCommand) Connect(ctx context.Context) (mcp.Connection, error) {
	out, err := tc.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	in, err := tc.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := tc.cmd.Start(); err != nil {
		return nil, err
	}
	return (&mcp.IOTransport{Reader: tappedReader{io.TeeReader(out, tc.tap), out}, Writer: &stdinCloser{in, tc.cmd}}).Connect(ctx)
}

type tappedReader struct {
	io.Reader
	io.Closer
}

type stdinCloser struct {
	io.WriteCloser
	cmd *exec.Cmd
}

func (s *stdinCloser) Close() error {
	_ = s.WriteCloser.Close()
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("aqlguard did not exit 5s after its stdin closed: %w", <-done)
	}
}

// kill ends aqlguard and its downstream servers with SIGKILL, as a crash
// or a power cut would: nothing gets to clean up.
func (g *guard) kill(t *testing.T) {
	t.Helper()
	g.stopOnce.Do(func() {
		if err := syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Errorf("killing aqlguard: %v", err)
		}
		_ = g.session.Close() // reports the kill; expected
		// The downstream servers run in process groups of their own: the
		// kernel ends them when aqlguard dies (parent death signal).
		checkMarked(t, g.mark)
	})
}

// stderr returns what aqlguard has written to stderr so far.
func (g *guard) stderr() string { return g.errLog.String() }

// callRaw calls tool with args (anything that marshals to a JSON object; nil
// sends {}). It returns protocol errors (e.g. *jsonrpc.Error) as err. Safe for
// concurrent use.
func (g *guard) callRaw(tool string, args any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return g.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// call calls tool with args and parses the result's single TextContent as a
// JSON object. It fails the test on a protocol error, on any other content
// shape, or if the text is not a JSON object. IsError results are returned
// like any other: check raw.IsError.
func (g *guard) call(t *testing.T, tool string, args any) (result map[string]any, raw *mcp.CallToolResult) {
	t.Helper()
	raw, err := g.callRaw(tool, args)
	if err != nil {
		t.Fatalf("calling %s: %v", tool, err)
	}
	text := resultText(t, raw)
	if err := json.Unmarshal([]byte(text), &result); err != nil {
		t.Fatalf("calling %s: result text is not a JSON object (%v): %s", tool, err, text)
	}
	return result, raw
}

// callAQL calls an MCP-AQL endpoint tool with {"operation": operation,
// "params": params} (params omitted when nil); see call.
func (g *guard) callAQL(t *testing.T, tool, operation string, params map[string]any) (map[string]any, *mcp.CallToolResult) {
	t.Helper()
	args := map[string]any{"operation": operation}
	if params != nil {
		args["params"] = params
	}
	return g.call(t, tool, args)
}

// tools lists all of aqlguard's tools (following pagination).
func (g *guard) tools(t *testing.T) []*mcp.Tool {
	t.Helper()
	return listTools(t, g.session)
}

// listTools lists all tools of any client session, following pagination.
func listTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var tools []*mcp.Tool
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("listing tools: %v", err)
		}
		tools = append(tools, tool)
	}
	return tools
}

// mustCall calls a tool with _meta and fails the test unless it
// succeeded (no protocol error, no tool error).
func mustCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any, meta mcp.Meta) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	p.Meta = meta
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %s", name, err, jsonString(res))
	}
	return res
}

// resultText returns the text of res's single TextContent, failing the test
// if res has any other shape.
// callText calls tool on cs and returns its text and whether it is a
// tool error; a protocol error fails the test.
func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return resultText(t, res), res.IsError
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want exactly 1 content block, got %d: %s", len(res.Content), jsonString(res))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("want TextContent, got %T: %s", res.Content[0], jsonString(res))
	}
	return tc.Text
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}
