package e2e

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/procfs"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverPID is the pid of g's test server process started with args.
func serverPID(t *testing.T, g *guard, args ...string) int {
	t.Helper()
	want := strings.Join(append([]string{bins.testserver}, args...), " ")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for pid, cmdline := range marked(g.mark) {
			if cmdline == want {
				return pid
			}
		}
	}
	t.Fatalf("no test server process among %v", marked(g.mark))
	return 0
}

// TestServerDiesMidCall: a server killed in the middle of a call fails
// that call at once, with an error that names the server; it is
// restarted with backoff, serves again, and introspection says it was
// restarted.
func TestServerDiesMidCall(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "resilience"
[safety]
auto_approve = ["*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	first := serverPID(t, g)
	type answer struct {
		res *mcp.CallToolResult
		err error
		at  time.Time
	}
	done := make(chan answer, 1)
	go func() {
		res, err := g.callRaw("mcp_aql", map[string]any{"operation": "ts_slow", "params": map[string]any{"ms": 60000}})
		done <- answer{res, err, time.Now()}
	}()
	time.Sleep(500 * time.Millisecond) // the call is in flight
	killed := time.Now()
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var a answer
	select {
	case a = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the call to a dead server did not fail")
	}
	if took := a.at.Sub(killed); took > time.Second {
		t.Errorf("the call failed %v after its server died, want within 1s", took)
	}
	if a.err != nil || !a.res.IsError || !strings.Contains(resultText(t, a.res), "ts") {
		t.Fatalf("the failed call: %v %s", a.err, jsonString(a.res))
	}
	var res map[string]any
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if res, _ = g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "back"}); res["success"] == true {
			break
		}
	}
	if res["data"] != "back" {
		t.Fatalf("the server did not come back: %s", jsonString(res))
	}
	if again := serverPID(t, g); again == first {
		t.Error("the same process serves: was it restarted?")
	}
	intro, _ := g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations"})
	servers := data(t, intro)["_protocol"].(map[string]any)["servers"].([]any)
	ts := servers[0].(map[string]any)
	if ts["status"] != "ready" || ts["restarts"] != float64(1) {
		t.Errorf("introspection after the restart: %v", ts)
	}
}

// reaperConfig fronts a test server that leaves a process behind in a
// session of its own.
const reaperConfig = `
mode = "all"
agent = "reaper"
[safety]
auto_approve = ["*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-spawn-detached"]
`

// TestNoServerProcessOutlivesAqlguard: whatever aqlguard's end (SIGKILL
// here, so it cleans up nothing itself), its servers go with it, even a
// process a server left behind in a session of its own.
func TestNoServerProcessOutlivesAqlguard(t *testing.T) {
	g := startGuard(t, reaperConfig)
	serverPID(t, g, "-spawn-detached")
	sleeper := false
	for deadline := time.Now().Add(10 * time.Second); !sleeper && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, cmdline := range marked(g.mark) {
			sleeper = sleeper || cmdline == "sleep 600"
		}
	}
	if !sleeper {
		t.Fatalf("the detached sleeper did not start: %v", marked(g.mark))
	}
	g.kill(t) // checks that nothing carrying the run's mark is left
}

// TestNoServerProcessOutlivesTheServingAqlguard: the process the client
// starts supervises a second aqlguard, which serves and starts the
// servers. When that one is SIGKILLed (the OOM killer's way), the
// servers and what they left behind go too, and the process the client
// started exits with the signal's status, as a shell reports it.
func TestNoServerProcessOutlivesTheServingAqlguard(t *testing.T) {
	g := startGuard(t, reaperConfig)
	server := serverPID(t, g, "-spawn-detached")
	serving := parentOf(t, server)
	if serving == g.cmd.Process.Pid {
		t.Fatal("the server is a child of the process the client started: nothing supervises it")
	}
	if got := parentOf(t, serving); got != g.cmd.Process.Pid {
		t.Fatalf("the serving aqlguard %d is a child of %d, not of the process the client started (%d)", serving, got, g.cmd.Process.Pid)
	}
	if err := syscall.Kill(serving, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); processState(g.cmd.Process.Pid) != "Z" && processState(g.cmd.Process.Pid) != ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the process the client started did not exit within 10s of the serving aqlguard's death")
		}
	}
	// The client's close collects the exit status; no process may be left.
	var err error
	g.stopOnce.Do(func() {
		err = g.session.Close()
		checkMarked(t, g.mark)
	})
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGKILL) {
		t.Errorf("the process the client started exited with %v, want code %d", err, 128+int(syscall.SIGKILL))
	}
}

