package guard

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Guard holds the safety loop's state. Configure the exported fields, then
// use it from any goroutine.
type Guard struct {
	// Policy is the policy at start; SetPolicy replaces it (a reload) and
	// CurrentPolicy reads it.
	Policy  *policy.Policy
	current atomic.Pointer[policy.Policy]
	// State keeps what must outlive the process and what two processes
	// on one state directory share: blocks, challenges, failure state,
	// confirmations, approvals, executions and the audit log. It is
	// required: without it every check fails closed.
	State State
	// Process names this process in audit records.
	Process string
	// SessionClient names the credential a session authenticated with
	// (the audit record's client); nil: none.
	SessionClient func(session string) string
	// Channel reaches the human; nil means no channel, so nothing can be
	// approved (fail closed).
	Channel verify.Channel
	// Downstream forwards the calls the loop allows; nil means there is
	// nowhere to forward them, so an allowed call fails as unavailable.
	Downstream Caller
	// InlineWait bounds how long a gated call waits for the human.
	InlineWait time.Duration
	// AskTimeout bounds how long confirm_operation waits for the human.
	AskTimeout time.Duration
	// ConfirmTTL and ChallengeTTL are the lifetimes of tokens and codes.
	ConfirmTTL   time.Duration
	ChallengeTTL time.Duration
	// SessionApprovalTTL bounds an "allow for this session" answer; zero
	// means the human is not offered one.
	SessionApprovalTTL time.Duration
	// MaxArgumentBytes caps the redacted arguments an audit record keeps
	// (0: no cap); the digest of the whole is kept always.
	MaxArgumentBytes int
	// Voice is how refusals address the model in this mode: the tools
	// that carry verify_challenge and confirm_operation (transparent mode
	// has aqlguard_verify_challenge and no confirm_operation). The
	// channel's name is added from Channel.
	Voice aql.Voice
	// Log receives the guard's log lines; nil discards them.
	Log *slog.Logger
	// Watch sees every tool call (metrics, traces); nil for none.
	Watch Watcher
	// Now and Evaluate default to time.Now and evaluator.Evaluate.
	Now      func() time.Time
	Evaluate func(*policy.Policy, evaluator.Step) evaluator.Directive

	// mu guards what follows. It is held to read and to apply, never
	// across a store commit, a read of the database or a human's answer.
	// What a check has decided but not yet committed is a reservation
	// (reservedSteps, spending, reservedPause): other checks count it,
	// the principal's state (steps, failurePause, verifyPause, the
	// confirmations) changes only once the commit succeeded.
	mu sync.Mutex
	// commitMu orders this process's commits: each copies what it writes
	// from memory after the one before it committed, so an older copy
	// never overwrites a newer one. It is taken before mu, never inside
	// a transaction.
	commitMu     sync.Mutex
	steps        int
	failurePause bool
	verifyPause  *pause
	// reservedSteps are the steps counted by checks in flight;
	// reservedPause the verify pause a check in flight is committing;
	// reportedFailures the checks in flight whose step reported a
	// failure (the principal is paused from the report on, not from its
	// commit).
	reservedSteps    int
	reservedPause    *pause
	reportedFailures int
	// seenBlock is the verification id of the block this process last
	// saw, so a block set by another process is broadcast here once.
	seenBlock string
	// synced: syncedBlock was read at store generation syncedGen (sync).
	synced      bool
	syncedGen   uint64
	syncedBlock *store.Block
	// spending are the approvals a check in flight used (reserved): no
	// other check of this process may use them; the check's own commit
	// writes them as used, after it made sure in the store that no other
	// process used them first (spendsHold). Confirmations themselves
	// live in the store alone: every check reads the ones it needs there.
	spending   map[string]bool
	prunedDB   time.Time
	executions map[string]*Execution
	order      []*Execution // creation order, for stable broadcasts

	// turn is this process's turn to ask the human (one question at a
	// time, first come first served: blocked channel senders queue in
	// order); askings are the questions being asked, by token; bg lives
	// until Close and bounds every question.
	turn    chan struct{}
	askings map[string]*asking
	bg      context.Context
	stop    context.CancelFunc
	// asks are the questions' goroutines: Close waits for them to record
	// how each ended.
	asks sync.WaitGroup

	// beforeCommit, when set (by tests), runs once, before the next
	// commit's transaction: another process's write lands between a read
	// and the commit that depends on it.
	beforeCommit atomic.Pointer[func()]
}

