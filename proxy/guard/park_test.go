package guard

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// nextGuard is the principal's next guard after g was parked: a new
// Guard on g's state directory (a handle of its own, as a replica or a
// restarted serve would have), resumed.
func nextGuard(t *testing.T, g *Guard, h verify.Channel) *Guard {
	t.Helper()
	n := &Guard{Policy: g.Policy, Channel: h, InlineWait: g.InlineWait, AskTimeout: g.AskTimeout,
		ConfirmTTL: g.ConfirmTTL, ChallengeTTL: g.ChallengeTTL, Log: g.Log}
	onStoreOf(t, n, g, store.Options{})
	if err := n.Resume(context.Background()); err != nil {
		t.Fatalf("resume: %v", err)
	}
	return n
}

// park parks g, waiting for a code's dialog to be let go first (the
// channel's Show returns on a goroutine of its own).
func park(t *testing.T, g *Guard) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if err = g.Park(context.Background()); !errors.Is(err, parking.ErrBusy) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("park: %v", err)
	}
}

func parkedRow(t *testing.T, g *Guard) *store.Execution {
	t.Helper()
	var e *store.Execution
	if err := g.State.Load(context.Background(), func(v store.View) (err error) { e, err = v.Execution(parking.ID(g.Principal())); return }); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestParkedBudgetContinues: a principal whose guard was dropped after
// two of its three steps gets one more step from its next guard, not
// three; the dropped guard decides nothing more.
func TestParkedBudgetContinues(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h) // max_autonomous_steps = 3
	g.InlineWait = 10 * time.Millisecond
	get := call("db_get_row", map[string]any{"id": "1"})
	for i := range 2 {
		if !g.Check(ctx, get).Proceed {
			t.Fatalf("step %d refused", i+1)
		}
	}
	park(t, g)
	if e := parkedRow(t, g); e == nil || e.Status != ruling.StatusParked || e.Steps != 2 {
		t.Fatalf("parked row %+v", e)
	}
	if err := g.Park(ctx); err == nil {
		t.Error("a parked guard parked again")
	}
	if v := g.Check(ctx, get); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Failed {
		t.Errorf("the parked guard decided: %+v", v)
	}
	n := nextGuard(t, g, h)
	if stepsOf(n) != 2 {
		t.Fatalf("the next guard starts at %d steps", stepsOf(n))
	}
	if !n.Check(ctx, get).Proceed {
		t.Fatal("step 3 refused")
	}
	if v := n.Check(ctx, get); v.Proceed || v.Directive.Stage != evaluator.StageStepLimit {
		t.Fatalf("step 4 after the drop: %+v", v.Directive)
	}
	if e := parkedRow(t, g); e == nil || e.Status != ruling.StatusResumed || e.FinishedAt.IsZero() {
		t.Errorf("the parked row after it was taken over: %+v", e)
	}
	// Taken over once: a second guard starts afresh from the state (as
	// a replica that never had the principal).
	if again := nextGuard(t, g, h); stepsOf(again) != 0 {
		t.Errorf("taken over twice: %d steps", stepsOf(again))
	}
	var ops []string
	for _, r := range records(t, g, string(store.KindExecution)) {
		ops = append(ops, r.Operation+":"+r.Result)
	}
	if len(ops) != 2 || ops[0] != "guard_park:parked" || ops[1] != "guard_resume:resumed" {
		t.Errorf("audit records of the park: %v", ops)
	}
}

// TestParkedFailurePauseHolds: a failure pause parked with its guard
// still asks for a check-in in the next one.
func TestParkedFailurePauseHolds(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	g.InlineWait = 10 * time.Millisecond
	e, aerr := g.ExecuteAgent(ctx, "s", "worker")
	if aerr != nil {
		t.Fatal(aerr)
	}
	if d, err := g.RecordStep(ctx, Report{Session: "s", ExecutionID: e.ID, NextActionHint: "db.get_row", Outcome: "failure", Category: policy.Read}); err != nil || d.Continue {
		t.Fatalf("failure pause: %+v %v", d, err)
	}
	g.EndSession(ctx, "s") // the session ends: its question is withdrawn
	park(t, g)
	if e := parkedRow(t, g); e == nil || e.Status != ruling.StatusParkedFailurePause {
		t.Fatalf("parked row %+v", e)
	}
	n := nextGuard(t, g, h)
	v := n.Check(ctx, call("db_get_row", map[string]any{"id": "1"}))
	if v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
		t.Fatalf("the next guard's first call after a parked failure pause: %+v", v)
	}
	if n.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Fatal("the failure pause ended without a human")
	}
}

// TestParkedBlockStaysBlocked: a blocked principal's guard may be
// dropped (the block is in the state); its next guard refuses every
// call, and the code still lifts the block.
func TestParkedBlockStaysBlocked(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("block: %+v", v)
	}
	park(t, g)
	n := nextGuard(t, g, h)
	if v := n.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("the next guard let a blocked principal through: %+v", v)
	}
	if _, err := n.ExecuteAgent(ctx, "s2", "new"); err == nil || err.Kind != refusal.Blocked {
		t.Errorf("a new execution escaped the block: %v", err)
	}
	h.mu.Lock()
	code := h.shown[0].Code
	h.mu.Unlock()
	if res, err := n.VerifyChallenge(ctx, "s2", v.VerificationID, code); err != nil || !res.Unblocked {
		t.Fatalf("the code: %v", err)
	}
	if !n.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Error("still blocked after the code")
	}
}

