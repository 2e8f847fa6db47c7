package guard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Asking the human. A question is asked by a goroutine of its own that
// lives as long as its confirmation, not as long as the call that raised
// it: the call waits inline_wait for the answer and otherwise returns
// CONFIRMATION_REQUIRED, while the question stays on the screen. The
// answer is recorded durably the moment it is given; the model's retry
// (or confirm_operation) then finds it. Questions about one principal are
// asked one at a time, in the order they were raised, in this process
// (turn) and across the processes sharing the state directory
// (Store.QuestionTurn): thirty parallel gated calls put one question on
// the screen, not thirty.

// asking is one question on, or waiting for, the human's screen.
type asking struct {
	done   chan struct{} // closed once the answer is recorded, or none came
	answer verify.Answer
	why    string // set when nobody could be asked, or the answer not recorded

	// session is the MCP session of the call that raised it.
	session string
	// waiting counts the calls waiting for the answer now (g.mu).
	waiting int
	// withdraw ends the question before an answer (its dialog closes, a
	// command is stopped): the client that asked cancelled its call or
	// went away, so an answer could no longer reach anyone. withdrawn
	// says why (g.mu).
	withdraw  context.CancelFunc
	withdrawn string
}

// withdrawAsking ends q's question, saying why. g.mu is held.
func withdrawAsking(q *asking, why string) {
	if q.withdrawn == "" {
		q.withdrawn = why
	}
	q.withdraw()
}

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
func (g *Guard) await(ctx context.Context, c *Confirmation, wait time.Duration, shown *shownCall) (verify.Answer, string) {
	g.mu.Lock()
	g.init()
	q := g.askings[c.Token]
	if q == nil {
		switch {
		case c.Status == statusApproved:
			g.mu.Unlock()
			return verify.Allow, ""
		case c.Status == statusDenied:
			g.mu.Unlock()
			return verify.Deny, ""
		case c.Status != statusPending || !g.now().Before(c.ExpiresAt):
			g.mu.Unlock()
			return verify.None, ""
		}
		// The question lives until its token expires, the guard stops,
		// or it is withdrawn.
		qctx, cancel := context.WithDeadline(g.bg, c.ExpiresAt)
		q = &asking{done: make(chan struct{}), session: c.Session, withdraw: cancel}
		g.askings[c.Token] = q
		req := g.question(c, g.shownOf(c, shown))
		g.asks.Add(1)
		go g.runAsk(qctx, q, c, req)
	}
	q.waiting++
	g.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cancelled := false
	select {
	case <-q.done:
		g.mu.Lock()
		q.waiting--
		g.mu.Unlock()
		return q.answer, q.why
	case <-timer.C:
	case <-ctx.Done():
		cancelled = true
	}
	g.mu.Lock()
	q.waiting--
	// The client cancelled its call (or went away): with nobody else
	// waiting for it, nobody would hear the answer. A call that merely
	// waited its inline_wait leaves the question up for its retry.
	if cancelled && q.waiting == 0 {
		withdrawAsking(q, "confirmation: withdrawn, the call was cancelled before the human answered; nothing was approved")
	}
	g.mu.Unlock()
	return verify.None, ""
}

// withdrawSession withdraws the questions a session raised: the session
// has ended, and no answer could reach its client.
func (g *Guard) withdrawSession(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	for _, q := range g.askings {
		if q.session == session {
			withdrawAsking(q, "confirmation: withdrawn, the MCP session ended before the human answered; nothing was approved")
		}
	}
}

// maxQuestionCommands bounds the commands a question lists before the
// arguments.
const maxQuestionCommands = 20

// maxShownKept bounds the calls kept for questions asked again from
// their token alone (shownOf).
const maxShownKept = 64

