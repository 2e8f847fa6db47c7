package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/aqlguard/aqlguard/proxy/desk"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Asking the human goes through the principal's desk (proxy/desk): one
// question on the screen at a time, joined by every call that waits on
// the same confirmation, withdrawn with its callers, living as long as
// its token. The guard says what is asked (question), whether it was
// answered meanwhile elsewhere (settled), and records the answer the
// moment it is given (recordAnswer, the desk's callback); the model's
// retry (or confirm_operation) then finds it.

// approves reports whether an answer lets the action run.
func approves(a verify.Answer) bool {
	return a == verify.Allow || a == verify.AllowSession || a == verify.AllowForget
}

// await makes sure c is put to the human and waits at most wait for the
// answer. It returns None (and, when the channel could not ask at all, a
// factor saying why) if no answer came in time; the question stays up.
// shown is what the human is shown of the call at hand (nil: none is at
// hand, as for confirm_operation): it is used when c asks about that call.
// g.mu must not be held.
func (g *Guard) await(ctx context.Context, c *Confirmation, wait time.Duration, shown *redact.Shown) (verify.Answer, string) {
	switch {
	case c.Status == statusApproved:
		return verify.Allow, ""
	case c.Status == statusDenied:
		return verify.Deny, ""
	case c.Status != statusPending || !g.now().Before(c.ExpiresAt):
		return verify.None, ""
	}
	g.mu.Lock()
	g.init()
	d := g.desk
	g.mu.Unlock()
	q := desk.Question{Key: c.Token, Session: c.Session, Until: c.ExpiresAt, Shows: shown.Of(c),
		Settled:  func(ctx context.Context) (verify.Answer, string, bool) { return g.settled(ctx, c.Token) },
		Answered: func(answer verify.Answer, why string) (verify.Answer, string) { return g.recordAnswer(c, answer, why) }}
	if q.Shows {
		q.Request = redact.Question(g.pol(), c, shown)
	} else {
		q.Request = redact.Question(g.pol(), c, nil)
	}
	return d.Ask(ctx, q, wait)
}

// settled reads whether the question of token was answered meanwhile
// through another process (confirm_operation there), so that the human
// is not asked twice.
func (g *Guard) settled(ctx context.Context, token string) (verify.Answer, string, bool) {
	var cur *store.Confirmation
	if err := g.State.Load(ctx, func(st store.View) (err error) { cur, err = st.Confirmation(token); return }); err != nil || cur == nil {
		return verify.None, "", false
	}
	switch cur.Status {
	case statusApproved:
		return verify.Allow, "", true
	case statusDenied:
		return verify.Deny, "", true
	case statusUsed:
		return verify.None, "confirmation: already answered and used", true
	}
	return verify.None, "", false
}

// recordAnswer writes the human's answer, and the standing approval an
// "allow for this session" grants, with an audit record, before anyone
// can act on it. An answer that cannot be recorded approves nothing.
func (g *Guard) recordAnswer(c *Confirmation, answer verify.Answer, why string) (verify.Answer, string) {
	now := g.now()
	rec := g.record(store.KindConfirmation, c.Session)
	rec.Time = now
	rec.Server, rec.Operation, rec.Token, rec.Tier, rec.Decision, rec.Factors = c.Server, c.Operation, c.Token, c.Tier, "no_answer", []string{}
	if why != "" {
		rec.Factors = append(rec.Factors, why)
	}
	answered := *c
	var grant *store.Approval
	switch answer {
	case verify.Allow, verify.AllowSession, verify.AllowForget:
		answered.Status, answered.DoneAt = statusApproved, now
		rec.Decision = "approved"
		if answer == verify.AllowForget && c.Forget {
			rec.Decision = "approved_and_forgotten" // the session's flows are cleared as the call goes on
		}
		if answer == verify.AllowSession && c.AllowSession {
			id, err := newApprovalID()
			if err != nil {
				return verify.None, "confirmation: the approval could not be created; nothing was approved"
			}
			grant = &store.Approval{ID: id, Principal: c.Principal, Session: c.Session, Server: c.Server, Tool: c.Tool,
				Operation: c.Operation, PolicyVersion: c.PolicyVersion, Token: c.Token, Process: g.Process,
				CreatedAt: now, ExpiresAt: now.Add(g.SessionApprovalTTL)}
			rec.Decision, rec.Approval = "approved_for_session", id
		}
	case verify.Deny:
		answered.Status, answered.DoneAt = statusDenied, now
		rec.Decision = "denied"
	}
	// The store is the truth: if the question was settled meanwhile,
	// this answer is not written over it (ruling.Answer).
	var settled *store.Confirmation
	// Recorded even when aqlguard is shutting down (the desk closing): a
	// question withdrawn unanswered is an answer too.
	rctx, cancel := context.WithTimeout(context.Background(), recordWithin)
	defer cancel()
	err := g.commit(rctx, func(st store.View, _ *memory) (ch store.Changes, err error) {
		cur, err := st.Confirmation(c.Token)
		if err != nil {
			return ch, err
		}
		ch, settled = ruling.Answer(cur, answered, grant, rec)
		return ch, nil
	})
	if err != nil {
		// Not durable, so not granted (and not refused: ask again).
		g.log().Error("the human's answer could not be recorded; nothing is approved", "token", c.Token, "err", err)
		return verify.None, "confirmation: the answer could not be recorded in the state database; nothing was approved"
	}
	if settled != nil {
		// What the store says stands; an approval used elsewhere
		// approves nothing here.
		switch settled.Status {
		case statusApproved:
			return verify.Allow, ""
		case statusDenied:
			return verify.Deny, ""
		}
		return verify.None, "confirmation: the question was settled meanwhile (its approval used, or expired, by another aqlguard process)"
	}
	if grant != nil {
		g.log().Info("standing approval granted", "approval", grant.ID, "server", g.pol().Title(grant.Server), "tool", grant.Tool,
			"session", grant.Session, "expires", grant.ExpiresAt)
	}
	return answer, why
}

// newApprovalID returns "appr_" and 96 bits from crypto/rand in hex.
func newApprovalID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "appr_" + hex.EncodeToString(b), nil
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
