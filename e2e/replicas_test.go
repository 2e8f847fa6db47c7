package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The replica behaviours, with real `aqlguard serve` processes
// on one state (harness_replicas_test.go), on PostgreSQL and on a state
// directory shared on one machine.

// TestReplicasBlockReachesEveryReplica: a block set through one replica
// refuses the principal's next call at every other, in sessions opened
// before the block and after it, and nobody else's; one `aqlguard
// unblock` lifts it everywhere. How long the others took to refuse is
// logged (the 100 ms figure is a measurement, not an assertion: shared
// machines are noisy).
func TestReplicasBlockReachesEveryReplica(t *testing.T) {
	onReplicas(t, 3, func(t *testing.T, rs *replicaSet) {
		var alice, bob []*mcp.ClientSession
		for _, r := range rs.reps {
			alice, bob = append(alice, r.connect(t, "alice")), append(bob, r.connect(t, "bob"))
		}
		for i := range rs.reps {
			if res := mustAQL(t, alice[i], "ts_echo", map[string]any{"message": "before"}); res["success"] != true {
				t.Fatalf("alice at replica %d before the block: %s", i, jsonString(res))
			}
		}
		res := mustAQL(t, alice[0], "ts_drop_database", map[string]any{"name": "prod"})
		if aqlCode(res) != "PERMISSION_AGENT_BLOCKED" {
			t.Fatalf("the deny at replica 0: %s", jsonString(res))
		}
		answered := time.Now()
		// The next call at every other replica, at once.
		var wg sync.WaitGroup
		took := make([]time.Duration, len(rs.reps))
		got := make([]map[string]any, len(rs.reps))
		for i := 1; i < len(rs.reps); i++ {
			wg.Go(func() {
				got[i] = mustAQL(t, alice[i], "ts_echo", map[string]any{"message": "after"})
				took[i] = time.Since(answered)
			})
		}
		wg.Wait()
		for i := 1; i < len(rs.reps); i++ {
			if aqlCode(got[i]) != "PERMISSION_AGENT_BLOCKED" {
				t.Errorf("alice's next call at replica %d after her block at replica 0: %s", i, jsonString(got[i]))
			}
			t.Logf("%s: replica %d refused alice's next call %v after the block was answered at replica 0", rs.backend, i, took[i])
		}
		if res := mustAQL(t, rs.reps[2].connect(t, "alice"), "ts_echo", map[string]any{"message": "new session"}); aqlCode(res) != "PERMISSION_AGENT_BLOCKED" {
			t.Errorf("a session alice opens after her block: %s", jsonString(res))
		}
		for i := range rs.reps {
			if res := mustAQL(t, bob[i], "ts_echo", map[string]any{"message": "bob"}); res["success"] != true {
				t.Errorf("bob at replica %d is held by alice's block: %s", i, jsonString(res))
			}
		}
		if out, errOut, code := rs.admin(t, "unblock", "alice"); code != 0 {
			t.Fatalf("unblock alice: exit %d: %s%s", code, out, errOut)
		}
		for i := range rs.reps {
			if res := mustAQL(t, alice[i], "ts_echo", map[string]any{"message": "lifted"}); res["success"] != true {
				t.Errorf("alice at replica %d after the unblock: %s", i, jsonString(res))
			}
		}
		if n := countCalls(t, rs.calls, "drop_database"); n != 0 {
			t.Errorf("the denied call reached the server %d times", n)
		}
	})
}