// shownOf is what the human is shown of the call c asks about: shown
// when c asks about it (and then kept, until c expires, for the same
// question asked again from its token alone), else what was kept for
// c's token; nil when neither is: the question shows what the state
// keeps (every secret a digest). g.mu is held.
func (g *Guard) shownOf(c *Confirmation, shown *shownCall) *shownCall {
	if !shown.of(c) {
		if kept := g.shownFor[c.Token]; kept.call.of(c) {
			return kept.call
		}
		return nil
	}
	now := g.now()
	if g.shownFor == nil {
		g.shownFor = map[string]keptCall{}
	}
	for token, k := range g.shownFor {
		if !now.Before(k.until) {
			delete(g.shownFor, token)
		}
	}
	if len(g.shownFor) >= maxShownKept {
		first := ""
		for token, k := range g.shownFor {
			if first == "" || k.until.Before(g.shownFor[first].until) {
				first = token
			}
		}
		delete(g.shownFor, first)
	}
	g.shownFor[c.Token] = keptCall{call: shown, until: c.ExpiresAt}
	return shown
}

// keptCall is a call's shownCall kept for its question until it expires.
type keptCall struct {
	call  *shownCall
	until time.Time
}

// question is the request the human sees for c, showing the call as
// shown says (nil: as the state keeps it). g.mu is held.
func (g *Guard) question(c *Confirmation, shown *shownCall) verify.Request {
	var args map[string]any
	if len(c.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(c.Arguments))
		dec.UseNumber()
		_ = dec.Decode(&args) // damaged: the question shows the preview alone
	}
	r := verify.Request{
		Kind: verify.KindConfirmation, Agent: c.Principal, Client: c.Client, Server: g.pol().Title(c.Server), Tool: c.Tool,
		Operation: c.Operation, Action: c.Action, Arguments: args, Reason: c.Reason, Token: c.Token,
		Tier: c.Tier, ExpiresAt: c.ExpiresAt, AllowSession: c.AllowSession, Forget: c.Forget,
		Category: c.Category, Does: c.Does, Stage: c.Stage, Rule: c.Rule, Risk: c.Risk,
	}
	var roles map[string]policy.Role
	if shown != nil {
		args, roles = shown.args, shown.stepRoles
		r.Arguments, r.Roles, r.Action = shown.args, shown.roles, shown.preview
		r.Effects, r.Places, r.Roots = shown.effects, shown.places, shown.roots
		if c.Kind != kindAction {
			r.Action = c.Operation + " (next action: " + shown.preview + ")"
		}
	}
	if c.Kind == kindAction {
		r.Commands = evaluator.Commands(g.pol(), evaluator.Step{Operation: c.Operation, Server: c.Server, Tool: c.Tool,
			Arguments: args, Roles: roles}, maxQuestionCommands)
	}
	if c.Kind == kindSteps {
		r.Steps = g.pol().MaxSteps
	}
	return r
}

// runAsk asks and records the answer; see the comment at the top.
func (g *Guard) runAsk(ctx context.Context, q *asking, c *Confirmation, req verify.Request) {
	defer g.asks.Done()
	defer q.withdraw()
	answer, why := g.ask(ctx, req)
	if answer == verify.None {
		g.mu.Lock()
		if q.withdrawn != "" {
			why = q.withdrawn
		}
		g.mu.Unlock()
	}
	answer, why = g.recordAnswer(c, answer, why)
	g.mu.Lock()
	q.answer, q.why = answer, why
	delete(g.askings, c.Token)
	g.mu.Unlock()
	close(q.done)
}

// takeTurn waits for this principal's turn to put a question to the
// human, in this process and across the processes sharing the state
// directory. It returns the release, or nil and why there is no turn.
func (g *Guard) takeTurn(ctx context.Context) (release func(), why string) {
	select {
	case g.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, "confirmation: the question expired while the human was answering others"
	}
	unlock, err := g.State.QuestionTurn(ctx, g.pol().Principal)
	if err != nil {
		<-g.turn
		if ctx.Err() != nil {
			return nil, "confirmation: the question expired while the human was answering another aqlguard's"
		}
		g.log().Error("could not wait for a turn to ask a human; nothing is approved", "err", err)
		return nil, "confirmation: could not take a turn to ask a human; nothing was approved"
	}
	return func() { unlock(); <-g.turn }, ""
}

