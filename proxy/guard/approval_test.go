package guard

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/confirm"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// slowHuman answers every question with answer after a delay, and
// records how many questions were on the screen at once.
type slowHuman struct {
	delay   time.Duration
	answer  verify.Answer
	open    atomic.Int32
	maxOpen atomic.Int32
	asked   atomic.Int32
	mu      sync.Mutex
	reqs    []verify.Request
}

func (*slowHuman) Name() string { return "slow" }
func (h *slowHuman) Ask(ctx context.Context, r verify.Request) (verify.Answer, error) {
	n := h.open.Add(1)
	defer h.open.Add(-1)
	for {
		m := h.maxOpen.Load()
		if n <= m || h.maxOpen.CompareAndSwap(m, n) {
			break
		}
	}
	h.asked.Add(1)
	h.mu.Lock()
	h.reqs = append(h.reqs, r)
	h.mu.Unlock()
	select {
	case <-time.After(h.delay):
		return h.answer, nil
	case <-ctx.Done():
		return verify.None, nil
	}
}
func (*slowHuman) Show(context.Context, verify.Request) error { return nil }

const approvalPolicy = `
agent = "unit"
[safety]
max_autonomous_steps = 1000
requires_approval = ["db_delete_row"]
[[safety.rules]]
action = "requires_approval"
argument = "path"
pattern = "*/.ssh/*"
`

// Allow for this session lets later calls of the same tool through in
// the same session, and nothing else: not another tool, not another
// session, not a decision that rests on the arguments.
func TestAllowForSession(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, approvalPolicy, h)
	g.SessionApprovalTTL = time.Hour
	del := call("db_delete_row", map[string]any{"id": "1"})
	h.say(verify.AllowSession)
	v := g.Check(ctx, del)
	if !v.Proceed || len(h.asked) != 1 || !h.asked[0].AllowSession {
		t.Fatalf("first call: %+v %v asked %+v", v.Directive, v.Refusal, h.asked)
	}
	other := call("db_delete_row", map[string]any{"id": "2"})
	if v := g.Check(ctx, other); !v.Proceed || v.Approval == "" || len(h.asked) != 1 {
		t.Fatalf("same tool, other arguments, same session: %+v %v", v.Directive, v.Refusal)
	}
	otherSession := other
	otherSession.Session = "s2"
	if v := g.Check(ctx, otherSession); v.Proceed {
		t.Error("the approval crossed into another session")
	}
	upd := call("db_update_row", map[string]any{"id": "1"}) // EXECUTE 45: asks
	if v := g.Check(ctx, upd); v.Proceed {
		t.Error("the approval covered another tool")
	}
	ssh := call("db_delete_row", map[string]any{"path": "/home/a/.ssh/id"})
	if v := g.Check(ctx, ssh); v.Proceed || !v.Directive.ArgumentBound {
		t.Errorf("an argument-bound decision was covered: %+v", v.Directive)
	}
	if len(h.asked) > 1 && h.asked[len(h.asked)-1].AllowSession {
		t.Error("allow for this session offered for an argument-bound decision")
	}
	// Revoked: asks again.
	if _, err := storeOf(g).RevokeApprovals(ctx, func(store.Approval) bool { return true }, "tester", time.Now()); err != nil {
		t.Fatal(err)
	}
	if v := g.Check(ctx, other); v.Proceed {
		t.Error("a revoked approval still stands")
	}
	// The policy changed: the approval is void.
	h.say(verify.AllowSession)
	g.Check(ctx, del)
	g.Policy.Version = "edited"
	if v := g.Check(ctx, other); v.Proceed {
		t.Errorf("an approval outlived the policy version it was given under: %+v asked %d", v, len(h.asked))
	}
}

