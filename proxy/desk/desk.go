// Package desk is the human's desk of one principal in one aqlguard
// process: every question put to the person at the machine (a call's
// confirmation from the guard, a tool's changed definition from the
// pins) and every verification code shown to them goes through it.
//
// What it keeps, and why it is a room of its own:
//
//   - One question per principal on the screen: questions wait for the
//     principal's turn, in this process (first come, first served) and
//     across the processes sharing the state (Config.Turn, the state's
//     QuestionTurn): thirty parallel gated calls put one question on the
//     screen, not thirty.
//   - A question is joined by every waiter: calls that wait on the same
//     question (by its key, a confirmation's token) wait for the one
//     answer; the question lives as long as its key, not as long as the
//     call that raised it, so a call that stops waiting (inline_wait)
//     leaves it up for its retry.
//   - Withdrawn with its caller: when the last call waiting on it is
//     cancelled, or the session that raised it ends, nobody could hear
//     the answer, and the question is withdrawn (its dialog closes).
//   - Its answer handed back by a callback (Question.Answered): the
//     desk records nothing itself; the guard writes the answer to the
//     state there, and what the callback returns is every waiter's
//     answer.
//   - The codes it showed, kept in memory until they expire, to be put
//     up again at the next refused call when their window was closed.
//
// Locking: Desk.mu guards what the desk keeps and nothing else; it is a
// leaf. The desk never holds it while it calls out (the channel, the
// turn, a callback), so a caller may call the desk with its own lock
// held (the guard does, from a commit's hook), but a callback must never
// wait for a lock its caller holds while calling the desk.
package desk

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/verify"
)

// Config is what a Desk reaches the human through.
type Config struct {
	// Channel reaches the human; nil means no channel, so nobody can be
	// asked and no code shown (fail closed).
	Channel verify.Channel
	// Principal names the agent whose desk this is.
	Principal func() string
	// Turn waits for the principal's turn across the processes sharing
	// the state (store.State.QuestionTurn); nil: this process only.
	Turn func(ctx context.Context, principal string) (release func(), err error)
	// Now defaults to time.Now.
	Now func() time.Time
	// Log receives the desk's log lines; nil discards them.
	Log *slog.Logger
}

// Desk is the human's desk of one principal; see the package comment.
// Make one with New; Close it when aqlguard stops.
type Desk struct {
	cfg Config

	// turn is this process's turn to ask the human (one question at a
	// time, first come first served: blocked channel senders queue in
	// order).
	turn chan struct{}
	// bg lives until Close and bounds every question and code window;
	// running are the questions' goroutines, each of which hands its
	// ending to its callback before it is done.
	bg      context.Context
	stop    context.CancelFunc
	running sync.WaitGroup

	mu sync.Mutex
	// questions are the questions on, or waiting for, the screen, by key.
	questions map[string]*question
	// kept are the requests questions showed of their call, by key,
	// until the key expires (Question.Shows).
	kept map[string]keptRequest
	// held are the codes this desk showed, by challenge, until they
	// expire, to be shown again (codes.go).
	held map[string]*heldCode
	// showing counts the codes being shown, about the questions about
	// tools being asked (AskAbout): the desk is busy meanwhile.
	showing, about int
}

// New returns the desk of cfg's principal.
func New(cfg Config) *Desk {
	d := &Desk{cfg: cfg, turn: make(chan struct{}, 1), questions: map[string]*question{}}
	d.bg, d.stop = context.WithCancel(context.Background())
	return d
}

var discardLog = slog.New(slog.DiscardHandler)

func (d *Desk) log() *slog.Logger {
	if d.cfg.Log != nil {
		return d.cfg.Log
	}
	return discardLog
}

func (d *Desk) now() time.Time {
	if d.cfg.Now != nil {
		return d.cfg.Now().UTC()
	}
	return time.Now().UTC()
}

// Principal is the agent whose desk this is.
func (d *Desk) Principal() string {
	if d.cfg.Principal == nil {
		return ""
	}
	return d.cfg.Principal()
}

// Question is one question about a call, put to the human by Ask.
type Question struct {
	// Key names the question (a confirmation's token): calls that ask
	// under one key wait for one answer.
	Key string
	// Session is the MCP session of the call that raised it: the
	// question is withdrawn when that session ends (WithdrawSession).
	Session string
	// Until bounds the question's life (the token's expiry).
	Until time.Time
	// Request is what the human is asked; Shows says it shows the call
	// at hand (its arguments as the human sees them). A question asked
	// again under its key alone (Shows false: no call at hand) shows
	// what the last request that did showed, until Until.
	Request verify.Request
	Shows   bool
	// Settled, when set, is asked once the turn is taken: ok says the
	// question was answered meanwhile elsewhere (another process, the
	// command line), and the human is not asked; answer and why are
	// then the answer.
	Settled func(ctx context.Context) (answer verify.Answer, why string, ok bool)
	// Answered is handed the answer (None, and why, when none came or
	// the question was withdrawn) and records it; what it returns is
	// every waiter's answer. It runs once, on the question's own
	// goroutine, even when the desk is closing.
	Answered func(answer verify.Answer, why string) (verify.Answer, string)
}

