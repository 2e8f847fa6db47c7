package guard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// showWait is how long a check waits to learn whether the channel could
// show a code at all (a missing display or a failing command answers at
// once; a dialog that is up keeps running in the background).
const showWait = 750 * time.Millisecond

// pause is a verify-tier pause of this process's principal. It lives in
// memory only (spec 8.8.3: verify pauses do not persist).
type pause struct {
	ruling.Pause
	// notShown: the channel could not show its code.
	notShown atomic.Bool
}

// challengeCode is a challenge a commit writes and the request that shows its
// code to the human once it is written.
type challengeCode struct {
	challenge store.Challenge
	req       verify.Request
}

// newChallenge creates a challenge for the action. The code is returned
// inside the show request only: it goes to the channel after the
// challenge is on disk, and nowhere else.
func (g *Guard) newChallenge(a Action, d evaluator.Directive) (*challengeCode, error) {
	ch, secret, err := verify.NewChallenge(g.pol().Principal, a.preview, string(d.Tier), g.now(), g.ChallengeTTL)
	if err != nil {
		return nil, err
	}
	sealed := ch.Seal()
	rec := store.Challenge{ID: ch.ID, Principal: ch.Agent, Action: ch.Action, Tier: ch.Tier,
		Salt: sealed.Salt, Hash: sealed.Hash, CreatedAt: ch.CreatedAt, ExpiresAt: ch.ExpiresAt}
	req := verify.Request{Kind: verify.KindChallenge, Agent: g.pol().Principal, Client: a.Client, Server: g.pol().Title(a.Server), Tool: a.Tool, Operation: a.Operation,
		Action: a.preview, Reason: d.Reason, Challenge: ch.ID, Code: secret, Tier: string(d.Tier), ExpiresAt: ch.ExpiresAt,
		Arguments: a.redacted, Category: string(a.Category), Does: a.EffectWhy, Stage: string(d.Stage), Rule: d.Matched, Risk: d.Risk,
		VerifyTool: g.VerifyTool}
	redact.ShowCode(g.pol(), &req, a.redactCall(), g.showing(a))
	return &challengeCode{challenge: rec, req: req}, nil
}

// show puts a persisted challenge's code in front of the human and
// returns the factor that says whether that worked and, when it did not,
// why in a few words for the model. A channel that cannot show it fails
// closed: the pause or block stays.
func (g *Guard) show(ctx context.Context, req *verify.Request) (factor, unshown string) {
	if g.Channel == nil {
		g.log().Error("no channel to show a verification code; the pause or block stays", "challenge", req.Challenge)
		return "verification: no channel to a human is configured; the code could not be shown; the pause or block stays",
			"no channel to a human is configured"
	}
	// The code's window stays up in the background (proxy/desk): only
	// a channel that fails at once is heard of here.
	g.mu.Lock()
	g.init()
	d := g.desk
	g.mu.Unlock()
	if err := d.Show(*req, showWait); err != nil {
		g.log().Error("the verification code could not be shown; the pause or block stays",
			"channel", g.Channel.Name(), "challenge", req.Challenge, "err", err)
		unshown = "the " + g.Channel.Name() + " channel failed"
		if errors.Is(err, verify.ErrNoDisplay) {
			unshown = "no graphical display"
		}
		return "verification: the " + g.Channel.Name() + " channel could not show the code (" + unshown +
			"); the pause or block stays", unshown
	}
	g.log().Info("verification code shown out of band", "channel", g.Channel.Name(), "challenge", req.Challenge,
		"expires_at", req.ExpiresAt)
	return "verification: code shown to a human through the " + g.Channel.Name() + " channel", ""
}

// hardBlock blocks the principal (deny match or danger_zone tier): the
// block and its challenge are written with the decision's audit record,
// before anything is shown or broadcast.
func (g *Guard) hardBlock(a Action, d evaluator.Directive) (Verdict, *store.Block, *challengeCode) {
	c, err := g.newChallenge(a, d)
	if err != nil {
		g.log().Error("creating a challenge", "err", err)
		return Verdict{Directive: d, Refusal: refusal.Fail("a verification challenge could not be created; the action is refused", nil)}, nil, nil
	}
	b := &store.Block{Principal: g.pol().Principal, Reason: d.Reason, Operation: a.Operation, Call: a.preview,
		VerificationID: c.challenge.ID, BlockedAt: g.now(), Session: a.Session, ChallengeExpiresAt: c.challenge.ExpiresAt}
	return Verdict{Directive: d, VerificationID: b.VerificationID, Refusal: g.blockedRefusal(a.Operation, b)}, b, c
}