// A session's standing approvals end with it: none stands for a later
// call, aqlguard approvals list can say so, and each end is audited.
func TestApprovalsEndWithTheirSession(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, approvalPolicy, h)
	g.SessionApprovalTTL = time.Hour
	g.Process = "host/1"
	h.say(verify.AllowSession)
	if v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"})); !v.Proceed {
		t.Fatalf("%+v %v", v.Directive, v.Refusal)
	}
	g.EndSession(ctx, "s")
	var list []store.Approval
	if err := storeOf(g).View(ctx, func(tx *store.Tx) (err error) { list, err = tx.Approvals(); return }); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].EndedAt.IsZero() || list[0].Active(time.Now()) || list[0].Process != "host/1" {
		t.Fatalf("after the session ended: %+v", list)
	}
	h.say(verify.Deny)
	if v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "2"})); v.Proceed {
		t.Error("an approval outlived its session")
	}
	var ended int
	if err := storeOf(g).View(ctx, func(tx *store.Tx) error {
		return tx.Records(0, func(r store.Record, _ []byte) error {
			if r.Kind == "approval" && r.Decision == "session_ended" && r.Approval == list[0].ID {
				ended++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if ended != 1 {
		t.Errorf("%d audit records of the end, want 1", ended)
	}
}

// One approval, one execution: two loops on one state directory (two
// aqlguard processes) and many concurrent calls in each.
func TestOneApprovalOneExecution(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	one := newGuard(t, approvalPolicy, h)
	two := newGuard(t, approvalPolicy, h)
	// A generous lock timeout: sixteen racing checks on a loaded machine
	// must not fail closed for want of the database.
	onStoreOf(t, two, one, store.Options{Timeout: 20 * time.Second})
	onStoreOf(t, one, one, store.Options{Timeout: 20 * time.Second})
	one.InlineWait, two.InlineWait = time.Millisecond, time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "9"})
	v := one.Check(ctx, del)
	if v.Refusal.Offer() == nil {
		t.Fatalf("no token: %+v", v)
	}
	// The human approves through the other process.
	h.say(verify.Allow)
	if res, fail := two.ConfirmOperation(ctx, "s", v.Token); res == nil {
		t.Fatalf("confirm: %v", fail)
	}
	// Both processes now hold it approved (two read it from the store).
	if c, _ := lookupLocked(ctx, two, v.Token); c == nil || c.Status != ruling.StatusApproved {
		t.Fatalf("two: %+v", c)
	}
	if c, _ := lookupLocked(ctx, one, v.Token); c == nil || c.Status != ruling.StatusApproved {
		t.Fatalf("one: %+v", c)
	}
	var ran atomic.Int32
	var mu sync.Mutex
	refusals := map[string]int{}
	var wg sync.WaitGroup
	for i := range 16 {
		g := one
		if i%2 == 1 {
			g = two
		}
		wg.Go(func() {
			v := g.Check(ctx, del)
			if v.Proceed {
				ran.Add(1)
				return
			}
			mu.Lock()
			if v.Refusal != nil {
				refusals[v.Refusal.Kind.String()+": "+v.Refusal.Say]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if n := ran.Load(); n != 1 {
		t.Fatalf("one approval ran %d calls; the others were refused with %v", n, refusals)
	}
}

// Thirty parallel gated calls put one question at a time on the
// screen, across two processes.
func TestOneQuestionAtATime(t *testing.T) {
	ctx := context.Background()
	h := &slowHuman{delay: 20 * time.Millisecond, answer: verify.Deny}
	one := newGuard(t, approvalPolicy, h)
	two := newGuard(t, approvalPolicy, h)
	onStoreOf(t, two, one, store.Options{})
	one.InlineWait, two.InlineWait = 5*time.Second, 5*time.Second
	var wg sync.WaitGroup
	for i := range 30 {
		g := one
		if i%2 == 1 {
			g = two
		}
		wg.Go(func() {
			v := g.Check(ctx, call("db_delete_row", map[string]any{"id": string(rune('a' + i))}))
			if v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Denied {
				t.Errorf("call %d: %+v", i, v.Refusal)
			}
		})
	}
	wg.Wait()
	if m := h.maxOpen.Load(); m != 1 {
		t.Errorf("%d questions on the screen at once", m)
	}
	if n := h.asked.Load(); n != 30 {
		t.Errorf("%d questions asked, want 30", n)
	}
	one.Close()
	two.Close()
}

// The model's retry while the question is still on the screen finds it,
// rather than raising a second question; the answer given later lets the
// retry through.
func TestRetryFindsTheOpenQuestion(t *testing.T) {
	ctx := context.Background()
	h := &slowHuman{delay: 300 * time.Millisecond, answer: verify.Allow}
	g := newGuard(t, approvalPolicy, h)
	g.InlineWait = 10 * time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "1"})
	v := g.Check(ctx, del)
	if v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
		t.Fatalf("first: %+v", v.Refusal)
	}
	if v2 := g.Check(ctx, del); v2.Refusal == nil || v2.Token != v.Token {
		t.Fatalf("the retry opened another question: %+v", v2.Refusal)
	}
	time.Sleep(500 * time.Millisecond)
	if v := g.Check(ctx, del); !v.Proceed {
		t.Fatalf("after the answer: %+v", v.Refusal)
	}
	if n := h.asked.Load(); n != 1 {
		t.Errorf("%d questions for one call", n)
	}
}

// Secrets never reach the audit log, the state database or the human's
// question; what ran is kept in full, and equal secrets correlate.
func TestSecretsAreRedactedEverywhere(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, strings.Replace(approvalPolicy, "[safety]\n", "[safety]\nsecret_arguments = [\"db.*:conn.dsn\"]\n", 1), h)
	long := strings.Repeat("print('x')\n", 500)
	a := call("db_delete_row", map[string]any{"id": "1", "password": "hunter2-secret", "apiKey": "k-live-123456",
		"code": long, "conn": map[string]any{"dsn": "postgres://u:pw-in-dsn@h/db"}, "note": "hunter2-secret",
		"declared": "schema-says-secret"})
	a.Secrets = []string{"declared"}
	v := g.Check(ctx, a)
	if v.Proceed {
		t.Fatal("expected a question")
	}
	var rec store.Record
	if err := storeOf(g).View(ctx, func(tx *store.Tx) error {
		return tx.Records(1, func(r store.Record, _ []byte) error {
			if r.Kind == "decision" {
				rec = r
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	var args map[string]any
	if err := json.Unmarshal(rec.Args, &args); err != nil {
		t.Fatalf("args: %v (%q / %q)", err, rec.Args, rec.ArgsText)
	}
	if args["code"] != long {
		t.Error("the code that would run is not in the audit record")
	}
	pw, note := args["password"].(string), args["note"].(string)
	if !strings.HasPrefix(pw, "[redacted hmac-sha256:") || note != "hunter2-secret" {
		t.Errorf("password %q note %q", pw, note)
	}
	if rec.ArgsSHA256 != confirm.Digest(a.Arguments) {
		t.Error("the digest must cover the whole unredacted arguments")
	}
	raw, err := os.ReadFile(storeOf(g).Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"k-live-123456", "pw-in-dsn", "schema-says-secret"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("%q is in the state database", secret)
		}
		if q, _ := json.Marshal(h.asked); strings.Contains(string(q), secret) {
			t.Errorf("%q was shown to the human", secret)
		}
	}
	// Equal secrets give equal digests (and the same under another name).
	if redact.Digest(g.auditKey(), "hunter2-secret") != pw {
		t.Error("equal secrets do not correlate")
	}
}

// A human's deny of a reported step is a directive, not an error.
func TestReportedStepDenialIsADirective(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, approvalPolicy, h)
	e, _ := g.ExecuteAgent(ctx, "s", "a")
	h.say(verify.Deny)
	d, err := g.RecordStep(ctx, Report{Session: "s", ExecutionID: e.ID, NextActionHint: "db_delete_row 7",
		Category: policy.Delete})
	if err != nil || d.Continue || d.Reason == "" || len(d.Factors) == 0 || !strings.Contains(d.Reason, "denied") {
		t.Fatalf("directive %+v err %v", d, err)
	}
	_ = evaluator.Directive{}
}

// A call a human denied is refused again without asking until the denial
// expires; another call asks.
func TestDeniedCallIsNotAskedAgain(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, approvalPolicy, h)
	del := call("db_delete_row", map[string]any{"id": "1"})
	h.say(verify.Deny)
	for i := range 3 {
		if v := g.Check(ctx, del); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Denied {
			t.Fatalf("try %d: %+v", i, v.Refusal)
		}
	}
	if len(h.asked) != 1 {
		t.Errorf("the human was asked %d times about one denied call", len(h.asked))
	}
	h.say(verify.Allow)
	if v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "2"})); !v.Proceed {
		t.Errorf("another call: %+v", v.Refusal)
	}
	clock := time.Now().Add(time.Hour)
	g.Now = func() time.Time { return clock }
	h.say(verify.Allow)
	if v := g.Check(ctx, del); !v.Proceed || len(h.asked) != 3 {
		t.Errorf("after the denial expired the human is asked again: %+v, asked %d", v.Refusal, len(h.asked))
	}
}

// lookupLocked is the token as the guard reads it from the state.
func lookupLocked(ctx context.Context, g *Guard, token string) (*confirm.Confirmation, *refusal.Refusal) {
	return g.book(g.pol()).Load(ctx, token)
}

// awayHuman never answers: each question stays on the screen until its
// context ends, which it reports on ended.
// awayHuman never answers: asked says a question is up, ended how it
// ended.
type awayHuman struct{ asked, ended chan error }

func (*awayHuman) Name() string { return "away" }
func (h *awayHuman) Ask(ctx context.Context, _ verify.Request) (verify.Answer, error) {
	h.asked <- nil
	<-ctx.Done()
	h.ended <- ctx.Err()
	return verify.None, nil
}
func (*awayHuman) Show(context.Context, verify.Request) error { return nil }

// A question is withdrawn (its dialog closes, a command is stopped) when
// the client cancels the call that raised it, or when its session ends
// after the call returned; not when the call only waited its inline
// wait, whose retry would pick the answer up.
func TestQuestionsAreWithdrawnWithTheirCaller(t *testing.T) {
	h := &awayHuman{asked: make(chan error, 4), ended: make(chan error, 4)}
	g := newGuard(t, approvalPolicy, h)
	g.InlineWait = 200 * time.Millisecond

	// The client cancels its call once its question is up (a fixed
	// sleep here once cancelled it before, on a loaded machine).
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Verdict, 1)
	go func() { done <- g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"})) }()
	select {
	case <-h.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the question was never asked")
	}
	cancel()
	if v := <-done; v.Proceed {
		t.Fatal("a cancelled call ran")
	}
	select {
	case err := <-h.ended:
		if err != context.Canceled {
			t.Errorf("the question ended with %v, want a withdrawal", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the question stayed up after its call was cancelled")
	}

	// The call waits its inline wait and returns: the question stays up
	// for the retry, until the session ends.
	a := call("db_delete_row", map[string]any{"id": "2"})
	a.Session = "s2"
	if v := g.Check(context.Background(), a); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
		t.Fatalf("%+v %v", v.Directive, v.Refusal)
	}
	select {
	case err := <-h.ended:
		t.Fatalf("the question ended (%v) when its call only waited", err)
	case <-time.After(300 * time.Millisecond):
	}
	g.EndSession(context.Background(), "s2")
	select {
	case <-h.ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the question stayed up after its session ended")
	}
	// Both are recorded as unanswered, saying why (once the asking
	// goroutines have written them).
	var why []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		why = nil
		if err := storeOf(g).View(context.Background(), func(tx *store.Tx) error {
			return tx.Records(0, func(r store.Record, _ []byte) error {
				if r.Kind == "confirmation" && r.Decision == "no_answer" {
					why = append(why, strings.Join(r.Factors, "; "))
				}
				return nil
			})
		}); err != nil {
			t.Fatal(err)
		}
		if len(why) == 2 || time.Now().After(deadline) {
			break
		}
	}
	if len(why) != 2 || !strings.Contains(why[0], "the call was cancelled") || !strings.Contains(why[1], "the MCP session ended") {
		t.Errorf("the records say %q", why)
	}
}

// heldHuman keeps each question on the screen until the test answers
// it (answer), as a person who reads slowly would.
type heldHuman struct {
	asked   chan verify.Request
	answers chan verify.Answer
}

func newHeldHuman() *heldHuman {
	return &heldHuman{asked: make(chan verify.Request, 8), answers: make(chan verify.Answer, 8)}
}

func (*heldHuman) Name() string { return "held" }
func (h *heldHuman) Ask(ctx context.Context, r verify.Request) (verify.Answer, error) {
	h.asked <- r
	select {
	case a := <-h.answers:
		return a, nil
	case <-ctx.Done():
		return verify.None, nil
	}
}
func (*heldHuman) Show(context.Context, verify.Request) error { return nil }

// question waits for the next question put to the human.
func (h *heldHuman) question(t *testing.T) verify.Request {
	t.Helper()
	select {
	case r := <-h.asked:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no question was put to the human")
		return verify.Request{}
	}
}

// No call outwaits its client (issue 31, item 2): a gated call answers
// pending after its wait, the question stays up, and the human's later
// answer is found by the same call repeated in the same session, once,
// without asking again; a call with other arguments, or the same call
// in another session, does not inherit it, and a denial refuses the
// repeat without asking again.
func TestPendingCallFindsItsAnswerLater(t *testing.T) {
	ctx := context.Background()
	h := newHeldHuman()
	g := newGuard(t, approvalPolicy, h)
	g.InlineWait, g.AskTimeout = 50*time.Millisecond, 50*time.Millisecond
	del := call("db_delete_row", map[string]any{"id": "1"})
	began := time.Now()
	v := g.Check(ctx, del)
	if v.Refusal == nil || v.Refusal.Kind != refusal.Pending || !strings.Contains(v.Refusal.Say, "Repeat the same call") {
		t.Fatalf("first: %+v", v.Refusal)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the pending answer took %s", took)
	}
	q := h.question(t)
	// confirm_operation waits its own bound, and answers pending too.
	if res, r := g.ConfirmOperation(ctx, "s", v.Token); res != nil || r == nil || r.Kind != refusal.Pending {
		t.Fatalf("confirm_operation before the answer: %+v, %+v", res, r)
	}
	h.answers <- verify.Allow
	waitStatus(t, g, q.Token, ruling.StatusApproved)

	other := call("db_delete_row", map[string]any{"id": "2"})
	if v := g.Check(ctx, other); v.Proceed {
		t.Fatal("a call with other arguments ran on the answer")
	}
	if own := h.question(t); own.Token == q.Token { // asked on its own
		t.Errorf("a call with other arguments joined the answered question")
	}
	h.answers <- verify.Deny
	elsewhere := del
	elsewhere.Session = "s2"
	if v := g.Check(ctx, elsewhere); v.Proceed {
		t.Fatal("the same call in another session ran on the answer")
	}
	if own := h.question(t); own.Token == q.Token {
		t.Errorf("the same call in another session joined the answered question")
	}
	h.answers <- verify.Deny
	if v := g.Check(ctx, del); !v.Proceed || v.Token != q.Token {
		t.Fatalf("the repeated call: %+v (token %s, want %s)", v.Refusal, v.Token, q.Token)
	}
	if v := g.Check(ctx, del); v.Proceed {
		t.Fatal("one answer ran two calls")
	}
	if again := h.question(t); again.Token == q.Token { // the call once more: a question of its own
		t.Errorf("the used answer was asked about again")
	}
	h.answers <- verify.Deny

	// A denial: the repeated call is refused, and nobody is asked again.
	rm := call("db_delete_row", map[string]any{"id": "3"})
	v = g.Check(ctx, rm)
	q = h.question(t)
	if v.Refusal == nil || v.Refusal.Kind != refusal.Pending {
		t.Fatalf("pending: %+v", v.Refusal)
	}
	h.answers <- verify.Deny
	waitStatus(t, g, q.Token, ruling.StatusDenied)
	if v := g.Check(ctx, rm); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Denied {
		t.Fatalf("the repeated denied call: %+v", v.Refusal)
	}
	select {
	case r := <-h.asked:
		t.Errorf("asked again after the denial: %s", r.Action)
	case <-time.After(100 * time.Millisecond):
	}
}

// waitStatus waits until the state holds the token's answer.
func waitStatus(t *testing.T, g *Guard, token, status string) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c, _ := g.book(g.pol()).Load(context.Background(), token); c != nil && c.Status == status {
			return
		}
	}
	t.Fatalf("the token %s never became %s", token, status)
}