// State is the guard's durable memory, *store.Store on bbolt: the guard
// loads snapshots, commits the changes it decided from one, and appends
// audit records, and needs nothing else of it, so a distributed backend
// can take bbolt's place without the guard changing (store/state.go).
type State interface {
	// Generation moves whenever any process commits a state change: what
	// was loaded at a generation holds while it stays.
	Generation(ctx context.Context) (uint64, error)
	// Load runs read on a consistent snapshot.
	Load(ctx context.Context, read func(store.View) error) error
	// Commit writes, in one durable transaction, the changes decide makes
	// of a snapshot, and returns the generation the state is at after it.
	// decide may run more than once and must change nothing outside its
	// result.
	Commit(ctx context.Context, decide func(store.View) (store.Changes, error)) (uint64, error)
	// Append writes an audit record that changes no state; AppendIf
	// writes records only while the generation is still gen, and reports
	// whether it did.
	Append(ctx context.Context, r store.Record) error
	AppendIf(ctx context.Context, gen uint64, recs ...store.Record) (bool, error)
	// QuestionTurn waits for the principal's turn to put a question to
	// the human, across the processes sharing the state; the returned
	// function ends the turn.
	QuestionTurn(ctx context.Context, principal string) (func(), error)
	// AuditKey keys the digests that stand for secrets in records.
	AuditKey() []byte
}

var _ State = (*store.Store)(nil)

// Action is one thing to check: a proxied call (Server set) or a reported
// step (Execution set).
type Action struct {
	Session   string
	Operation string
	Server    string
	Tool      string
	Category  policy.Category
	// ManagedCategory is the category a managed policy layer reads
	// (catalog.Operation.ManagedCategory; "": Category).
	ManagedCategory policy.Category
	Annotations     evaluator.Annotations
	Arguments       map[string]any
	Hint            string
	// Outcome is the previous step's outcome, for reported steps.
	Outcome string
	// Execution is the reporting execution, for reported steps.
	Execution *Execution
	// Token is a confirmation token the caller passed explicitly.
	Token string
	// Client is the MCP client the call came from, as it names itself
	// (shown to the human).
	Client string
	// Secrets are the arguments the tool's schema declares secret
	// (writeOnly, format password), in the server's spelling.
	Secrets []string
	// SharedSession says the session has no client of its own to bind a
	// session-wide approval to (WithSharedSession).
	SharedSession bool
	// Roles are what the tool's schema says of its arguments
	// (evaluator.Step.Roles).
	Roles map[string]policy.Role
	// Unresolved says what of the call could not be read exactly; the
	// evaluator then asks a human (evaluator.Step.Unresolved).
	Unresolved string

	// redacted and preview are what may be stored and shown of the
	// arguments (see redact.go), computed once per check by prepare.
	redacted map[string]any
	preview  string
}

// prepare computes what of the action may be written down or shown.
func (g *Guard) prepare(a Action) Action {
	if a.preview != "" {
		return a
	}
	if !a.reported() {
		a.redacted = g.redactorFor(a).redact(a.Arguments)
	}
	a.preview = actionPreview(a, a.redacted)
	return a
}

func (a Action) reported() bool { return a.Execution != nil }

// Verdict is the loop's answer for one action.
type Verdict struct {
	// Proceed says the action may run.
	Proceed   bool
	Directive evaluator.Directive
	// Err is the structured refusal (nil when Proceed).
	Err *aql.Error
	// Confirmation carries the token of a CONFIRMATION_REQUIRED refusal.
	Confirmation *aql.Confirmation
	// VerificationID names the challenge of a verify pause or a block.
	VerificationID string
	// Token is the confirmation token the decision used or opened.
	Token string
	// Approval is the standing approval the decision used.
	Approval string
	// storeDown says the store could not be reached: nothing more is
	// tried (each try would wait out the lock timeout again).
	storeDown bool
	// argsDigest is the decision record's argument digest, which the
	// outcome record repeats (so the arguments are encoded once).
	argsDigest string
	// Notifications are those generated by this check for the caller
	// itself (a reported step's own autonomy_pause).
	Notifications []Notification
}

