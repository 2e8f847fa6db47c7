package guard

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/confirm"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// fakeHuman is a verify.Channel that answers from a script and remembers
// what it was shown.
type fakeHuman struct {
	mu      sync.Mutex
	answers []verify.Answer
	asked   []verify.Request
	shown   []verify.Request
	err     error
}

func (f *fakeHuman) Name() string { return "fake" }

func (f *fakeHuman) Ask(_ context.Context, r verify.Request) (verify.Answer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, r)
	if f.err != nil {
		return verify.None, f.err
	}
	if len(f.answers) == 0 {
		return verify.None, nil
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a, nil
}

func (f *fakeHuman) Show(_ context.Context, r verify.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shown = append(f.shown, r)
	return f.err
}

func (f *fakeHuman) say(a ...verify.Answer) {
	f.mu.Lock()
	f.answers = append(f.answers, a...)
	f.mu.Unlock()
}

func newGuard(t testing.TB, doc string, h verify.Channel) *Guard {
	t.Helper()
	return newGuardWith(t, doc, h, t.TempDir(), store.Options{})
}

// newGuardWith is newGuard on state directory dir, with store options o.
func newGuardWith(t testing.TB, doc string, h verify.Channel, dir string, o store.Options) *Guard {
	t.Helper()
	cfg, err := policy.Parse([]byte(doc), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	g := &Guard{Policy: p, State: st, Channel: h, InlineWait: time.Second, AskTimeout: time.Second,
		ConfirmTTL: 5 * time.Minute, ChallengeTTL: 5 * time.Minute,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// Before the directory goes: a question still being asked must not
	// write into it while it is removed.
	t.Cleanup(func() { g.Close(); _ = st.Close() })
	return g
}

// onStoreOf gives l a store of its own on other's state directory, as a
// second aqlguard process on it would have (other may be l: a fresh
// handle), closed with l before the directory goes.
func onStoreOf(t testing.TB, g, other *Guard, o store.Options) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Dir(storeOf(other).Path()), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(); _ = st.Close() })
	g.State = st
}

const testPolicy = `
agent = "unit"
[safety]
max_autonomous_steps = 3
deny = ["*drop_database*"]
requires_approval = ["db_delete_row"]
auto_approve = ["db_get_row"]
`

func call(op string, args map[string]any) Action {
	return Action{Session: "s", Operation: op, Server: "db", Tool: strings.TrimPrefix(op, "db_"),
		Category: policy.Execute, Arguments: args}
}

func TestCheckPaths(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		answers []verify.Answer
		action  Action
		proceed bool
		code    refusal.Kind
	}{
		{"auto approve", nil, call("db_get_row", map[string]any{"id": "1"}), true, 0},
		{"approval allowed", []verify.Answer{verify.Allow}, call("db_delete_row", map[string]any{"id": "1"}), true, 0},
		{"approval denied", []verify.Answer{verify.Deny}, call("db_delete_row", map[string]any{"id": "1"}), false, refusal.Denied},
		{"approval unanswered", nil, call("db_delete_row", map[string]any{"id": "1"}), false, refusal.Pending},
		{"deny blocks", nil, call("db_drop_database", map[string]any{"name": "x"}), false, refusal.Blocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeHuman{answers: tt.answers}
			g := newGuard(t, testPolicy, h)
			v := g.Check(ctx, tt.action)
			if v.Proceed != tt.proceed || (tt.code != 0 && (v.Refusal == nil || v.Refusal.Kind != tt.code)) {
				t.Fatalf("verdict %+v err %v", v.Directive, v.Refusal)
			}
			if tt.code == refusal.Pending && (v.Refusal.Offer() == nil || !confirm.TokenFormat.MatchString(v.Refusal.Offer().Token)) {
				t.Errorf("confirmation: %+v", v.Refusal)
			}
		})
	}
}

