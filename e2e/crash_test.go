package e2e

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
)

// TestCrashKeepsAcknowledgedBlocks kills aqlguard with SIGKILL at random
// moments while its agent keeps calling (allowed calls, deny matches,
// executions), many times over one state directory. After every restart
// a block the agent was told about is still there, and the audit chain
// verifies. Between rounds the block is lifted, by its code when the
// human saw one and by the admin override otherwise, so every round
// blocks afresh.
func TestCrashKeepsAcknowledgedBlocks(t *testing.T) {
	// Long: a few rounds may all be killed before any code reaches the
	// human, and then nothing is checked; twelve are enough.
	long.Test(t)
	rounds := 12
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	h := newHuman(t)
	dir := t.TempDir()
	cfg := blockingConfig(h)
	acked := "" // the block the agent was last told about, if any
	lifted := map[string]int{"code": 0, "admin": 0}
	for round := range rounds {
		g, err := launchGuard(t, guardOptions{Config: cfg, Dir: dir})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		current := ""
		if res := echo(t, g); res["success"] != true {
			d := wantCode(t, res, "PERMISSION_AGENT_BLOCKED")
			current, _ = d["verification_id"].(string)
		}
		if acked != "" && current != acked {
			t.Fatalf("round %d: the acknowledged block %s was lost (now blocked: %q)", round, acked, current)
		}
		if _, errOut, code := admin(t, g, "audit", "verify"); code != 0 {
			t.Fatalf("round %d: audit chain: %s", round, errOut)
		}
		if current != "" {
			if code := shownCode(t, h, current); code != "" {
				if d := data(t, verifyCode(t, g, current, code)); d["unblocked"] != true {
					t.Fatalf("round %d: unblocking with the code: %v", round, d)
				}
				lifted["code"]++
			} else {
				// Killed between the commit and the channel: the block
				// holds and only the admin can lift it.
				if out, errOut, code := admin(t, g, "unblock", "loop-agent"); code != 0 {
					t.Fatalf("round %d: admin unblock: %s%s", round, out, errOut)
				}
				lifted["admin"]++
			}
		}
		acked = storm(t, g, rng)
		t.Logf("round %d: block acknowledged before the kill: %q", round, acked)
	}
	g, err := launchGuard(t, guardOptions{Config: cfg, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if acked != "" {
		if d := wantCode(t, echo(t, g), "PERMISSION_AGENT_BLOCKED"); d["verification_id"] != acked {
			t.Fatalf("the last acknowledged block %s was lost: %v", acked, d)
		}
	}
	recs := auditRecords(t, g)
	t.Logf("%d rounds, blocks lifted %v, %d audit records verified", rounds, lifted, len(recs))
	assertNoLeak(t, h, dbPath(dir), g)
}

// storm runs the agent's calls concurrently and kills aqlguard at a random
// moment. It returns the verification id of a block the agent was told
// about ("" if none was).
func storm(t *testing.T, g *guard, rng *rand.Rand) string {
	var mu sync.Mutex
	acked := ""
	var wg sync.WaitGroup
	stop := make(chan struct{})
	worker := func(op string, params map[string]any) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := g.callRaw("mcp_aql", map[string]any{"operation": op, "params": params})
			if err != nil {
				return // killed
			}
			var m map[string]any
			if len(res.Content) == 0 || json.Unmarshal([]byte(resultText(t, res)), &m) != nil {
				continue
			}
			e, _ := m["error"].(map[string]any)
			if e == nil || e["code"] != "PERMISSION_AGENT_BLOCKED" {
				continue
			}
			id, _ := e["details"].(map[string]any)["verification_id"].(string)
			mu.Lock()
			acked = id
			mu.Unlock()
		}
	}
	denyAfter := time.Duration(rng.IntN(20)) * time.Millisecond
	killAfter := time.Duration(rng.IntN(60)) * time.Millisecond
	wg.Add(4)
	go worker("ts_echo", map[string]any{"message": "busy"})
	go worker("ts_echo", map[string]any{"message": "busier"})
	go worker("execute_agent", map[string]any{"element_name": "crash"})
	go func() {
		time.Sleep(denyAfter)
		worker("ts_drop_database", map[string]any{"name": "prod"})
	}()
	time.Sleep(killAfter)
	g.kill(t)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acked
}

// shownCode is the code shown for challenge id, or "" if none was.
func shownCode(t *testing.T, h *human, id string) string {
	for _, r := range h.requests(t) {
		if r["kind"] == "challenge" && r["challenge_id"] == id {
			c, _ := r["code"].(string)
			return strings.TrimSpace(c)
		}
	}
	return ""
}