// TestReplicasApprovalRunsOnce: one approval, raced by 64 sessions of
// its principal spread over three replicas, runs exactly one call; the
// other 63 are told the token is used. Another principal presenting the
// token first gets nothing and spends nothing.
func TestReplicasApprovalRunsOnce(t *testing.T) {
	onReplicas(t, 3, func(t *testing.T, rs *replicaSet) {
		dave := rs.reps[0].connect(t, "dave")
		params := map[string]any{"id": "n-race"}
		rs.human.answer(t, "sleep") // answers after the call's inline wait
		res := mustAQL(t, dave, "ts_delete_note", params)
		if aqlCode(res) != "CONFIRMATION_REQUIRED" {
			t.Fatalf("requires_approval: %s", jsonString(res))
		}
		_, details := errCode(t, res)
		token, _ := details["confirmation_token"].(string)
		rs.human.answer(t, "allow")
		if res := mustAQL(t, dave, "confirm_operation", map[string]any{"token": token}); res["success"] != true {
			t.Fatalf("confirm_operation: %s", jsonString(res))
		}
		rs.human.answer(t, "deny") // from here on only the approval can carry the call

		// Another principal's replay, at another replica.
		stolen := map[string]any{"id": "n-race", "confirmation_token": token}
		if res := mustAQL(t, rs.reps[1].connect(t, "bob"), "ts_delete_note", stolen); res["success"] == true {
			t.Fatalf("bob ran dave's approved call with dave's token: %s", jsonString(res))
		}

		const racers = 64
		sessions := make([]*mcp.ClientSession, racers)
		for i := range sessions {
			sessions[i] = rs.reps[i%len(rs.reps)].connect(t, "dave")
		}
		start := make(chan struct{})
		results := make([]map[string]any, racers)
		errs := make([]error, racers)
		var wg sync.WaitGroup
		for i := range sessions {
			wg.Go(func() {
				<-start
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				results[i], errs[i] = aqlCall(ctx, sessions[i], "ts_delete_note", stolen)
			})
		}
		close(start)
		wg.Wait()
		ran, codes := 0, map[string]int{}
		for i := range results {
			if errs[i] != nil {
				t.Fatalf("racer %d: %v", i, errs[i])
			}
			if results[i]["success"] == true {
				ran++
				continue
			}
			codes[aqlCode(results[i])]++
		}
		t.Logf("%s: %d of %d racers ran the call; the others were told %v", rs.backend, ran, racers, codes)
		if ran != 1 {
			t.Errorf("%d racers ran the call one approval allows", ran)
		}
		if codes["TOKEN_ALREADY_USED"] != racers-1 {
			t.Errorf("the losers were told %v, want TOKEN_ALREADY_USED each", codes)
		}
		if n := countCalls(t, rs.calls, "delete_note"); n != 1 {
			t.Errorf("the server ran delete_note %d times", n)
		}
	})
}

// TestReplicasSurviveKillAndOutage: under load on two replicas, a block
// set through the third is acknowledged and that replica is killed
// (kill -9): the block holds at the others and at the killed one
// restarted. On PostgreSQL the database is then stopped: every call
// fails closed with a clear refusal, and when it is back every replica
// serves again by itself. Afterwards the audit chain verifies as one
// chain, and every call a client saw answered has its record in it,
// but for PostgreSQL's stop: it is a crash, and an allowed call's
// records commit lazily (docs/state.md, "Durability"), so a call
// answered within 3 × wal_writer_delay before it may have lost them.
func TestReplicasSurviveKillAndOutage(t *testing.T) {
	onReplicas(t, 3, func(t *testing.T, rs *replicaSet) {
		l := startLoad(t, rs, 1, 2)

		carol := rs.reps[0].connect(t, "carol")
		if res := mustAQL(t, carol, "ts_drop_database", map[string]any{"name": "prod"}); aqlCode(res) != "PERMISSION_AGENT_BLOCKED" {
			t.Fatalf("the deny at replica 0: %s", jsonString(res))
		}
		rs.reps[0].kill(t)
		for _, i := range []int{1, 2} {
			if res := mustAQL(t, rs.reps[i].connect(t, "carol"), "ts_echo", map[string]any{"message": "x"}); aqlCode(res) != "PERMISSION_AGENT_BLOCKED" {
				t.Errorf("carol at replica %d after replica 0 was killed: %s", i, jsonString(res))
			}
		}
		rs.reps[0].start(t)
		if res := mustAQL(t, rs.reps[0].connect(t, "carol"), "ts_echo", map[string]any{"message": "x"}); aqlCode(res) != "PERMISSION_AGENT_BLOCKED" {
			t.Errorf("carol at the restarted replica 0: %s", jsonString(res))
		}
		alice0 := rs.reps[0].connect(t, "alice")
		if res := mustAQL(t, alice0, "ts_echo", map[string]any{"message": "restarted"}); res["success"] != true {
			t.Errorf("alice at the restarted replica 0: %s", jsonString(res))
		}
		l.wait(t, 20) // the load went on through the kill

		var crashed, stopped time.Time
		if rs.pg != nil {
			crashed, stopped = outage(t, rs, l)
		}
		acked := l.stop()
		if len(acked) == 0 {
			t.Fatal("no call of the load was answered")
		}
		recs := rs.records(t) // verified as one chain first
		inChain := map[string]bool{}
		blocked := false
		for _, r := range recs {
			if m := argString(r, "message"); m != "" && r["kind"] == "decision" {
				inChain[m] = true
			}
			blocked = blocked || r["principal"] == "carol" && r["decision"] == "block"
		}
		var lost []string
		window := 0
		for _, m := range acked {
			if inChain[m] {
				continue
			}
			// The window: 3 × wal_writer_delay (200 ms, PostgreSQL's
			// default) and a second for a loaded machine before the stop
			// began, up to its end: a commit the database acknowledged
			// just before it died is answered while pg_ctl still waits.
			at := l.answeredAt(m)
			if !crashed.IsZero() && at.After(crashed.Add(-1600*time.Millisecond)) && !at.After(stopped) {
				window++
				continue
			}
			if !crashed.IsZero() {
				m += fmt.Sprintf(" (answered %v after the stop began, which took %v)", at.Sub(crashed), stopped.Sub(crashed))
			}
			lost = append(lost, m)
		}
		if window > 0 {
			t.Logf("%d calls answered in the last 1.6 s before PostgreSQL crashed lost their lazily committed records", window)
		}
		if len(lost) > 0 {
			t.Errorf("%d of %d answered calls have no decision record in the chain: %v", len(lost), len(acked), lost[:min(5, len(lost))])
		}
		if !blocked {
			t.Error("carol's block has no record in the chain")
		}
		t.Logf("%s: %d answered calls under load, %d refused closed, %d records in one verified chain", rs.backend, len(acked), l.closed.Load(), len(recs))
	})
}