// AskAbout puts a question that is not about one call (a server changed
// a tool's definition) to the human, in this principal's turn. settled
// runs once the turn is taken: when it reports that the question was
// answered meanwhile (in another process, at the command line), the
// human is not asked and AskAbout returns None.
func (g *Guard) AskAbout(ctx context.Context, req verify.Request, settled func() bool) (verify.Answer, error) {
	if g.Channel == nil {
		return verify.None, errors.New("no channel to a human is configured")
	}
	g.mu.Lock()
	g.init()
	g.about++ // the guard is not parked while it asks
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.about--
		g.mu.Unlock()
	}()
	release, why := g.takeTurn(ctx)
	if release == nil {
		return verify.None, errors.New(why)
	}
	defer release()
	if settled != nil && settled() {
		return verify.None, nil
	}
	answer, err := g.Channel.Ask(ctx, req)
	if err != nil {
		return verify.None, err
	}
	if answer == verify.AllowSession || answer == verify.AllowForget {
		answer = verify.Allow
	}
	g.log().Info("human answer", "channel", g.Channel.Name(), "about", req.Operation, "answer", answer)
	return answer, nil
}

// ask waits for this principal's turn, then puts req to the human.
func (g *Guard) ask(ctx context.Context, req verify.Request) (verify.Answer, string) {
	if g.Channel == nil {
		return verify.None, "confirmation: no channel to a human is configured, so nothing can be approved"
	}
	release, why := g.takeTurn(ctx)
	if release == nil {
		return verify.None, why
	}
	defer release()
	// Answered meanwhile through the other process (confirm_operation
	// there)? Then do not ask twice.
	var cur *store.Confirmation
	if err := g.State.Load(ctx, func(st store.View) (err error) { cur, err = st.Confirmation(req.Token); return }); err == nil && cur != nil {
		switch cur.Status {
		case statusApproved:
			return verify.Allow, ""
		case statusDenied:
			return verify.Deny, ""
		case statusUsed:
			return verify.None, "confirmation: already answered and used"
		}
	}
	answer, err := g.Channel.Ask(ctx, req)
	if err != nil {
		g.log().Error("could not ask a human; nothing is approved", "channel", g.Channel.Name(), "token", req.Token, "err", err)
		why := "confirmation: the " + g.Channel.Name() + " channel could not reach a human"
		if errors.Is(err, verify.ErrNoDisplay) {
			why += " (no graphical display)"
		}
		return verify.None, why + "; nothing was approved"
	}
	if answer == verify.AllowSession && !req.AllowSession || answer == verify.AllowForget && !req.Forget {
		answer = verify.Allow // not offered: at most what was asked
	}
	g.log().Info("human answer", "channel", g.Channel.Name(), "token", req.Token, "answer", answer)
	return answer, ""
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
	// The store is the truth: if the question was settled meanwhile (the
	// other process's human answered it, or a call there used the
	// approval), this answer is not written over it — an approval written
	// again over its use would let it run a second call.
	var settled *store.Confirmation
	// Recorded even when aqlguard is shutting down (g.bg ended): a
	// question withdrawn unanswered is an answer too.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(g.bg), recordWithin)
	defer cancel()
	err := g.commit(rctx, func(st store.View, _ *memory) (store.Changes, error) {
		var ch store.Changes
		settled = nil
		cur, err := st.Confirmation(c.Token)
		if err != nil {
			return ch, err
		}
		if cur != nil && cur.Status != statusPending {
			settled = cur
			return ch, nil
		}
		if answered.Status != statusPending {
			ch.Confirmations = []store.Confirmation{answered}
		}
		if grant != nil {
			ch.Approvals = []store.Approval{*grant}
		}
		ch.Records = []store.Record{rec}
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
	stop := g.stop
	g.mu.Unlock()
	stop()
	done := make(chan struct{})
	go func() { g.asks.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWithin):
		g.log().Error("questions withdrawn at shutdown were not recorded in time", "waited", closeWithin)
	}
}

// closeWithin bounds how long Close waits for the withdrawn questions to
// be recorded.
const closeWithin = 10 * time.Second
