package e2e

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/collectortest"
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
