package guard

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
)

// TestFailedCommitChangesNoMemory: a decision whose commit fails changes
// nothing in the principal's memory: no step counted, no verify pause,
// no failure pause, no execution step. The memory follows only a commit
// that was written.
func TestFailedCommitChangesNoMemory(t *testing.T) {
	ctx := context.Background()
	g, dir := lockedGuard(t, &fakeHuman{})
	g.InlineWait = 10 * time.Millisecond
	st, aerr := g.ExecuteAgent(ctx, "s", "worker")
	if aerr != nil {
		t.Fatal(aerr)
	}
	if !g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Fatal("a plain call was refused")
	}
	g.mu.Lock()
	before := g.mem
	g.mu.Unlock()
	verifyTier := func(*policy.Policy, evaluator.Step) evaluator.Directive {
		return evaluator.Directive{Decision: evaluator.NeedsVerify, Tier: evaluator.Verify, Enforced: true, Reason: "r"}
	}
	release := holdLock(t, dir, syscall.LOCK_SH)
	for _, a := range []Action{
		call("db_get_row", map[string]any{"id": "2"}),
		{Session: "s", Operation: "record_execution_step", Hint: "retry", Outcome: "failure", Execution: g.executions[st.ID]},
	} {
		if v := g.Check(ctx, a); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Failed {
			t.Fatalf("%s decided without its commit: %+v", a.Operation, v)
		}
	}
	g.Evaluate = verifyTier
	if v := g.Check(ctx, call("db_get_row", map[string]any{"id": "3"})); v.Proceed || v.Refusal.Kind != refusal.Failed {
		t.Fatalf("a verify pause decided without its commit: %+v", v)
	}
	release()
	g.mu.Lock()
	after := g.mem
	steps := g.executions[st.ID].Steps
	g.mu.Unlock()
	if after.steps != before.steps || after.failurePause || after.pause != nil || steps != 0 {
		t.Fatalf("memory changed by commits that failed: %+v (was %+v), execution steps %d", after, before, steps)
	}
	g.Evaluate = nil
	if !g.Check(ctx, call("db_get_row", map[string]any{"id": "4"})).Proceed {
		t.Fatal("a call after the lock came free was refused")
	}
}

// TestMemoryFollowsCommitOrder: the hook that moves memory runs in
// commit order, so the step each decision was judged at is its place in
// the audit log: 48 calls at once are steps 1 to 48, in the log's order,
// none counted twice or skipped.
func TestMemoryFollowsCommitOrder(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000", 1), &fakeHuman{})
	const n = 48
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if !g.Check(ctx, call("db_get_row", map[string]any{"id": strconv.Itoa(i)})).Proceed {
				t.Error("refused")
			}
		})
	}
	wg.Wait()
	decisions := records(t, g, "decision")
	if len(decisions) != n {
		t.Fatalf("%d decisions for %d calls", len(decisions), n)
	}
	for i, d := range decisions {
		want := "step limit: step " + strconv.Itoa(i+1) + " of 1000"
		if len(d.Factors) == 0 || d.Factors[0] != want {
			t.Fatalf("decision %d of the log was judged as %q, want %q", i+1, d.Factors, want)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mem.steps != n {
		t.Fatalf("%d steps in memory after %d calls", g.mem.steps, n)
	}
}

// TestWatchBroadcastsABlockSetElsewhere: a block set through another
// process reaches this process's running executions as danger_zone
// without any call of this process (the guard watches the state's
// generation), once.
func TestWatchBroadcastsABlockSetElsewhere(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	here := newGuard(t, testPolicy, h)
	there := newGuard(t, testPolicy, h)
	onStoreOf(t, there, here, store.Options{})
	st, aerr := here.ExecuteAgent(ctx, "s", "worker") // starts the watch
	if aerr != nil {
		t.Fatal(aerr)
	}
	e := here.executions[st.ID]
	began := time.Now()
	v := there.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("the other process did not block: %+v", v)
	}
	set := time.Now()
	waitFor(t, func() bool {
		here.mu.Lock()
		defer here.mu.Unlock()
		return len(e.inbox) > 0
	})
	t.Logf("danger_zone reached the other process's execution %s after the block was committed (%s after the call began)",
		time.Since(set).Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
	here.mu.Lock()
	inbox := append([]Notification(nil), e.inbox...)
	here.mu.Unlock()
	if len(inbox) != 1 || inbox[0].Type != "danger_zone" || inbox[0].Metadata["verificationId"] != v.VerificationID {
		t.Fatalf("inbox %+v", inbox)
	}
	d, err := here.RecordStep(ctx, Report{ExecutionID: e.ID, NextActionHint: "anything"})
	if err != nil || !d.Stopped || len(d.Notifications) != 1 || d.Notifications[0].Type != "danger_zone" {
		t.Fatalf("the step after the block: %+v %v", d, err)
	}
}