// question is one question on, or waiting for, the human's screen.
type question struct {
	done   chan struct{} // closed once Answered returned
	answer verify.Answer
	why    string

	session string
	// waiting counts the calls waiting for the answer now (d.mu).
	waiting int
	// withdraw ends the question before an answer (its dialog closes, a
	// command is stopped); withdrawn says why (d.mu).
	withdraw  context.CancelFunc
	withdrawn string
}

// withdrawQuestion ends q's question, saying why. d.mu is held.
func withdrawQuestion(q *question, why string) {
	if q.withdrawn == "" {
		q.withdrawn = why
	}
	q.withdraw()
}

// Ask puts q to the human, unless a question under q.Key is on or
// waiting for the screen already, which it joins, and waits at most wait
// for the answer. It returns None (and, when nobody could be asked, why)
// if no answer came in time; the question stays up. ctx is the waiting
// call's: when it ends with nobody else waiting, the question is
// withdrawn.
func (d *Desk) Ask(ctx context.Context, q Question, wait time.Duration) (verify.Answer, string) {
	d.mu.Lock()
	w := d.questions[q.Key]
	if w == nil {
		req := d.keep(q)
		// The question lives until its key expires, the desk closes, or
		// it is withdrawn.
		qctx, cancel := context.WithDeadline(d.bg, q.Until)
		w = &question{done: make(chan struct{}), session: q.Session, withdraw: cancel}
		d.questions[q.Key] = w
		d.running.Add(1)
		go d.run(qctx, w, q, req)
	}
	w.waiting++
	d.mu.Unlock()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	cancelled := false
	select {
	case <-w.done:
		d.mu.Lock()
		w.waiting--
		d.mu.Unlock()
		return w.answer, w.why
	case <-timer.C:
	case <-ctx.Done():
		cancelled = true
	}
	d.mu.Lock()
	w.waiting--
	// The client cancelled its call (or went away): with nobody else
	// waiting for it, nobody would hear the answer. A call that merely
	// waited its inline_wait leaves the question up for its retry.
	if cancelled && w.waiting == 0 {
		withdrawQuestion(w, "confirmation: withdrawn, the call was cancelled before the human answered; nothing was approved")
	}
	d.mu.Unlock()
	return verify.None, ""
}

// maxKept bounds the requests kept for questions asked again under
// their key alone.
const maxKept = 64

// keptRequest is a question's request kept until its key expires.
type keptRequest struct {
	req   verify.Request
	until time.Time
}

// keep is the request to put up for q: q's own when it shows the call
// at hand (and then kept, until q.Until, for the same question asked
// again under its key alone), else the one kept for q.Key, else q's.
// d.mu is held.
func (d *Desk) keep(q Question) verify.Request {
	if !q.Shows {
		if k, ok := d.kept[q.Key]; ok && d.now().Before(k.until) {
			return k.req
		}
		return q.Request
	}
	now := d.now()
	if d.kept == nil {
		d.kept = map[string]keptRequest{}
	}
	for key, k := range d.kept {
		if !now.Before(k.until) {
			delete(d.kept, key)
		}
	}
	if len(d.kept) >= maxKept {
		first := ""
		for key, k := range d.kept {
			if first == "" || k.until.Before(d.kept[first].until) {
				first = key
			}
		}
		delete(d.kept, first)
	}
	d.kept[q.Key] = keptRequest{req: q.Request, until: q.Until}
	return q.Request
}

// run asks and hands the answer to q.Answered; see the package comment.
func (d *Desk) run(ctx context.Context, w *question, q Question, req verify.Request) {
	defer d.running.Done()
	defer w.withdraw()
	answer, why := d.ask(ctx, req, q.Settled)
	if answer == verify.None {
		d.mu.Lock()
		if w.withdrawn != "" {
			why = w.withdrawn
		}
		d.mu.Unlock()
	}
	if q.Answered != nil {
		answer, why = q.Answered(answer, why)
	}
	d.mu.Lock()
	w.answer, w.why = answer, why
	delete(d.questions, q.Key)
	d.mu.Unlock()
	close(w.done)
}

