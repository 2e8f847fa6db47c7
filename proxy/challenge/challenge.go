// Package challenge keeps the bookkeeping of one principal's
// verification challenges: a code made for a hard block or a verify
// pause (its salted hash in the state, the code itself only in the
// request that shows it), shown to the human through the principal's
// desk once its challenge is on disk, shown again while it lasts, given
// a fresh code when the human asks (`aqlguard verify show`), marked when
// it could not be shown, and checked when the model passes a code on
// (verify_challenge). The model never sees a code, and no error, log
// line or refusal carries one.
//
// What a check of a code decides is proxy/ruling's (Verify, Revoked,
// CodeNotShown); the guard decides when a challenge is made and holds
// the verify pause (its memory), and the codes shown live in the desk
// (proxy/desk). A Codes keeps nothing itself and takes no lock: the
// state holds the challenges, the desk the codes.
package challenge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aqlguard/aqlguard/proxy/desk"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// TransparentVerifyTool is the tool that carries verify_challenge in
// transparent mode.
const TransparentVerifyTool = "aqlguard_verify_challenge"

// showWait is how long a check waits to learn whether the channel could
// show a code at all (a missing display or a failing command answers at
// once; a dialog that is up keeps running in the background).
const showWait = 750 * time.Millisecond

// ReshowAfter is how long after its window closed a code is shown
// again, at the next refused call: a model that retries in a loop does
// not keep a window in the human's face.
const ReshowAfter = 10 * time.Second

// ErrNotBlocked says ShowCodeAgain found no block of the principal.
var ErrNotBlocked = errors.New("the agent is not blocked")

// Code is a challenge a commit writes and the request that shows its
// code to the human once it is written.
type Code struct {
	Challenge store.Challenge
	Request   verify.Request
}

// New creates a challenge for what req asks about (its Agent, Action
// and Tier), living ttl from now. The code is returned inside the show
// request only: it goes to the channel after the challenge is on disk,
// and nowhere else.
func New(req verify.Request, now time.Time, ttl time.Duration) (*Code, error) {
	ch, secret, err := verify.NewChallenge(req.Agent, req.Action, req.Tier, now, ttl)
	if err != nil {
		return nil, err
	}
	sealed := ch.Seal()
	rec := store.Challenge{ID: ch.ID, Principal: ch.Agent, Action: ch.Action, Tier: ch.Tier,
		Salt: sealed.Salt, Hash: sealed.Hash, CreatedAt: ch.CreatedAt, ExpiresAt: ch.ExpiresAt}
	req.Kind, req.Challenge, req.Code, req.ExpiresAt = verify.KindChallenge, ch.ID, secret, ch.ExpiresAt
	return &Code{Challenge: rec, Request: req}, nil
}

// Codes is the principal's challenges as the guard reaches them: its
// fields are the guard's, read at each use.
type Codes struct {
	State     store.State
	Principal string
	// Channel reaches the human (nil: no code can be shown); Desk is the
	// principal's desk, which shows codes through it.
	Channel verify.Channel
	Desk    *desk.Desk
	// Commit is one commit of the guard that changes none of its memory.
	Commit func(ctx context.Context, decide func(store.View) (store.Changes, error)) error
	// Record starts one of the guard's audit records; Append commits
	// records that change no state.
	Record func(kind store.RecordKind, session string) store.Record
	Append func(ctx context.Context, recs ...store.Record) error
	Log    *slog.Logger
}

// Show puts a persisted challenge's code in front of the human and
// returns the factor that says whether that worked and, when it did not,
// why in a few words for the model. A channel that cannot show it fails
// closed: the pause or block stays.
func (c Codes) Show(req *verify.Request) (factor, unshown string) {
	if c.Channel == nil {
		c.Log.Error("no channel to show a verification code; the pause or block stays", "challenge", req.Challenge)
		return "verification: no channel to a human is configured; the code could not be shown; the pause or block stays",
			"no channel to a human is configured"
	}
	// The code's window stays up in the background (proxy/desk): only
	// a channel that fails at once is heard of here.
	if err := c.Desk.Show(*req, showWait); err != nil {
		c.Log.Error("the verification code could not be shown; the pause or block stays",
			"channel", c.Channel.Name(), "challenge", req.Challenge, "err", err)
		unshown = "the " + c.Channel.Name() + " channel failed"
		if errors.Is(err, verify.ErrNoDisplay) {
			unshown = "no graphical display"
		}
		return "verification: the " + c.Channel.Name() + " channel could not show the code (" + unshown +
			"); the pause or block stays", unshown
	}
	c.Log.Info("verification code shown out of band", "channel", c.Channel.Name(), "challenge", req.Challenge,
		"expires_at", req.ExpiresAt)
	return "verification: code shown to a human through the " + c.Channel.Name() + " channel", ""
}

// NoteNotShown notes on the block in the store (if it is still that
// block), where the next refusals read it, that its code could not be
// shown. A failure to write it is logged; the refusal stands either way.
func (c Codes) NoteNotShown(ctx context.Context, b *store.Block) {
	err := c.Commit(ctx, func(st store.View) (store.Changes, error) {
		cur, err := st.Block(b.Principal)
		if err != nil {
			return store.Changes{}, err
		}
		if marked := ruling.CodeNotShown(cur, b.VerificationID); marked != nil {
			return store.Changes{Blocks: []store.Block{*marked}}, nil
		}
		return store.Changes{}, nil
	})
	if err != nil {
		c.Log.Error("noting that a block's code could not be shown", "challenge", b.VerificationID, "err", err)
	}
}

