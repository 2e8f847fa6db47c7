package ruling

import (
	"reflect"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// TestDecide walks every ruling and the order in which decide looks at
// things: block, verify pause, the evaluator, standing approvals, an
// approval of the exact binding (the explicit token first), a recent
// denial of this very call, then a question (joined or new).
func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	call := Call{Session: "s1", Operation: "fs_write_file", Server: "fs", Tool: "write_file", Digest: "digest of {\"path\":\"/x\"}",
		Step: evaluator.Step{Arguments: map[string]any{"path": "/x"}}}
	report := Call{Session: "s1", Operation: "record_execution_step", Reported: true, Digest: "digest of the hint",
		Step: evaluator.Step{ActionHint: "rm -rf /tmp/x"}}
	confirm := evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StagePattern, Reason: "asks"}
	own := BindingFor(call, confirm)
	conf := func(status string, mod func(*store.Confirmation)) *store.Confirmation {
		c := &store.Confirmation{Token: "conf_" + status, Kind: BindAction, Principal: "agent", Server: "fs", Operation: "fs_write_file",
			Digest: own.Digest, PolicyVersion: "v1", Session: "s1", Status: status, ExpiresAt: now.Add(time.Minute),
			DoneAt: now.Add(-time.Second)}
		if mod != nil {
			mod(c)
		}
		return c
	}
	appr := func(mod func(*store.Approval)) store.Approval {
		a := store.Approval{ID: "appr_1", Principal: "agent", Session: "s1", Server: "fs", Tool: "write_file",
			PolicyVersion: "v1", ExpiresAt: now.Add(time.Minute)}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	block := &store.Block{Principal: "agent", VerificationID: "ver_1", ChallengeExpiresAt: now.Add(time.Minute)}
	expiredBlock := &store.Block{Principal: "agent", VerificationID: "ver_0", ChallengeExpiresAt: now}
	base := func() Facts {
		return Facts{Now: now, Principal: "agent", Version: "v1", Call: call, Steps: 1, SessionApprovals: true,
			Human: &Human{}, Execution: &store.Execution{ID: "exec_1", Status: ExecutionRunning}}
	}
	tests := []struct {
		name      string
		facts     func(f *Facts)
		directive evaluator.Directive
		want      Kind
		// evaluated says the evaluator must be asked (once) or not at all.
		evaluated bool
		check     func(t *testing.T, r Ruling)
	}{
		{name: "a block refuses before the evaluator", facts: func(f *Facts) { f.Block = block },
			directive: evaluator.Directive{Continue: true}, want: Blocked,
			check: func(t *testing.T, r Ruling) {
				if r.Block != block || r.Reissue {
					t.Errorf("block %v reissue %v", r.Block, r.Reissue)
				}
			}},
		{name: "a block whose code expired gets a fresh one", facts: func(f *Facts) { f.Block = expiredBlock },
			want: Blocked, check: func(t *testing.T, r Ruling) {
				if !r.Reissue {
					t.Error("no reissue")
				}
			}},
		{name: "a pending verify pause refuses before the evaluator",
			facts:     func(f *Facts) { f.Pause = &Pause{ID: "ver_2", ExpiresAt: now.Add(time.Second)} },
			directive: evaluator.Directive{Continue: true}, want: Paused},
		{name: "a lapsed verify pause ends and the action is judged",
			facts:     func(f *Facts) { f.Pause = &Pause{ID: "ver_2", ExpiresAt: now} },
			directive: evaluator.Directive{Continue: true}, want: Allow, evaluated: true,
			check: func(t *testing.T, r Ruling) {
				if !r.ClearPause {
					t.Error("the pause stays")
				}
			}},
		{name: "the evaluator lets it run", directive: evaluator.Directive{Continue: true, Decision: evaluator.Allow},
			want: Allow, evaluated: true},
		{name: "a deny pattern blocks", directive: evaluator.Directive{Decision: evaluator.Block}, want: HardBlock, evaluated: true},
		{name: "a refuse pattern refuses the action alone", directive: evaluator.Directive{Decision: evaluator.Refuse}, want: Refused, evaluated: true},
		{name: "the verify tier pauses", directive: evaluator.Directive{Decision: evaluator.NeedsVerify}, want: VerifyPause, evaluated: true},
		{name: "a question needs what humans said", facts: func(f *Facts) { f.Human = nil },
			directive: confirm, want: NeedHuman, evaluated: true,
			check: func(t *testing.T, r Ruling) {
				if r.Binding != own {
					t.Errorf("binding %+v, want %+v", r.Binding, own)
				}
			}},
		{name: "a new question", directive: confirm, want: Ask, evaluated: true,
			check: func(t *testing.T, r Ruling) {
				if r.Confirmation != nil {
					t.Errorf("joined %s", r.Confirmation.Token)
				}
			}},
		{name: "the step limit asks for a check-in",
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      Ask, evaluated: true, check: wantBinding(Binding{Kind: BindSteps, Operation: "check-in: step limit"})},
		{name: "a reported failure asks for a check-in",
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageOutcome},
			want:      Ask, evaluated: true, check: wantBinding(Binding{Kind: BindFailure, Operation: "check-in: reported failure"})},
		{name: "a standing approval stands for the human",
			facts:     func(f *Facts) { f.Human.Approvals = []store.Approval{appr(nil)} },
			directive: confirm, want: Standing, evaluated: true},
		{name: "not when the decision rests on the arguments",
			facts:     func(f *Facts) { f.Human.Approvals = []store.Approval{appr(nil)} },
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StagePattern, ArgumentBound: true},
			want:      Ask, evaluated: true},
		{name: "not in a session shared by clients that hold no secret (2026-07-28 without sessions)",
			facts: func(f *Facts) {
				f.Human.Approvals = []store.Approval{appr(nil)}
				f.Call.SharedSession = true
			},
			directive: confirm, want: Ask, evaluated: true},
		{name: "not when session approvals are off",
			facts:     func(f *Facts) { f.Human.Approvals = []store.Approval{appr(nil)}; f.SessionApprovals = false },
			directive: confirm, want: Ask, evaluated: true},
		{name: "not another session's",
			facts: func(f *Facts) {
				f.Human.Approvals = []store.Approval{appr(func(a *store.Approval) { a.Session = "s2" })}
			},
			directive: confirm, want: Ask, evaluated: true},
		{name: "not another tool's",
			facts: func(f *Facts) {
				f.Human.Approvals = []store.Approval{appr(func(a *store.Approval) { a.Tool = "read_file" })}
			},
			directive: confirm, want: Ask, evaluated: true},
		{name: "not under another policy version",
			facts: func(f *Facts) {
				f.Human.Approvals = []store.Approval{appr(func(a *store.Approval) { a.PolicyVersion = "v0" })}
			},
			directive: confirm, want: Ask, evaluated: true},
		{name: "not an expired one",
			facts: func(f *Facts) {
				f.Human.Approvals = []store.Approval{appr(func(a *store.Approval) { a.ExpiresAt = now })}
			},
			directive: confirm, want: Ask, evaluated: true},
		{name: "not for a reported step",
			facts:     func(f *Facts) { f.Call = report; f.Human.Approvals = []store.Approval{appr(nil)} },
			directive: confirm, want: Ask, evaluated: true,
			check: wantBinding(Binding{Kind: BindAction, Operation: "record_execution_step", Digest: "digest of the hint"})},
		{name: "the explicit token's approval",
			facts:     func(f *Facts) { f.Explicit = conf(StatusApproved, nil) },
			directive: confirm, want: Approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "any approval of exactly this call",
			facts:     func(f *Facts) { f.Human.Open = []*store.Confirmation{conf(StatusApproved, nil)} },
			directive: confirm, want: Approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "another session's approval does not answer for this one",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "a check-in approved in another session lifts the principal's pause",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest, c.Session = BindSteps, "", "check-in: step limit", "", "s2"
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      Approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "an approval of other arguments approves nothing",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) { c.Digest = "other" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "an expired approval approves nothing",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) { c.ExpiresAt = now })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "another agent's approval approves nothing",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) { c.Principal = "other" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "an approval under another policy version approves nothing",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, func(c *store.Confirmation) { c.PolicyVersion = "v0" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "a used approval approves nothing",
			facts:     func(f *Facts) { f.Explicit = conf(StatusUsed, nil) },
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "a recent denial of this very call",
			facts:     func(f *Facts) { f.Human.Spent = []*store.Confirmation{conf(StatusDenied, nil)} },
			directive: confirm, want: Denied, evaluated: true, check: wantToken("conf_denied")},
		{name: "an approval wins over a denial",
			facts: func(f *Facts) {
				f.Human.Spent = []*store.Confirmation{conf(StatusDenied, nil)}
				f.Human.Open = []*store.Confirmation{conf(StatusApproved, nil)}
			},
			directive: confirm, want: Approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "another session's denial does not answer for this one",
			facts: func(f *Facts) {
				f.Human.Spent = []*store.Confirmation{conf(StatusDenied, func(c *store.Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "an expired denial asks again",
			facts: func(f *Facts) {
				f.Human.Spent = []*store.Confirmation{conf(StatusDenied, func(c *store.Confirmation) { c.ExpiresAt = now })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "a denied check-in is asked again",
			facts: func(f *Facts) {
				f.Human.Spent = []*store.Confirmation{conf(StatusDenied, func(c *store.Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest = BindSteps, "", "check-in: step limit", ""
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      Ask, evaluated: true, check: wantToken("")},
		{name: "the check's own denied check-in ends it",
			facts: func(f *Facts) {
				f.Human.Spent = []*store.Confirmation{conf(StatusDenied, func(c *store.Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest = BindSteps, "", "check-in: step limit", ""
				})}
				f.Asked = map[string]Answered{"conf_denied": {Answer: verify.Deny}}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      Denied, evaluated: true, check: wantToken("conf_denied")},
		{name: "the question the check waited on, still open, ends it",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusPending, nil)}
				f.Asked = map[string]Answered{"conf_pending": {Why: "confirmation: no channel"}}
			},
			directive: confirm, want: Unanswered, evaluated: true, check: func(t *testing.T, r Ruling) {
				if r.Confirmation == nil || r.Confirmation.Token != "conf_pending" || r.Why != "confirmation: no channel" {
					t.Errorf("unanswered %+v", r)
				}
			}},
		{name: "a reported step on a finished execution",
			facts: func(f *Facts) {
				f.Call = report
				f.Execution = &store.Execution{ID: "exec_1", Status: "completed"}
			},
			directive: evaluator.Directive{Continue: true}, want: Finished},
		{name: "a reported step on an execution gone from the state",
			facts:     func(f *Facts) { f.Call = report; f.Execution = nil },
			directive: evaluator.Directive{Continue: true}, want: Finished},
		{name: "a block before a finished execution",
			facts: func(f *Facts) {
				f.Call, f.Block = report, block
				f.Execution = &store.Execution{ID: "exec_1", Status: "completed"}
			},
			directive: evaluator.Directive{Continue: true}, want: Blocked},
		{name: "the caller's own pending token",
			facts:     func(f *Facts) { f.Explicit = conf(StatusPending, nil) },
			directive: confirm, want: Ask, evaluated: true, check: wantToken("conf_pending")},
		{name: "a pending question of this session is joined",
			facts:     func(f *Facts) { f.Human.Open = []*store.Confirmation{conf(StatusPending, nil)} },
			directive: confirm, want: Ask, evaluated: true, check: wantToken("conf_pending")},
		{name: "another session's question is not",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusPending, func(c *store.Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: Ask, evaluated: true, check: wantToken("")},
		{name: "a check-in question is the principal's, whichever session asks",
			facts: func(f *Facts) {
				f.Human.Open = []*store.Confirmation{conf(StatusPending, func(c *store.Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest, c.Session = BindSteps, "", "check-in: step limit", "", "s2"
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      Ask, evaluated: true, check: wantToken("conf_pending")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base()
			if tt.facts != nil {
				tt.facts(&f)
			}
			var asked []evaluator.Step
			evaluate := func(s evaluator.Step) evaluator.Directive { asked = append(asked, s); return tt.directive }
			r := Decide(f, evaluate)
			if r.Kind != tt.want {
				t.Fatalf("ruling %d, want %d (%+v)", r.Kind, tt.want, r)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.evaluated]; len(asked) != want {
				t.Errorf("evaluator asked %d times, want %d", len(asked), want)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			// Pure: the same facts, the same ruling.
			if again := Decide(f, evaluate); !reflect.DeepEqual(again, r) {
				t.Errorf("decided %+v, then %+v", r, again)
			}
		})
	}
}

func wantBinding(b Binding) func(*testing.T, Ruling) {
	return func(t *testing.T, r Ruling) {
		t.Helper()
		if r.Binding != b {
			t.Errorf("binding %+v, want %+v", r.Binding, b)
		}
	}
}

// wantToken checks the confirmation a ruling names ("" for none: a new
// question).
func wantToken(token string) func(*testing.T, Ruling) {
	return func(t *testing.T, r Ruling) {
		t.Helper()
		got := ""
		if r.Confirmation != nil {
			got = r.Confirmation.Token
		}
		if got != token {
			t.Errorf("confirmation %q, want %q", got, token)
		}
	}
}

// TestStepOf: what the evaluator is told about the principal's state.
func TestStepOf(t *testing.T) {
	call := Call{Session: "s1", Operation: "fs_write_file", Server: "fs", Tool: "write_file",
		Step: evaluator.Step{Session: "s1", Operation: "fs_write_file", Server: "fs", Tool: "write_file"}}
	report := Call{Session: "s1", Operation: "record_execution_step", Reported: true, Outcome: "failure",
		Step: evaluator.Step{Session: "s1", ActionHint: "next"}}
	tests := []struct {
		name         string
		c            Call
		failurePause bool
		outcome, op  string
	}{
		{"a call", call, false, "", "fs_write_file"},
		{"a call while a failure waits for a human", call, true, "failure", "fs_write_file"},
		{"a reported failure a human confirmed in this check", report, false, "", ""},
		{"a reported failure", report, true, "failure", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := StepOf(tt.c, "agent", 7, tt.failurePause)
			if s.Outcome != tt.outcome || s.Operation != tt.op || s.StepNumber != 7 || s.Principal != "agent" {
				t.Errorf("step %+v", s)
			}
		})
	}
}