// WithdrawSession withdraws the questions a session raised: the session
// has ended, and no answer could reach its client.
func (d *Desk) WithdrawSession(session string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, q := range d.questions {
		if q.session == session {
			withdrawQuestion(q, "confirmation: withdrawn, the MCP session ended before the human answered; nothing was approved")
		}
	}
}

// takeTurn waits for this principal's turn to put a question to the
// human, in this process and across the processes sharing the state. It
// returns the release, or nil and why there is no turn.
func (d *Desk) takeTurn(ctx context.Context) (release func(), why string) {
	select {
	case d.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, "confirmation: the question expired while the human was answering others"
	}
	if d.cfg.Turn == nil {
		return func() { <-d.turn }, ""
	}
	unlock, err := d.cfg.Turn(ctx, d.Principal())
	if err != nil {
		<-d.turn
		if ctx.Err() != nil {
			return nil, "confirmation: the question expired while the human was answering another aqlguard's"
		}
		d.log().Error("could not wait for a turn to ask a human; nothing is approved", "err", err)
		return nil, "confirmation: could not take a turn to ask a human; nothing was approved"
	}
	return func() { unlock(); <-d.turn }, ""
}

// ask waits for this principal's turn, then puts req to the human.
func (d *Desk) ask(ctx context.Context, req verify.Request, settled func(context.Context) (verify.Answer, string, bool)) (verify.Answer, string) {
	ch := d.cfg.Channel
	if ch == nil {
		return verify.None, "confirmation: no channel to a human is configured, so nothing can be approved"
	}
	release, why := d.takeTurn(ctx)
	if release == nil {
		return verify.None, why
	}
	defer release()
	// Answered meanwhile through another process? Then do not ask twice.
	if settled != nil {
		if answer, why, ok := settled(ctx); ok {
			return answer, why
		}
	}
	answer, err := ch.Ask(ctx, req)
	if err != nil {
		d.log().Error("could not ask a human; nothing is approved", "channel", ch.Name(), "token", req.Token, "err", err)
		why := "confirmation: the " + ch.Name() + " channel could not reach a human"
		if errors.Is(err, verify.ErrNoDisplay) {
			why += " (no graphical display)"
		}
		return verify.None, why + "; nothing was approved"
	}
	if answer == verify.AllowSession && !req.AllowSession || answer == verify.AllowForget && !req.Forget {
		answer = verify.Allow // not offered: at most what was asked
	}
	d.log().Info("human answer", "channel", ch.Name(), "token", req.Token, "answer", answer)
	return answer, ""
}

// AskAbout puts a question that is not about one call (a server changed
// a tool's definition) to the human, in this principal's turn. settled
// runs once the turn is taken: when it reports that the question was
// answered meanwhile (in another process, at the command line), the
// human is not asked and AskAbout returns None. It implements
// pins.Human.
func (d *Desk) AskAbout(ctx context.Context, req verify.Request, settled func() bool) (verify.Answer, error) {
	ch := d.cfg.Channel
	if ch == nil {
		return verify.None, errors.New("no channel to a human is configured")
	}
	d.mu.Lock()
	d.about++ // the desk is busy while it asks
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.about--
		d.mu.Unlock()
	}()
	release, why := d.takeTurn(ctx)
	if release == nil {
		return verify.None, errors.New(why)
	}
	defer release()
	if settled != nil && settled() {
		return verify.None, nil
	}
	answer, err := ch.Ask(ctx, req)
	if err != nil {
		return verify.None, err
	}
	if answer == verify.AllowSession || answer == verify.AllowForget {
		answer = verify.Allow
	}
	d.log().Info("human answer", "channel", ch.Name(), "about", req.Operation, "answer", answer)
	return answer, nil
}

// Waiting is how many questions are on, or waiting for, the screen.
func (d *Desk) Waiting() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.questions)
}

// Busy says what the desk holds that would be lost if its principal's
// guard were dropped ("" for nothing): a question on or waiting for the
// screen, a code being shown, a question about a tool, a code shown
// that has not expired (it would not be shown again).
func (d *Desk) Busy() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case len(d.questions) > 0:
		return "a question is on or waiting for the human's screen"
	case d.showing > 0:
		return "a verification code is being shown"
	case d.about > 0:
		return "a question about a tool's definition is being asked"
	case d.holdsCode():
		// Shown again at the next refused call until it expires
		// (codes.go): a dropped desk would forget it.
		return "a verification code it showed has not expired"
	}
	return ""
}

// Close withdraws the questions still on the human's screen (their
// dialogs close; nothing is approved) and the codes' windows, and waits
// at most within until each question's callback has returned. It
// reports whether they all did.
func (d *Desk) Close(within time.Duration) bool {
	d.stop()
	done := make(chan struct{})
	go func() { d.running.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(within):
		return false
	}
}
