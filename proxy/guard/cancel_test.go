package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
)

// records lists the audit log's records of a kind.
func records(t *testing.T, g *Guard, kind string) []store.Record {
	t.Helper()
	var out []store.Record
	err := storeOf(g).View(context.Background(), func(tx *store.Tx) error {
		return tx.Records(0, func(r store.Record, _ []byte) error {
			if r.Kind == kind {
				out = append(out, r)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCancelledCallsAreRecorded (issue 20, fault 5): gated calls whose
// client cancels them while their question is on the human's screen are
// each recorded, and never reported as a busy database; a shutdown with
// the question still up records it as unanswered.
func TestCancelledCallsAreRecorded(t *testing.T) {
	h := &slowHuman{delay: time.Hour} // a human who does not answer
	g := newGuard(t, approvalPolicy, h)
	g.InlineWait = time.Hour // the call waits for the human until cancelled
	verdicts := make(chan Verdict, 3)
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			verdicts <- g.Check(ctx, call("db_delete_row", map[string]any{"id": float64(i)}))
		}()
		// Cancelled once the question is up (or queued behind another).
		time.AfterFunc(300*time.Millisecond, cancel)
	}
	for range 3 {
		v := <-verdicts
		if v.Proceed {
			t.Fatal("a cancelled call was allowed")
		}
		if v.Refusal != nil && strings.Contains(v.Refusal.Say, "busy") {
			t.Fatalf("a cancelled call was refused as a busy database: %s", v.Refusal.Say)
		}
		if v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
			t.Fatalf("a cancelled gated call = %+v, want CONFIRMATION_REQUIRED", v.Refusal)
		}
	}
	decisions := records(t, g, "decision")
	if len(decisions) != 3 {
		t.Fatalf("%d decision records for 3 gated calls, want 3", len(decisions))
	}
	for _, d := range decisions {
		if d.Decision != "confirm" {
			t.Fatalf("decision %q, want confirm", d.Decision)
		}
	}
	// aqlguard shuts down with the question still on the screen.
	if h.asked.Load() == 0 {
		t.Fatal("no question was put to the human")
	}
	g.Close()
	answers := records(t, g, "confirmation")
	if len(answers) == 0 {
		t.Fatal("the question withdrawn at shutdown left no record")
	}
	for _, a := range answers {
		if a.Decision != "no_answer" {
			t.Fatalf("the withdrawn question was recorded as %q", a.Decision)
		}
	}
}

// TestStoreProblemsReachTheModelAsFixedPhrases: what the model is told
// of a store failure never carries the Go error (paths, pids).
func TestStoreProblemsReachTheModelAsFixedPhrases(t *testing.T) {
	err := errors.Join(errors.New("state database /home/u/.local/state/aqlguard/aqlguard.db"), store.ErrBusy)
	v := (&Guard{}).unavailable(err, "the action is refused")
	for _, s := range append([]string{v.Refusal.Say}, v.Directive.Factors...) {
		if strings.Contains(s, "/home/u") || strings.Contains(s, "aqlguard.db") {
			t.Fatalf("a Go error reaches the model: %q", s)
		}
	}
	if !strings.Contains(v.Refusal.Say, "busy") {
		t.Fatalf("%q does not say the database is busy", v.Refusal.Say)
	}
	full := fmt.Errorf("audit log: writing record 20: write /home/u/audit-00000001.jsonl: %w", syscall.ENOSPC)
	if v := (&Guard{}).unavailable(full, "the action is refused"); !strings.Contains(v.Refusal.Say, "disk under the state directory is full") ||
		strings.Contains(v.Refusal.Say, "/home/u") {
		t.Fatalf("a full disk is told %q", v.Refusal.Say)
	}
	ro := &store.ReadOnlyError{Dir: "/home/u/.local/state/aqlguard", Err: syscall.EROFS}
	if v := (&Guard{}).unavailable(ro, "the action is refused"); !strings.Contains(v.Refusal.Say, "cannot be written (read-only)") ||
		strings.Contains(v.Refusal.Say, "damaged") || strings.Contains(v.Refusal.Say, "/home/u") {
		t.Fatalf("a read-only state directory is told %q", v.Refusal.Say)
	}
}