func TestConfirmOperationNeverSelfApproves(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	a := call("db_delete_row", map[string]any{"id": "7"})
	v := g.Check(ctx, a)
	token := v.Token
	// The model asks again and again; the human never answers.
	for i := 0; i < 3; i++ {
		if res, fail := g.ConfirmOperation(ctx, "s", token); res != nil || fail == nil || fail.Kind != refusal.Pending {
			t.Fatalf("approved without a human: %v %v", res, fail)
		}
	}
	a.Token = token
	if v := g.Check(ctx, a); v.Proceed {
		t.Fatal("the token alone let the call through")
	}
	// The human approves once: the identical call proceeds once.
	h.say(verify.Allow)
	if res, fail := g.ConfirmOperation(ctx, "s", token); res == nil || fail != nil {
		t.Fatalf("confirm: %v", fail)
	}
	if v := g.Check(ctx, a); !v.Proceed {
		t.Fatalf("approved call refused: %v", v.Refusal)
	}
	if v := g.Check(ctx, a); v.Proceed || v.Refusal.Kind != refusal.TokenUsed {
		t.Fatalf("replay: %+v %v", v.Directive, v.Refusal)
	}
}

func TestTokenScope(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	token := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"})).Token
	other := call("db_delete_row", map[string]any{"id": "2"})
	other.Token = token
	if v := g.Check(ctx, other); v.Refusal == nil || v.Refusal.Kind != refusal.TokenScope {
		t.Errorf("other arguments: %v", v.Refusal)
	}
	wrongOp := call("db_get_row", map[string]any{"id": "1"})
	wrongOp.Token = token
	if v := g.Check(ctx, wrongOp); v.Refusal == nil || v.Refusal.Kind != refusal.TokenScope {
		t.Errorf("other operation: %v", v.Refusal)
	}
	g.Policy.Principal = "someone-else"
	if _, fail := g.ConfirmOperation(ctx, "s", token); fail == nil || fail.Kind != refusal.TokenScope {
		t.Errorf("another principal: %v", fail)
	}
	g.Policy.Principal = "unit"
	g.Policy.Version = "changed"
	same := call("db_delete_row", map[string]any{"id": "1"})
	same.Token = token
	if v := g.Check(ctx, same); v.Refusal == nil || v.Refusal.Kind != refusal.TokenScope {
		t.Errorf("changed policy: %v", v.Refusal)
	}
	clock := time.Now().Add(time.Hour)
	g.Now = func() time.Time { return clock }
	if _, fail := g.ConfirmOperation(ctx, "s", token); fail == nil || fail.Kind != refusal.TokenExpired {
		t.Errorf("expired: %v", fail)
	}
}

func TestStepLimitAndFailureCheckIns(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	get := call("db_get_row", map[string]any{"id": "1"})
	for i := 0; i < 3; i++ {
		if !g.Check(ctx, get).Proceed {
			t.Fatalf("step %d refused", i+1)
		}
	}
	v := g.Check(ctx, get)
	if v.Proceed || v.Directive.Stage != evaluator.StageStepLimit {
		t.Fatalf("step 4: %+v", v.Directive)
	}
	h.say(verify.Allow)
	if !g.Check(ctx, get).Proceed || stepsOf(g) != 1 {
		t.Fatalf("after the check-in the count restarts: steps=%d", stepsOf(g))
	}
	e, _ := g.ExecuteAgent(ctx, "s", "agent")
	d, err := g.RecordStep(ctx, Report{Session: "s", ElementName: "agent", NextActionHint: "db.get_row", Outcome: "failure", Category: policy.Read})
	if err != nil || d.Continue {
		t.Fatalf("failure pause: %+v %v", d, err)
	}
	if len(d.Notifications) != 1 || d.Notifications[0].Type != "autonomy_pause" || d.Confirmation == nil {
		t.Errorf("notifications: %+v", d.Notifications)
	}
	if d, _ := g.RecordStep(ctx, Report{Session: "s", ExecutionID: e.ID, NextActionHint: "db.get_row", Category: policy.Read}); d.Continue {
		t.Error("the failure pause must hold until a human confirms")
	}
	// This step is also past the limit: two check-ins, one answer each.
	h.say(verify.Allow, verify.Allow)
	if d, err := g.RecordStep(ctx, Report{Session: "s", ExecutionID: e.ID, NextActionHint: "db.get_row", Category: policy.Read}); err != nil || !d.Continue {
		t.Errorf("after the human: %+v %v", d, err)
	}
}

