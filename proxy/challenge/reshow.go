package challenge

import (
	"context"
	"errors"

	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// A code can be seen again until it expires (issue 31, item 6): in this
// process, the desk keeps the codes it showed in a window and puts one
// up again at the next call its block or pause refuses (ShowAgain, not
// more often than ReshowAfter); from any process, `aqlguard verify
// show` gives the block a fresh code and shows that one
// (ShowCodeAgain): the code itself lives only in the process that made
// it, so a new one replaces it (the old one no longer lifts the block).
// The model never sees a code either way.

// ShowAgain puts the code of verification id up again, when this
// process holds it, its window is closed (for ReshowAfter at least) and
// it has not expired; it records that it did. It is for a call the
// block or pause refused.
func (c Codes) ShowAgain(ctx context.Context, session, operation, id string) {
	req, ok := c.Desk.ShowAgain(id, ReshowAfter)
	if !ok {
		return
	}
	factor, unshown := c.Show(&req)
	rec := c.Record(store.KindChallenge, session)
	rec.Operation, rec.Tier, rec.ChallengeID, rec.Factors = operation, req.Tier, req.Challenge, []string{"shown again: " + factor}
	rec.Result = "code_shown_again"
	if unshown != "" {
		rec.Result = "code_not_shown_again"
	}
	if err := c.Append(ctx, rec); err != nil {
		c.Log.Error("recording that a code was shown again", "challenge", req.Challenge, "err", err)
	}
}

// ShowCodeAgain gives the principal's hard block a fresh code (reissue's,
// which is decided on the block as the commit reads it), written with an
// admin record naming by (the OS user), and shows it through the
// channel, returning once the human closed its window, the code expired
// or ctx ended (`aqlguard verify show`). The code is never returned,
// printed or logged; the old one no longer lifts the block. announce,
// when set, is told the block with its new challenge before the code is
// shown. It returns the block as it now is, and an error wrapping
// ErrNotBlocked when there is none, or saying why the code could not be
// shown (the block stays, its code not shown).
func (c Codes) ShowCodeAgain(ctx context.Context, by string, reissue func(*store.Block) (*store.Block, *Code), announce func(*store.Block)) (*store.Block, error) {
	if c.Channel == nil {
		return nil, errors.New("no channel to a human is configured")
	}
	var nb *store.Block
	var code *Code
	err := c.Commit(ctx, func(v store.View) (store.Changes, error) {
		nb, code = nil, nil
		b, err := v.Block(c.Principal)
		if err != nil || b == nil {
			return store.Changes{}, err
		}
		nb, code = reissue(b)
		if nb == nil {
			return store.Changes{}, errors.New("a verification challenge could not be created")
		}
		rec := c.Record(store.KindAdmin, "")
		rec.Operation, rec.ChallengeID, rec.Result = "verify show", nb.VerificationID, "code_reissued"
		rec.Factors = []string{"a new code for the block replaces verification " + b.VerificationID + ", at the request of " + by}
		ch := store.Changes{Blocks: []store.Block{*nb}, Challenges: []store.Challenge{code.Challenge}, Records: []store.Record{rec}}
		// The replaced code is revoked: it answers as used, and lifts nothing.
		old, err := v.Challenge(b.VerificationID)
		if err != nil {
			return store.Changes{}, err
		}
		if revoked := ruling.Revoked(old); revoked != nil {
			ch.Challenges = append(ch.Challenges, *revoked)
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
	req := code.Request
	serr := c.Desk.ShowAndWait(ctx, req)
	rec := c.Record(store.KindChallenge, "")
	rec.Operation, rec.Tier, rec.ChallengeID, rec.Result = "verify show", req.Tier, req.Challenge, "code_shown"
	rec.Factors = []string{"verification: code shown to a human through the " + c.Channel.Name() + " channel"}
	if serr != nil {
		rec.Result, rec.Factors = "code_not_shown", []string{"verification: the " + c.Channel.Name() + " channel could not show the code"}
		c.NoteNotShown(ctx, nb)
	}
	if err := c.Append(ctx, rec); err != nil {
		c.Log.Error("recording whether a code was shown", "challenge", req.Challenge, "err", err)
	}
	if serr != nil {
		return nb, serr
	}
	return nb, nil
}