var discardLog = slog.New(slog.DiscardHandler)

func (g *Guard) log() *slog.Logger {
	if g.Log != nil {
		return g.Log
	}
	return discardLog
}

func (g *Guard) now() time.Time {
	if g.Now != nil {
		return g.Now().UTC()
	}
	return time.Now().UTC()
}

// CurrentPolicy is the policy in force now.
func (g *Guard) CurrentPolicy() *policy.Policy { return g.pol() }

// Principal is the agent the guard answers for (the configured one;
// nothing the model sends changes it).
func (g *Guard) Principal() string {
	if p := g.pol(); p != nil {
		return p.Principal
	}
	return ""
}

func (g *Guard) pol() *policy.Policy {
	if p := g.current.Load(); p != nil {
		return p
	}
	return g.Policy
}

// SetPolicy puts a reloaded policy in force: every decision from now on is
// made under it; a decision made before stands (a call already allowed,
// or waiting for its human, finishes under the policy that decided it).
// Approvals are bound to the policy version, so none given under the old
// policy carries over. The principal must not change.
func (g *Guard) SetPolicy(p *policy.Policy) error {
	if cur := g.pol(); cur != nil && p.Principal != cur.Principal {
		return fmt.Errorf("the principal cannot change on a reload (%s → %s); restart aqlguard", cur.Principal, p.Principal)
	}
	g.current.Store(p)
	return nil
}

func (g *Guard) evaluate(s evaluator.Step) evaluator.Directive {
	if g.Evaluate != nil {
		return g.Evaluate(g.pol(), s)
	}
	return evaluator.Evaluate(g.pol(), s)
}

func (g *Guard) init() {
	if g.spending == nil {
		g.spending = map[string]bool{}
		g.executions = map[string]*Execution{}
		g.turn = make(chan struct{}, 1)
		g.askings = map[string]*asking{}
		g.bg, g.stop = context.WithCancel(context.Background())
	}
}

// maxCheckins bounds how many human check-ins one action may go through
// (step limit, then failure pause, then the action itself).
const maxCheckins = 3

// Check runs one action through the loop: hard block, pending
// verification, the evaluator, and the human where the evaluator asks for
// one. The decision, its audit record and the state it changes are
// written durably before Check returns; if they cannot be, the action is
// refused (fail closed). A code is shown only after its challenge is on
// disk.
func (g *Guard) Check(ctx context.Context, a Action) Verdict {
	began := g.now()
	a = g.prepare(a)
	w := &writes{exec: a.Execution}
	// The request's context bounds only the wait for a human (await).
	// What the check reads and writes in the store is the decision's,
	// and a decision is recorded even when the client cancels the call
	// or aqlguard shuts down: under a context of its own, bounded.
	rctx, cancel := context.WithTimeout(withRequest(context.WithoutCancel(ctx), ctx), recordWithin)
	defer cancel()
	v := g.check(rctx, a, w)
	return g.settle(rctx, a, v, w, began)
}

// recordWithin bounds what a decision or an answer may wait to be
// recorded once its request has ended (the store's own lock timeout
// bounds each transaction within it).
const recordWithin = 30 * time.Second

type requestKey struct{}

// withRequest keeps the request's own context in ctx, for the waits
// that end with it.
func withRequest(ctx, request context.Context) context.Context {
	return context.WithValue(ctx, requestKey{}, request)
}

// requestOf is the request's own context (ctx when none was kept).
func requestOf(ctx context.Context) context.Context {
	if r, ok := ctx.Value(requestKey{}).(context.Context); ok {
		return r
	}
	return ctx
}

