package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverPID is the pid of g's test server process.
func serverPID(t *testing.T, g *guard) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for pid, cmdline := range marked(g.mark) {
			if strings.HasPrefix(cmdline, bins.testserver+" ") || cmdline == bins.testserver {
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

// TestNoServerProcessOutlivesAqlguard: whatever aqlguard's end (SIGKILL
// here, so it cleans up nothing itself), its servers go with it, even a
// process a server left behind in a session of its own.
func TestNoServerProcessOutlivesAqlguard(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "reaper"
[safety]
auto_approve = ["*"]
[[servers]]
name = "ts"
command = {{toml .testserver}}
args = ["-spawn-detached"]
`)
	serverPID(t, g)
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
