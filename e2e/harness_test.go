// Package e2e holds aqlguard's end-to-end tests: a real aqlguard binary between
// a go-sdk MCP client and real downstream MCP servers.
//
// This file is the harness. TestMain builds, once per `go test` run:
//   - aqlguard (./cmd/aqlguard): bins.aqlguard
//   - our test server (./internal/testserver): bins.testserver
//   - go-sdk's conformance everything-server: bins.everything
//
// If aqlguard does not build, every test that starts it fails at once with the
// compiler's output, and the package fails even if no such test ran.
//
// Environment (set by .ci/run; see also fsServer and nodeBin):
//
//	AQLGUARD_E2E_NODE          path of a Node.js >= 22 binary
//	AQLGUARD_E2E_FS_SERVER     @modelcontextprotocol/server-filesystem: its dist/index.js
//	                           (run with AQLGUARD_E2E_NODE) or an executable
//	AQLGUARD_E2E_REQUIRE_NPM=1 fail, instead of skip, when the two above are unset
//
//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is what the harness's clients ask for by default.
const protocolVersion = "2025-11-25"

// callTimeout bounds every MCP request the harness makes (connect, list, call).
const callTimeout = 30 * time.Second

// bins holds the absolute paths of the binaries TestMain built.
var bins struct {
	aqlguard   string // aqlguard CLI
	testserver string // internal/testserver
	everything string // go-sdk conformance everything-server (stdio by default, -http ADDR serves at /)

	aqlguardErr error // why aqlguard did not build; startGuard fails with it
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // `go test -list`: nothing to build
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "aqlguard-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	bins.aqlguard = filepath.Join(dir, "aqlguard")
	bins.testserver = filepath.Join(dir, "testserver")
	bins.everything = filepath.Join(dir, "everything-server")
	builds := []struct {
		out, pkg string
		err      error
	}{
		{bins.aqlguard, "./cmd/aqlguard", nil},
		{bins.testserver, "./internal/testserver", nil},
		{bins.everything, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server", nil},
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range builds {
		wg.Go(func() { builds[i].err = goBuild(builds[i].out, builds[i].pkg) })
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "e2e: built test binaries in %s\n", time.Since(start).Round(time.Millisecond))

	bins.aqlguardErr = builds[0].err
	for _, b := range builds[1:] {
		if b.err != nil {
			fmt.Fprintf(os.Stderr, "e2e: HARNESS BROKEN: %v\n", b.err)
			return 1
		}
	}

	code := m.Run()
	if bins.aqlguardErr != nil {
		fmt.Fprintf(os.Stderr, "\ne2e: FAIL: aqlguard does not build, so no end-to-end test of it ran:\n%v\n", bins.aqlguardErr)
		code = 1
	}
	return code
}

// goBuild runs `go build -o out pkg` from the repository root.
func goBuild(out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = ".." // the package directory is e2e/
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s: %v\n%s", filepath.Base(out), pkg, err, b)
	}
	return nil
}

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
	// Args are appended after `run --config FILE`.
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

	g.cmd = exec.Command(bins.aqlguard, append([]string{"run", "--config", g.config}, o.Args...)...)
	g.cmd.Dir = o.Dir
	g.mark = processMark()
	g.cmd.Env = append(append(isolatedEnv(t, o.Dir), o.Env...), g.mark)
	g.cmd.Stderr = g.errLog
	g.cmd.WaitDelay = 3 * time.Second // if a grandchild keeps our stderr pipe open
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}

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

// resultText returns the text of res's single TextContent, failing the test
// if res has any other shape.
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

// ---------------------------------------------------------------------------
// Configs

// renderConfig expands config as a text/template (missing keys are errors).
// Data, for use as {{.testserver}} or, quoted for TOML, {{toml .testserver}}:
//
//	aqlguard, testserver, everything  the built binaries (bins.*)
//	dir                               the guard's directory
//
// Functions: toml (a TOML basic string) and tomlArray (an array of them),
// also available as the Go functions tomlString and tomlArray. A config
// without "{{" is returned as it is.
func renderConfig(t *testing.T, config, dir string) string {
	t.Helper()
	if !strings.Contains(config, "{{") {
		return config
	}
	tmpl, err := template.New("config").Option("missingkey=error").
		Funcs(template.FuncMap{"toml": tomlString, "tomlArray": tomlArray}).Parse(config)
	if err != nil {
		t.Fatalf("config template: %v", err)
	}
	var buf bytes.Buffer
	err = tmpl.Execute(&buf, map[string]string{
		"aqlguard": bins.aqlguard, "testserver": bins.testserver, "everything": bins.everything, "dir": dir,
	})
	if err != nil {
		t.Fatalf("config template: %v", err)
	}
	return buf.String()
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	b, _ := json.Marshal(s) // JSON string escapes are a subset of TOML's
	return string(b)
}

