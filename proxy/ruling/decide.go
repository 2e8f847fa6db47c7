// Package ruling is what the guard decides, as pure functions: each
// takes what a State.Commit read from its view (and the principal's
// memory) and what the request asks, and returns the ruling, with the
// changes that carry it out where it writes any. A ruling reads no
// clock, store, lock or random source and changes nothing, so it may
// run again when a commit is retried, and it is tested exhaustively by
// tables (decide_test.go, commits_test.go). The guard's commits only
// read, call a ruling and write (proxy/guard, docs/state.md).
//
// Decide is the ruling of a call or a reported step (one round of the
// guard's check); the others rule on the loop's own operations: a
// human's answer, a check-in, a verification code, executions, parking,
// a block's code.
package ruling

import (
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// What a confirmation binds: one action, or a human check-in that lifts
// a pause of the principal (step limit, reported failure).
const (
	BindAction  = "action"
	BindSteps   = "step_limit"
	BindFailure = "previous_outcome"
)

// Confirmation statuses, as the state keeps them.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	StatusUsed     = "used"
)

// Execution statuses a ruling reads (spec 8.4.1).
const (
	ExecutionPending = "pending"
	ExecutionRunning = "running"
)

// Call is what a ruling knows of the action at hand: a proxied call, or
// a step reported by record_execution_step.
type Call struct {
	Session, Server, Tool, Operation string
	// Digest binds the arguments (a reported step's: its hint).
	Digest string
	// Reported says it is a reported step.
	Reported bool
	// SharedSession says its session has no client of its own to bind a
	// session-wide approval to.
	SharedSession bool
	// Outcome is the previous step's outcome, for reported steps.
	Outcome string
	// Step is what the evaluator reads of it; Decide fills in the
	// principal, the step number and the outcome (StepOf).
	Step evaluator.Step
}

// Pause is a verify-tier pause of the principal (in memory only: spec
// 8.8.3).
type Pause struct {
	ID        string
	ExpiresAt time.Time
}

// Facts are everything one round of a check decides on, read in the
// commit from its view and the memory.
type Facts struct {
	Now                time.Time
	Principal, Version string
	Call               Call
	// Block is the principal's hard block (nil: none); Pause the verify
	// pause of this process (nil: none).
	Block *store.Block
	Pause *Pause
	// Steps is this round's step number; FailurePause says a reported
	// failure waits for a human's check-in.
	Steps        int
	FailurePause bool
	// Explicit is the confirmation whose token came with the action,
	// already validated (nil: none).
	Explicit *store.Confirmation
	// Execution is the store's copy of a reported step's execution (nil:
	// gone).
	Execution *store.Execution
	// Asked are the questions the check waited on, with their answers.
	Asked map[string]Answered
	// SessionApprovals says a human may answer "allow for this session".
	SessionApprovals bool
	// Human is what only a round that needs a human reads (standing
	// approvals, confirmations from the store); nil until Decide asks
	// for it with NeedHuman.
	Human *Human
}

// Human are the answers humans gave that a round may rely on.
type Human struct {
	// Approvals are the standing "allow for this session" approvals.
	Approvals []store.Approval
	// Open are the principal's pending and approved confirmations in the
	// store (of any process); Spent its used and denied ones.
	Open, Spent []*store.Confirmation
}

// Drop forgets an open confirmation the commit has just used.
func (h *Human) Drop(token string) {
	if h == nil {
		return
	}
	open := h.Open[:0:0]
	for _, c := range h.Open {
		if c.Token != token {
			open = append(open, c)
		}
	}
	h.Open = open
}

// Answered is what a check heard back from a question it waited on:
// the answer, and why none came.
type Answered struct {
	Answer verify.Answer
	Why    string
}

// Kind is what the guard does next with an action.
type Kind int