// verifyPauseFor pauses the principal until the code is entered or expires.
func (g *Guard) verifyPauseFor(a Action, d evaluator.Directive) (Verdict, *pause, *challengeCode) {
	c, err := g.newChallenge(a, d)
	if err != nil {
		g.log().Error("creating a challenge", "err", err)
		return Verdict{Directive: d, Refusal: refusal.Fail("a verification challenge could not be created; the action is refused", nil)}, nil, nil
	}
	ch := c.challenge
	reason := d.Reason
	d.Reason = d.Reason + "; verification " + ch.ID + " pending"
	return Verdict{Directive: d, VerificationID: ch.ID, Refusal: verificationRefusal(a.Operation, reason, ch.ID, ch.ExpiresAt)},
		&pause{Pause: ruling.Pause{ID: ch.ID, ExpiresAt: ch.ExpiresAt}}, c
}

// reissue gives a block whose code expired a fresh challenge, so a human
// who was away can still clear it without the admin override. It is
// decided on the block as the commit reads it, so it replaces that one.
func (g *Guard) reissue(b *store.Block) (*store.Block, *challengeCode) {
	d := evaluator.Directive{Tier: evaluator.DangerZone, Reason: b.Reason}
	// The fresh code's window names the call that set the block.
	preview := b.Call
	if preview == "" {
		preview = "lift the block: " + b.Reason
	}
	c, err := g.newChallenge(Action{Operation: b.Operation, Hint: "lift the block: " + b.Reason, preview: preview}, d)
	if err != nil {
		g.log().Error("creating a challenge", "err", err)
		return nil, nil
	}
	nb := *b
	nb.VerificationID, nb.ChallengeExpiresAt, nb.CodeNotShown = c.challenge.ID, c.challenge.ExpiresAt, false
	return &nb, c
}

// TransparentVerifyTool is the tool that carries verify_challenge in
// transparent mode.
const TransparentVerifyTool = "aqlguard_verify_challenge"

// blockedRefusal refuses op while the principal is blocked. A code the
// channel could not show is said (Refusal.unheard): telling the model to
// ask the user for a code the user never saw would send them looking for
// a window that is not there. The way out stays with the human (an admin
// command, or a new code once this one expires); the model is not told
// an admin command.
func (g *Guard) blockedRefusal(op string, b *store.Block) *Refusal {
	r := Stop(RefusalBlocked, "", map[string]any{"operation": op, "agent": g.pol().Principal, "reason": b.Reason,
		"verification_id": b.VerificationID}, b.BlockedAt, time.Time{})
	if b.CodeNotShown {
		return r.Unheard("it was not shown when the agent was stopped")
	}
	return r
}

func verificationRefusal(op, reason, id string, expires time.Time) *Refusal {
	return Stop(RefusalPaused, "", map[string]any{"operation": op, "reason": reason, "verification_id": id}, time.Time{}, expires)
}

// VerifyResult is verify_challenge's success.
type VerifyResult struct {
	Verified  bool   `json:"verified"`
	Challenge string `json:"challenge_id"`
	Unblocked bool   `json:"unblocked"`
	Resumed   bool   `json:"resumed"`
}

// VerifyChallenge checks a code against a challenge, within the
// principal's failure budget. Success lifts the block or the verify pause
// the challenge belongs to. The attempt, its effect on the budget and its
// audit record are written in one transaction before the answer is
// returned. Errors never echo the code.
func (g *Guard) VerifyChallenge(ctx context.Context, session, id, code string) (*VerifyResult, *Refusal) {
	began := g.now()
	var res *VerifyResult
	var aerr *Refusal
	principal := g.pol().Principal
	err := g.commit(ctx, func(st store.View, m *memory) (store.Changes, error) {
		res, aerr = nil, nil
		f := ruling.VerifyFacts{Now: g.now(), Principal: principal, ID: id, Code: code}
		fs, _, err := st.Failures(principal)
		if err != nil {
			return store.Changes{}, err
		}
		f.Failures = fs
		if f.Challenge, err = st.Challenge(id); err != nil {
			g.log().Error("reading a challenge", "challenge", id, "err", err)
			f.ChallengeUnreadable = true
		}
		if f.Block, err = st.Block(principal); err != nil {
			f.BlockUnreadable = true
		}
		r := ruling.Verify(f)
		rec := g.record(store.KindVerification, session)
		rec.Time, rec.Operation, rec.ChallengeID, rec.Result = f.Now, "verify_challenge", id, r.Result
		res, aerr = g.verified(r, id, f.Now)
		switch {
		case r.Outcome == ruling.RateLimited:
			rec.Decision = "refused"
			rec.Factors = []string{fmt.Sprintf("rate limit: violation %d, locked out until %s", r.Failures.Violations, r.Failures.LockedUntil.Format(time.RFC3339))}
		case aerr == nil:
			rec.Decision = "verified"
		default:
			rec.Decision = "failed"
		}
		c := store.Changes{Failures: map[string]store.Failures{principal: store.Failures(r.Failures)}}
		if r.Used != nil {
			c.Challenges = []store.Challenge{*r.Used}
		}
		if r.Unblock {
			c.Unblock = []string{principal}
		}
		rec.DurationMS = ms(g.now().Sub(began))
		c.Records = []store.Record{rec}
		if aerr != nil {
			return c, nil
		}
		// The memory follows the commit: the pause ends, and a block
		// lifted here is one to broadcast again if it is ever set again.
		if m.pause != nil && m.pause.ID == id {
			m.pause, res.Resumed = nil, true
		}
		unblocked := res.Unblocked
		c.Then = func(uint64) {
			if unblocked {
				g.seenBlock = ""
			}
			g.clearNotifications(id)
			g.initDesk()      // verify_challenge may be a new guard's first operation
			g.desk.Forget(id) // used: not to be shown again
		}
		return c, nil
	})
	if err != nil {
		g.log().Error("state database unavailable; nothing was verified", "challenge", id, "err", err)
		return nil, stateUnavailable(err, "nothing was verified")
	}
	if aerr != nil {
		g.log().Warn("verification failed", "principal", g.pol().Principal, "challenge", id, "code", aerr.Kind.String())
		return nil, aerr
	}
	g.log().Info("verification succeeded", "principal", g.pol().Principal, "challenge", id,
		"unblocked", res.Unblocked, "resumed", res.Resumed)
	return res, nil
}