// check carries out decide's rulings, round by round: it reads the facts,
// makes what a ruling asks for (a challenge, a question), and asks the
// human. It never holds the lock while a human is being asked.
func (g *Guard) check(ctx context.Context, a Action, w *writes) Verdict {
	g.mu.Lock()
	g.init()
	blk, err := g.blockForCheck(ctx)
	if err != nil {
		g.mu.Unlock()
		return g.unavailable(err, "the action is refused")
	}
	// A block or a pending verify pause refuses before anything else is
	// looked at (a token, a reported failure).
	stopped := blk != nil || g.pauseNow() != nil && g.now().Before(g.pauseNow().ExpiresAt)
	var explicit *Confirmation
	if a.Token != "" && !stopped {
		c, err := g.tokenFor(ctx, a)
		if err != nil {
			g.mu.Unlock()
			return Verdict{Err: err, Directive: evaluator.Directive{Reason: err.Message, Factors: []string{"confirmation token rejected"}}}
		}
		explicit = c
	}
	if a.Outcome == "failure" && !stopped {
		w.setFailurePause(true)
		w.reportedFailure = true
		g.reportedFailures++
	}
	for round := 0; round <= maxCheckins; round++ {
		if !stopped {
			w.steps++
			g.reservedSteps++
		}
		f := g.facts(a, blk, explicit, w)
		r := decide(f, g.evaluate)
		if r.kind == needHuman {
			h, err := g.humanFacts(ctx, a, r.binding)
			if err != nil {
				g.mu.Unlock()
				return g.unavailable(err, "the action is refused")
			}
			f.human = h
			if h.block != nil {
				// Blocked since the block was read: what humans said
				// matters no more (decide rules on the block first).
				blk, f.block = h.block, h.block
			}
			judged := r.directive // the same step: not evaluated twice
			r = decide(f, func(evaluator.Step) evaluator.Directive { return judged })
		}
		if p := g.verifyPause; r.clearPause && p != nil && p == f.pause {
			// (not if it changed while the lock was let go, or if the
			// lapsed pause was another call's reservation)
			g.verifyPause = nil
			g.clearNotifications(p.ID)
			g.broadcast(g.notification("status", "A verification challenge expired; actions are evaluated afresh",
				map[string]any{"verificationId": p.ID}, ""))
		}
		d := r.directive
		switch r.kind {
		case blocked:
			v := g.blockedRuling(a, r, w)
			g.mu.Unlock()
			return v
		case paused:
			v := g.pausedVerdict(a, r.pause) // reads the pause under g.mu
			g.mu.Unlock()
			return v
		case allow:
			g.mu.Unlock()
			return Verdict{Proceed: true, Directive: d}
		case hardBlock:
			v := g.hardBlock(a, d, w)
			g.mu.Unlock()
			return v
		case refused:
			g.mu.Unlock()
			return Verdict{Directive: d, Err: g.refusedByPolicy(a.Operation, d)}
		case verifyPause:
			v := g.verifyPauseFor(a, d, w)
			if w.pause != nil {
				g.reservedPause = w.pause
			}
			g.mu.Unlock()
			return v
		case standing:
			g.mu.Unlock()
			w.approval = r.approval.ID
			d.Continue = true
			d.Factors = append(d.Factors, "approval: a human allowed "+a.Server+"."+a.Tool+" for this session ("+r.approval.ID+")")
			return Verdict{Proceed: true, Directive: d, Approval: r.approval.ID}
		case approved:
			c := r.confirmation
			g.spendFor(c, w)
			g.checkinFor(c.Kind, w)
			if c.Kind == kindAction {
				g.mu.Unlock()
				d.Continue, d.Factors = true, append(d.Factors, "confirmation: approved by a human ("+c.Token+")")
				return Verdict{Proceed: true, Directive: d, Token: c.Token}
			}
			g.recount(c.Kind, w)
			continue
		case denied:
			g.mu.Unlock()
			dc := r.confirmation
			d.Factors = append(d.Factors, "confirmation: a human denied this very call at "+dc.DoneAt.Format(time.RFC3339)+
				"; it is refused without asking again until "+dc.ExpiresAt.Format(time.RFC3339))
			d.Reason = "A human denied this action (asked because: " + d.Reason + ")"
			return Verdict{Directive: d, Token: dc.Token, Err: g.deniedByHuman(a.Operation, dc)}
		}
		// ask
		c := r.confirmation
		if c == nil {
			var err error
			if c, err = g.newConfirmation(a, r.binding, d); err != nil {
				g.mu.Unlock()
				g.log().Error("creating a confirmation", "err", err)
				return Verdict{Err: aql.Internal("a confirmation could not be created"), Directive: d}
			}
			// The question is written before anyone is asked it: an answer
			// is recorded against a confirmation the store holds, and
			// another call (of this process or another) for the same
			// binding finds it there and joins it.
			g.unlocked(func() { c, err = g.openQuestion(ctx, c, a.Session) })
			if err != nil {
				g.mu.Unlock()
				g.log().Error("writing a confirmation", "err", err)
				return g.unavailable(err, "the question could not be recorded; the action is refused")
			}
		}
		g.mu.Unlock()
		answer, why := g.await(requestOf(ctx), c, g.InlineWait)
		g.mu.Lock()
		switch {
		case approves(answer) && !g.spending[c.Token]:
			// The answer is recorded in the store (recordAnswer): approved
			// there, unless another process used it since, which the
			// commit finds (spendsHold).
			c = c.with(statusApproved)
			g.spendFor(c, w)
			g.checkinFor(c.Kind, w)
			g.clearNotifications(c.Token)
			if c.Kind == kindAction {
				g.mu.Unlock()
				d.Continue = true
				d.Factors = append(d.Factors, "confirmation: a human allowed it")
				if answer == verify.AllowSession {
					d.Factors = append(d.Factors, "approval: and allowed "+a.Server+"."+a.Tool+" for the rest of this session")
				}
				return Verdict{Proceed: true, Directive: d, Token: c.Token}
			}
			g.recount(c.Kind, w)
			continue
		case approves(answer):
			// Another call waiting on the same question used the one
			// approval first: ask about this one again.
			continue
		case answer == verify.Deny:
			g.clearNotifications(c.Token)
			g.mu.Unlock()
			d.Factors = append(d.Factors, "confirmation: a human denied it")
			d.Reason = "A human denied this action (asked because: " + d.Reason + ")"
			return Verdict{Directive: d, Token: c.Token, Err: g.deniedByHuman(a.Operation, nil)}
		}
		if why != "" {
			d.Factors = append(d.Factors, why)
			g.broadcast(g.notification("error", "A human could not be asked: "+why, map[string]any{"operation": a.Operation}, ""))
		}
		v := g.pending(a, c, d, why)
		g.mu.Unlock()
		return v
	}
	g.mu.Unlock()
	d := evaluator.Directive{Decision: evaluator.NeedsConfirm, Enforced: true,
		Reason: "Too many human check-ins for one action", Factors: []string{"check-ins: more than " + fmt.Sprint(maxCheckins)}}
	return Verdict{Directive: d, Err: aql.Refusal{Kind: aql.RefusalCheckins, Operation: a.Operation}.Error(g.voice())}
}

