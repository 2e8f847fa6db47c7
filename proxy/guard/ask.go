package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/confirm"
	"github.com/aqlguard/aqlguard/proxy/desk"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// Confirmations, their tokens, the questions put to the human and the
// answers recorded are proxy/confirm's; they go through the principal's
// desk (proxy/desk).

// book is what proxy/confirm reaches of the guard, under pol.
func (g *Guard) book(pol *policy.Policy) confirm.Book {
	return confirm.Book{State: g.State, Desk: g.Desk, Policy: pol, Commit: g.commitState, Record: g.record, Now: g.now,
		Log: g.log(), Process: g.Process, TTL: g.ConfirmTTL, SessionApprovalTTL: g.SessionApprovalTTL}
}

// ConfirmOperation is confirm_operation (confirm.Book.Operation): the
// caller's request is only a request; approval comes from the human's
// answer on the channel, never from this call.
func (g *Guard) ConfirmOperation(ctx context.Context, session, token string) (*confirm.Result, *refusal.Refusal) {
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	return g.book(g.pol()).Operation(ctx, token, g.AskTimeout, g.liftCheckin, func(token string) {
		g.mu.Lock()
		g.clearNotifications(token)
		g.mu.Unlock()
	})
}

// liftCheckin uses an approved check-in: written as used, in the commit
// that reads it approved, and the pause it lifts follows that commit.
func (g *Guard) liftCheckin(ctx context.Context, c *confirm.Confirmation) *refusal.Refusal {
	var why string
	err := g.commit(ctx, func(v store.View, m *memory) (store.Changes, error) {
		cur, err := v.Confirmation(c.Token)
		if err != nil {
			return store.Changes{}, err
		}
		var used *store.Confirmation
		if used, why = ruling.CheckIn(cur, g.now(), confirm.UseID()); used == nil {
			return store.Changes{}, nil
		}
		m.steps, m.failurePause = ruling.CheckedIn(c.Kind, m.steps, m.failurePause)
		return store.Changes{Confirmations: []store.Confirmation{*used}}, nil
	})
	if err != nil {
		g.log().Error("recording a check-in", "token", c.Token, "err", err)
		return refusal.StateUnavailable(err, "the check-in was not recorded; nothing is approved")
	}
	if why != "" {
		return confirm.UsedElsewhere(c, why)
	}
	return nil
}

// Close withdraws the questions still on the human's screen (their
// dialogs are closed; nothing is approved) and waits, at most
// closeWithin, until each is recorded as unanswered. Call it when
// aqlguard stops, before the store closes.
func (g *Guard) Close() {
	g.mu.Lock()
	g.init()
	stop, d := g.stop, g.desk
	g.mu.Unlock()
	stop()
	done := make(chan bool, 1)
	go func() { recorded := d.Close(closeWithin); g.running.Wait(); done <- recorded }()
	select {
	case recorded := <-done:
		if recorded {
			return
		}
	case <-time.After(closeWithin):
	}
	g.log().Error("questions withdrawn at shutdown were not recorded in time", "waited", closeWithin)
}

// closeWithin bounds how long Close waits for the withdrawn questions to
// be recorded.
const closeWithin = 10 * time.Second

// Desk is the principal's desk: the human's questions and codes, for
// whatever else asks the human in the principal's turn (pins.Human).
func (g *Guard) Desk() *desk.Desk {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initDesk()
	return g.desk
}
