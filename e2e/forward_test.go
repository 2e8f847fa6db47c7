package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/collectortest"
)

// TestAuditForwardSurvivesKillAndOutage: a real aqlguard ships its audit
// log to a syslog collector over TCP while calls flow; the collector is
// crashed and started again mid-stream, then aqlguard is killed with -9
// mid-stream and started again on the same state. Every record of the
// log arrives at least once, in order, and the chain verifies on the
// receiver's side.
func TestAuditForwardSurvivesKillAndOutage(t *testing.T) {
	c, err := collectortest.StartSyslog("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	config := `
mode = "all"
agent = "fwd"

[safety]
auto_approve = ["ts.echo"]

[audit.forward]
to = "syslog"
address = "tcp://` + c.Addr() + `"
batch = 7

[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`
	g := startGuard(t, config)
	var calls atomic.Int64
	burst := func(g *guard, stop <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := g.callRaw("mcp_aql", map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "hi"}}); err != nil {
						return // aqlguard was killed under the call
					}
					calls.Add(1)
				}
			}()
		}
		return &wg
	}
	stop := make(chan struct{})
	wg := burst(g, stop)
	time.Sleep(700 * time.Millisecond)
	c.Stop() // the collector crashes mid-stream ...
	time.Sleep(700 * time.Millisecond)
	if err := c.Start(); err != nil { // ... and comes back
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	g.kill(t) // aqlguard killed with -9 while calls are in flight
	close(stop)
	wg.Wait()
	killedAt := len(c.Got())

	g2, err := launchGuard(t, guardOptions{Config: config, Dir: g.dir})
	if err != nil {
		t.Fatal(err)
	}
	stop2 := make(chan struct{})
	wg2 := burst(g2, stop2)
	time.Sleep(700 * time.Millisecond)
	close(stop2)
	wg2.Wait()
	if err := g2.stop(t); err != nil {
		t.Fatalf("aqlguard did not stop cleanly: %v", err)
	}
	recs := auditRecords(t, g2) // the chain verifies in the log itself
	n := uint64(recs[len(recs)-1]["seq"].(float64))
	deadline := time.Now().Add(30 * time.Second)
	for {
		if dups, err := collectortest.Check(c.Got(), n); err == nil {
			t.Logf("%d calls, %d records, %d at the kill, %d sent twice", calls.Load(), n, killedAt, dups)
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the collector's records do not add up: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := c.Problems(); len(p) > 0 {
		t.Fatalf("malformed messages: %v", p)
	}
	if calls.Load() < 20 || !strings.Contains(g2.stderr(), "forwarding the audit log") {
		t.Fatalf("the test did not run as meant: %d calls\n%s", calls.Load(), g2.stderr())
	}
}

// TestAuditForwardDamagedCursor (issue 32, item 3): over RELP (whose
// collector confirms each record at once: plain syslog's cursor lags
// 30 s behind), a forwarding cursor
// past the end of the log is said at start (an error naming the cursor's
// file and what is wrong) and by doctor (a failing check), and nothing
// is skipped silently; `audit forward reset --to SEQ` repairs it, says
// what will be sent again, and the next start sends exactly that.
func TestAuditForwardDamagedCursor(t *testing.T) {
	c, err := collectortest.StartRELP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	config := `
mode = "all"
agent = "fwd"

[safety]
auto_approve = ["ts.echo"]

[audit.forward]
to = "syslog"
address = "relp://` + c.Addr() + `"

[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`
	g := startGuard(t, config)
	for range 3 {
		if res := echo(t, g); res["success"] != true {
			t.Fatalf("a call: %s", jsonString(res))
		}
	}
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	recs := auditRecords(t, g)
	n := uint64(recs[len(recs)-1]["seq"].(float64))
	waitCollector(t, c, func(got map[uint64]int) bool { return len(got) >= int(n) })

	cursors, _ := filepath.Glob(filepath.Join(stateDir(g.dir), "forward", "audit-*.json"))
	if len(cursors) != 1 {
		t.Fatalf("cursor files: %v", cursors)
	}
	writeFile(t, cursors[0], `{"seq":99999,"hash":"x","position":{"segment":7,"offset":123456},"destination":"syslog relp://`+c.Addr()+`"}`)
	problem := "is past the end of the audit log: it says record 99999 was delivered"

	out, errOut, _ := aqlguardCLIEnv(t, g.dir, nil, "doctor", "--client", "cursor", "--config", g.config)
	if line := lineWith(out, "audit forwarding"); !strings.Contains(line, "FAIL") || !strings.Contains(line, cursors[0]) || !strings.Contains(line, problem) {
		t.Fatalf("doctor on a cursor past the end:\n%s%s", out, errOut)
	}
	g2, err := launchGuard(t, guardOptions{Config: config, Dir: g.dir})
	if err != nil {
		t.Fatal(err)
	}
	waitUntilTrue(t, "the error at start", func() bool { return strings.Contains(g2.stderr(), "the forwarding cursor does not match") })
	if line := lineWith(g2.stderr(), "the forwarding cursor does not match"); !strings.Contains(line, "level=ERROR") ||
		!strings.Contains(line, cursors[0]) || !strings.Contains(line, problem) || !strings.Contains(line, "audit forward reset") {
		t.Fatalf("the start said:\n%s", line)
	}
	if res := echo(t, g2); res["success"] != true {
		t.Fatalf("a call while forwarding waits for its cursor: %s", jsonString(res))
	}
	if err := g2.stop(t); err != nil {
		t.Fatal(err)
	}
	recs = auditRecords(t, g2)
	last := uint64(recs[len(recs)-1]["seq"].(float64))

	out, errOut, code := aqlguardCLIEnv(t, g.dir, nil, "audit", "forward", "reset", "--to", "2", "--config", g.config)
	if want := fmt.Sprintf("records 3 to %d (%d records) are sent", last, last-2); code != 0 || !strings.Contains(out, want) ||
		!strings.Contains(out, "was: "+problem) {
		t.Fatalf("audit forward reset --to 2: exit %d, want %q:\n%s%s", code, want, out, errOut)
	}
	out, errOut, _ = aqlguardCLIEnv(t, g.dir, nil, "doctor", "--client", "cursor", "--config", g.config)
	if line := lineWith(out, "audit forwarding"); !strings.HasPrefix(line, "ok") {
		t.Fatalf("doctor after the reset:\n%s%s", out, errOut)
	}
	before := map[uint64]int{}
	for _, r := range c.Got() {
		before[r.Seq]++
	}
	g3, err := launchGuard(t, guardOptions{Config: config, Dir: g.dir})
	if err != nil {
		t.Fatal(err)
	}
	// Records 3 to last once more (the reset's own record among the new).
	waitCollector(t, c, func(got map[uint64]int) bool {
		for s := uint64(3); s <= last+1; s++ {
			if got[s] <= before[s] {
				return false
			}
		}
		return true
	})
	got := map[uint64]int{}
	for _, r := range c.Got() {
		got[r.Seq]++
	}
	if got[1] != before[1] || got[2] != before[2] {
		t.Fatalf("records before the reset point were sent again: %v (before %v)", got, before)
	}
	if err := g3.stop(t); err != nil {
		t.Fatal(err)
	}
}

// waitCollector waits until cond holds of the collector's records, by seq.
func waitCollector(t *testing.T, c interface {
	Got() []collectortest.Received
}, cond func(map[uint64]int) bool) {
	t.Helper()
	waitUntilTrue(t, "the collector's records", func() bool {
		got := map[uint64]int{}
		for _, r := range c.Got() {
			got[r.Seq]++
		}
		return cond(got)
	})
}

// waitUntilTrue polls cond (a condition, not a time) until it holds.
func waitUntilTrue(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineWith is the first line of s that holds sub.
func lineWith(s, sub string) string {
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			return line
		}
	}
	return ""
}
