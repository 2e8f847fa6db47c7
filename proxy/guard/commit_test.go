package guard

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// lockedGuard is newGuard on a state directory whose lock the test can
// hold, with a short lock timeout.
func lockedGuard(t *testing.T, h verify.Channel) (*Guard, string) {
	t.Helper()
	dir := t.TempDir()
	return newGuardWith(t, testPolicy, h, dir, store.Options{Timeout: 200 * time.Millisecond}), dir
}

// holdLock takes the state directory's lock as another process stuck in
// a transaction would (shared: reads go on, commits cannot), until the
// returned function is called.
func holdLock(t *testing.T, dir string, how int) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, store.FileName+".lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		t.Fatal(err)
	}
	return func() { _ = f.Close() }
}

// TestFailedCommitApprovesNothing: a call whose approval was spent in
// memory but whose decision could not be committed is refused, and the
// approval is still there for the retry (it was not used).
func TestFailedCommitApprovesNothing(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g, dir := lockedGuard(t, h)
	del := call("db_delete_row", map[string]any{"id": "7"})
	v := g.Check(ctx, del)
	if v.Proceed || v.Token == "" {
		t.Fatalf("want a confirmation, got %+v", v)
	}
	h.say(verify.Allow)
	if _, res := g.ConfirmOperation(ctx, "s", v.Token); res != nil {
		t.Fatalf("confirm_operation: %+v", res)
	}
	release := holdLock(t, dir, syscall.LOCK_SH)
	if v := g.Check(ctx, del); v.Proceed {
		t.Fatal("a decision that could not be committed must not proceed")
	}
	release()
	if v := g.Check(ctx, del); !v.Proceed {
		t.Fatalf("the approval must survive the failed commit: %+v %v", v.Directive, v.Refusal)
	}
	if v := g.Check(ctx, del); v.Proceed {
		t.Fatal("the approval is good for one call")
	}
}

