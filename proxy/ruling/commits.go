package ruling

import (
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Answer rules on a human's answer to a question, against the question
// as the state holds it (cur): answered is the confirmation as the
// answer leaves it, grant the standing approval it gives (nil: none),
// rec its audit record. When the question was settled meanwhile (the
// other process's human answered it, or a call there used the
// approval), settled is cur and nothing is written: an approval written
// again over its use would let it run a second call.
func Answer(cur *store.Confirmation, answered store.Confirmation, grant *store.Approval, rec store.Record) (ch store.Changes, settled *store.Confirmation) {
	if cur != nil && cur.Status != StatusPending {
		return ch, cur
	}
	if answered.Status != StatusPending {
		ch.Confirmations = []store.Confirmation{answered}
	}
	if grant != nil {
		ch.Approvals = []store.Approval{*grant}
	}
	ch.Records = []store.Record{rec}
	return ch, nil
}

// Unusable says why an approval as the state holds it (cur) cannot be
// used now: gone, used or revoked, expired; "" when it can. {token}
// stands for its token.
func Unusable(cur *store.Confirmation, now time.Time) string {
	switch {
	case cur == nil:
		return "the approval {token} is no longer in the state database"
	case cur.Status == StatusUsed:
		return "the approval {token} was used meanwhile (by another aqlguard process)"
	case cur.Status != StatusApproved:
		return "the approval {token} is " + cur.Status + " in the state database"
	case !now.Before(cur.ExpiresAt):
		return "the approval {token} expired before it could be used"
	}
	return ""
}

// Spend is c as used by the check usedBy at now: written in the commit
// that decides on it, so one approval runs one action whichever process
// tries twice.
func Spend(c *store.Confirmation, now time.Time, usedBy string) store.Confirmation {
	r := *c
	r.Status, r.DoneAt, r.UsedBy = StatusUsed, now, usedBy
	return r
}

// CheckIn rules on using the check-in cur (as the state holds it): the
// confirmation written as used, or why it cannot be used (Unusable).
func CheckIn(cur *store.Confirmation, now time.Time, usedBy string) (used *store.Confirmation, why string) {
	if why = Unusable(cur, now); why != "" {
		return nil, why
	}
	u := Spend(cur, now, usedBy)
	return &u, ""
}

// CheckedIn is the principal's memory once a human approved a check-in
// of kind: the step count starts afresh, or the failure pause ends.
func CheckedIn(kind string, steps int, failurePause bool) (int, bool) {
	switch kind {
	case BindSteps:
		return 0, failurePause
	case BindFailure:
		return steps, false
	}
	return steps, failurePause
}

// Start says whether an execution may start: a blocked principal (b,
// its block as the state holds it) starts nothing.
func Start(b *store.Block) bool { return b == nil }

// Counted is a reported step counted on its execution (cur, as the state
// holds it): the execution to write, nil when it no longer runs (gone,
// or finished by another process).
func Counted(cur *store.Execution) *store.Execution {
	if cur == nil || cur.Status != ExecutionRunning {
		return nil
	}
	next := *cur
	next.Steps++
	return &next
}

// Finish rules on moving an execution to a terminal status: next is the
// execution as the move leaves it, cur as the state holds it. It
// returns what to write, nil when cur is no longer running or pending
// (finished meanwhile, elsewhere). The steps are the state's, counted by
// whichever process reported them.
func Finish(cur *store.Execution, next store.Execution) *store.Execution {
	if cur == nil || cur.Status != ExecutionRunning && cur.Status != ExecutionPending {
		return nil
	}
	next.Steps = cur.Steps
	return &next
}

// EndApprovals are the standing approvals of principal's session, of
// all as the state holds them, that end with the session: those still
// active, marked ended at now.
func EndApprovals(all []store.Approval, principal, session string, now time.Time) []store.Approval {
	var ended []store.Approval
	for _, a := range all {
		if a.Session != session || a.Principal != principal || !a.Active(now) {
			continue
		}
		a.EndedAt = now
		ended = append(ended, a)
	}
	return ended
}

// Parked-row statuses: the principal's loop outside any execution, as a
// guard dropped after it was idle left it (proxy/guard park.go).
const (
	StatusParked             = "parked"
	StatusParkedFailurePause = "parked_failure_pause"
	StatusResumed            = "resumed"
)

// ParkedMemory is what a parked row holds (ok: it is parked, not taken
// over yet).
func ParkedMemory(e *store.Execution) (steps int, failurePause, ok bool) {
	if e == nil {
		return 0, false, false
	}
	switch e.Status {
	case StatusParked:
		return e.Steps, false, true
	case StatusParkedFailurePause:
		return e.Steps, true, true
	}
	return 0, false, false
}

// ErrBusy says the guard holds what parking it would lose.
var ErrBusy = errors.New("the guard is in use")

// Parking is Park's ruling.
type Parking struct {
	// Write says the parked row is to be written, with Steps and
	// FailurePause; when false, nothing is owed (or the row holds it
	// already) and the guard is parked all the same.
	Write        bool
	Steps        int
	FailurePause bool
}

// Status is the parked row's status.
func (p Parking) Status() string {
	if p.FailurePause {
		return StatusParkedFailurePause
	}
	return StatusParked
}

// Park rules on parking a guard whose memory holds steps and
// failurePause, with cur the principal's parked row as the state holds
// it: parked by another guard of the principal (a replica) and not
// taken over, the stricter of the two is kept. busy says what keeps the
// guard from being parked ("": nothing), and is refused as ErrBusy.
func Park(busy string, steps int, failurePause bool, cur *store.Execution) (Parking, error) {
	if busy != "" {
		return Parking{}, fmt.Errorf("%w: %s", ErrBusy, busy)
	}
	if s, f, ok := ParkedMemory(cur); ok {
		steps, failurePause = max(steps, s), failurePause || f
		if steps == s && failurePause == f {
			return Parking{}, nil
		}
	} else if steps == 0 && !failurePause {
		return Parking{}, nil // nothing owed
	}
	return Parking{Write: true, Steps: steps, FailurePause: failurePause}, nil
}

// Resume rules on taking over the parked row cur: the memory (steps,
// failurePause) merged with what it holds (the stricter), or took false
// when it was taken over meanwhile, by another guard of the principal.
func Resume(steps int, failurePause bool, cur *store.Execution) (int, bool, bool) {
	s, f, ok := ParkedMemory(cur)
	if !ok {
		return steps, failurePause, false
	}
	return max(steps, s), failurePause || f, true
}

// CodeNotShown is the block to write once the code of verification id
// could not be shown, cur the principal's block as the state holds it:
// nil when that block is no longer in force (lifted, or replaced).
func CodeNotShown(cur *store.Block, id string) *store.Block {
	if cur == nil || cur.VerificationID != id {
		return nil
	}
	marked := *cur
	marked.CodeNotShown = true
	return &marked
}

// Revoked is the challenge a fresh code for a block replaces (old, as
// the state holds it; nil: gone), revoked: it answers as used, and
// lifts nothing.
func Revoked(old *store.Challenge) *store.Challenge {
	if old == nil {
		return nil
	}
	r := *old
	r.Revoked = true
	return &r
}

// Unwritten rules on writing a block that was decided while the state
// could not be written, cur the principal's block the state holds now:
// it is written only when none is (else only its decision's record).
func Unwritten(cur *store.Block) (write bool) { return cur == nil }

// VerifyOutcome is what became of a verification attempt.
type VerifyOutcome int

const (
	// Verified: the code matched; the challenge is used.
	Verified VerifyOutcome = iota
	// RateLimited: the principal's failure budget is spent for now.
	RateLimited
	// Unreadable: the challenge could not be read (or restored).
	Unreadable
	// Unliftable: the code matched, and its challenge is used, but the
	// block could not be read to be lifted.
	Unliftable
	// NotFound: no such challenge of the principal.
	NotFound
	// AlreadyUsed, Expired, WrongCode: the code does not lift anything.
	AlreadyUsed
	Expired
	WrongCode
)

// VerifyFacts are what a verification attempt is decided on.
type VerifyFacts struct {
	Now       time.Time
	Principal string
	// ID and Code are the attempt's.
	ID, Code string
	// Failures is the principal's failure budget as the state holds it.
	Failures store.Failures
	// Challenge is challenge ID as the state holds it (nil: none), Block
	// the principal's block; ChallengeUnreadable and BlockUnreadable say
	// they could not be read.
	Challenge                            *store.Challenge
	Block                                *store.Block
	ChallengeUnreadable, BlockUnreadable bool
}

// Verification is Verify's ruling.
type Verification struct {
	Outcome VerifyOutcome
	// Result is the audit record's result word.
	Result string
	// Failures is the budget after the attempt (always written).
	Failures verify.FailureState
	// RetryAfter is when a rate-limited attempt may be made again;
	// ExpiresAt the expiry of an expired challenge.
	RetryAfter time.Duration
	ExpiresAt  time.Time
	// Used is the challenge written as used; Unblock says it lifts the
	// principal's block.
	Used    *store.Challenge
	Unblock bool
}

// Verify rules on a verification code, within the principal's failure
// budget: a match uses the challenge and lifts the block it belongs to.
func Verify(f VerifyFacts) Verification {
	budget := verify.FailureState(f.Failures)
	if ok, retry := budget.Admit(f.Now); !ok {
		return Verification{Outcome: RateLimited, Result: "rate_limited", Failures: budget, RetryAfter: retry}
	}
	v := check(f)
	if v.Outcome == Verified {
		budget.Succeed()
	} else {
		budget.Fail(f.Now)
	}
	v.Failures = budget
	return v
}

// check checks the code against the challenge (Verify without the
// budget).
func check(f VerifyFacts) Verification {
	sc := f.Challenge
	if f.ChallengeUnreadable {
		return Verification{Outcome: Unreadable, Result: "damaged"}
	}
	if sc == nil || sc.Principal != f.Principal {
		return Verification{Outcome: NotFound, Result: "unknown_challenge"}
	}
	ch, err := verify.RestoreChallenge(sc.ID, sc.Principal, sc.Action, sc.Tier, sc.CreatedAt, sc.ExpiresAt,
		sc.Used || sc.Revoked, verify.Sealed{Salt: sc.Salt, Hash: sc.Hash})
	if err != nil {
		return Verification{Outcome: Unreadable, Result: "damaged"}
	}
	switch err := ch.Check(f.Code, f.Now); {
	case errors.Is(err, verify.ErrUsed):
		return Verification{Outcome: AlreadyUsed, Result: "already_used"}
	case errors.Is(err, verify.ErrExpired):
		return Verification{Outcome: Expired, Result: "expired", ExpiresAt: ch.ExpiresAt}
	case err != nil:
		return Verification{Outcome: WrongCode, Result: "wrong_code"}
	}
	used := *sc
	used.Used, used.UsedAt = true, f.Now
	v := Verification{Outcome: Verified, Result: "verified", Used: &used}
	if f.BlockUnreadable {
		v.Outcome, v.Result = Unliftable, "damaged"
		return v
	}
	if b := f.Block; b != nil && b.VerificationID == f.ID {
		v.Unblock, v.Result = true, "unblocked"
	}
	return v
}
