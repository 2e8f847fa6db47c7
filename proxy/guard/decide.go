package guard

import (
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// facts are everything one round of a check decides on, read in the
// commit from its view and the memory. decide reads nothing else: no
// clock, no store, no lock.
type facts struct {
	now                time.Time
	principal, version string
	action             Action
	// block is the principal's hard block (nil: none); pause the verify
	// pause of this process (nil: none).
	block *store.Block
	pause *pause
	// steps is this round's step number; failurePause says a reported
	// failure waits for a human's check-in.
	steps        int
	failurePause bool
	// explicit is the confirmation whose token came with the action,
	// already validated (nil: none).
	explicit *Confirmation
	// execution is the store's copy of a reported step's execution (nil:
	// gone).
	execution *store.Execution
	// asked are the questions the check waited on, with their answers.
	asked map[string]answered
	// sessionApprovals says a human may answer "allow for this session".
	sessionApprovals bool
	// human is what only a round that needs a human reads (standing
	// approvals, approved confirmations from the store); nil until
	// decide asks for it with needHuman.
	human *humanFacts
}

// humanFacts are the answers humans gave that a round may rely on.
type humanFacts struct {
	// approvals are the standing "allow for this session" approvals.
	approvals []store.Approval
	// open are the principal's pending and approved confirmations in the
	// store (of any process), but those a check of this process is using.
	open []*Confirmation
	// spent are its used and denied ones.
	spent []*Confirmation
}

// drop forgets an open confirmation the commit has just used.
func (h *humanFacts) drop(token string) {
	if h == nil {
		return
	}
	open := h.open[:0:0]
	for _, c := range h.open {
		if c.Token != token {
			open = append(open, c)
		}
	}
	h.open = open
}

// answered is what a check heard back from a question it waited on:
// the answer, and why none came.
type answered struct {
	answer verify.Answer
	why    string
}

// rulingKind is what the guard does next with an action.
type rulingKind int

const (
	// allow: the evaluator lets the action run.
	allow rulingKind = iota
	// blocked: the principal is hard-blocked (ruling.block); reissue
	// says its code expired and a fresh one is to be shown.
	blocked
	// finished: the reported step's execution is no longer running
	// (ruling.execution: the store's copy, nil if gone).
	finished
	// paused: a verify pause is pending (ruling.pause).
	paused
	// hardBlock: the action blocks the principal; a challenge is made.
	hardBlock
	// refused: the policy refuses this action; the principal goes on.
	refused
	// verifyPause: the action pauses the principal until a code is entered.
	verifyPause
	// needHuman: the evaluator asks for a human; decide needs
	// facts.human to say more.
	needHuman
	// standing: a standing approval (ruling.approval) stands for the human.
	standing
	// approved: a human approved this binding (ruling.confirmation); a
	// check-in's approval lifts its pause and the action is judged again.
	approved
	// denied: a human denied this very call recently (ruling.confirmation).
	denied
	// ask: put the question to the human — the open one in
	// ruling.confirmation, or a new one for ruling.binding when nil.
	ask
	// unanswered: the check waited on the open question
	// (ruling.confirmation) and no approval came; ruling.why says why,
	// when nobody could be asked.
	unanswered
)

// ruling is decide's answer for one round.
type ruling struct {
	kind      rulingKind
	directive evaluator.Directive
	// clearPause says the verify pause lapsed: it ends, whatever follows.
	clearPause   bool
	block        *store.Block
	reissue      bool
	pause        *pause
	binding      binding
	approval     *store.Approval
	confirmation *Confirmation
	execution    *store.Execution
	why          string
}

// decide is one round of a check: the hard block, the verify pause, the
// evaluator (a pure function of the policy and the step), and what the
// humans already said. It changes nothing; the caller carries the ruling
// out (writes, asks, shows) and, after a check-in, decides again.
func decide(f facts, evaluate func(evaluator.Step) evaluator.Directive) ruling {
	var r ruling
	if b := f.block; b != nil {
		return ruling{kind: blocked, block: b, reissue: !f.now.Before(b.ChallengeExpiresAt)}
	}
	if f.action.reported() && (f.execution == nil || f.execution.Status != StatusRunning) {
		return ruling{kind: finished, execution: f.execution}
	}
	if p := f.pause; p != nil {
		if f.now.Before(p.ExpiresAt) {
			return ruling{kind: paused, pause: p}
		}
		r.clearPause = true
	}
	d := evaluate(stepFor(f.action, f.principal, f.steps, f.failurePause))
	r.directive = d
	switch {
	case d.Continue:
		r.kind = allow
		return r
	case d.Decision == evaluator.Block:
		r.kind = hardBlock
		return r
	case d.Decision == evaluator.Refuse:
		r.kind = refused
		return r
	case d.Decision == evaluator.NeedsVerify:
		r.kind = verifyPause
		return r
	}
	a := f.action
	r.binding = bindingFor(a, d)
	if f.human == nil {
		r.kind = needHuman
		return r
	}
	h := f.human
	holds := func(c *Confirmation, status string) bool {
		return c.Status == status && f.now.Before(c.ExpiresAt) && matches(c, r.binding, f.principal, f.version)
	}
	// The answer to this check's own question first: it is what the
	// human was asked about, and it is used by this action.
	for _, c := range h.open {
		if _, mine := f.asked[c.Token]; mine && holds(c, statusApproved) {
			r.kind, r.confirmation = approved, c
			return r
		}
	}
	if r.binding.kind == kindAction && !a.reported() && !d.ArgumentBound && a.Session != "" && !a.SharedSession && f.sessionApprovals {
		for i := range h.approvals {
			ap := &h.approvals[i]
			if ap.Active(f.now) && ap.Principal == f.principal && ap.Session == a.Session &&
				ap.Server == a.Server && ap.Tool == a.Tool && ap.PolicyVersion == f.version {
				r.kind, r.approval = standing, ap
				return r
			}
		}
	}
	// The explicit token first; else any approval of exactly this
	// binding will do (a binding is exact, so two are interchangeable),
	// given in this call's session: the identical call repeated later
	// finds its answer, a call of another session (another chat) does
	// not inherit it.
	if c := f.explicit; c != nil && holds(c, statusApproved) {
		r.kind, r.confirmation = approved, c
		return r
	}
	for _, c := range h.open {
		if holds(c, statusApproved) && (r.binding.kind != kindAction || c.Session == a.Session) {
			r.kind, r.confirmation = approved, c
			return r
		}
	}
	// The human said no to this very call (or to this check's own
	// question): a retry does not put the question to them again until
	// that answer expires.
	for _, c := range h.spent {
		_, mine := f.asked[c.Token]
		if holds(c, statusDenied) && (mine || r.binding.kind == kindAction && c.Session == a.Session) {
			r.kind, r.confirmation = denied, c
			return r
		}
	}
	// The caller's own pending token, or a pending question for the same
	// binding (a retry finds the question still on the human's screen
	// instead of raising a second one), or a new question.
	// A question this check already waited on ends it.
	r.kind = ask
	if c := f.explicit; c != nil && holds(c, statusPending) {
		r.confirmation = c
	}
	for _, c := range h.open {
		if r.confirmation == nil && joinable(c, r.binding, f.principal, f.version, a.Session, f.now) {
			r.confirmation = c
		}
	}
	if c := r.confirmation; c != nil {
		if ans, ok := f.asked[c.Token]; ok {
			r.kind, r.why = unanswered, ans.why
		}
	}
	return r
}

// stepFor builds the evaluator's input from the action and the
// principal's state. A pause for a reported failure persists until a
// human confirms it, so later steps are evaluated as if the failure were
// just reported.
func stepFor(a Action, principal string, steps int, failurePause bool) evaluator.Step {
	outcome := a.Outcome
	if failurePause {
		outcome = "failure"
	} else if outcome == "failure" {
		outcome = "" // confirmed by a human in this very check
	}
	op := a.Operation
	if a.reported() {
		op = "" // a reported step is described by its hint alone
	}
	return evaluator.Step{
		Principal: principal, Session: a.Session, Operation: op,
		Server: a.Server, Tool: a.Tool, Category: a.Category, ManagedCategory: a.ManagedCategory, Annotations: a.Annotations,
		Arguments: a.Arguments, ActionHint: a.Hint, Outcome: outcome, StepNumber: steps,
		Roles: a.Roles, Modeled: a.Modeled, Effects: a.Effects, EffectSource: a.EffectSource, EffectWhy: a.EffectWhy,
		Places: a.Places, Roots: a.Roots, RootsKnown: a.RootsKnown, Home: a.Home, Confined: a.Confined,
		Unresolved: a.Unresolved, Flow: a.Flow,
	}
}

// bindingFor is what a human's answer about this action approves: a
// check-in of the principal, or exactly this action.
func bindingFor(a Action, d evaluator.Directive) binding {
	switch d.Stage {
	case evaluator.StageStepLimit:
		return binding{kind: kindSteps, operation: "check-in: step limit"}
	case evaluator.StageOutcome:
		return binding{kind: kindFailure, operation: "check-in: reported failure"}
	}
	return binding{kind: kindAction, server: a.Server, operation: a.Operation, digest: a.argsDigest()}
}
