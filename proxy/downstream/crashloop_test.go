package downstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// TestCrashLoopBacksOff (issue 20, fault 6): a server that starts and
// dies at once is restarted with a growing wait, the count carried
// across its successful starts; calls meanwhile are told it is
// restarting, the attempt and when (fault 7).
func TestCrashLoopBacksOff(t *testing.T) {
	srv := helper("loop", "die", 0)
	srv.Env["AQLGUARD_DOWNSTREAM_DIE_AFTER"] = "1s" // starts (even under -race), then dies
	p := Start(context.Background(), []config.Server{srv}, Options{Version: "test", Restart: true})
	defer p.Close()
	s, _ := p.Server("loop")
	// Until two restarts have been made and the server is waiting for
	// the next (no fixed window: a loaded machine starts processes
	// slowly, and the count, not the clock, is what is checked).
	var lastMsg string
	var st State
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		st = s.State()
		if st.Status == Restarting && st.Attempt > 0 {
			_, err := s.Request(context.Background(), "tools/call", []byte(`{"name":"echo","arguments":{}}`))
			var ue *UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("a call to a restarting server = %v, want an UnavailableError", err)
			}
			lastMsg = err.Error()
			if st.Restarts >= 2 {
				break
			}
		}
	}
	// Up 1 s each time, then 0.5, 1, 2 s (+ up to a quarter) apart: the
	// attempt counts on across the successful starts, so after two
	// restarts the server waits for its third attempt. Were the count
	// started over at each successful start, it would wait for attempt 1
	// for ever, every wait 0.5 s.
	if st.Restarts < 2 {
		t.Fatalf("%d restarts in 60 s of a crash loop, want 2", st.Restarts)
	}
	if st.Attempt < 3 {
		t.Fatalf("attempt %d after %d restarts: the count started over on a successful start", st.Attempt, st.Restarts)
	}
	if !regexp.MustCompile(`^server loop is restarting \(attempt \d+, next in [0-9.]+m?s; last: server exited with code 1\): try again then$`).MatchString(lastMsg) {
		t.Fatalf("a call to the restarting server was told %q", lastMsg)
	}
}

// TestFailedFirstStartIsRetried (issue 20, fault 6): a server whose first
// start fails is tried again with the same backoff, not left failed.
func TestFailedFirstStartIsRetried(t *testing.T) {
	logs := &syncWriter{w: &bytes.Buffer{}}
	p := Start(context.Background(), []config.Server{helper("bad", "crash", 0)},
		Options{Version: "test", Restart: true, Log: slog.New(slog.NewTextHandler(logs, nil))})
	defer p.Close()
	srv, _ := p.Server("bad")
	if st := srv.State(); st.Status != Restarting {
		t.Fatalf("after a failed first start: %+v, want restarting", st)
	}
	time.Sleep(2 * time.Second) // 0.5 s, then 1 s
	if st := srv.State(); st.Attempt < 2 || st.Status != Restarting {
		t.Fatalf("2 s after a failed first start: %+v, want it retried", st)
	}
	if n := strings.Count(logs.String(), "failed to start"); n < 2 {
		t.Fatalf("%d starts in 2 s, want it tried again:\n%s", n, logs.String())
	}
	// Without restarts (admin commands, policy explain) it stays failed.
	q := Start(context.Background(), []config.Server{helper("bad", "crash", 0)}, Options{Version: "test"})
	defer q.Close()
	if s, _ := q.Server("bad"); s.State().Status != Failed {
		t.Fatalf("without restarts: %+v, want failed", s.State())
	}
}

// TestStableServerStartsItsBackoffOver: a server that stayed up for
// stableAfter is restarted at once again when it dies.
func TestStableServerStartsItsBackoffOver(t *testing.T) {
	old := stableAfter
	stableAfter = 100 * time.Millisecond
	defer func() { stableAfter = old }()
	srv := helper("loop", "die", 0)
	srv.Env["AQLGUARD_DOWNSTREAM_DIE_AFTER"] = "1s" // up far longer than stableAfter, even under -race
	p := Start(context.Background(), []config.Server{srv}, Options{Version: "test", Restart: true})
	defer p.Close()
	s, _ := p.Server("loop")
	// Every restart is attempt 1: the server stayed up past stableAfter
	// each time. Watched until two restarts happened, however slowly the
	// machine starts the helper.
	deadline := time.Now().Add(time.Minute)
	for {
		st := s.State()
		if st.Attempt > 1 {
			t.Fatalf("%d restarts, attempt %d: a server that stays up past stableAfter should restart at the first delay each time",
				st.Restarts, st.Attempt)
		}
		if st.Restarts >= 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d restarts in a minute, want 2", st.Restarts)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