// verified is what verify_challenge answers for ruling r on challenge
// id at now: the result, or the refusal.
func (g *Guard) verified(r ruling.Verification, id string, now time.Time) (*VerifyResult, *Refusal) {
	switch r.Outcome {
	case ruling.RateLimited:
		return nil, refusal.New(RefusalRateLimited, "Too many failed verification attempts; retry after {retry_after_seconds} seconds",
			map[string]any{"retry_after_seconds": verify.RetryAfterSeconds(r.RetryAfter), "violations": r.Failures.Violations})
	case ruling.Unreadable:
		g.log().Error("the challenge could not be read or restored", "challenge", id)
		return nil, refusal.Fail("the challenge could not be read", nil)
	case ruling.Unliftable:
		g.log().Error("lifting a block: the block could not be read", "challenge", id)
		return nil, refusal.Fail("the block could not be lifted", nil)
	case ruling.NotFound:
		return nil, refusal.New(RefusalNotFound, "Resource 'challenge' not found: '{resource_id}'",
			map[string]any{"resource_type": "challenge", "resource_id": id})
	case ruling.AlreadyUsed:
		return nil, refusal.New(RefusalTokenUsed, "Verification challenge has already been used", map[string]any{"challenge_id": id})
	case ruling.Expired:
		return nil, refusal.New(RefusalTokenExpired, "Verification challenge has expired", map[string]any{"challenge_id": id,
			"expired_at": r.ExpiresAt.Format(time.RFC3339), "current_time": now.Format(time.RFC3339)})
	case ruling.WrongCode:
		return nil, refusal.New(RefusalVerifyFailed, "Verification failed: the code does not match", map[string]any{"challenge_id": id})
	}
	return &VerifyResult{Verified: true, Challenge: id, Unblocked: r.Unblock}, nil
}

// stateUnavailable is the fail-closed refusal when the state database (or
// its audit log) cannot be read or written.
func stateUnavailable(err error, what string) *Refusal {
	return refusal.Fail(stateProblem(err)+"; "+what, map[string]any{"reason": "state database unavailable", "fail_closed": true})
}

// stateProblem is what the model may be told of a store failure: a fixed
// phrase, never the Go error (which names files and processes; it goes
// to the log).
func stateProblem(err error) string {
	var damaged *store.DamagedError
	switch {
	case errors.Is(err, store.ErrBusy):
		return "the state database is busy (another aqlguard process holds it)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the request ended before its decision could be read or recorded"
	case errors.As(err, &damaged):
		return "the state database is damaged; the operator must restore it"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk under the state directory is full; the operator must free space"
	case errors.Is(err, store.ErrReadOnly):
		return "the state directory cannot be written (read-only); the operator must make it writable"
	case errors.Is(err, errParked):
		return "this principal's guard was dropped while idle; retry the call"
	}
	return "the state database is unavailable"
}

// VerificationPending reports whether the principal is hard-blocked or
// paused for verification: whether verify_challenge has something to do.
func (g *Guard) VerificationPending(ctx context.Context) bool {
	g.mu.Lock()
	g.init()
	paused := g.mem.pause != nil && g.now().Before(g.mem.pause.ExpiresAt)
	g.mu.Unlock()
	if paused {
		return true
	}
	var b *store.Block
	if err := g.State.Load(ctx, func(st store.View) (err error) { b, err = st.Block(g.pol().Principal); return }); err != nil {
		return true // cannot tell: keep the way out listed
	}
	return b != nil
}