// tomlArray renders ss as a TOML array of basic strings: ["a", "b"].
func tomlArray(ss ...string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// isolatedEnv is the test's environment without AQLGUARD_*, DISPLAY and
// WAYLAND_DISPLAY variables and with
// HOME and the XDG base directories inside dir/home.
func isolatedEnv(t *testing.T, dir string) []string {
	t.Helper()
	home := filepath.Join(dir, "home")
	set := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
	}
	for _, d := range set {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		// No display either: a test that wants dialogs sets DISPLAY itself,
		// and no other test may pop one up on a developer's screen.
		if _, ok := set[k]; !ok && !strings.HasPrefix(k, "AQLGUARD_") && k != "DISPLAY" && k != "WAYLAND_DISPLAY" {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// ---------------------------------------------------------------------------
// The test server

// loggedCall is one line of the test server's call log.
type loggedCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"` // as received; null if absent
}

// testserverLog returns a fresh path for a test server call log (pass it as
// `-log PATH`, or AQLGUARD_TESTSERVER_LOG=PATH in the server's env).
func testserverLog(t *testing.T) string {
	return filepath.Join(t.TempDir(), "testserver-calls.jsonl")
}

// readCalls returns the calls the test server logged at path, in order. A
// missing file means the server never started and yields no calls. Each line
// is fsync'd before the server answers, so after a response arrives its
// call is in the log.
func readCalls(t *testing.T, path string) []loggedCall {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls []loggedCall
	for line := range strings.Lines(string(b)) {
		var c loggedCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("bad call log line %q: %v", line, err)
		}
		calls = append(calls, c)
	}
	return calls
}

// startTestServerHTTP runs the test server with `-http 127.0.0.1:0 args...`
// and returns its Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp).
// Cleanup stops it; its stderr is logged if the test fails.
func startTestServerHTTP(t *testing.T, args ...string) string {
	t.Helper()
	trackSources()
	cmd := exec.Command(bins.testserver, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urlc <- u
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("testserver -http stderr:\n%s", log.String())
		}
	})
	select {
	case u := <-urlc:
		return u
	case <-done:
		t.Fatalf("testserver -http exited before listening:\n%s", log.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("testserver -http did not report its address in 10s:\n%s", log.String())
	}
	return ""
}

// ---------------------------------------------------------------------------
// npm's filesystem server

// fsServer returns how to run @modelcontextprotocol/server-filesystem: append
// the allowed directories to args. AQLGUARD_E2E_FS_SERVER is either the
// package's dist/index.js (run with nodeBin) or an executable. If it is unset
// the test is skipped, loudly, or fails when AQLGUARD_E2E_REQUIRE_NPM=1.
func fsServer(t *testing.T) (command string, args []string) {
	t.Helper()
	p := requireEnv(t, "AQLGUARD_E2E_FS_SERVER")
	if strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".mjs") {
		return nodeBin(t), []string{p}
	}
	return p, nil
}

// nodeBin returns AQLGUARD_E2E_NODE, the Node.js (>= 22) binary, with the
// same skip/fail rule as fsServer.
func nodeBin(t *testing.T) string {
	t.Helper()
	return requireEnv(t, "AQLGUARD_E2E_NODE")
}

func requireEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		if _, err := os.Stat(v); err != nil {
			t.Fatalf("%s=%s: %v", name, v, err)
		}
		return v
	}
	if os.Getenv("AQLGUARD_E2E_REQUIRE_NPM") == "1" {
		t.Fatalf("%s is not set but AQLGUARD_E2E_REQUIRE_NPM=1", name)
	}
	msg := fmt.Sprintf("SKIPPING: npm @modelcontextprotocol/server-filesystem not installed; run .ci/run (%s unset)", name)
	fmt.Fprintf(os.Stderr, "\n!!!!!!!! %s: %s !!!!!!!!\n\n", t.Name(), msg)
	t.Skip(msg)
	return ""
}