func TestBlockBroadcastsAndVerifyLifts(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	a, _ := g.ExecuteAgent(ctx, "s1", "a")
	b, _ := g.ExecuteAgent(ctx, "s2", "b")
	v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked || v.VerificationID == "" {
		t.Fatalf("block: %+v", v)
	}
	if len(h.shown) != 1 || h.shown[0].Code == "" || h.shown[0].Challenge != v.VerificationID {
		t.Fatalf("the code must go to the human: %+v", h.shown)
	}
	code := h.shown[0].Code
	for _, id := range []string{a.ID, b.ID} {
		d, _ := g.RecordStep(ctx, Report{ExecutionID: id, NextActionHint: "anything"})
		if !d.Stopped || len(d.Notifications) != 1 || d.Notifications[0].Type != "danger_zone" ||
			d.Notifications[0].Metadata["verificationId"] != v.VerificationID {
			t.Errorf("%s: %+v", id, d)
		}
	}
	if _, err := g.ExecuteAgent(ctx, "s3", "new"); err == nil || err.Kind != refusal.Blocked {
		t.Error("a new execution escaped the block")
	}
	if _, err := g.VerifyChallenge(ctx, "s", v.VerificationID, "wrong"); err == nil || err.Kind != refusal.VerifyFailed ||
		strings.Contains(fmt.Sprint(*err), code) {
		t.Errorf("wrong code: %v", err)
	}
	if res, err := g.VerifyChallenge(ctx, "s", v.VerificationID, strings.ToLower(code)); err != nil || !res.Unblocked {
		t.Fatalf("right code: %v", err)
	}
	if !g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Error("still blocked after verification")
	}
}

func TestChannelFailureFailsClosed(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{err: verify.ErrNoDisplay}
	g := newGuard(t, testPolicy, h)
	v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "1"}))
	if v.Proceed || !strings.Contains(strings.Join(v.Directive.Factors, " "), "no graphical display") {
		t.Fatalf("fail closed with a reason: %+v", v.Directive)
	}
	g.Channel = nil
	if v := g.Check(ctx, call("db_delete_row", map[string]any{"id": "2"})); v.Proceed {
		t.Fatal("no channel must approve nothing")
	}
}

// FuzzConfirmOperation feeds arbitrary tokens to confirm_operation: it
// must never panic and never approve anything without a human.
func FuzzConfirmOperation(f *testing.F) {
	for _, s := range []string{"", "conf_", "conf_00000000000000000000000000000000", "conf_zz", "quota_continue_x", "conf_" + strings.Repeat("a", 100)} {
		f.Add(s)
	}
	h := &fakeHuman{}
	g := newGuard(f, testPolicy, h)
	issued := g.Check(context.Background(), call("db_delete_row", map[string]any{"id": "1"})).Token
	f.Add(issued)
	f.Fuzz(func(t *testing.T, token string) {
		res, fail := g.ConfirmOperation(context.Background(), "s", token)
		if res != nil {
			t.Fatalf("approved without a human: %q", token)
		}
		if fail == nil {
			t.Fatalf("no structured failure for %q", token)
		}
	})
}

