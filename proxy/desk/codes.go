package desk

import (
	"context"
	"errors"
	"time"

	"github.com/aqlguard/aqlguard/verify"
)

// Codes. A verification code is shown in a window of its own that stays
// up until the human closes it, the code expires or the desk closes (not
// when the call or its session ends: the code still lifts the block from
// any session); it never keeps the caller waiting longer than it takes
// to learn whether the channel could show it at all.
//
// A code can be seen again until it expires (issue 31, item 6): the
// human may close the window before they typed the code, or their
// client may end the session while the model still asks them for "the
// code aqlguard showed in a window". The desk keeps the codes it showed
// through a channel that reopens (a verify.Reopener) in memory (never
// written anywhere) until they expire, and ShowAgain hands one back to
// be put up again when its window is closed, not more often than its
// caller's interval. The code itself lives only in the process that made
// it; `aqlguard verify show` gives a block a fresh one (the guard's
// ShowCodeAgain, which shows it with ShowAndWait).

// ErrNoChannel says no channel to a human is configured.
var ErrNoChannel = errors.New("no channel to a human is configured")

// heldCode is a code this desk showed, kept until it expires.
type heldCode struct {
	req      verify.Request
	up       bool      // its window is up now
	closedAt time.Time // when its window last closed
}

// Show puts req's code (its challenge already on disk) in front of the
// human and returns the channel's error if it fails within wait (a
// missing display or a failing command answers at once), else nil with
// the window left up in the background until the human closes it, the
// code expires or the desk closes. The code is kept to be shown again.
func (d *Desk) Show(req verify.Request, wait time.Duration) error {
	ch := d.cfg.Channel
	if ch == nil {
		return ErrNoChannel
	}
	done := make(chan error, 1)
	d.mu.Lock()
	d.showing++ // the desk is busy while a code is on the screen
	d.holdCode(req)
	d.mu.Unlock()
	showCtx, cancel := context.WithDeadline(d.bg, req.ExpiresAt)
	go func() {
		defer func() {
			d.mu.Lock()
			d.showing--
			d.mu.Unlock()
		}()
		defer cancel()
		err := ch.Show(showCtx, req)
		d.codeClosed(req.Challenge, err == nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(wait):
		return nil
	}
}

// ShowAndWait shows req's code and returns once the human closed its
// window, the code expired or ctx ended; the code is not kept (it is
// shown on a human's own request, not at an agent's call).
func (d *Desk) ShowAndWait(ctx context.Context, req verify.Request) error {
	ch := d.cfg.Channel
	if ch == nil {
		return ErrNoChannel
	}
	showCtx, cancel := context.WithDeadline(ctx, req.ExpiresAt)
	defer cancel()
	return ch.Show(showCtx, req)
}

// reopens says the channel shows codes in a window a person may close.
func (d *Desk) reopens() bool {
	r, ok := d.cfg.Channel.(verify.Reopener)
	return ok && r.Reopens()
}

// holdCode keeps req (with its code) while its window is up and until
// it expires, dropping the codes that have. d.mu is held.
func (d *Desk) holdCode(req verify.Request) {
	if d.held == nil {
		d.held = map[string]*heldCode{}
	}
	d.pruneCodes()
	d.held[req.Challenge] = &heldCode{req: req, up: true}
}

// holdsCode says a code this desk showed has not expired and can be put
// up again (a channel that reopens; another is delivered once, and
// holds nothing to lose). d.mu is held.
func (d *Desk) holdsCode() bool {
	if !d.reopens() {
		return false
	}
	d.pruneCodes()
	return len(d.held) > 0
}

// pruneCodes forgets the codes that expired. d.mu is held.
func (d *Desk) pruneCodes() {
	now := d.now()
	for id, h := range d.held {
		if !now.Before(h.req.ExpiresAt) {
			delete(d.held, id)
		}
	}
}

// codeClosed notes that a code's window closed: shown is false when it
// could not be put up at all (nothing to show again: that code was
// never seen).
func (d *Desk) codeClosed(id string, shown bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.held[id]
	if h == nil {
		return
	}
	if !shown {
		delete(d.held, id)
		return
	}
	h.up, h.closedAt = false, d.now()
}

// ShowAgain returns the request of the code of challenge id to put up
// again (with Show), when this desk holds it, the channel reopens, its
// window has been closed for after at least and it has not expired; ok
// is false otherwise.
func (d *Desk) ShowAgain(id string, after time.Duration) (req verify.Request, ok bool) {
	if !d.reopens() {
		return verify.Request{}, false // delivered once; `aqlguard verify show` sends a new one
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pruneCodes()
	h := d.held[id]
	now := d.now()
	if h == nil || h.up || now.Sub(h.closedAt) < after || !now.Before(h.req.ExpiresAt) {
		return verify.Request{}, false
	}
	return h.req, true
}

// Forget drops the code of challenge id: it was used, and is not to be
// shown again.
func (d *Desk) Forget(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.held, id)
}