const (
	// Allow: the evaluator lets the action run.
	Allow Kind = iota
	// Blocked: the principal is hard-blocked (Ruling.Block); Reissue
	// says its code expired and a fresh one is to be shown.
	Blocked
	// Finished: the reported step's execution is no longer running
	// (Ruling.Execution: the store's copy, nil if gone).
	Finished
	// Paused: a verify pause is pending (Ruling.Pause).
	Paused
	// HardBlock: the action blocks the principal; a challenge is made.
	HardBlock
	// Refused: the policy refuses this action; the principal goes on.
	Refused
	// VerifyPause: the action pauses the principal until a code is entered.
	VerifyPause
	// NeedHuman: the evaluator asks for a human; Decide needs
	// Facts.Human to say more.
	NeedHuman
	// Standing: a standing approval (Ruling.Approval) stands for the human.
	Standing
	// Approved: a human approved this binding (Ruling.Confirmation); a
	// check-in's approval lifts its pause and the action is judged again.
	Approved
	// Denied: a human denied this very call recently (Ruling.Confirmation).
	Denied
	// Ask: put the question to the human — the open one in
	// Ruling.Confirmation, or a new one for Ruling.Binding when nil.
	Ask
	// Unanswered: the check waited on the open question
	// (Ruling.Confirmation) and no approval came; Ruling.Why says why,
	// when nobody could be asked.
	Unanswered
)

// Ruling is Decide's answer for one round.
type Ruling struct {
	Kind      Kind
	Directive evaluator.Directive
	// ClearPause says the verify pause lapsed: it ends, whatever follows.
	ClearPause   bool
	Block        *store.Block
	Reissue      bool
	Pause        *Pause
	Binding      Binding
	Approval     *store.Approval
	Confirmation *store.Confirmation
	Execution    *store.Execution
	Why          string
}

// Binding is what a confirmation approves.
type Binding struct {
	Kind, Server, Operation, Digest string
}

// Matches reports whether c approves binding b of principal under the
// policy version.
func Matches(c *store.Confirmation, b Binding, principal, version string) bool {
	return c.Kind == b.Kind && c.Principal == principal && c.Server == b.Server &&
		c.Operation == b.Operation && c.Digest == b.Digest && c.PolicyVersion == version
}

// Joinable reports whether c is a question still open for binding b that
// a call of session waits on instead of raising its own: a check-in is
// the principal's, a call's question its session's.
func Joinable(c *store.Confirmation, b Binding, principal, version, session string, now time.Time) bool {
	return c.Status == StatusPending && now.Before(c.ExpiresAt) && Matches(c, b, principal, version) &&
		(c.Kind != BindAction || c.Session == session)
}