// outage stops PostgreSQL under the load (a crash: pgtest stops it
// immediately) and starts it again; it returns when the stop began and
// when it ended.
func outage(t *testing.T, rs *replicaSet, l *load) (crashed, stopped time.Time) {
	t.Helper()
	alice := make([]*mcp.ClientSession, len(rs.reps))
	for i, r := range rs.reps {
		alice[i] = r.connect(t, "alice")
	}
	crashed = time.Now()
	if err := rs.pg.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped = time.Now()
	failsClosed := func(res map[string]any) bool {
		e, _ := res["error"].(map[string]any)
		d, _ := e["details"].(map[string]any)
		return res["success"] == false && d["fail_closed"] == true && strings.Contains(fmt.Sprint(e["message"]), "state database")
	}
	// A session opened while the state is down cannot have its server's
	// tools checked against their pins: they are withheld, nothing of it
	// runs until the state is back, and a call naming one is told so
	// (the state is unavailable), not that no such operation exists.
	during := rs.reps[1].connect(t, "alice")
	if res := mustAQL(t, during, "ts_echo", map[string]any{"message": "outage-new"}); !failsClosed(res) {
		t.Errorf("a call in a session opened while PostgreSQL is down: %s", jsonString(res))
	}
	for i := range rs.reps {
		if res := mustAQL(t, alice[i], "ts_echo", map[string]any{"message": fmt.Sprintf("outage-%d", i)}); !failsClosed(res) {
			t.Errorf("a call at replica %d while PostgreSQL is down: %s", i, jsonString(res))
		}
	}
	for _, r := range rs.reps {
		waitReady(t, "http://"+r.listen+"/readyz", http.StatusServiceUnavailable, `"state":"unavailable"`)
	}
	if n := countCallsWith(t, rs.calls, "echo", "outage-"); n != 0 {
		t.Errorf("%d calls reached the server while the state was down", n)
	}
	t.Logf("refused closed at every replica %v after PostgreSQL stopped", time.Since(stopped))
	if err := rs.pg.Start(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	for i := range rs.reps {
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			res := mustAQL(t, alice[i], "ts_echo", map[string]any{"message": fmt.Sprintf("back-%d", i)})
			if res["success"] == true {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d does not serve 60s after PostgreSQL is back: %s", i, jsonString(res))
			}
		}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		res := mustAQL(t, during, "ts_echo", map[string]any{"message": "back-new"})
		if res["success"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session opened during the outage does not serve 60s after PostgreSQL is back: %s", jsonString(res))
		}
	}
	t.Logf("every replica served again %v after PostgreSQL started", time.Since(started))
	for _, r := range rs.reps {
		waitReady(t, "http://"+r.listen+"/readyz", http.StatusOK, `"ready":true`)
	}
	l.wait(t, 20)
	return crashed, stopped
}