// ---------------------------------------------------------------------------
// Plumbing

var trackOnce sync.Once

// trackSources stats every file of the repository (but .git, .ci and
// node_modules) once per test binary, so that `go test` records them as
// inputs of the run: its cache cannot see the binaries TestMain builds, and
// would otherwise serve a stale result after aqlguard's source changed.
// launchGuard, startTestServerHTTP and connectDirect call it; a test that
// execs bins.* by other means should call it too. (CI uses -count=1 anyway.)
func trackSources() {
	trackOnce.Do(func() {
		_ = filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
			switch {
			case err != nil:
				return nil
			case d.IsDir() && p != ".." && (d.Name() == ".git" || d.Name() == ".ci" || d.Name() == "node_modules"):
				return filepath.SkipDir
			case d.Type().IsRegular():
				_, _ = os.Stat(p)
			}
			return nil
		})
	})
}

// syncBuffer is a goroutine-safe, bounded bytes.Buffer.
type syncBuffer struct {
	mu        sync.Mutex
	buf       bytes.Buffer
	truncated bool
}

const syncBufferMax = 16 << 20

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := syncBufferMax - b.buf.Len(); len(p) > room {
		b.buf.Write(p[:max(room, 0)])
		b.truncated = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.truncated {
		return b.buf.String() + "\n[... truncated at 16 MiB]"
	}
	return b.buf.String()
}

// checkProcessGroup fails the test if a live (non-zombie) process remains in
// process group pgid 3s after its leader exited, and then kills the group.
// It does nothing where /proc is missing.
func checkProcessGroup(t *testing.T, pgid int) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := groupMembers(pgid)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left behind in aqlguard's process group %d: %s", pgid, strings.Join(left, "; "))
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// processMark is an environment entry unique to one aqlguard run.
func processMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "AQLGUARD_E2E_MARK=" + hex.EncodeToString(b)
}

// checkMarked fails the test if any live process still carries mark in
// its environment 3 s after aqlguard ended, and kills it.
func checkMarked(t *testing.T, mark string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		return
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes aqlguard started outlived it: %v", left)
			for pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// marked maps live processes whose environment holds mark to their command lines.
func marked(mark string) map[int]string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	out := map[int]string{}
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(mark+"\x00")) && !bytes.HasSuffix(env, []byte(mark)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(d, "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out[pid] = strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '})))
	}
	return out
}

// groupMembers lists "PID CMDLINE" of live processes whose process group is pgid.
func groupMembers(pgid int) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" || f[2] != strconv.Itoa(pgid) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(d, "cmdline"))
		out = append(out, filepath.Base(d)+" "+strings.TrimSpace(string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))))
	}
	return out
}

// ---------------------------------------------------------------------------
// Smoke tests of the harness's own pieces (no aqlguard involved)

