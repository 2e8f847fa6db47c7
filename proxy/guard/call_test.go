package guard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/watch"
	"github.com/aqlguard/aqlguard/store/statetest"
)

// recordingCaller stands in for the downstream pool and remembers calls.
type recordingCaller struct{ calls []string }

// forward is the Request.Forward of a call of tool on server.
func (r *recordingCaller) forward(server, tool string) func(context.Context) (json.RawMessage, error) {
	return func(context.Context) (json.RawMessage, error) {
		r.calls = append(r.calls, server+"."+tool)
		return json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`), nil
	}
}

func TestGuardForwardsOnlyWhatIsAllowed(t *testing.T) {
	tests := []struct {
		decision evaluator.Decision
		cont     bool
		code     refusal.Kind
	}{
		{evaluator.Allow, true, 0},
		{evaluator.Block, false, refusal.Blocked},
		{evaluator.NeedsVerify, false, refusal.Paused},
		{evaluator.NeedsConfirm, false, refusal.Pending},
	}
	for _, tt := range tests {
		t.Run(string(tt.decision), func(t *testing.T) {
			rec := &recordingCaller{}
			var seen []evaluator.Step
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			st := statetest.Open(t)
			g := &Guard{
				Policy: &policy.Policy{Principal: "human-set", MaxSteps: 100}, Log: log, State: st,
				InlineWait: time.Millisecond, ConfirmTTL: time.Minute, ChallengeTTL: time.Minute,
				Evaluate: func(_ *policy.Policy, s evaluator.Step) evaluator.Directive {
					seen = append(seen, s)
					return evaluator.Directive{Continue: tt.cont, Decision: tt.decision, Reason: "r", Enforced: true}
				},
			}
			for i := 0; i < 2; i++ {
				out := g.Call(context.Background(), Request{Method: watch.MethodToolsCall, Action: Action{Session: "s-1", Operation: "fs_write_file",
					Server: "fs", Tool: "write_file", Category: policy.Update, Arguments: map[string]any{"path": "/x"}},
					Forward: rec.forward("fs", "write_file")})
				if tt.code == 0 && (out.Refusal != nil || out.Raw == nil) {
					t.Fatalf("allowed call: %+v", out)
				}
				if tt.code != 0 && (out.Refusal == nil || out.Refusal.Kind != tt.code) {
					t.Fatalf("refusal: %+v, want %s", out.Refusal, tt.code)
				}
			}
			if want := map[bool]int{true: 2, false: 0}[tt.cont]; len(rec.calls) != want {
				t.Errorf("forwarded %d calls, want %d", len(rec.calls), want)
			}
			if seen[0].StepNumber != 1 || seen[0].Principal != "human-set" {
				t.Errorf("steps: %+v", seen)
			}
			// A block or a verify pause holds: the second call is refused
			// before the evaluator is asked again.
			if want := map[bool]int{true: 1, false: 2}[tt.decision == evaluator.Block || tt.decision == evaluator.NeedsVerify]; len(seen) != want {
				t.Errorf("evaluator asked %d times, want %d", len(seen), want)
			}
			// A proxied call is judged on its names and arguments, never
			// on a rendering of them.
			if s := seen[0]; s.ActionHint != "" || s.Server != "fs" || s.Tool != "write_file" || s.Arguments["path"] != "/x" {
				t.Errorf("step %+v", s)
			}
		})
	}
}

// lockingCaller answers a call after taking the state's lock, as another
// process stuck in a transaction would: the call ran, and its outcome
// cannot be recorded.
type lockingCaller struct {
	t       *testing.T
	dir     string
	release func()
}

func (c *lockingCaller) forward(context.Context) (json.RawMessage, error) {
	c.release = holdLock(c.t, c.dir, syscall.LOCK_SH)
	return json.RawMessage(`{"contents":[{"uri":"file:///x","text":"secret"}]}`), nil
}

// TestUnrecordedOutcomeIsWithheld: a call, a resource read or a prompt
// get (one Call) whose outcome cannot be audited is not handed on: the
// model gets the fail-closed refusal, never the server's answer.
func TestUnrecordedOutcomeIsWithheld(t *testing.T) {
	for _, r := range []Request{
		{Method: watch.MethodToolsCall, Action: call("db_get_row", map[string]any{"id": "1"})},
		{Method: watch.MethodResourcesRead, Action: Action{Session: "s", Server: "db"}, Name: "file:///x"},
		{Method: watch.MethodPromptsGet, Action: Action{Session: "s", Server: "db", Arguments: map[string]any{"a": "b"}}, Name: "p"},
	} {
		g, dir := lockedGuard(t, &fakeHuman{})
		lc := &lockingCaller{t: t, dir: dir}
		r.Forward = lc.forward
		out := g.Call(context.Background(), r)
		if lc.release == nil {
			t.Fatalf("%s: not forwarded: %+v", r.Method, out.Refusal)
		}
		lc.release()
		if out.Raw != nil || out.Refusal == nil || out.Refusal.Kind != refusal.Failed || out.Refusal.Factors["executed"] != true {
			t.Errorf("%s: the unrecorded answer was handed on: %+v %s", r.Method, out.Refusal, out.Raw)
		}
	}
}