// load is alice calling echo without pause at some replicas, each call
// with a message of its own.
type load struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	mu     sync.Mutex
	acked  []string
	at     map[string]time.Time // when each acked call was answered
	closed atomic.Int64         // refused closed (the state unavailable)
}

// answeredAt is when the call with message m was answered.
func (l *load) answeredAt(m string) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.at[m]
}

func startLoad(t *testing.T, rs *replicaSet, at ...int) *load {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &load{cancel: cancel, at: map[string]time.Time{}}
	for _, i := range at {
		cs := rs.reps[i].connect(t, "alice")
		l.done.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				m := fmt.Sprintf("load-%d-%d", i, n)
				cctx, ccancel := context.WithTimeout(ctx, callTimeout)
				res, err := aqlCall(cctx, cs, "ts_echo", map[string]any{"message": m})
				ccancel()
				switch {
				case err != nil:
					time.Sleep(50 * time.Millisecond)
				case res["success"] == true:
					l.mu.Lock()
					l.acked = append(l.acked, m)
					l.at[m] = time.Now()
					l.mu.Unlock()
				default:
					l.closed.Add(1)
					time.Sleep(50 * time.Millisecond)
				}
			}
		})
	}
	t.Cleanup(func() { l.stop() })
	return l
}

// wait waits until n more calls were answered.
func (l *load) wait(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	want := len(l.acked) + n
	l.mu.Unlock()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		l.mu.Lock()
		have := len(l.acked)
		l.mu.Unlock()
		if have >= want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the load answered %d of %d more calls in 60s", have-want+n, n)
		}
	}
}