// connectDirect connects a go-sdk client straight to an MCP server.
func connectDirect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	trackSources()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, nil).
		Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func TestHarnessTestServerDirect(t *testing.T) {
	exercise := func(t *testing.T, cs *mcp.ClientSession, logPath string) {
		t.Helper()
		if got := cs.InitializeResult().ServerInfo.Name; got != "smoke" {
			t.Errorf("server name = %q, want smoke (-name)", got)
		}
		byName := map[string]*mcp.Tool{}
		for _, tool := range listTools(t, cs) {
			byName[tool.Name] = tool
		}
		for _, name := range []string{"get_item", "list_items", "create_note", "update_note", "delete_note",
			"run_command", "echo", "fail", "big_output", "slow", "drop_database", "fetchRemoteData",
			"read-file", "Read_File", "nested"} {
			if byName[name] == nil {
				t.Errorf("tool %s missing", name)
			}
		}
		if a := byName["get_item"].Annotations; a == nil || !a.ReadOnlyHint {
			t.Errorf("get_item annotations = %+v, want readOnlyHint", a)
		}
		if a := byName["delete_note"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Errorf("delete_note annotations = %+v, want destructiveHint", a)
		}
		if a := byName["run_command"].Annotations; a != nil {
			t.Errorf("run_command annotations = %+v, want none", a)
		}

		ctx := context.Background()
		call := func(name string, args any) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
		if got := resultText(t, call("echo", map[string]any{"message": "hello ✓"})); got != "hello ✓" {
			t.Errorf("echo = %q", got)
		}
		var item map[string]any
		if err := json.Unmarshal([]byte(resultText(t, call("get_item", map[string]any{"id": "a-1"}))), &item); err != nil || item["name"] != "Item a-1" {
			t.Errorf("get_item = %v, %v", item, err)
		}
		if res := call("fail", nil); !res.IsError || resultText(t, res) != "deliberate failure" {
			t.Errorf("fail = %s", jsonString(res))
		}
		// The raw handler sees arguments the schema forbids: no SDK validation.
		call("get_item", map[string]any{"id": 42, "extra": true})

		calls := readCalls(t, logPath)
		var got []string
		for _, c := range calls {
			got = append(got, c.Tool+" "+string(c.Arguments))
		}
		want := []string{`echo {"message":"hello ✓"}`, `get_item {"id":"a-1"}`, `fail {}`, `get_item {"extra":true,"id":42}`}
		if !slices.Equal(got, want) {
			t.Errorf("call log:\n got %q\nwant %q", got, want)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		logPath := testserverLog(t)
		var stderr syncBuffer
		cmd := exec.Command(bins.testserver, "-log", logPath, "-name", "smoke", "-stderr-noise")
		cmd.Stderr = &stderr
		cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
		exercise(t, cs, logPath)
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if !strings.Contains(stderr.String(), "stderr noise line 1") {
			t.Errorf("-stderr-noise: stderr = %q", stderr.String())
		}
	})

	t.Run("http", func(t *testing.T) {
		logPath := testserverLog(t)
		url := startTestServerHTTP(t, "-log", logPath, "-name", "smoke")
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			t.Fatalf("url = %q", url)
		}
		cs := connectDirect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
		defer cs.Close()
		exercise(t, cs, logPath)
	})

	t.Run("fail-start", func(t *testing.T) {
		out, err := exec.Command(bins.testserver, "-fail-start").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "deliberate start failure") {
			t.Errorf("-fail-start: err=%v output=%q", err, out)
		}
	})

	t.Run("hang-start", func(t *testing.T) {
		cmd := exec.Command(bins.testserver, "-hang-start")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, nil)
		if err == nil {
			t.Fatal("connect to a hanging server succeeded")
		}
		// The failed connect closed stdin; the server kept hanging until SIGTERM.
		if ps := cmd.ProcessState; ps == nil || ps.Exited() {
			t.Errorf("want the hanging server terminated by a signal, got %v", ps)
		}
	})
}

// TestHarnessEverythingServerDirect checks the go-sdk everything-server build.
func TestHarnessEverythingServerDirect(t *testing.T) {
	cs := connectDirect(t, &mcp.CommandTransport{Command: exec.Command(bins.everything)})
	defer cs.Close()
	if n := len(listTools(t, cs)); n < 20 {
		t.Errorf("everything-server lists %d tools, want >= 20", n)
	}
}

// TestHarnessFSServerDirect checks the npm filesystem server runs under Node 22.
func TestHarnessFSServerDirect(t *testing.T) {
	command, args := fsServer(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd := exec.Command(command, append(args, root)...)
	cmd.Stderr = &stderr
	cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
	defer cs.Close()
	defer func() {
		if t.Failed() {
			t.Logf("fs server stderr:\n%s", stderr.String())
		}
	}()
	names := map[string]bool{}
	for _, tool := range listTools(t, cs) {
		names[tool.Name] = true
	}
	if !names["read_text_file"] && !names["read_file"] {
		t.Fatalf("fs server tools lack read_text_file/read_file: %v", names)
	}
	tool := "read_text_file"
	if !names[tool] {
		tool = "read_file"
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool,
		Arguments: map[string]any{"path": filepath.Join(root, "hello.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !strings.Contains(got, "hi from disk") {
		t.Errorf("%s = %q", tool, got)
	}
}

// serveTokenOf reads the bearer token `aqlguard serve` created in the
// state directory of a run in dir (isolatedEnv).
func serveTokenOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "home", ".local", "state", "aqlguard", "serve.token"))
	if err != nil {
		t.Fatalf("the serve token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// bearerClient is an HTTP client that sends token as a bearer token.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