// Decide is one round of a check: the hard block, the verify pause, the
// evaluator (a pure function of the policy and the step), and what the
// humans already said. It changes nothing; the caller carries the ruling
// out (writes, asks, shows) and, after a check-in, decides again.
func Decide(f Facts, evaluate func(evaluator.Step) evaluator.Directive) Ruling {
	var r Ruling
	if b := f.Block; b != nil {
		return Ruling{Kind: Blocked, Block: b, Reissue: !f.Now.Before(b.ChallengeExpiresAt)}
	}
	a := f.Call
	if a.Reported && (f.Execution == nil || f.Execution.Status != ExecutionRunning) {
		return Ruling{Kind: Finished, Execution: f.Execution}
	}
	if p := f.Pause; p != nil {
		if f.Now.Before(p.ExpiresAt) {
			return Ruling{Kind: Paused, Pause: p}
		}
		r.ClearPause = true
	}
	d := evaluate(StepOf(a, f.Principal, f.Steps, f.FailurePause))
	r.Directive = d
	switch {
	case d.Continue:
		r.Kind = Allow
		return r
	case d.Decision == evaluator.Block:
		r.Kind = HardBlock
		return r
	case d.Decision == evaluator.Refuse:
		r.Kind = Refused
		return r
	case d.Decision == evaluator.NeedsVerify:
		r.Kind = VerifyPause
		return r
	}
	r.Binding = BindingFor(a, d)
	if f.Human == nil {
		r.Kind = NeedHuman
		return r
	}
	h := f.Human
	holds := func(c *store.Confirmation, status string) bool {
		return c.Status == status && f.Now.Before(c.ExpiresAt) && Matches(c, r.Binding, f.Principal, f.Version)
	}
	// The answer to this check's own question first: it is what the
	// human was asked about, and it is used by this action.
	for _, c := range h.Open {
		if _, mine := f.Asked[c.Token]; mine && holds(c, StatusApproved) {
			r.Kind, r.Confirmation = Approved, c
			return r
		}
	}
	if r.Binding.Kind == BindAction && !a.Reported && !d.ArgumentBound && a.Session != "" && !a.SharedSession && f.SessionApprovals {
		for i := range h.Approvals {
			ap := &h.Approvals[i]
			if ap.Active(f.Now) && ap.Principal == f.Principal && ap.Session == a.Session &&
				ap.Server == a.Server && ap.Tool == a.Tool && ap.PolicyVersion == f.Version {
				r.Kind, r.Approval = Standing, ap
				return r
			}
		}
	}
	// The explicit token first; else any approval of exactly this
	// binding will do (a binding is exact, so two are interchangeable),
	// given in this call's session: the identical call repeated later
	// finds its answer, a call of another session (another chat) does
	// not inherit it.
	if c := f.Explicit; c != nil && holds(c, StatusApproved) {
		r.Kind, r.Confirmation = Approved, c
		return r
	}
	for _, c := range h.Open {
		if holds(c, StatusApproved) && (r.Binding.Kind != BindAction || c.Session == a.Session) {
			r.Kind, r.Confirmation = Approved, c
			return r
		}
	}
	// The human said no to this very call (or to this check's own
	// question): a retry does not put the question to them again until
	// that answer expires.
	for _, c := range h.Spent {
		_, mine := f.Asked[c.Token]
		if holds(c, StatusDenied) && (mine || r.Binding.Kind == BindAction && c.Session == a.Session) {
			r.Kind, r.Confirmation = Denied, c
			return r
		}
	}
	// The caller's own pending token, or a pending question for the same
	// binding (a retry finds the question still on the human's screen
	// instead of raising a second one), or a new question.
	// A question this check already waited on ends it.
	r.Kind = Ask
	if c := f.Explicit; c != nil && holds(c, StatusPending) {
		r.Confirmation = c
	}
	for _, c := range h.Open {
		if r.Confirmation == nil && Joinable(c, r.Binding, f.Principal, f.Version, a.Session, f.Now) {
			r.Confirmation = c
		}
	}
	if c := r.Confirmation; c != nil {
		if ans, ok := f.Asked[c.Token]; ok {
			r.Kind, r.Why = Unanswered, ans.Why
		}
	}
	return r
}

// StepOf is the evaluator's input for the call and the principal's
// state. A pause for a reported failure persists until a human confirms
// it, so later steps are evaluated as if the failure were just reported.
func StepOf(a Call, principal string, steps int, failurePause bool) evaluator.Step {
	st := a.Step
	st.Outcome = a.Outcome
	if failurePause {
		st.Outcome = "failure"
	} else if st.Outcome == "failure" {
		st.Outcome = "" // confirmed by a human in this very check
	}
	st.Principal, st.StepNumber = principal, steps
	return st
}

// BindingFor is what a human's answer about this action approves: a
// check-in of the principal, or exactly this action.
func BindingFor(a Call, d evaluator.Directive) Binding {
	switch d.Stage {
	case evaluator.StageStepLimit:
		return Binding{Kind: BindSteps, Operation: "check-in: step limit"}
	case evaluator.StageOutcome:
		return Binding{Kind: BindFailure, Operation: "check-in: reported failure"}
	}
	return Binding{Kind: BindAction, Server: a.Server, Operation: a.Operation, Digest: a.Digest}
}
