package guard

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
	call := Action{Session: "s1", Operation: "fs_write_file", Server: "fs", Tool: "write_file",
		Arguments: map[string]any{"path": "/x"}}
	report := Action{Session: "s1", Hint: "rm -rf /tmp/x", Execution: &Execution{Execution: store.Execution{ID: "exec_1"}}}
	confirm := evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StagePattern, Reason: "asks"}
	own := bindingFor(call, confirm)
	conf := func(status string, mod func(*Confirmation)) *Confirmation {
		c := &Confirmation{Token: "conf_" + status, Kind: kindAction, Principal: "agent", Server: "fs", Operation: "fs_write_file",
			Digest: own.digest, PolicyVersion: "v1", Session: "s1", Status: status, ExpiresAt: now.Add(time.Minute),
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
	base := func() facts {
		return facts{now: now, principal: "agent", version: "v1", action: call, steps: 1, sessionApprovals: true,
			human: &humanFacts{}, execution: &store.Execution{ID: "exec_1", Status: StatusRunning}}
	}
	tests := []struct {
		name      string
		facts     func(f *facts)
		directive evaluator.Directive
		want      rulingKind
		// evaluated says the evaluator must be asked (once) or not at all.
		evaluated bool
		check     func(t *testing.T, r ruling)
	}{
		{name: "a block refuses before the evaluator", facts: func(f *facts) { f.block = block },
			directive: evaluator.Directive{Continue: true}, want: blocked,
			check: func(t *testing.T, r ruling) {
				if r.block != block || r.reissue {
					t.Errorf("block %v reissue %v", r.block, r.reissue)
				}
			}},
		{name: "a block whose code expired gets a fresh one", facts: func(f *facts) { f.block = expiredBlock },
			want: blocked, check: func(t *testing.T, r ruling) {
				if !r.reissue {
					t.Error("no reissue")
				}
			}},
		{name: "a pending verify pause refuses before the evaluator",
			facts:     func(f *facts) { f.pause = &pause{ID: "ver_2", ExpiresAt: now.Add(time.Second)} },
			directive: evaluator.Directive{Continue: true}, want: paused},
		{name: "a lapsed verify pause ends and the action is judged",
			facts:     func(f *facts) { f.pause = &pause{ID: "ver_2", ExpiresAt: now} },
			directive: evaluator.Directive{Continue: true}, want: allow, evaluated: true,
			check: func(t *testing.T, r ruling) {
				if !r.clearPause {
					t.Error("the pause stays")
				}
			}},
		{name: "the evaluator lets it run", directive: evaluator.Directive{Continue: true, Decision: evaluator.Allow},
			want: allow, evaluated: true},
		{name: "a deny pattern blocks", directive: evaluator.Directive{Decision: evaluator.Block}, want: hardBlock, evaluated: true},
		{name: "a refuse pattern refuses the action alone", directive: evaluator.Directive{Decision: evaluator.Refuse}, want: refused, evaluated: true},
		{name: "the verify tier pauses", directive: evaluator.Directive{Decision: evaluator.NeedsVerify}, want: verifyPause, evaluated: true},
		{name: "a question needs what humans said", facts: func(f *facts) { f.human = nil },
			directive: confirm, want: needHuman, evaluated: true,
			check: func(t *testing.T, r ruling) {
				if r.binding != own {
					t.Errorf("binding %+v, want %+v", r.binding, own)
				}
			}},
		{name: "a new question", directive: confirm, want: ask, evaluated: true,
			check: func(t *testing.T, r ruling) {
				if r.confirmation != nil {
					t.Errorf("joined %s", r.confirmation.Token)
				}
			}},
		{name: "the step limit asks for a check-in",
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      ask, evaluated: true, check: wantBinding(binding{kind: kindSteps, operation: "check-in: step limit"})},
		{name: "a reported failure asks for a check-in",
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageOutcome},
			want:      ask, evaluated: true, check: wantBinding(binding{kind: kindFailure, operation: "check-in: reported failure"})},
		{name: "a standing approval stands for the human",
			facts:     func(f *facts) { f.human.approvals = []store.Approval{appr(nil)} },
			directive: confirm, want: standing, evaluated: true},
		{name: "not when the decision rests on the arguments",
			facts:     func(f *facts) { f.human.approvals = []store.Approval{appr(nil)} },
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StagePattern, ArgumentBound: true},
			want:      ask, evaluated: true},
		{name: "not in a session shared by clients that hold no secret (2026-07-28 without sessions)",
			facts: func(f *facts) {
				f.human.approvals = []store.Approval{appr(nil)}
				f.action.SharedSession = true
			},
			directive: confirm, want: ask, evaluated: true},
		{name: "not when session approvals are off",
			facts:     func(f *facts) { f.human.approvals = []store.Approval{appr(nil)}; f.sessionApprovals = false },
			directive: confirm, want: ask, evaluated: true},
		{name: "not another session's",
			facts: func(f *facts) {
				f.human.approvals = []store.Approval{appr(func(a *store.Approval) { a.Session = "s2" })}
			},
			directive: confirm, want: ask, evaluated: true},
		{name: "not another tool's",
			facts: func(f *facts) {
				f.human.approvals = []store.Approval{appr(func(a *store.Approval) { a.Tool = "read_file" })}
			},
			directive: confirm, want: ask, evaluated: true},
		{name: "not under another policy version",
			facts: func(f *facts) {
				f.human.approvals = []store.Approval{appr(func(a *store.Approval) { a.PolicyVersion = "v0" })}
			},
			directive: confirm, want: ask, evaluated: true},
		{name: "not an expired one",
			facts: func(f *facts) {
				f.human.approvals = []store.Approval{appr(func(a *store.Approval) { a.ExpiresAt = now })}
			},
			directive: confirm, want: ask, evaluated: true},
		{name: "not for a reported step",
			facts:     func(f *facts) { f.action = report; f.human.approvals = []store.Approval{appr(nil)} },
			directive: confirm, want: ask, evaluated: true,
			check: wantBinding(binding{kind: kindAction, digest: Digest(map[string]any{"next_action_hint": report.Hint})})},
		{name: "the explicit token's approval",
			facts:     func(f *facts) { f.explicit = conf(statusApproved, nil) },
			directive: confirm, want: approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "any approval of exactly this call",
			facts:     func(f *facts) { f.human.open = []*Confirmation{conf(statusApproved, nil)} },
			directive: confirm, want: approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "another session's approval does not answer for this one",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "a check-in approved in another session lifts the principal's pause",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest, c.Session = kindSteps, "", "check-in: step limit", "", "s2"
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "an approval of other arguments approves nothing",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) { c.Digest = "other" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "an expired approval approves nothing",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) { c.ExpiresAt = now })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "another agent's approval approves nothing",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) { c.Principal = "other" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "an approval under another policy version approves nothing",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusApproved, func(c *Confirmation) { c.PolicyVersion = "v0" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "a used approval approves nothing",
			facts:     func(f *facts) { f.explicit = conf(statusUsed, nil) },
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "a recent denial of this very call",
			facts:     func(f *facts) { f.human.spent = []*Confirmation{conf(statusDenied, nil)} },
			directive: confirm, want: denied, evaluated: true, check: wantToken("conf_denied")},
		{name: "an approval wins over a denial",
			facts: func(f *facts) {
				f.human.spent = []*Confirmation{conf(statusDenied, nil)}
				f.human.open = []*Confirmation{conf(statusApproved, nil)}
			},
			directive: confirm, want: approved, evaluated: true, check: wantToken("conf_approved")},
		{name: "another session's denial does not answer for this one",
			facts: func(f *facts) {
				f.human.spent = []*Confirmation{conf(statusDenied, func(c *Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "an expired denial asks again",
			facts: func(f *facts) {
				f.human.spent = []*Confirmation{conf(statusDenied, func(c *Confirmation) { c.ExpiresAt = now })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "a denied check-in is asked again",
			facts: func(f *facts) {
				f.human.spent = []*Confirmation{conf(statusDenied, func(c *Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest = kindSteps, "", "check-in: step limit", ""
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      ask, evaluated: true, check: wantToken("")},
		{name: "the check's own denied check-in ends it",
			facts: func(f *facts) {
				f.human.spent = []*Confirmation{conf(statusDenied, func(c *Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest = kindSteps, "", "check-in: step limit", ""
				})}
				f.asked = map[string]answered{"conf_denied": {answer: verify.Deny}}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      denied, evaluated: true, check: wantToken("conf_denied")},
		{name: "the question the check waited on, still open, ends it",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusPending, nil)}
				f.asked = map[string]answered{"conf_pending": {why: "confirmation: no channel"}}
			},
			directive: confirm, want: unanswered, evaluated: true, check: func(t *testing.T, r ruling) {
				if r.confirmation == nil || r.confirmation.Token != "conf_pending" || r.why != "confirmation: no channel" {
					t.Errorf("unanswered %+v", r)
				}
			}},
		{name: "a reported step on a finished execution",
			facts: func(f *facts) {
				f.action = report
				f.execution = &store.Execution{ID: "exec_1", Status: StatusCompleted}
			},
			directive: evaluator.Directive{Continue: true}, want: finished},
		{name: "a reported step on an execution gone from the state",
			facts:     func(f *facts) { f.action = report; f.execution = nil },
			directive: evaluator.Directive{Continue: true}, want: finished},
		{name: "a block before a finished execution",
			facts: func(f *facts) {
				f.action, f.block = report, block
				f.execution = &store.Execution{ID: "exec_1", Status: StatusCompleted}
			},
			directive: evaluator.Directive{Continue: true}, want: blocked},
		{name: "the caller's own pending token",
			facts:     func(f *facts) { f.explicit = conf(statusPending, nil) },
			directive: confirm, want: ask, evaluated: true, check: wantToken("conf_pending")},
		{name: "a pending question of this session is joined",
			facts:     func(f *facts) { f.human.open = []*Confirmation{conf(statusPending, nil)} },
			directive: confirm, want: ask, evaluated: true, check: wantToken("conf_pending")},
		{name: "another session's question is not",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusPending, func(c *Confirmation) { c.Session = "s2" })}
			},
			directive: confirm, want: ask, evaluated: true, check: wantToken("")},
		{name: "a check-in question is the principal's, whichever session asks",
			facts: func(f *facts) {
				f.human.open = []*Confirmation{conf(statusPending, func(c *Confirmation) {
					c.Kind, c.Server, c.Operation, c.Digest, c.Session = kindSteps, "", "check-in: step limit", "", "s2"
				})}
			},
			directive: evaluator.Directive{Decision: evaluator.NeedsConfirm, Stage: evaluator.StageStepLimit},
			want:      ask, evaluated: true, check: wantToken("conf_pending")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := base()
			if tt.facts != nil {
				tt.facts(&f)
			}
			var asked []evaluator.Step
			evaluate := func(s evaluator.Step) evaluator.Directive { asked = append(asked, s); return tt.directive }
			r := decide(f, evaluate)
			if r.kind != tt.want {
				t.Fatalf("ruling %d, want %d (%+v)", r.kind, tt.want, r)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.evaluated]; len(asked) != want {
				t.Errorf("evaluator asked %d times, want %d", len(asked), want)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
			// Pure: the same facts, the same ruling.
			if again := decide(f, evaluate); !reflect.DeepEqual(again, r) {
				t.Errorf("decided %+v, then %+v", r, again)
			}
		})
	}
}

func wantBinding(b binding) func(*testing.T, ruling) {
	return func(t *testing.T, r ruling) {
		t.Helper()
		if r.binding != b {
			t.Errorf("binding %+v, want %+v", r.binding, b)
		}
	}
}

// wantToken checks the confirmation a ruling names ("" for none: a new
// question).
func wantToken(token string) func(*testing.T, ruling) {
	return func(t *testing.T, r ruling) {
		t.Helper()
		got := ""
		if r.confirmation != nil {
			got = r.confirmation.Token
		}
		if got != token {
			t.Errorf("confirmation %q, want %q", got, token)
		}
	}
}

// TestStepFor: what the evaluator is told about the principal's state.
func TestStepFor(t *testing.T) {
	call := Action{Session: "s1", Operation: "fs_write_file", Server: "fs", Tool: "write_file", Outcome: ""}
	report := Action{Session: "s1", Operation: "record_execution_step", Hint: "next", Outcome: "failure", Execution: &Execution{Execution: store.Execution{ID: "e"}}}
	tests := []struct {
		name         string
		a            Action
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
			s := stepFor(tt.a, "agent", 7, tt.failurePause)
			if s.Outcome != tt.outcome || s.Operation != tt.op || s.StepNumber != 7 || s.Principal != "agent" {
				t.Errorf("step %+v", s)
			}
		})
	}
}