// Blocked refuses op while principal is blocked by b. A code the
// channel could not show is said (Refusal.Unheard): telling the model
// to ask the user for a code the user never saw would send them looking
// for a window that is not there. The way out stays with the human (an
// admin command, or a new code once this one expires); the model is not
// told an admin command.
func Blocked(op, principal string, b *store.Block) *refusal.Refusal {
	r := refusal.Stop(refusal.Blocked, "", map[string]any{"operation": op, "agent": principal, "reason": b.Reason,
		"verification_id": b.VerificationID}, b.BlockedAt, time.Time{})
	if b.CodeNotShown {
		return r.Unheard("it was not shown when the agent was stopped")
	}
	return r
}

// Paused refuses op while verification id pauses the principal, until
// expires.
func Paused(op, reason, id string, expires time.Time) *refusal.Refusal {
	return refusal.Stop(refusal.Paused, "", map[string]any{"operation": op, "reason": reason, "verification_id": id}, time.Time{}, expires)
}

// Result is verify_challenge's success.
type Result struct {
	Verified  bool   `json:"verified"`
	Challenge string `json:"challenge_id"`
	Unblocked bool   `json:"unblocked"`
	Resumed   bool   `json:"resumed"`
}

// Verify is the commit of verify_challenge on view st: it checks code
// against challenge id, within the principal's failure budget, and
// returns the changes (the attempt, its effect on the budget, rec
// completed as its audit record, a lifted block) with the result or the
// refusal. Errors never echo the code.
func (c Codes) Verify(st store.View, id, code string, now time.Time, rec store.Record) (store.Changes, *Result, *refusal.Refusal, error) {
	f := ruling.VerifyFacts{Now: now, Principal: c.Principal, ID: id, Code: code}
	fs, _, err := st.Failures(c.Principal)
	if err != nil {
		return store.Changes{}, nil, nil, err
	}
	f.Failures = fs
	if f.Challenge, err = st.Challenge(id); err != nil {
		c.Log.Error("reading a challenge", "challenge", id, "err", err)
		f.ChallengeUnreadable = true
	}
	if f.Block, err = st.Block(c.Principal); err != nil {
		f.BlockUnreadable = true
	}
	r := ruling.Verify(f)
	rec.Time, rec.Operation, rec.ChallengeID, rec.Result = f.Now, "verify_challenge", id, r.Result
	res, aerr := c.verified(r, id, f.Now)
	switch {
	case r.Outcome == ruling.RateLimited:
		rec.Decision = "refused"
		rec.Factors = []string{fmt.Sprintf("rate limit: violation %d, locked out until %s", r.Failures.Violations, r.Failures.LockedUntil.Format(time.RFC3339))}
	case aerr == nil:
		rec.Decision = "verified"
	default:
		rec.Decision = "failed"
	}
	ch := store.Changes{Failures: map[string]store.Failures{c.Principal: store.Failures(r.Failures)}}
	if r.Used != nil {
		ch.Challenges = []store.Challenge{*r.Used}
	}
	if r.Unblock {
		ch.Unblock = []string{c.Principal}
	}
	ch.Records = []store.Record{rec}
	return ch, res, aerr, nil
}

// verified is what verify_challenge answers for ruling r on challenge
// id at now: the result, or the refusal.
func (c Codes) verified(r ruling.Verification, id string, now time.Time) (*Result, *refusal.Refusal) {
	switch r.Outcome {
	case ruling.RateLimited:
		return nil, refusal.New(refusal.RateLimited, "Too many failed verification attempts; retry after {retry_after_seconds} seconds",
			map[string]any{"retry_after_seconds": verify.RetryAfterSeconds(r.RetryAfter), "violations": r.Failures.Violations})
	case ruling.Unreadable:
		c.Log.Error("the challenge could not be read or restored", "challenge", id)
		return nil, refusal.Fail("the challenge could not be read", nil)
	case ruling.Unliftable:
		c.Log.Error("lifting a block: the block could not be read", "challenge", id)
		return nil, refusal.Fail("the block could not be lifted", nil)
	case ruling.NotFound:
		return nil, refusal.New(refusal.NotFound, "Resource 'challenge' not found: '{resource_id}'",
			map[string]any{"resource_type": "challenge", "resource_id": id})
	case ruling.AlreadyUsed:
		return nil, refusal.New(refusal.TokenUsed, "Verification challenge has already been used", map[string]any{"challenge_id": id})
	case ruling.Expired:
		return nil, refusal.New(refusal.TokenExpired, "Verification challenge has expired", map[string]any{"challenge_id": id,
			"expired_at": r.ExpiresAt.Format(time.RFC3339), "current_time": now.Format(time.RFC3339)})
	case ruling.WrongCode:
		return nil, refusal.New(refusal.VerifyFailed, "Verification failed: the code does not match", map[string]any{"challenge_id": id})
	}
	return &Result{Verified: true, Challenge: id, Unblocked: r.Unblock}, nil
}