// TestAdoptedProcessesAreCollected: a process a server leaves behind is
// adopted by the serving aqlguard (a subreaper), and when it ends its
// exit status is collected at once: a long session must not fill up with
// zombies until aqlguard exits.
func TestAdoptedProcessesAreCollected(t *testing.T) {
	g := startGuard(t, strings.Replace(reaperConfig, "-spawn-detached", "-spawn-orphan", 1))
	serving := parentOf(t, serverPID(t, g, "-spawn-orphan"))
	orphan := 0
	for deadline := time.Now().Add(10 * time.Second); orphan == 0; time.Sleep(10 * time.Millisecond) {
		for pid, cmdline := range marked(g.mark) {
			if cmdline == "sleep 1" {
				orphan = pid
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan did not start: %v", marked(g.mark))
		}
	}
	if parent := parentOf(t, orphan); parent != serving {
		t.Errorf("the orphan was adopted by %d, not by the serving aqlguard %d", parent, serving)
	}
	// It sleeps one second; then its status must be collected, not left
	// as a zombie until aqlguard exits.
	for deadline := time.Now().Add(10 * time.Second); processState(orphan) != ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d ended 9 s ago and is still in state %q", orphan, processState(orphan))
		}
	}
	g.stop(t)
}

// processState is the state letter of a process ("Z": exited, not yet
// waited for), "" when there is none (it exited and was waited for).
func processState(pid int) string {
	st, err := procfs.Read(pid)
	if err != nil {
		return ""
	}
	return string(st.State)
}

// parentOf is a process's parent pid.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	st, err := procfs.Read(pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.Ppid
}

// TestCallTimeout: a call the server does not answer within its
// call_timeout is cancelled and fails saying so; the server still serves.
func TestCallTimeout(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "timeouts"
[safety]
auto_approve = ["*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
call_timeout = "1s"
`)
	began := time.Now()
	res, _ := g.callAQL(t, "mcp_aql", "ts_slow", map[string]any{"ms": 10000})
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the call took %v with a 1s call_timeout", took)
	}
	if code, _ := errCode(t, res); code != "INTERNAL_ERROR" || !strings.Contains(jsonString(res), "within its call_timeout (1s)") {
		t.Errorf("a timed-out call: %s", jsonString(res))
	}
	if res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "still here"}); res["data"] != "still here" {
		t.Errorf("after a timeout: %s", jsonString(res))
	}
}

// TestSSEServerOutlivesItsStartTimeout: a server on the legacy HTTP+SSE
// transport keeps its event stream after the start (it was tied to the
// start timeout and dropped the moment the start ended).
func TestSSEServerOutlivesItsStartTimeout(t *testing.T) {
	url := startTestServerHTTP(t, "-sse")
	g := startGuard(t, `
mode = "all"
agent = "sse"
[safety]
auto_approve = ["*"]
[[servers]]
name = "legacy"
trust_first_sight = true
url = "`+url+`"
transport = "sse"
start_timeout = "1s"
`)
	time.Sleep(1500 * time.Millisecond)
	for i := range 3 {
		if res, _ := g.callAQL(t, "mcp_aql", "legacy_echo", map[string]any{"message": "over sse"}); res["data"] != "over sse" {
			t.Fatalf("call %d over SSE after the start timeout: %s", i, jsonString(res))
		}
	}
}
