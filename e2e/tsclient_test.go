package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
	"github.com/aqlguard/aqlguard/internal/fixture/xtest"
	"github.com/aqlguard/aqlguard/verify"
)

// tsClient is e2e/testdata/tsclient.mjs: the TypeScript SDK's own Client
// and StdioClientTransport, with the SDK's defaults, running aqlguard.
type tsClient struct {
	cmd    *exec.Cmd
	in     *os.File
	out    *bufio.Scanner
	stderr *syncBuffer
}

// tsAnswer is one line the client prints.
type tsAnswer struct {
	Event     string   `json:"event"`
	Env       []string `json:"env"`
	TimeoutMS int      `json:"timeout_ms"`
	MS        int      `json:"ms"`
	Message   string   `json:"message"`
	Result    struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func (a tsAnswer) text() string {
	var parts []string
	for _, c := range a.Result.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// startTSClient starts the client in env, running aqlguard with args.
// The SDK is the one npm installed beside the filesystem server.
func startTSClient(t *testing.T, env []string, args ...string) *tsClient {
	t.Helper()
	node := nodeBin(t)
	fs := requireEnv(t, "AQLGUARD_E2E_FS_SERVER")
	sdk := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(fs))), "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "dist", "esm", "client", "stdio.js")); err != nil {
		t.Fatalf("the TypeScript SDK is not installed beside the filesystem server (.ci/run installs it): %v", err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "tsclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &tsClient{stderr: &syncBuffer{}}
	c.cmd = exec.Command(node, append([]string{script, sdk, bins.aqlguard}, args...)...)
	c.cmd.Env = env
	c.cmd.Stdin = r
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	diesWithTest(c.cmd)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c.in = w
	c.out = bufio.NewScanner(stdout)
	c.out.Buffer(make([]byte, 1<<20), 1<<20)
	t.Cleanup(func() {
		_ = c.in.Close()
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("the client's and aqlguard's stderr:\n%s", c.stderr.String())
		}
	})
	return c
}

// next reads the client's next line, waiting at most limit.
func (c *tsClient) next(t *testing.T, limit time.Duration) tsAnswer {
	t.Helper()
	line := make(chan string, 1)
	go func() {
		if c.out.Scan() {
			line <- c.out.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		if !ok {
			t.Fatalf("the client ended: %v\n%s", c.out.Err(), c.stderr.String())
		}
		var a tsAnswer
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("the client printed %q: %v", l, err)
		}
		return a
	case <-time.After(limit):
		t.Fatalf("the client said nothing in %s\n%s", limit, c.stderr.String())
	}
	return tsAnswer{}
}

// call asks the client to call a tool (the answer comes with next).
func (c *tsClient) call(t *testing.T, name string, args map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
}

// TestTypeScriptClientWithItsDefaults (issue 31, items 1 and 2): a
// client built on the TypeScript SDK, as most are, starts aqlguard with
// the SDK's minimal environment (no DISPLAY) and waits 60 s for a call.
// The client itself runs in a graphical session (a private Xvfb). A
// gated call reaches a dialog all the same (aqlguard finds the display
// of the process that started it), and answers pending well before the
// client's timeout; the human allows; the same call, repeated, runs,
// without a second question. What the start could reach is recorded
// for doctor.
func TestTypeScriptClientWithItsDefaults(t *testing.T) {
	long.Test(t)
	xtest.Require(t)
	display := xtest.StartXvfb(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(renderConfig(t, `
mode = "transparent"
agent = "ts-agent"
state_dir = "{{.dir}}/state"
[verify]
channel = "dialog"
inline_wait = "3s"
timeout = "3s"
[safety]
requires_approval = ["ts_delete_note"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`, dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	// The client has the display, as a desktop application does.
	env := append(isolatedEnv(t, dir), "DISPLAY="+display)
	c := startTSClient(t, env, "run", "--config", config)
	ready := c.next(t, callTimeout)
	if ready.Event != "ready" || ready.TimeoutMS != 60000 || slices.Contains(ready.Env, "DISPLAY") ||
		slices.Contains(ready.Env, "WAYLAND_DISPLAY") || slices.Contains(ready.Env, "DBUS_SESSION_BUS_ADDRESS") {
		t.Fatalf("not the SDK's defaults: %+v", ready)
	}

	c.call(t, "delete_note", map[string]any{"id": "n1"})
	w := xtest.Window(t, verify.QuestionTitle) // reached from the minimal environment
	pending := c.next(t, 60*time.Second)
	if pending.Event != "result" || !pending.Result.IsError || !strings.Contains(pending.text(), "Repeat the same call") {
		t.Fatalf("not a pending answer: %+v", pending)
	}
	if pending.ms() >= 60*time.Second || pending.ms() > 30*time.Second {
		t.Errorf("the pending answer took %s", pending.ms())
	}
	xtest.Screenshot(t, "e2e-ts-client-question")
	xtest.Focus(t, w)
	xtest.Keys(t, "Tab", "Tab", "Tab", "space") // Allow once: never the default
	waitWindowGone(t, verify.QuestionTitle)

	c.call(t, "delete_note", map[string]any{"id": "n1"})
	ran := c.next(t, 60*time.Second)
	if ran.Event != "result" || ran.Result.IsError {
		t.Fatalf("the repeated call after the human allowed it: %+v", ran)
	}
	if out, _ := xtest.Run("xdotool", "search", "--name", verify.QuestionTitle); out != "" {
		t.Error("the repeated call put a second question up")
	}
	calls := readCalls(t, filepath.Join(dir, "calls.jsonl"))
	if len(calls) != 1 || !strings.Contains(string(calls[0].Arguments), "n1") {
		t.Errorf("the server saw %v", calls)
	}

	reaches, err := verify.ReadReaches(verify.ReachDir(filepath.Join(dir, "state")))
	if err != nil || len(reaches) != 1 {
		t.Fatalf("reach records: %+v, %v", reaches, err)
	}
	if r := reaches[0]; !r.Reached || r.Agent != "ts-agent" || r.Where != "DISPLAY="+display ||
		!strings.Contains(r.From, "node") || !strings.Contains(r.StartedBy, "node") {
		t.Errorf("what the start reached: %+v", r)
	}
}

func (a tsAnswer) ms() time.Duration { return time.Duration(a.MS) * time.Millisecond }

// waitWindowGone waits until no window has title.
func waitWindowGone(t *testing.T, title string) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if out, _ := xtest.Run("xdotool", "search", "--name", "^"+title+"$"); out == "" {
			return
		}
	}
	t.Fatalf("the %q window is still up", title)
}
