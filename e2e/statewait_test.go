package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A replica started while its PostgreSQL is down waits for it, saying so
// in a log line per attempt, and serves once the database is up, by
// itself; one stopped while it waits ends with an error that says so.
// (Before, serve exited at once and left the retries to a service
// manager whose start limit gives up during a long outage.)
func TestServeWaitsForPostgres(t *testing.T) {
	rs := startReplicasFor(t, "postgres", 1, []string{"alice"})
	r := rs.reps[0]
	r.stop(t)
	if err := rs.pg.Stop(); err != nil {
		t.Fatal(err)
	}
	waiting := func(r *replica, n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); strings.Count(r.log.String(), "waiting for the state database") < n; time.Sleep(20 * time.Millisecond) {
			select {
			case <-r.exited:
				t.Fatalf("serve exited while PostgreSQL was down:\n%s", r.log.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("serve did not say it waits for PostgreSQL (%d attempts wanted):\n%s", n, r.log.String())
			}
		}
	}
	startWaiting(t, r)
	waiting(r, 2)
	if err := rs.pg.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + r.listen + "/readyz"); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve is not ready 30s after PostgreSQL came back:\n%s", r.log.String())
		}
	}
	if !strings.Contains(r.log.String(), "the state database (PostgreSQL) answers") {
		t.Errorf("serve did not say the database answers:\n%s", r.log.String())
	}
	if res := mustAQL(t, r.connect(t, "alice"), "ts_echo", map[string]any{"message": "hello"}); res["success"] != true {
		t.Fatalf("a call once the database answers: %v", res)
	}
	r.stop(t)

	// Stopped while it waits: an error that says so, not a hang.
	if err := rs.pg.Stop(); err != nil {
		t.Fatal(err)
	}
	startWaiting(t, r)
	waiting(r, 1)
	_ = r.cmd.Process.Signal(os.Interrupt)
	select {
	case <-r.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("serve did not stop within 15s of SIGINT while it waited:\n%s", r.log.String())
	}
	if code := r.cmd.ProcessState.ExitCode(); code == 0 || !strings.Contains(r.log.String(), "stopped while waiting for the state database") {
		t.Fatalf("serve stopped while waiting: exit %d\n%s", code, r.log.String())
	}
	r.cmd = nil
	checkMarked(t, r.mark)
}

// startWaiting starts the replica's serve without waiting for it to
// listen (it waits for its database first).
func startWaiting(t *testing.T, r *replica) {
	t.Helper()
	r.cmd = exec.Command(bins.aqlguard, "serve", "--listen", r.listen, "--config", r.set.cfg)
	r.mark = processMark()
	r.cmd.Env = append(append(isolatedEnv(t, r.dir), r.set.env...), r.mark)
	r.log = &syncBuffer{}
	r.cmd.Stderr = r.log
	diesWithTest(r.cmd)
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.exited = make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
}