// stop ends the load and returns the messages of the calls answered.
func (l *load) stop() []string {
	l.cancel()
	l.done.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// argString is a record's argument as a string ("" when absent).
func argString(r map[string]any, name string) string {
	args, _ := r["args"].(map[string]any)
	s, _ := args[name].(string)
	return s
}

// countCalls is how many calls of tool the downstream server ran.
func countCalls(t *testing.T, log, tool string) int {
	return countCallsWith(t, log, tool, "")
}

// countCallsWith counts the calls of tool whose arguments contain text.
func countCallsWith(t *testing.T, log, tool, text string) int {
	t.Helper()
	n := 0
	for _, c := range readCalls(t, log) {
		if c.Tool == tool && strings.Contains(string(c.Arguments), text) {
			n++
		}
	}
	return n
}

// TestReplicasSessionsBelongToTheirReplica: an MCP session lives in the
// replica that created it. Its id presented at another replica, with
// the right token, is 404 Not Found (what tells a client to initialize
// again, after a load balancer lost its affinity or the replica died),
// never someone else's session; at its own replica another client's
// token gets 404 as well.
func TestReplicasSessionsBelongToTheirReplica(t *testing.T) {
	rs := startReplicas(t, "bbolt", 2)
	alice, bob := bearerClient(rs.tokens["alice"]), bearerClient(rs.tokens["bob"])
	status, session := post(t, alice, rs.reps[0].url, "", initializeBody)
	if status != http.StatusOK || session == "" {
		t.Fatalf("initialize at replica 0: %d, session %q", status, session)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if got, _ := post(t, alice, rs.reps[1].url, session, list); got != http.StatusNotFound {
		t.Errorf("alice's session of replica 0 at replica 1: %d, want 404", got)
	}
	if got, _ := post(t, bob, rs.reps[0].url, session, list); got != http.StatusNotFound {
		t.Errorf("alice's session with bob's token: %d, want 404", got)
	}
	if got, _ := post(t, alice, rs.reps[0].url, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); got != http.StatusAccepted {
		t.Errorf("alice's session at its own replica: %d", got)
	}
}

// TestReplicasBehindALoadBalancer runs docs/deploy.md's HAProxy backend,
// as written there, in front of three replicas: every request of a
// session reaches the replica that made it (round robin alone would send
// the second request elsewhere); a principal's new sessions go to one
// replica, so that the limits each replica keeps to itself (the step
// count, a verify pause) are the principal's, while the principals
// spread over the replicas; when a principal's replica is killed, its
// session's next request fails and its new sessions serve, all at one
// other replica.
func TestReplicasBehindALoadBalancer(t *testing.T) {
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("SKIPPED: haproxy is not installed (.ci/run installs Debian's haproxy)")
	}
	// Twelve principals: the chance that consistent hashing puts them all
	// on one of three replicas is (1/3)^11.
	principals := append([]string(nil), replicaClients...)
	for i := range 8 {
		principals = append(principals, fmt.Sprintf("p%d", i))
	}
	rs := startReplicasFor(t, "bbolt", 3, principals)
	backend := docsBlock(t, "docs/deploy.md", "backend aqlguard")
	var lines []string
	for line := range strings.Lines(backend) {
		if !strings.HasPrefix(strings.TrimSpace(line), "server ") {
			lines = append(lines, line)
		}
	}
	for _, r := range rs.reps {
		lines = append(lines, fmt.Sprintf("    server r%d %s check inter 300ms\n", r.i, r.listen))
	}
	listen := freeAddr(t)
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	writeFile(t, cfg, `global
    maxconn 1000
defaults
    mode http
    timeout connect 5s
    timeout client 10m
    timeout server 10m
frontend mcp
    bind `+listen+`
    default_backend aqlguard
`+strings.Join(lines, ""))
	lb := exec.Command(haproxy, "-db", "-f", cfg)
	var lbLog syncBuffer
	lb.Stdout, lb.Stderr = &lbLog, &lbLog
	if err := lb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lb.Process.Kill()
		_ = lb.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", lbLog.String())
		}
	})
	waitListening(t, listen)
	url := "http://" + listen + "/mcp"

	connect := func(who string) *mcp.ClientSession {
		t.Helper()
		cs, err := connectHTTP(t, url, bearerClient(rs.tokens[who]))
		if err != nil {
			t.Fatalf("%s connecting through the load balancer: %v", who, err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	// A session's replica is the one that knows its id.
	home := func(who string, cs *mcp.ClientSession) *replica {
		for _, r := range rs.reps {
			if r.cmd == nil {
				continue
			}
			if code, _ := post(t, bearerClient(rs.tokens[who]), r.url, cs.ID(), `{"jsonrpc":"2.0","id":"where","method":"ping"}`); code == http.StatusOK {
				return r
			}
		}
		return nil
	}
	// sessionsOf opens n sessions of who, calls through each a few times,
	// and returns the replica they all live at.
	sessionsOf := func(who string, n int) ([]*mcp.ClientSession, *replica) {
		t.Helper()
		var sessions []*mcp.ClientSession
		var at *replica
		for i := range n {
			cs := connect(who)
			for k := range 3 {
				if res := mustAQL(t, cs, "ts_echo", map[string]any{"message": fmt.Sprintf("lb-%s-%d-%d", who, i, k)}); res["success"] != true {
					t.Fatalf("%s's session %d, call %d through the load balancer: %s", who, i, k, jsonString(res))
				}
			}
			r := home(who, cs)
			switch {
			case r == nil:
				t.Fatalf("no replica knows %s's session %d", who, i)
			case at != nil && r != at:
				t.Errorf("%s's sessions landed on replicas %d and %d: the limits a replica keeps to itself would not be the principal's", who, at.i, r.i)
			}
			at = r
			sessions = append(sessions, cs)
		}
		return sessions, at
	}
	used := map[int]bool{}
	var alice []*mcp.ClientSession
	var aliceAt *replica
	for _, who := range principals {
		sessions, at := sessionsOf(who, 2)
		used[at.i] = true
		if who == "alice" {
			alice, aliceAt = sessions, at
		}
	}
	if len(used) < 2 {
		t.Errorf("%d principals landed on %d replica(s): the load balancer does not spread them", len(principals), len(used))
	}
	aliceAt.kill(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if res, err := aqlCall(ctx, alice[0], "ts_echo", map[string]any{"message": "orphan"}); err == nil && res["success"] == true {
		t.Errorf("a session of the killed replica %d still served: %s", aliceAt.i, jsonString(res))
	}
	if _, at := sessionsOf("alice", 2); at == aliceAt {
		t.Errorf("alice's new sessions went to the killed replica %d", at.i)
	}
}
