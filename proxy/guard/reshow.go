package guard

import (
	"context"
	"errors"
	"time"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// A code can be seen again until it expires (issue 31, item 6). The
// human may close the code's window before they typed the code, or
// their client may end the session (and with it this aqlguard, whose
// dialog ends too) while the model still asks them for "the code
// aqlguard showed in a window". Two ways back:
//
//   - in this process, the code it showed in a window (a channel that
//     is a verify.Reopener) is kept in memory (never written anywhere)
//     until it expires, and the next call refused by its block or pause
//     puts the window up again when it is closed (not more often than
//     reshowAfter);
//   - from any process, `aqlguard verify show` gives the block a fresh
//     code and shows that one through the human channel (ShowCodeAgain):
//     the code itself lives only in the process that made it, so a
//     process that did not make it, or one started since, cannot show
//     it again, and a new one replaces it (the old one no longer lifts
//     the block). The refusal tells the model so, and the model never
//     sees a code either way.

// reshowAfter is how long after its window closed a code is shown
// again, at the next refused call: a model that retries in a loop does
// not keep a window in the human's face.
const reshowAfter = 10 * time.Second

// heldCode is a code this process showed, kept until it expires.
type heldCode struct {
	req      verify.Request
	up       bool      // its window is up now
	closedAt time.Time // when its window last closed
}

// holdCode keeps req (with its code) while its window is up and until
// it expires, dropping the codes that have. g.mu is held.
func (g *Guard) holdCode(req verify.Request) {
	if g.held == nil {
		g.held = map[string]*heldCode{}
	}
	g.pruneCodes()
	g.held[req.Challenge] = &heldCode{req: req, up: true}
}

// holdsCode says a code this process showed has not expired and can be
// put up again (a channel that reopens; another is delivered once, and
// holds nothing to lose). g.mu is held.
func (g *Guard) holdsCode() bool {
	if r, ok := g.Channel.(verify.Reopener); !ok || !r.Reopens() {
		return false
	}
	g.pruneCodes()
	return len(g.held) > 0
}

// pruneCodes forgets the codes that expired. g.mu is held.
func (g *Guard) pruneCodes() {
	now := g.now()
	for id, h := range g.held {
		if !now.Before(h.req.ExpiresAt) {
			delete(g.held, id)
		}
	}
}

// codeClosed notes that a code's window closed: shown is false when it
// could not be put up at all (nothing to show again: that code was
// never seen).
func (g *Guard) codeClosed(id string, shown bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.held[id]
	if h == nil {
		return
	}
	if !shown {
		delete(g.held, id)
		return
	}
	h.up, h.closedAt = false, g.now()
}

// showAgain puts the code of verification id up again, when this
// process holds it, its window is closed (for reshowAfter at least) and
// it has not expired; it records that it did. It is for a call the
// block or pause refused.
func (g *Guard) showAgain(ctx context.Context, session, operation, id string) {
	if r, ok := g.Channel.(verify.Reopener); !ok || !r.Reopens() {
		return // delivered once; `aqlguard verify show` sends a new one
	}
	g.mu.Lock()
	g.pruneCodes()
	h := g.held[id]
	now := g.now()
	if h == nil || h.up || now.Sub(h.closedAt) < reshowAfter || !now.Before(h.req.ExpiresAt) {
		g.mu.Unlock()
		return
	}
	req := h.req
	g.mu.Unlock()
	factor, unshown := g.show(ctx, &req)
	rec := g.record(store.KindChallenge, session)
	rec.Operation, rec.Tier, rec.ChallengeID, rec.Factors = operation, req.Tier, req.Challenge, []string{"shown again: " + factor}
	rec.Result = "code_shown_again"
	if unshown != "" {
		rec.Result = "code_not_shown_again"
	}
	if err := g.appendRecords(ctx, rec); err != nil {
		g.log().Error("recording that a code was shown again", "challenge", req.Challenge, "err", err)
	}
}

// ErrNotBlocked says ShowCodeAgain found no block of the principal.
var ErrNotBlocked = errors.New("the agent is not blocked")

// ShowCodeAgain gives the principal's hard block a fresh code, written
// with an admin record naming by (the OS user), and shows it through
// the channel, returning once the human closed its window, the code
// expired or ctx ended (`aqlguard verify show`). The code is never
// returned, printed or logged; the old one no longer lifts the block.
// announce, when set, is told the block with its new challenge before
// the code is shown. It returns the block as it now is, and an error
// wrapping ErrNotBlocked when there is none, or saying why the code
// could not be shown (the block stays, its code not shown).
func (g *Guard) ShowCodeAgain(ctx context.Context, by string, announce func(*store.Block)) (*store.Block, error) {
	if g.Channel == nil {
		return nil, errors.New("no channel to a human is configured")
	}
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	var nb *store.Block
	var code *challengeCode
	err := g.commit(ctx, func(v store.View, _ *memory) (store.Changes, error) {
		nb, code = nil, nil
		b, err := v.Block(g.pol().Principal)
		if err != nil || b == nil {
			return store.Changes{}, err
		}
		nb, code = g.reissue(b)
		if nb == nil {
			return store.Changes{}, errors.New("a verification challenge could not be created")
		}
		rec := g.record(store.KindAdmin, "")
		rec.Operation, rec.ChallengeID, rec.Result = "verify show", nb.VerificationID, "code_reissued"
		rec.Factors = []string{"a new code for the block replaces verification " + b.VerificationID + ", at the request of " + by}
		ch := store.Changes{Blocks: []store.Block{*nb}, Challenges: []store.Challenge{code.challenge}, Records: []store.Record{rec}}
		// The replaced code is revoked: it answers as used, and lifts nothing.
		if old, err := v.Challenge(b.VerificationID); err != nil {
			return store.Changes{}, err
		} else if old != nil {
			old.Revoked = true
			ch.Challenges = append(ch.Challenges, *old)
		}
		return ch, nil
	})
	if err != nil {
		return nil, err
	}
	if nb == nil {
		return nil, ErrNotBlocked
	}
	if announce != nil {
		announce(nb)
	}
	req := code.req
	showCtx, cancel := context.WithDeadline(ctx, req.ExpiresAt)
	defer cancel()
	serr := g.Channel.Show(showCtx, req)
	rec := g.record(store.KindChallenge, "")
	rec.Operation, rec.Tier, rec.ChallengeID, rec.Result = "verify show", req.Tier, req.Challenge, "code_shown"
	rec.Factors = []string{"verification: code shown to a human through the " + g.Channel.Name() + " channel"}
	if serr != nil {
		rec.Result, rec.Factors = "code_not_shown", []string{"verification: the " + g.Channel.Name() + " channel could not show the code"}
		g.noteCodeNotShown(ctx, nb, nil)
	}
	if err := g.appendRecords(ctx, rec); err != nil {
		g.log().Error("recording whether a code was shown", "challenge", req.Challenge, "err", err)
	}
	if serr != nil {
		return nb, serr
	}
	return nb, nil
}