// TestParkWaitsForWhatCannotBeWritten: a verify pause in force, or a
// question on the human's screen, keeps the guard; nothing is written.
func TestParkWaitsForWhatCannotBeWritten(t *testing.T) {
	ctx := context.Background()
	t.Run("verify pause", func(t *testing.T) {
		h := &fakeHuman{}
		g := newGuard(t, testPolicy, h)
		g.Evaluate = func(*policy.Policy, evaluator.Step) evaluator.Directive {
			return evaluator.Directive{Decision: evaluator.NeedsVerify, Tier: evaluator.Verify, Enforced: true, Reason: "r"}
		}
		if v := g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); v.Refusal == nil || v.Refusal.Kind != refusal.Paused {
			t.Fatalf("pause: %+v", v)
		}
		if err := g.Park(ctx); !errors.Is(err, parking.ErrBusy) {
			t.Fatalf("parked with a verify pause in force: %v", err)
		}
		if e := parkedRow(t, g); e != nil {
			t.Errorf("a busy guard wrote %+v", e)
		}
		// Once its challenge expired the pause is over: the guard parks.
		g.Now = func() time.Time { return time.Now().Add(g.ChallengeTTL + time.Minute) }
		park(t, g) // once the code's dialog has let go too
	})
	t.Run("question", func(t *testing.T) {
		h := &slowHuman{delay: 300 * time.Millisecond, answer: verify.None}
		g := newGuard(t, testPolicy, h)
		g.InlineWait = 10 * time.Millisecond
		if v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"})); v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
			t.Fatalf("question: %+v", v)
		}
		if err := g.Park(ctx); !errors.Is(err, parking.ErrBusy) {
			t.Fatalf("parked with a question on the screen: %v", err)
		}
		// The human's time runs out (no answer); the question ends.
		waitFor(t, func() bool { return g.Park(ctx) == nil })
	})
}

// TestParkMergesAndNothingOwed: a guard with nothing owed parks without
// a write; two guards of one principal (replicas) that park leave the
// stricter memory of the two.
func TestParkMergesAndNothingOwed(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	a := newGuard(t, testPolicy, h)
	park(t, a)
	if e := parkedRow(t, a); e != nil {
		t.Fatalf("nothing owed, and a row was written: %+v", e)
	}
	if n := len(records(t, a, string(store.KindExecution))); n != 0 {
		t.Errorf("%d records of nothing parked", n)
	}
	b, c := nextGuard(t, a, h), nextGuard(t, a, h)
	get := call("db_get_row", map[string]any{"id": "1"})
	b.Check(ctx, get)
	b.Check(ctx, get)
	c.Check(ctx, get)
	park(t, b)
	park(t, c)
	if e := parkedRow(t, a); e == nil || e.Steps != 2 {
		t.Fatalf("merged row %+v, want 2 steps", e)
	}
	if d := nextGuard(t, a, h); stepsOf(d) != 2 {
		t.Errorf("the next guard took over %d steps", stepsOf(d))
	}
}

// TestParkedRowIsNoExecution: the parked row cannot be reported on or
// finished by a model that guesses its id.
func TestParkedRowIsNoExecution(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	g.Check(ctx, call("db_get_row", map[string]any{"id": "1"}))
	park(t, g)
	n := nextGuard(t, g, h)
	park(t, nextGuard(t, n, h)) // nothing owed; the row stays as n took it over
	id := parking.ID(g.Principal())
	if _, err := n.RecordStep(ctx, Report{Session: "s", ExecutionID: id, NextActionHint: "x"}); err == nil || err.Kind != refusal.NotFound {
		t.Errorf("record_execution_step on the parked row: %v", err)
	}
	if _, err := n.Finish(ctx, "s", id, "", StatusCompleted, ""); err == nil || err.Kind != refusal.NotFound {
		t.Errorf("complete_execution on the parked row: %v", err)
	}
}

// TestParkedAnswerIsFound: a question answered after its call stopped
// waiting lives in the state; once the guard that asked it is dropped,
// the principal's next guard finds the answer when the call is repeated,
// and the human is not asked again.
func TestParkedAnswerIsFound(t *testing.T) {
	ctx := context.Background()
	h := &slowHuman{delay: 200 * time.Millisecond, answer: verify.Allow}
	g := newGuard(t, testPolicy, h)
	g.InlineWait = 10 * time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "7"})
	v := g.Check(ctx, del)
	if v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
		t.Fatalf("question: %+v", v)
	}
	waitFor(t, func() bool { return g.Park(ctx) == nil }) // once the answer is recorded
	n := nextGuard(t, g, h)
	if v2 := n.Check(ctx, del); !v2.Proceed || v2.Token != v.Token {
		t.Fatalf("the repeated call after the drop: %+v", v2)
	}
	if asked := h.asked.Load(); asked != 1 {
		t.Errorf("the human was asked %d times", asked)
	}
}

// TestCodeIsAFreshGuardsFirstOperation: the code lifts the block when
// verify_challenge is the first thing a new guard of the principal does
// (a restart, a guard dropped and made again): nothing it keeps in
// memory (its desk) is missing then.
func TestCodeIsAFreshGuardsFirstOperation(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("block: %+v", v)
	}
	park(t, g)
	n := &Guard{Policy: g.Policy, Channel: h, ChallengeTTL: g.ChallengeTTL}
	onStoreOf(t, n, g, store.Options{})
	h.mu.Lock()
	code := h.shown[0].Code
	h.mu.Unlock()
	if res, err := n.VerifyChallenge(ctx, "s2", v.VerificationID, code); err != nil || !res.Unblocked {
		t.Fatalf("the code: %v", err)
	}
}