// BenchmarkCheck compares the plain allowed path with a call that needs a
// confirmation the human grants at once (the channel answers inline).
func BenchmarkCheck(b *testing.B) {
	ctx := context.Background()
	b.Run("allowed", func(b *testing.B) {
		g := newGuard(b, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000000000", 1), &fakeHuman{})
		a := call("db_get_row", map[string]any{"id": "1"})
		b.ReportAllocs()
		for b.Loop() {
			if !g.Check(ctx, a).Proceed {
				b.Fatal("refused")
			}
		}
	})
	b.Run("confirmed_then_allowed", func(b *testing.B) {
		h := &alwaysAllow{}
		g := newGuard(b, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000000000", 1), h)
		a := call("db_delete_row", map[string]any{"id": "1"})
		b.ReportAllocs()
		for b.Loop() {
			if !g.Check(ctx, a).Proceed {
				b.Fatal("refused")
			}
		}
	})
}

// BenchmarkCheckBesideCommits is an allowed call while other calls of
// the same process commit state (a confirmed call: the human's answer and
// the used approval, each an fsync'd transaction) in a loop beside it:
// what one call pays for another's commit. Allocations count both.
func BenchmarkCheckBesideCommits(b *testing.B) {
	ctx := context.Background()
	g := newGuard(b, strings.Replace(testPolicy, "max_autonomous_steps = 3", "max_autonomous_steps = 1000000000", 1), &alwaysAllow{})
	stop := make(chan struct{})
	done := make(chan struct{})
	var confirmed atomic.Int64
	go func() {
		defer close(done)
		del := call("db_delete_row", map[string]any{"id": "1"})
		for {
			select {
			case <-stop:
				return
			default:
				if g.Check(ctx, del).Proceed {
					confirmed.Add(1)
				}
			}
		}
	}()
	a := call("db_get_row", map[string]any{"id": "1"})
	b.ReportAllocs()
	for b.Loop() {
		if !g.Check(ctx, a).Proceed {
			b.Fatal("refused")
		}
	}
	b.StopTimer()
	close(stop)
	<-done
	// How much the committing calls got done meanwhile: a guard that
	// made them wait would look faster per allowed call.
	b.ReportMetric(float64(confirmed.Load())/float64(b.N), "confirmed/op")
}

type alwaysAllow struct{}

func (alwaysAllow) Name() string { return "allow" }
func (alwaysAllow) Ask(context.Context, verify.Request) (verify.Answer, error) {
	return verify.Allow, nil
}
func (alwaysAllow) Show(context.Context, verify.Request) error { return nil }

// TestTwoLoopsShareTheStore: two loops over one state directory, as two
// aqlguard processes are. A block set by one holds in the other, reaches
// its running executions once as danger_zone, and a code entered in the
// other lifts it for both. A block set meanwhile wins over an allow.
func TestTwoLoopsShareTheStore(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	one := newGuard(t, testPolicy, h)
	two := newGuard(t, testPolicy, h)
	onStoreOf(t, two, one, store.Options{})
	e, _ := two.ExecuteAgent(ctx, "s2", "b")
	v := one.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("block: %+v", v)
	}
	d, err2 := two.RecordStep(ctx, Report{ExecutionID: e.ID, NextActionHint: "anything"})
	if err2 != nil || !d.Stopped || len(d.Notifications) != 1 || d.Notifications[0].Type != "danger_zone" {
		t.Fatalf("the other loop: %+v %v", d, err2)
	}
	if d, _ := two.RecordStep(ctx, Report{ExecutionID: e.ID, NextActionHint: "anything"}); len(d.Notifications) != 0 {
		t.Errorf("danger_zone delivered twice: %+v", d.Notifications)
	}
	if w := two.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); w.VerificationID != v.VerificationID || w.Proceed {
		t.Errorf("the other loop names %q, want %q", w.VerificationID, v.VerificationID)
	}
	if res, err := two.VerifyChallenge(ctx, "s2", v.VerificationID, h.shown[0].Code); err != nil || !res.Unblocked {
		t.Fatalf("verify in the other loop: %v", err)
	}
	if !one.Check(ctx, call("db_get_row", map[string]any{"id": "1"})).Proceed {
		t.Error("the blocking loop must see the unblock")
	}

	// A block the other loop sets refuses this loop's very next call
	// (decided in its commit, on the state as it is).
	two.Check(ctx, call("db_drop_database", map[string]any{"name": "again"}))
	got := one.Check(ctx, call("db_get_row", map[string]any{"id": "2"}))
	if got.Proceed || got.Refusal == nil || got.Refusal.Kind != refusal.Blocked {
		t.Errorf("an allow after a block: %+v", got)
	}
}

// storeOf is the bbolt store behind g, for tests that read or write it
// as another process would.
func storeOf(g *Guard) *store.Store { return g.State.(*store.Store) }
