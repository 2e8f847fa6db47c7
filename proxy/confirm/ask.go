package confirm

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
// its token. The book says what is asked, whether it was answered
// meanwhile elsewhere (settled), and records the answer the moment it
// is given (RecordAnswer, the desk's callback); the model's retry (or
// confirm_operation) then finds it.

// RecordWithin bounds what an answer may wait to be recorded once its
// request has ended (the store's own lock timeout bounds each
// transaction within it).
const RecordWithin = 30 * time.Second

// Approves reports whether an answer lets the action run.
func Approves(a verify.Answer) bool {
	return a == verify.Allow || a == verify.AllowSession || a == verify.AllowForget
}

// Await makes sure c is put to the human and waits at most wait for the
// answer. It returns None (and, when the channel could not ask at all, a
// factor saying why) if no answer came in time; the question stays up.
// shown is what the human is shown of the call at hand (nil: none is at
// hand, as for confirm_operation): it is used when c asks about that call.
func (k Book) Await(ctx context.Context, c *Confirmation, wait time.Duration, shown *redact.Shown) (verify.Answer, string) {
	switch {
	case c.Status == ruling.StatusApproved:
		return verify.Allow, ""
	case c.Status == ruling.StatusDenied:
		return verify.Deny, ""
	case c.Status != ruling.StatusPending || !k.Now().Before(c.ExpiresAt):
		return verify.None, ""
	}
	d := k.Desk()
	q := desk.Question{Key: c.Token, Session: c.Session, Until: c.ExpiresAt, Shows: shown.Of(c),
		Settled:  func(ctx context.Context) (verify.Answer, string, bool) { return k.settled(ctx, c.Token) },
		Answered: func(answer verify.Answer, why string) (verify.Answer, string) { return k.RecordAnswer(c, answer, why) }}
	if q.Shows {
		q.Request = redact.Question(k.Policy, c, shown)
	} else {
		q.Request = redact.Question(k.Policy, c, nil)
	}
	return d.Ask(ctx, q, wait)
}

// settled reads whether the question of token was answered meanwhile
// through another process (confirm_operation there), so that the human
// is not asked twice.
func (k Book) settled(ctx context.Context, token string) (verify.Answer, string, bool) {
	var cur *store.Confirmation
	if err := k.State.Load(ctx, func(st store.View) (err error) { cur, err = st.Confirmation(token); return }); err != nil || cur == nil {
		return verify.None, "", false
	}
	switch cur.Status {
	case ruling.StatusApproved:
		return verify.Allow, "", true
	case ruling.StatusDenied:
		return verify.Deny, "", true
	case ruling.StatusUsed:
		return verify.None, "confirmation: already answered and used", true
	}
	return verify.None, "", false
}

// RecordAnswer writes the human's answer, and the standing approval an
// "allow for this session" grants, with an audit record, before anyone
// can act on it. An answer that cannot be recorded approves nothing.
func (k Book) RecordAnswer(c *Confirmation, answer verify.Answer, why string) (verify.Answer, string) {
	now := k.Now()
	rec := k.Record(store.KindConfirmation, c.Session)
	rec.Time = now
	rec.Server, rec.Operation, rec.Token, rec.Tier, rec.Decision, rec.Factors = c.Server, c.Operation, c.Token, c.Tier, "no_answer", []string{}
	if why != "" {
		rec.Factors = append(rec.Factors, why)
	}
	answered := *c
	var grant *store.Approval
	switch answer {
	case verify.Allow, verify.AllowSession, verify.AllowForget:
		answered.Status, answered.DoneAt = ruling.StatusApproved, now
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
				Operation: c.Operation, PolicyVersion: c.PolicyVersion, Token: c.Token, Process: k.Process,
				CreatedAt: now, ExpiresAt: now.Add(k.SessionApprovalTTL)}
			rec.Decision, rec.Approval = "approved_for_session", id
		}
	case verify.Deny:
		answered.Status, answered.DoneAt = ruling.StatusDenied, now
		rec.Decision = "denied"
	}
	// The store is the truth: if the question was settled meanwhile,
	// this answer is not written over it (ruling.Answer).
	var settled *store.Confirmation
	// Recorded even when aqlguard is shutting down (the desk closing): a
	// question withdrawn unanswered is an answer too.
	rctx, cancel := context.WithTimeout(context.Background(), RecordWithin)
	defer cancel()
	err := k.Commit(rctx, func(st store.View) (ch store.Changes, err error) {
		cur, err := st.Confirmation(c.Token)
		if err != nil {
			return ch, err
		}
		ch, settled = ruling.Answer(cur, answered, grant, rec)
		return ch, nil
	})
	if err != nil {
		// Not durable, so not granted (and not refused: ask again).
		k.Log.Error("the human's answer could not be recorded; nothing is approved", "token", c.Token, "err", err)
		return verify.None, "confirmation: the answer could not be recorded in the state database; nothing was approved"
	}
	if settled != nil {
		// What the store says stands; an approval used elsewhere
		// approves nothing here.
		switch settled.Status {
		case ruling.StatusApproved:
			return verify.Allow, ""
		case ruling.StatusDenied:
			return verify.Deny, ""
		}
		return verify.None, "confirmation: the question was settled meanwhile (its approval used, or expired, by another aqlguard process)"
	}
	if grant != nil {
		k.Log.Info("standing approval granted", "approval", grant.ID, "server", k.Policy.Title(grant.Server), "tool", grant.Tool,
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