// TestNotStartedExecutionIsNotWritten: an execution whose start could not
// be committed is reported not started and is not written by the next
// commit either.
func TestNotStartedExecutionIsNotWritten(t *testing.T) {
	ctx := context.Background()
	g, dir := lockedGuard(t, &fakeHuman{})
	release := holdLock(t, dir, syscall.LOCK_SH)
	if _, err := g.ExecuteAgent(ctx, "s", "agent"); err == nil {
		t.Fatal("an execution that could not be committed must not start")
	}
	release()
	st, err := g.ExecuteAgent(ctx, "s", "agent") // the next commit
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	known := len(g.executions)
	g.mu.Unlock()
	if known != 1 {
		t.Fatalf("%d executions in memory, want only %s", known, st.ID)
	}
	if err := storeOf(g).View(ctx, func(tx *store.Tx) error {
		for _, id := range []string{st.ID} {
			if e, err := tx.Execution(id); err != nil || e == nil {
				return fmt.Errorf("the started execution %s is not written: %v", id, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestFailedCheckInCommitKeepsThePause: confirm_operation on an approved
// step-limit check-in whose write fails says nothing is approved, and
// means it: the count and the token stay as they were.
func TestFailedCheckInCommitKeepsThePause(t *testing.T) {
	ctx := context.Background()
	g, dir := lockedGuard(t, &fakeHuman{})
	// The human's approval is on record (as if answered and written);
	// then writing the check-in itself fails.
	v, steps := approvedCheckIn(t, g)
	release := holdLock(t, dir, syscall.LOCK_SH)
	_, res := g.ConfirmOperation(ctx, "s", v.Token)
	release()
	if res == nil {
		t.Fatal("confirm_operation must fail when the check-in cannot be written")
	}
	c := storedConfirmation(t, g, v.Token) // (never with g.mu held: a commit's hook takes it)
	if n := stepsOf(g); n != steps || c.Status != ruling.StatusApproved {
		t.Fatalf("a check-in that was not recorded was applied: steps %d (was %d), stored %s",
			n, steps, c.Status)
	}
}

// TestCheckInUsedElsewhereLiftsNothing: one approved check-in lifts one
// pause. When another process used it between this one reading it and
// writing it, confirm_operation refuses and the pause stays.
func TestCheckInUsedElsewhereLiftsNothing(t *testing.T) {
	ctx := context.Background()
	g, _ := lockedGuard(t, &fakeHuman{})
	v, steps := approvedCheckIn(t, g)
	// The other process uses it once this one has read it approved:
	// between the read and the commit (the read is the only View
	// confirm_operation takes before it commits).
	g.beforeCommit.Store(ptr(func() { useInStore(t, g, v.Token) }))
	_, res := g.ConfirmOperation(ctx, "s", v.Token)
	if res == nil || res.Kind != refusal.TokenUsed {
		t.Fatalf("confirm_operation on a check-in used elsewhere: %+v", res)
	}
	if stepsOf(g) != steps {
		t.Fatalf("the step count was lifted: %d (was %d)", stepsOf(g), steps)
	}
	if c := storedConfirmation(t, g, v.Token); c.UsedBy != "other#1#x" {
		t.Fatalf("the other process's use was written over: %+v", c)
	}
}

// approvedCheckIn runs g (max_autonomous_steps = 3) past its step limit
// and records a human's approval of the check-in that asks for; it
// returns that refusal and the step count then.
func approvedCheckIn(t *testing.T, g *Guard) (Verdict, int) {
	t.Helper()
	ctx := context.Background()
	get := call("db_get_row", map[string]any{"id": "1"})
	for i := range 3 {
		if !g.Check(ctx, get).Proceed {
			t.Fatalf("step %d refused", i+1)
		}
	}
	v := g.Check(ctx, get) // step 4: a check-in, nobody answers yet
	if v.Proceed || v.Token == "" {
		t.Fatalf("step 4: %+v", v)
	}
	approveInStore(t, g, v.Token)
	return v, stepsOf(g)
}

// approveInStore records a human's approval of token, as recordAnswer
// writes it.
func approveInStore(t *testing.T, g *Guard, token string) {
	t.Helper()
	setInStore(t, g, token, func(c *store.Confirmation) { c.Status, c.DoneAt = ruling.StatusApproved, g.now() })
}

// useInStore records token as used by another process.
func useInStore(t *testing.T, g *Guard, token string) {
	t.Helper()
	setInStore(t, g, token, func(c *store.Confirmation) { c.Status, c.UsedBy = ruling.StatusUsed, "other#1#x" })
}

func setInStore(t *testing.T, g *Guard, token string, change func(*store.Confirmation)) {
	t.Helper()
	if err := storeOf(g).Update(context.Background(), func(tx *store.Tx) error {
		c, err := tx.Confirmation(token)
		if err != nil || c == nil {
			return fmt.Errorf("the question is not stored: %v", err)
		}
		change(c)
		return tx.PutConfirmation(*c)
	}); err != nil {
		t.Fatal(err)
	}
}

func storedConfirmation(t *testing.T, g *Guard, token string) *store.Confirmation {
	t.Helper()
	var c *store.Confirmation
	if err := storeOf(g).View(context.Background(), func(tx *store.Tx) (err error) { c, err = tx.Confirmation(token); return }); err != nil || c == nil {
		t.Fatalf("reading %s: %v", token, err)
	}
	return c
}

// TestOwnBlockDoesNotHangOnTheGeneration: the generation file is a hint
// that other processes changed state. An agent that rewinds it (it can
// write the state directory) does not make this process forget a block
// it set itself.
func TestOwnBlockDoesNotHangOnTheGeneration(t *testing.T) {
	ctx := context.Background()
	g, dir := lockedGuard(t, &fakeHuman{})
	gen := filepath.Join(dir, store.GenerationFile)
	get := call("db_get_row", map[string]any{"id": "1"})
	if !g.Check(ctx, get).Proceed {
		t.Fatal("a plain call was refused")
	}
	before, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	if v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"})); v.Proceed {
		t.Fatal("the deny pattern must block")
	}
	if err := os.WriteFile(gen, before, 0o600); err != nil { // the agent rewinds the generation
		t.Fatal(err)
	}
	if v := g.Check(ctx, get); v.Proceed {
		t.Fatal("the block this process set must hold with the generation rewound")
	}
}

// TestBlockElsewhereHoldsWithTheGenerationRewound: a block set through
// another process, with the generation file rewound by the agent to the
// count this process last read at, still refuses this process's next
// calls, allowed and gated, and no human is asked: a kept snapshot is
// good only while the database file is what it was too.
func TestBlockElsewhereHoldsWithTheGenerationRewound(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	a := newGuard(t, testPolicy, h)
	b := newGuard(t, testPolicy, h)
	onStoreOf(t, b, a, store.Options{})
	if !a.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Fatal("a plain call was refused")
	}
	rewind := generationRewinder(t, a)
	if v := b.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"})); v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("the other process did not block: %+v", v)
	}
	rewind()
	for _, c := range []Action{call("db_get_row", map[string]any{"id": "2"}), call("db_delete_row", map[string]any{"id": "1"})} {
		if v := a.Check(ctx, c); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
			t.Fatalf("%s after the rewind: %+v", c.Operation, v)
		}
	}
	noHumanAsked(t, h)
}

// generationRewinder reads g's generation file now and returns what
// writes it back, as an agent that can write the state directory would.
func generationRewinder(t *testing.T, g *Guard) func() {
	t.Helper()
	gen := filepath.Join(filepath.Dir(storeOf(g).Path()), store.GenerationFile)
	before, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.WriteFile(gen, before, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// noHumanAsked fails unless h was never asked.
func noHumanAsked(t *testing.T, h *fakeHuman) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.asked) != 0 {
		t.Fatalf("a human was asked about a blocked principal's call: %+v", h.asked)
	}
}

// TestOneApprovalOneCallAcrossProcesses: one approval, two processes
// racing calls that carry it and calls that find it: exactly one runs.
// (It replaced a step-by-step replay of an interleaving in which a check
// spent an approval in memory before its commit; a decision is now made
// inside its commit, so that interleaving cannot be written.)
func TestOneApprovalOneCallAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	doc := strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000", 1)
	a := newGuard(t, doc, h)
	b := newGuard(t, doc, h)
	onStoreOf(t, b, a, store.Options{})
	a.InlineWait, b.InlineWait = 10*time.Millisecond, 10*time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "once"})
	v := a.Check(ctx, del)
	if v.Proceed || v.Token == "" {
		t.Fatalf("want a confirmation: %+v", v)
	}
	h.say(verify.Allow)
	if _, res := b.ConfirmOperation(ctx, "s", v.Token); res != nil {
		t.Fatalf("confirm_operation in B: %+v", res)
	}
	withToken := del
	withToken.Token = v.Token
	var wg sync.WaitGroup
	var ran atomic.Int32
	for i := range 16 {
		g, act := a, del
		if i%2 == 1 {
			g = b
		}
		if i%4 < 2 {
			act = withToken
		}
		wg.Go(func() {
			if g.Check(ctx, act).Proceed {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Fatalf("one approval ran %d calls across two processes", n)
	}
}

// TestNoLockAcrossACommit: while one call's commit waits for the state
// directory's lock (another process is in a transaction), the guard's
// own lock is free: other calls are decided meanwhile. If g.mu were held
// across the commit, TryLock would succeed only after the commit gave up
// (the lock timeout), and the call would be refused.
func TestNoLockAcrossACommit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	g := newGuardWith(t, testPolicy, &fakeHuman{}, dir, store.Options{Timeout: 30 * time.Second})
	get := call("db_get_row", map[string]any{"id": "1"})
	if !g.Check(ctx, get).Proceed { // reads the block: cached from here on
		t.Fatal("the first call was refused")
	}
	release := holdLock(t, dir, syscall.LOCK_EX)
	done := make(chan Verdict, 1)
	go func() { done <- g.Check(ctx, get) }()
	// Once the call waits for the state directory's lock, the guard's
	// lock must be free.
	for !strings.Contains(allStacks(), "store.(*fileLock).lock(") {
		time.Sleep(time.Millisecond)
	}
	for !g.mu.TryLock() {
		time.Sleep(time.Millisecond)
	}
	waiting := strings.Contains(allStacks(), "store.(*fileLock).lock(")
	g.mu.Unlock()
	release()
	if !waiting {
		t.Fatal("the guard's lock came free only after the commit stopped waiting")
	}
	if v := <-done; !v.Proceed {
		t.Fatalf("the call whose commit waited was refused: %+v", v.Refusal)
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// TestReportedFailurePausesAtOnce: a reported failure pauses the
// principal from the commit that decides it: the next call decided after
// it is paused, whatever else the report waits for (its check-in
// question). One that could not be written pauses nothing.
func TestReportedFailurePausesAtOnce(t *testing.T) {
	ctx := context.Background()
	for _, written := range []bool{true, false} {
		g, dir := lockedGuard(t, &fakeHuman{})
		g.InlineWait = 10 * time.Millisecond
		st, aerr := g.ExecuteAgent(ctx, "s", "worker")
		if aerr != nil {
			t.Fatal(aerr)
		}
		report := Action{Session: "s", Operation: "record_execution_step", Hint: "retry the upload", Outcome: "failure",
			Execution: g.executions[st.ID]}
		var release func()
		if !written {
			release = holdLock(t, dir, syscall.LOCK_EX)
		}
		g.Check(ctx, report)
		if !written {
			release()
		}
		g.mu.Lock()
		paused := g.mem.failurePause
		g.mu.Unlock()
		if paused != written {
			t.Errorf("written %v: pause %v", written, paused)
		}
		next := g.Check(ctx, call("db_get_row", map[string]any{"id": "1"}))
		if next.Proceed == written {
			t.Errorf("written %v: the next call proceeded %v (%+v)", written, next.Proceed, next.Refusal)
		}
	}
}

// TestConcurrentCallsStopAtTheStepLimit: calls decided side by side
// count each other's steps while they commit, so however many a model
// fires at once, only max_autonomous_steps of them run without a human;
// and one approval runs one of them.
func TestConcurrentCallsStopAtTheStepLimit(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, testPolicy, &fakeHuman{}) // max_autonomous_steps = 3; nobody answers
	g.InlineWait = 10 * time.Millisecond
	var wg sync.WaitGroup
	var ran atomic.Int32
	for i := range 12 {
		wg.Go(func() {
			if g.Check(ctx, call("db_get_row", map[string]any{"id": strconv.Itoa(i)})).Proceed {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 3 {
		t.Fatalf("%d of 12 concurrent calls ran; the step limit is 3", n)
	}
	if n := stepsOf(g); n != 12 {
		t.Fatalf("%d steps counted for 12 calls", n)
	}
}

// TestOneApprovalOneOfManyCalls: an approval of one call, found by many
// identical calls at once, runs exactly one of them.
func TestOneApprovalOneOfManyCalls(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000", 1), h)
	g.InlineWait = 10 * time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "7"})
	v := g.Check(ctx, del) // asked, no answer yet
	if v.Proceed || v.Token == "" {
		t.Fatalf("first: %+v", v)
	}
	approveInStore(t, g, v.Token)
	var wg sync.WaitGroup
	var ran atomic.Int32
	for range 8 {
		wg.Go(func() {
			if g.Check(ctx, del).Proceed {
				ran.Add(1)
			}
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Fatalf("one approval ran %d calls", n)
	}
}

// TestAnswerDoesNotOverwriteAUse: a human's answer recorded in one
// process for a question another process has meanwhile settled (its
// approval already used there) is not written over it: an approval
// written again over its use would let it run a second call.
func TestAnswerDoesNotOverwriteAUse(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 100", 1), &fakeHuman{})
	g.InlineWait = 10 * time.Millisecond
	v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"}))
	if v.Token == "" {
		t.Fatalf("no question: %+v", v)
	}
	// The other process's human approved it and a call there used it.
	useInStore(t, g, v.Token)
	c := storedConfirmation(t, g, v.Token)
	c.Status = ruling.StatusPending // this process's view, from before
	if answer, _ := g.book(g.pol()).RecordAnswer(c, verify.Allow, ""); answer != verify.None {
		t.Fatalf("an answer to a question used elsewhere returned %v", answer)
	}
	var stored *store.Confirmation
	if err := storeOf(g).View(ctx, func(tx *store.Tx) (err error) { stored, err = tx.Confirmation(v.Token); return }); err != nil {
		t.Fatal(err)
	}
	if stored.Status != ruling.StatusUsed {
		t.Fatalf("the used approval was written over: %s", stored.Status)
	}
	if g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"})).Proceed {
		t.Fatal("the approval used elsewhere ran a call here")
	}
}

// askedAbout is a human who, when asked, notes what the store said of the
// question at that moment.
type askedAbout struct {
	fakeHuman
	g      *Guard
	status []string
}

func (h *askedAbout) Ask(ctx context.Context, r verify.Request) (verify.Answer, error) {
	var c *store.Confirmation
	_ = storeOf(h.g).View(ctx, func(tx *store.Tx) (err error) { c, err = tx.Confirmation(r.Token); return })
	h.mu.Lock()
	if c == nil {
		h.status = append(h.status, "absent")
	} else {
		h.status = append(h.status, c.Status)
	}
	h.mu.Unlock()
	return h.fakeHuman.Ask(ctx, r)
}

// TestQuestionOutlivesItsProcess: a question is in the store before the
// human sees it, and confirmations live there alone: after a restart the
// identical call joins the question still pending (no second token) and
// the new process's human answers that one.
func TestQuestionOutlivesItsProcess(t *testing.T) {
	ctx := context.Background()
	doc := strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 100", 1)
	first := &askedAbout{}
	a := newGuard(t, doc, first)
	first.g = a
	a.InlineWait = 50 * time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "9"})
	v := a.Check(ctx, del)
	if v.Proceed || v.Token == "" {
		t.Fatalf("first process: %+v", v)
	}
	waitFor(t, func() bool { first.mu.Lock(); defer first.mu.Unlock(); return len(first.status) == 1 })
	if first.status[0] != ruling.StatusPending {
		t.Fatalf("the human was asked about a question the store holds as %q", first.status[0])
	}
	a.Close()

	second := &askedAbout{}
	second.say(verify.Allow)
	b := newGuard(t, doc, second)
	onStoreOf(t, b, a, store.Options{})
	second.g = b
	v2 := b.Check(ctx, del)
	if !v2.Proceed || v2.Token != v.Token {
		t.Fatalf("after a restart the identical call got %+v; want the pending question %s answered and used", v2, v.Token)
	}
	if c := storedConfirmation(t, b, v.Token); c.Status != ruling.StatusUsed {
		t.Fatalf("the question is %s after its approval ran the call", c.Status)
	}
	if b.Check(ctx, del).Proceed {
		t.Fatal("one approval ran two calls")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out")
}

func ptr[T any](v T) *T { return &v }

// TestExecutionFinishedElsewhere: executions live in the store alone.
// One finished by another process (by id) takes no more steps here,
// whether the finish landed before this process read it or between the
// read and the commit of a step; the step is not written over the finish.
// Steps reported through both processes are all counted.
func TestExecutionFinishedElsewhere(t *testing.T) {
	ctx := context.Background()
	doc := strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 100", 1)
	step := func(g *Guard, id string) (*Directive, *refusal.Refusal) {
		return g.RecordStep(ctx, Report{Session: "s", ExecutionID: id, NextActionHint: "db.get_row", Category: policy.Read})
	}
	for _, when := range []string{"before the read", "between the read and the commit"} {
		t.Run(when, func(t *testing.T) {
			a := newGuard(t, doc, &fakeHuman{})
			b := newGuard(t, doc, &fakeHuman{})
			onStoreOf(t, b, a, store.Options{})
			st, aerr := a.ExecuteAgent(ctx, "s", "worker")
			if aerr != nil {
				t.Fatal(aerr)
			}
			id := st.ID
			for _, g := range []*Guard{a, b, a} {
				if d, err := step(g, id); err != nil || !d.Continue {
					t.Fatalf("step: %+v %v", d, err)
				}
			}
			finish := func() {
				if _, err := b.Finish(ctx, "other", id, "", StatusCompleted, "done elsewhere"); err != nil {
					t.Errorf("finishing through the other process: %v", err)
				}
			}
			if when == "before the read" {
				finish()
			} else {
				a.beforeCommit.Store(ptr(finish))
			}
			d, err := step(a, id)
			if err == nil || err.Kind != refusal.Conflict {
				t.Fatalf("a step on an execution finished elsewhere: %+v %v", d, err)
			}
			var rec *store.Execution
			if err := storeOf(a).View(ctx, func(tx *store.Tx) (err error) { rec, err = tx.Execution(id); return }); err != nil {
				t.Fatal(err)
			}
			if rec.Status != StatusCompleted || rec.Steps != 3 {
				t.Fatalf("stored execution: %s with %d steps; want completed with 3", rec.Status, rec.Steps)
			}
			if _, err := a.Finish(ctx, "s", id, "", StatusCancelled, ""); err == nil || err.Kind != refusal.Conflict {
				t.Fatalf("finishing it again here: %v", err)
			}
		})
	}
}

// TestQuestionsReadTheBlock: what humans said is read with the block, in
// one snapshot. A block set by another process, with the generation file
// rewound by the agent so that this process's cached "no block" seems
// current, still refuses a gated call before any human is asked.
func TestQuestionsReadTheBlock(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g, _ := lockedGuard(t, h)
	if !g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed { // caches "no block"
		t.Fatal("an allowed call was refused")
	}
	rewind := generationRewinder(t, g)
	if err := storeOf(g).Update(ctx, func(tx *store.Tx) error {
		return tx.PutBlock(store.Block{Principal: "unit", Reason: "set elsewhere", VerificationID: "v-elsewhere",
			BlockedAt: g.now(), ChallengeExpiresAt: g.now().Add(time.Hour)})
	}); err != nil {
		t.Fatal(err)
	}
	rewind()
	v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"}))
	if v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("a gated call of a blocked principal: %+v", v)
	}
	noHumanAsked(t, h)
}

// TestUnaskedQuestionSaysSo: when no human could be asked (no channel,
// no display), CONFIRMATION_REQUIRED says so and why, rather than how
// the human was reached ({asked}: a window, in the dialog's voice).
func TestUnaskedQuestionSaysSo(t *testing.T) {
	ctx := context.Background()
	g := newGuard(t, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 100", 1), nil)
	v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"}))
	if v.Refusal.Offer() == nil {
		t.Fatalf("%+v", v)
	}
	msg := v.Refusal.Say
	if strings.Contains(msg, "{asked}") || !strings.Contains(msg, "none could be asked") || !strings.Contains(msg, "no channel") {
		t.Errorf("%q", msg)
	}
}

// TestCodeNotShownSaysSo: a block or a verify pause whose code the
// channel could not show does not tell the model that the user has a
// code to give it: neither in the refusal that stopped the agent nor in
// the next ones (which read it from the store for a block, from memory
// for a pause).
func TestCodeNotShownSaysSo(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		code refusal.Kind
		stop Action
		eval func(*policy.Policy, evaluator.Step) evaluator.Directive // nil: the policy's
	}{
		{"block", refusal.Blocked, call("db_drop_database", map[string]any{"name": "prod"}), nil},
		{"verify pause", refusal.Paused, call("db_get_row", map[string]any{"id": "1"}),
			func(*policy.Policy, evaluator.Step) evaluator.Directive {
				return evaluator.Directive{Decision: evaluator.NeedsVerify, Tier: evaluator.Verify, Enforced: true, Reason: "r"}
			}},
	} {
		for _, fails := range []bool{false, true} {
			h := &fakeHuman{}
			if fails {
				h.err = verify.ErrNoDisplay
			}
			g := newGuard(t, testPolicy, h)
			g.Evaluate = tc.eval
			first := g.Check(ctx, tc.stop)
			later := g.Check(ctx, call("db_get_row", map[string]any{"id": "2"}))
			for _, e := range []*refusal.Refusal{first.Refusal, later.Refusal} {
				if e == nil || e.Kind != tc.code {
					t.Fatalf("%s, fails %v: %+v", tc.name, fails, e)
				}
				claims := strings.Contains(e.Say, "the verification code {shown}")
				says := strings.Contains(e.Say, "could not show the user a verification code")
				if claims == fails || says != fails {
					t.Errorf("%s, fails %v: %q", tc.name, fails, e.Say)
				}
			}
		}
	}
}

// stepsOf reads g's step count as the guard does, under g.mu: a commit's
// hook may be changing it on another goroutine.
func stepsOf(g *Guard) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mem.steps
}
