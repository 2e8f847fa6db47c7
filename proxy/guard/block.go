package guard

import (
	"context"
	"sync/atomic"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// A hard block and a verify pause each wait for a code the human enters;
// the challenges' bookkeeping (making, showing, showing again, checking
// a code) is proxy/challenge's. The guard decides when one is made,
// writes it with its decision, and holds the verify pause.

// pause is a verify-tier pause of this process's principal. It lives in
// memory only (spec 8.8.3: verify pauses do not persist).
type pause struct {
	ruling.Pause
	// notShown: the channel could not show its code.
	notShown atomic.Bool
}

// codes is what proxy/challenge reaches of the guard.
func (g *Guard) codes() challenge.Codes {
	g.mu.Lock()
	g.initDesk()
	d := g.desk
	g.mu.Unlock()
	return challenge.Codes{State: g.State, Principal: g.pol().Principal, Channel: g.Channel, Desk: d,
		Commit: g.commitState, Record: g.record, Append: g.appendRecords, Log: g.log()}
}

// newChallenge creates a challenge for the action (challenge.New), its
// show request saying what the human is shown of the call.
func (g *Guard) newChallenge(a Action, d evaluator.Directive) (*challenge.Code, error) {
	c, err := challenge.New(verify.Request{Agent: g.pol().Principal, Client: a.Client, Server: g.pol().Title(a.Server), Tool: a.Tool,
		Operation: a.Operation, Action: a.preview, Reason: d.Reason, Tier: string(d.Tier), Arguments: a.redacted,
		Category: string(a.Category), Does: a.EffectWhy, Stage: string(d.Stage), Rule: d.Matched, Risk: d.Risk, VerifyTool: g.VerifyTool},
		g.now(), g.ChallengeTTL)
	if err != nil {
		return nil, err
	}
	redact.ShowCode(g.pol(), &c.Request, a.redactCall(), g.showing(a))
	return c, nil
}

// hardBlock blocks the principal (deny match or danger_zone tier): the
// block and its challenge are written with the decision's audit record,
// before anything is shown or broadcast.
func (g *Guard) hardBlock(a Action, d evaluator.Directive) (Verdict, *store.Block, *challenge.Code) {
	c, err := g.newChallenge(a, d)
	if err != nil {
		g.log().Error("creating a challenge", "err", err)
		return Verdict{Directive: d, Refusal: refusal.Fail("a verification challenge could not be created; the action is refused", nil)}, nil, nil
	}
	b := &store.Block{Principal: g.pol().Principal, Reason: d.Reason, Operation: a.Operation, Call: a.preview,
		VerificationID: c.Challenge.ID, BlockedAt: g.now(), Session: a.Session, ChallengeExpiresAt: c.Challenge.ExpiresAt}
	return Verdict{Directive: d, VerificationID: b.VerificationID, Refusal: challenge.Blocked(a.Operation, g.pol().Principal, b)}, b, c
}

// verifyPauseFor pauses the principal until the code is entered or expires.
func (g *Guard) verifyPauseFor(a Action, d evaluator.Directive) (Verdict, *pause, *challenge.Code) {
	c, err := g.newChallenge(a, d)
	if err != nil {
		g.log().Error("creating a challenge", "err", err)
		return Verdict{Directive: d, Refusal: refusal.Fail("a verification challenge could not be created; the action is refused", nil)}, nil, nil
	}
	ch := c.Challenge
	reason := d.Reason
	d.Reason = d.Reason + "; verification " + ch.ID + " pending"
	return Verdict{Directive: d, VerificationID: ch.ID, Refusal: challenge.Paused(a.Operation, reason, ch.ID, ch.ExpiresAt)},
		&pause{Pause: ruling.Pause{ID: ch.ID, ExpiresAt: ch.ExpiresAt}}, c
}

// reissue gives a block whose code expired a fresh challenge, so a human
// who was away can still clear it without the admin override. It is
// decided on the block as the commit reads it, so it replaces that one.
func (g *Guard) reissue(b *store.Block) (*store.Block, *challenge.Code) {
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
	nb.VerificationID, nb.ChallengeExpiresAt, nb.CodeNotShown = c.Challenge.ID, c.Challenge.ExpiresAt, false
	return &nb, c
}

// noteCodeNotShown notes, where the next refusals read it, that the code
// of a block or verify pause could not be shown: on the block in the
// store (challenge.Codes.NoteNotShown), on the pause in memory.
func (g *Guard) noteCodeNotShown(ctx context.Context, b *store.Block, p *pause) {
	if p != nil {
		p.notShown.Store(true)
	}
	if b != nil {
		g.codes().NoteNotShown(ctx, b)
	}
}

// ShowCodeAgain gives the principal's hard block a fresh code and shows
// it (`aqlguard verify show`: challenge.Codes.ShowCodeAgain).
func (g *Guard) ShowCodeAgain(ctx context.Context, by string, announce func(*store.Block)) (*store.Block, error) {
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	return g.codes().ShowCodeAgain(ctx, by, g.reissue, announce)
}

// VerifyChallenge checks a code against a challenge, within the
// principal's failure budget (challenge.Codes.Verify). Success lifts the
// block or the verify pause the challenge belongs to. The attempt, its
// effect on the budget and its audit record are written in one
// transaction before the answer is returned. Errors never echo the code.
func (g *Guard) VerifyChallenge(ctx context.Context, session, id, code string) (*challenge.Result, *refusal.Refusal) {
	began := g.now()
	var res *challenge.Result
	var aerr *refusal.Refusal
	codes := g.codes()
	err := g.commit(ctx, func(st store.View, m *memory) (store.Changes, error) {
		c, r, rerr, err := codes.Verify(st, id, code, g.now(), g.record(store.KindVerification, session))
		if res, aerr = r, rerr; err != nil {
			return c, err
		}
		c.Records[0].DurationMS = ms(g.now().Sub(began))
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
		return nil, refusal.StateUnavailable(err, "nothing was verified")
	}
	if aerr != nil {
		g.log().Warn("verification failed", "principal", g.pol().Principal, "challenge", id, "code", aerr.Kind.String())
		return nil, aerr
	}
	g.log().Info("verification succeeded", "principal", g.pol().Principal, "challenge", id,
		"unblocked", res.Unblocked, "resumed", res.Resumed)
	return res, nil
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