// voice is how refusals address the model: the mode's Voice, with the
// channel through which the human is reached.
func (g *Guard) voice() aql.Voice {
	v := g.Voice
	if g.Channel != nil {
		v.Channel = g.Channel.Name()
	}
	return v
}

// facts reads what decide needs from this process's memory: the
// principal's state, with what checks in flight reserved and what this
// check (w) has done so far. g.mu is held.
func (g *Guard) facts(a Action, blk *store.Block, explicit *Confirmation, w *writes) facts {
	p := g.pol()
	steps := g.steps + g.reservedSteps
	if w.reset {
		steps = w.steps // this check lifted the step limit: counted afresh
	}
	failurePause := g.failurePause || g.reportedFailures > 0
	if w.failurePause != nil {
		failurePause = *w.failurePause
	}
	if explicit != nil && g.spending[explicit.Token] {
		explicit = nil // a check in flight is using it
	}
	return facts{now: g.now(), principal: p.Principal, version: p.Version, action: a, block: blk, pause: g.pauseNow(),
		steps: steps, failurePause: failurePause, explicit: explicit,
		sessionApprovals: g.SessionApprovalTTL > 0}
}

// pauseNow is the verify pause in force, or the one a check in flight is
// committing (counted as in force: a pause must not let a call slip
// through while it is written). g.mu is held.
func (g *Guard) pauseNow() *pause {
	if g.verifyPause != nil {
		return g.verifyPause
	}
	return g.reservedPause
}

// humanFacts reads what humans said that may bear on binding b, in the
// store, where every process on the state directory writes it: standing
// approvals (only when one could apply) and the principal's
// confirmations, with the block in the same snapshot. Whichever approval
// decide picks, settle checks in the store, in the transaction that
// spends it, that nobody spent it first.
// g.mu is held on entry and return, and let go across the read.
func (g *Guard) humanFacts(ctx context.Context, a Action, b binding) (*humanFacts, error) {
	wantApprovals := b.kind == kindAction && !a.reported() && a.Session != "" && !a.SharedSession && g.SessionApprovalTTL > 0
	principal := g.pol().Principal
	var approvals []store.Approval
	var stored []store.Confirmation
	var block *store.Block
	var err error
	g.unlocked(func() {
		err = g.State.Load(ctx, func(st store.View) error {
			if block, err = st.Block(principal); err != nil {
				return err
			}
			if wantApprovals {
				if approvals, err = st.Approvals(); err != nil {
					return err
				}
			}
			stored, err = st.Confirmations(principal, "")
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	h := &humanFacts{approvals: approvals, block: block}
	for _, r := range stored {
		c := confirmationFrom(r)
		switch {
		case r.Status == statusPending || r.Status == statusApproved:
			if !g.spending[r.Token] { // reserved by a check in flight
				h.open = append(h.open, c)
			}
		default:
			h.spent = append(h.spent, c)
		}
	}
	return h, nil
}

// recount undoes the step count of an action re-evaluated after a human
// lifted a failure pause: it is still the same step. After a step-limit
// check-in the count was reset, and the action becomes step 1.
func (g *Guard) recount(kind string, w *writes) {
	if kind == kindFailure {
		w.steps--
		g.reservedSteps--
	}
}

// blockedRuling refuses an action of a blocked principal. A block whose
// code has expired gets a fresh one (settle writes it only if the block
// is still the one it replaces).
func (g *Guard) blockedRuling(a Action, r ruling, w *writes) Verdict {
	b := r.block
	factors := []string{"hard block: set " + b.BlockedAt.Format(time.RFC3339) + ", lifted only by verify_challenge or an admin"}
	if r.reissue {
		g.reissue(b, w)
		if w.block != nil {
			factors = append(factors, "verification "+b.VerificationID+" expired; a new code is shown for verification "+w.block.VerificationID)
			b = w.block
		}
	}
	return g.blockedVerdict(a, b, factors...)
}

// pausedVerdict refuses an action while a verify-tier challenge is
// pending. g.mu is held.
func (g *Guard) pausedVerdict(a Action, p *pause) Verdict {
	d := evaluator.Directive{Decision: evaluator.NeedsVerify, Enforced: true, Tier: evaluator.Verify,
		Reason:  "Paused: verification " + p.ID + " is pending; a human must enter the code shown to them",
		Factors: []string{"verify pause: until verify_challenge succeeds or " + p.ExpiresAt.Format(time.RFC3339)}}
	err := g.verificationError(a.Operation, d.Reason, p.ID, p.ExpiresAt)
	if p.notShown {
		err = g.codeNotShown(err, "it was not shown when the agent was paused")
	}
	return Verdict{Directive: d, VerificationID: p.ID, Err: err}
}

// refusedByPolicy is the refusal of an action a refuse pattern or rule
// matched: this action only; the agent may go on with others.
func (g *Guard) refusedByPolicy(operation string, d evaluator.Directive) *aql.Error {
	return aql.Refusal{Kind: aql.RefusalRefused, Operation: operation, Reason: d.Reason}.Error(g.voice())
}

// deniedByHuman is the refusal of an action a human denied; dc is the
// earlier denial a retry ran into (nil: denied just now).
func (g *Guard) deniedByHuman(operation string, dc *Confirmation) *aql.Error {
	r := aql.Refusal{Kind: aql.RefusalDenied, Operation: operation}
	if dc != nil {
		r.At, r.ExpiresAt = dc.DoneAt, dc.ExpiresAt
	}
	return r.Error(g.voice())
}

// checkinFor notes a check-in a human approved, for the check writing
// w: applied to the principal's state when its commit succeeds.
func (g *Guard) checkinFor(kind string, w *writes) {
	switch kind {
	case kindSteps:
		g.reservedSteps -= w.steps // counted afresh from here
		w.steps, w.reset = 0, true
	case kindFailure:
		w.setFailurePause(false)
	}
}

func (g *Guard) newConfirmation(a Action, b binding, d evaluator.Directive) (*Confirmation, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	now := g.now()
	c := &Confirmation{
		Token: token, Kind: b.kind, Principal: g.pol().Principal, Server: b.server, Tool: a.Tool, Operation: b.operation, Client: a.Client,
		AllowSession: b.kind == kindAction && !a.reported() && !d.ArgumentBound && a.Session != "" && !a.SharedSession && g.SessionApprovalTTL > 0,
		Digest:       b.digest, PolicyVersion: g.pol().Version, Session: a.Session,
		Action: a.preview, Arguments: a.redacted, Reason: d.Reason, Tier: string(d.Tier),
		Category: string(a.Category), Stage: string(d.Stage), Rule: d.Matched, Risk: d.Risk,
		Status: statusPending, CreatedAt: now, ExpiresAt: now.Add(g.ConfirmTTL),
	}
	if b.kind != kindAction {
		c.Action = b.operation + " (next action: " + a.preview + ")"
	}
	return c, nil
}

// openQuestion writes c, a new question, unless the store already holds
// a pending one for the same binding (a call of this process or another
// opened it since this check read): then that one is returned, to be
// joined, and c is dropped. g.mu must not be held.
func (g *Guard) openQuestion(ctx context.Context, c *Confirmation, session string) (*Confirmation, error) {
	b := binding{kind: c.Kind, server: c.Server, operation: c.Operation, digest: c.Digest}
	now := g.now()
	var joined *Confirmation
	err := g.commitState(ctx, func(st store.View) (store.Changes, error) {
		joined = nil
		pending, err := st.Confirmations(c.Principal, statusPending)
		if err != nil {
			return store.Changes{}, err
		}
		for _, r := range pending {
			if o := confirmationFrom(r); o.joinable(b, c.Principal, c.PolicyVersion, session, now) {
				joined = o
				return store.Changes{}, nil
			}
		}
		return store.Changes{Confirmations: []store.Confirmation{c.record()}}, nil
	})
	if err != nil {
		return nil, err
	}
	if joined != nil {
		return joined, nil
	}
	return c, nil
}

// pending is the refusal of an action whose confirmation is still open:
// CONFIRMATION_REQUIRED with the token, and the notification the spec
// names for it. unasked says why no human could be asked ("": the
// question is on their screen, or waiting for its turn).
func (g *Guard) pending(a Action, c *Confirmation, d evaluator.Directive, unasked string) Verdict {
	// Saying that a window is up when none could be shown would send the
	// user looking for it: unasked says why none is (Why).
	res := aql.Refusal{Kind: aql.RefusalPending, Operation: a.Operation, Reason: d.Reason, DangerLevel: DangerLevel(d.Risk),
		Token: c.Token, ExpiresAt: c.ExpiresAt, Why: strings.TrimPrefix(unasked, "confirmation: ")}.Pending(g.voice())
	v := Verdict{Directive: d, Err: res.Err, Token: c.Token, Confirmation: res.Confirmation}
	meta := map[string]any{"operation": a.Operation, "reason": d.Reason, "confirmationToken": c.Token}
	if c.Kind == kindAction && !a.reported() && d.Stage == evaluator.StagePattern {
		meta["level"] = "CONFIRM_SINGLE_USE"
		g.broadcast(g.notification("permission_pending", fmt.Sprintf("Operation '%s' requires confirmation", a.Operation), meta, c.Token))
		return v
	}
	n := g.notification("autonomy_pause", "Paused: "+d.Reason, meta, c.Token)
	if a.reported() {
		v.Notifications = append(v.Notifications, n)
	} else {
		g.broadcast(n)
	}
	return v
}

// DangerLevel maps a risk score to danger-levels.md 8.1's names.
func DangerLevel(risk int) string {
	switch {
	case risk <= 15:
		return "safe"
	case risk <= 40:
		return "reversible"
	case risk <= 60:
		return "destructive"
	case risk <= 85:
		return "dangerous"
	}
	return "forbidden"
}
