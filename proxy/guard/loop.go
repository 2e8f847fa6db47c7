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
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/confirm"
	"github.com/aqlguard/aqlguard/proxy/desk"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/proxy/unwritten"
	"github.com/aqlguard/aqlguard/proxy/watch"
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
	// required: without it every check fails closed. Every decision is
	// one State.Commit (docs/state.md).
	State store.State
	// Process names this process in audit records.
	Process string
	// SessionClient names the credential a session authenticated with
	// (the audit record's client); nil: none.
	SessionClient func(session string) string
	// Channel reaches the human, through the principal's desk
	// (proxy/desk, made on the first use); nil means no channel, so
	// nothing can be approved (fail closed).
	Channel verify.Channel
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
	// VerifyTool names, for the human who is shown a code, where the
	// model passes it on in this mode ("aqlguard_verify_challenge",
	// "mcp_aql_create, operation verify_challenge").
	VerifyTool string
	// Log receives the guard's log lines; nil discards them.
	Log *slog.Logger
	// Board, when set, is shared with the client's other aqlguard
	// processes (flows.Board: a client that runs one per server).
	Board *flows.Board
	// Watch sees every tool call (metrics, traces); nil for none.
	Watch watch.Watcher
	// Now and Evaluate default to time.Now and evaluator.Evaluate.
	Now      func() time.Time
	Evaluate func(*policy.Policy, evaluator.Step) evaluator.Directive

	// mu guards the memory below. It is held briefly to read or change
	// it, never across a store commit, a read of the database or a
	// human's answer. The principal's memory (mem) changes only in the
	// hook of a commit that was written (commit), in commit order: a
	// decision reads the memory every earlier commit of this process
	// left, so nothing needs reserving while a commit is in flight.
	mu  sync.Mutex
	mem memory
	// seenBlock is the verification id of the block this process last
	// saw, so a block set by another process is broadcast here once.
	seenBlock  string
	prunedDB   time.Time
	executions map[string]*Execution
	order      []*Execution // creation order, for stable broadcasts

	// desk is the principal's desk (proxy/desk): every question put to
	// the human and every code shown goes through it. bg lives until
	// Close and bounds the watch and an unwritten block's retries,
	// running are those goroutines: Close waits for them.
	desk    *desk.Desk
	bg      context.Context
	stop    context.CancelFunc
	running sync.WaitGroup

	// flows are the flows of this principal's sessions (flows.go).
	flowsOnce sync.Once
	flows     *flows.Sessions

	// hold holds a hard block decided while the state could not be
	// written, until it is (proxy/unwritten); lot says whether Park wrote
	// the memory to the state, after which every commit is refused
	// (proxy/parking). Each has its own lock, a leaf.
	hold unwritten.Hold
	lot  parking.Lot

	// beforeCommit, when set (by tests), runs once, before the next
	// commit: another process's write lands before a decision reads.
	beforeCommit atomic.Pointer[func()]
}

// memory is what the guard keeps of its principal in this process
// alone: the step count, the pause for a reported failure, the verify
// pause (spec 8.8.3: not persisted). It follows the state: a commit's
// hook (store.Changes.Then) sets it to what that commit's decision left.
type memory struct {
	steps        int
	failurePause bool
	pause        *pause
}

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
	// SharedSession says the session is shared by clients that hold no
	// secret of their own (relay.Session.Shared): no session-wide
	// approval is offered or applies.
	SharedSession bool
	// Effects, EffectSource, EffectWhy, Roles and Modeled are the tool's
	// effect model (evaluator.Step has them).
	Effects      policy.Effects
	EffectSource policy.EffectSource
	EffectWhy    string
	Confined     bool
	// PrivateSource and UntrustedSource say what the tool's results are
	// to the session's flows, by its profile (effects.Model).
	PrivateSource, UntrustedSource bool
	Roles                          map[string]policy.Role
	Modeled                        bool
	// Places, Roots, RootsKnown and Home are the call's paths and the
	// server's roots, read by the front (evaluator.Step has them).
	Places     []evaluator.Place
	Roots      []string
	RootsKnown bool
	Home       string
	// RootsOf says whose the roots are, for a question (evaluator.Step.RootsOf).
	RootsOf string
	// Unresolved says what of the call could not be read exactly; the
	// evaluator then asks a human (evaluator.Step.Unresolved).
	Unresolved string
	// Flow is what the session has read that counts (flows.go): the
	// guard fills it in.
	Flow evaluator.Flow
	// Remote says the server is reached over the network (Flow.Remote).
	Remote bool

	// redacted and preview are what may be stored and shown of the
	// arguments (see redact.go), digest what binds them, and written
	// what the audit record keeps of them: computed once per check by
	// prepare, outside any commit.
	redacted map[string]any
	preview  string
	digest   string
	written  redact.Written
}

// prepare computes what of the action may be written down or shown
// (proxy/redact).
func (g *Guard) prepare(a Action) Action {
	if a.preview != "" {
		return a
	}
	rc := a.redactCall()
	var redacted map[string]any
	if a.reported() {
		redacted = map[string]any{"next_action_hint": a.Hint}
	} else {
		a.redacted = redact.Arguments(g.auditKey(), g.pol(), rc)
		redacted = a.redacted
	}
	a.preview = redact.Preview(rc, a.redacted)
	a.digest = a.argsDigest()
	a.written = redact.ForRecord(redacted, g.MaxArgumentBytes)
	return a
}

// redactCall is what proxy/redact reads of a.
func (a Action) redactCall() redact.Call {
	return redact.Call{Operation: a.Operation, Server: a.Server, Tool: a.Tool, Arguments: a.Arguments, Secrets: a.Secrets,
		Hint: a.Hint, Reported: a.reported(), Roles: a.Roles, Modeled: a.Modeled, Effects: a.Effects,
		EffectSource: a.EffectSource, Places: a.Places, Roots: a.Roots, RootsKnown: a.RootsKnown}
}

// showing is what a human is shown of a's call; nil for a reported step
// and an action without a server.
func (g *Guard) showing(a Action) *redact.Shown {
	if a.reported() || a.Server == "" {
		return nil
	}
	a = g.prepare(a)
	return redact.Show(g.auditKey(), g.pol(), a.redactCall(), a.redacted, a.preview, a.digest)
}

// auditKey is the state's key for the digests secrets are replaced by.
func (g *Guard) auditKey() []byte {
	if g.State == nil {
		return nil
	}
	return g.State.AuditKey()
}

// argsDigest is the digest that binds the action's arguments (a
// reported step's: its hint).
func (a Action) argsDigest() string {
	if a.digest != "" {
		return a.digest
	}
	if a.reported() {
		return confirm.Digest(map[string]any{"next_action_hint": a.Hint})
	}
	return confirm.Digest(a.Arguments)
}

func (a Action) reported() bool { return a.Execution != nil }

// Verdict is the loop's answer for one action.
type Verdict struct {
	// Proceed says the action may run.
	Proceed   bool
	Directive evaluator.Directive
	// Refusal says why not (nil when Proceed, and when ClientAsks).
	Refusal *refusal.Refusal
	// ClientAsks says the action waits for the client to ask its user
	// (CheckHook): neither allowed nor refused by the guard.
	ClientAsks bool
	// VerificationID names the challenge of a verify pause or a block.
	VerificationID string
	// Token is the confirmation token the decision used or opened.
	Token string
	// Approval is the standing approval the decision used.
	Approval string
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

func (g *Guard) init() {
	g.initDesk()
	if g.executions == nil {
		g.executions = map[string]*Execution{}
		g.bg, g.stop = context.WithCancel(context.Background())
		if g.State != nil {
			g.running.Add(1)
			go g.watch(g.bg)
		}
	}
}

// initDesk makes the principal's desk, on the Channel set then. g.mu is
// held.
func (g *Guard) initDesk() {
	if g.desk == nil {
		cfg := desk.Config{Channel: g.Channel, Principal: g.Principal, Now: g.now, Log: g.Log}
		if g.State != nil {
			cfg.Turn = g.State.QuestionTurn
		}
		g.desk = desk.New(cfg)
	}
}

// maxCheckins bounds how many human check-ins one action may go through
// (step limit, then failure pause, then the action itself).
const maxCheckins = 3

// maxAsks bounds how many questions one action may wait on (an approval
// another call used first makes it ask again).
const maxAsks = 2 * (maxCheckins + 1)

// Check runs one action through the loop: hard block, pending
// verification, the evaluator, and the human where the evaluator asks for
// one. The decision, its audit record and the state it changes are
// written durably before Check returns; if they cannot be, the action is
// refused (fail closed). A code is shown only after its challenge is on
// disk.
//
// Each step is one State.Commit in which decide runs on the state as it
// is (commits are serialised, so nothing can change between the decision
// and its write); the principal's memory follows in the commit's hook.
// Between commits the guard asks the human, holding no lock; the next
// commit decides again, on the answer as the state holds it.
func (g *Guard) Check(ctx context.Context, a Action) Verdict {
	return g.check(ctx, a, false)
}

// CheckHook is Check for a tool of the client's own (its shell, its file
// edits), put to the guard by the client's hook (package hook): the same
// loop, state and records, except that where the guard would put a
// confirmation question about the call to a human and clientAsks is
// set, it asks nothing and returns ClientAsks, for the client to ask its
// user in its own prompt (recorded as "ask_client"). What the guard
// settles with a code (a block, a verify pause) and its check-ins (the
// step limit, a reported failure), whose answers change its state, stay
// the guard's: through its own channel, never the client's prompt.
func (g *Guard) CheckHook(ctx context.Context, a Action, clientAsks bool) Verdict {
	return g.check(ctx, a, clientAsks)
}

func (g *Guard) check(ctx context.Context, a Action, clientAsks bool) Verdict {
	began := g.now()
	a = g.prepare(a)
	// The request's context bounds only the wait for a human (await).
	// What the check reads and writes in the store is the decision's,
	// and a decision is recorded even when the client cancels the call
	// or aqlguard shuts down: under a context of its own, bounded.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWithin)
	defer cancel()
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	pol := g.pol() // one policy decides the whole check
	if u := g.hold.Held(); u != nil {
		if v, held := g.holdUnwritten(rctx, a, u); held {
			return v
		}
	}
	c := &check{g: g, a: a, pol: pol, began: began, clientAsks: clientAsks}
	for asks := 0; ; asks++ {
		var out round
		err := g.commit(rctx, func(v store.View, m *memory) (store.Changes, error) {
			out = round{}
			return c.decide(v, m, &out)
		})
		if err != nil {
			g.log().Error("the decision could not be recorded; the action is refused", "operation", a.Operation, "err", err)
			if v, ok := g.blockUnwritten(c, out, err); ok {
				return v
			}
			return g.unavailable(err, "the action is refused")
		}
		c.reported = c.reported || out.reported
		if out.ask == nil {
			return g.shown(rctx, a, out)
		}
		if asks == maxAsks {
			return g.refuseAsks(rctx, a, began)
		}
		if c.shown == nil {
			c.shown = g.showing(a)
		}
		answer, why := g.book(g.pol()).Await(ctx, out.ask, g.InlineWait, c.shown)
		if c.asked == nil {
			c.asked = map[string]ruling.Answered{}
		}
		c.asked[out.ask.Token] = ruling.Answered{Answer: answer, Why: why}
	}
}

// recordWithin bounds what a decision or an answer may wait to be
// recorded once its request has ended (the store's own lock timeout
// bounds each transaction within it).
const recordWithin = 30 * time.Second

// check is one action on its way through the loop, across its commits.
type check struct {
	g     *Guard
	a     Action
	pol   *policy.Policy
	began time.Time
	// asked are the questions this check waited on, by token, with the
	// answer it got (the state holds what became of it).
	asked map[string]ruling.Answered
	// reported says the step's reported failure is in force (committed).
	reported bool
	// shown is what a human is shown of the call, once one is asked.
	shown *redact.Shown
	// clientAsks: a confirmation is the client's to ask (CheckHook).
	clientAsks bool
	// judged memoises the evaluator by what of the memory it reads
	// (a commit run again, a check-in, the next commit after a question).
	judged []judgedStep
}

type judgedStep struct {
	steps     int
	outcome   string
	directive evaluator.Directive
}

// judge is the evaluator on st, evaluated once per step number and
// outcome.
func (c *check) judge(st evaluator.Step) evaluator.Directive {
	for _, j := range c.judged {
		if j.steps == st.StepNumber && j.outcome == st.Outcome {
			return j.directive
		}
	}
	var d evaluator.Directive
	if c.g.Evaluate != nil {
		d = c.g.Evaluate(c.pol, st)
	} else {
		d = evaluator.Evaluate(c.pol, st)
	}
	c.judged = append(c.judged, judgedStep{st.StepNumber, st.Outcome, d})
	return d
}

// round is what one commit of a check decided: the verdict, or the
// question to wait on before the next commit.
type round struct {
	verdict Verdict
	// ask is the question to wait for (nil: the check is decided).
	ask *confirm.Confirmation
	// show carries the code of a challenge the commit wrote, to the
	// channel; block and pause are what it set.
	show  *challenge.Code
	block *store.Block
	pause *pause
	// reported says the commit put the step's reported failure in force.
	reported bool
}

// decide is one commit of the check: facts from the view and the
// memory, decide, and the changes that carry the ruling out. m is the
// memory as every earlier commit left it; what decide changes in it
// becomes the memory once this commit is written.
func (c *check) decide(v store.View, m *memory, out *round) (store.Changes, error) {
	g, a, pol := c.g, c.a, c.pol
	var ch store.Changes
	var then []func()
	f := ruling.Facts{Now: g.now(), Principal: pol.Principal, Version: pol.Version, Call: a.call(),
		SessionApprovals: g.SessionApprovalTTL > 0, Asked: c.asked}
	var err error
	if f.Block, err = v.Block(pol.Principal); err != nil {
		return ch, err
	}
	if p := m.pause; p != nil && f.Block == nil {
		// Verified through another process: the pause is over.
		sc, err := v.Challenge(p.ID)
		if err != nil {
			return ch, err
		}
		if sc != nil && sc.Used {
			m.pause = nil
			then = append(then, func() { g.clearNotifications(p.ID) })
		}
	}
	if m.pause != nil {
		f.Pause = &m.pause.Pause
	}
	if a.reported() {
		if f.Execution, err = v.Execution(a.Execution.ID); err != nil {
			return ch, err
		}
	}
	stopped := f.Block != nil || f.Pause != nil && f.Now.Before(f.Pause.ExpiresAt)
	if a.Token != "" && !stopped {
		explicit, refusal := g.book(pol).ForCall(v, a.Token, a.Operation, a.Server, a.argsDigest())
		if refusal != nil {
			out.verdict = Verdict{Refusal: refusal, Directive: evaluator.Directive{Reason: refusal.Say, Factors: []string{"confirmation token rejected"}}}
			return c.finish(m, out, ch, then, f, false)
		}
		f.Explicit = explicit
	}
	if a.Outcome == "failure" && !stopped && !c.reported {
		m.failurePause, out.reported = true, true
	}
	for checkins := 0; ; checkins++ {
		f.Steps, f.FailurePause = m.steps+1, m.failurePause
		r := ruling.Decide(f, c.judge)
		if r.Kind == ruling.NeedHuman {
			approvals := r.Binding.Kind == ruling.BindAction && !a.reported() && a.Session != "" && !a.SharedSession
			if f.Human, err = g.book(pol).Human(v, approvals); err != nil {
				return ch, err
			}
			judged := r.Directive // the same step: not evaluated twice
			r = ruling.Decide(f, func(evaluator.Step) evaluator.Directive { return judged })
		}
		if p := m.pause; r.ClearPause && p != nil {
			m.pause, f.Pause = nil, nil
			then = append(then, func() {
				g.clearNotifications(p.ID)
				g.broadcast(g.notification("status", "A verification challenge expired; actions are evaluated afresh",
					map[string]any{"verificationId": p.ID}, ""))
			})
		}
		switch r.Kind {
		case ruling.Approved:
			ch.Confirmations = append(ch.Confirmations, ruling.Spend(r.Confirmation, g.now(), confirm.UseID()))
			if r.Confirmation.Kind != ruling.BindAction {
				if checkins == maxCheckins {
					out.verdict = tooManyCheckins(g, a)
					return c.finish(m, out, ch, then, f, true)
				}
				m.steps, m.failurePause = ruling.CheckedIn(r.Confirmation.Kind, m.steps, m.failurePause)
				// A lifted pause: the same action is judged again (the
				// view does not hold this commit's own use of it).
				f.Human.Drop(r.Confirmation.Token)
				continue
			}
		case ruling.Ask:
			if c.clientAsks && r.Binding.Kind == ruling.BindAction {
				// A check-in (the step limit, a failure) stays the
				// guard's: only its channel's answer can reset them.
				d := r.Directive
				d.Factors = append(d.Factors, "hook: the client asks its user, in its own prompt")
				out.verdict = Verdict{Directive: d, ClientAsks: true}
				return c.finish(m, out, ch, then, f, true)
			}
			q := r.Confirmation
			if q == nil {
				call := confirm.Call{Session: a.Session, Tool: a.Tool, Client: a.Client, Reported: a.reported(), SharedSession: a.SharedSession,
					Preview: a.preview, Arguments: a.redacted, Category: string(a.Category), Does: a.EffectWhy, Carried: a.Flow.Carried}
				if q, err = g.book(pol).New(call, r.Binding, r.Directive); err != nil {
					g.log().Error("creating a confirmation", "err", err)
					out.verdict = Verdict{Refusal: refusal.Fail("a confirmation could not be created", nil), Directive: r.Directive}
					return c.finish(m, out, ch, then, f, true)
				}
				// The question is written before anyone is asked it: an
				// answer is recorded against a confirmation the store
				// holds, and another call for the same binding finds it
				// there and joins it.
				ch.Confirmations = append(ch.Confirmations, *q)
			}
			out.ask = q
			ch.Then = thenAll(then)
			return ch, nil
		}
		out.verdict = c.rule(r, m, out, &then)
		return c.finish(m, out, ch, then, f, r.Kind != ruling.Blocked && r.Kind != ruling.Paused && r.Kind != ruling.Finished)
	}
}

// rule is the verdict of a final ruling, with what it writes (in out)
// and what memory does once it is written.
func (c *check) rule(r ruling.Ruling, m *memory, out *round, then *[]func()) Verdict {
	g, a := c.g, c.a
	d := r.Directive
	switch r.Kind {
	case ruling.Blocked:
		b := r.Block
		factors := []string{"hard block: set " + b.BlockedAt.Format(time.RFC3339) + ", lifted only by verify_challenge or an admin"}
		if r.Reissue {
			if nb, show := g.reissue(b); nb != nil {
				factors = append(factors, "verification "+b.VerificationID+" expired; a new code is shown for verification "+nb.VerificationID)
				b, out.block, out.show = nb, nb, show
			}
		}
		return g.blockedVerdict(a, b, factors...)
	case ruling.Finished:
		return finishedVerdict(a.Execution, r.Execution)
	case ruling.Paused:
		return g.pausedVerdict(a, m.pause) // r.Pause is m.pause's
	case ruling.Allow:
		return Verdict{Proceed: true, Directive: d}
	case ruling.HardBlock:
		v, b, show := g.hardBlock(a, d)
		out.block, out.show = b, show
		return v
	case ruling.Refused:
		return Verdict{Directive: d, Refusal: refusedByPolicy(a.Operation, d)}
	case ruling.VerifyPause:
		v, p, show := g.verifyPauseFor(a, d)
		out.pause, out.show = p, show
		if p != nil {
			m.pause = p
			n := g.notification("autonomy_pause", "Paused for out-of-band verification: "+d.Reason,
				map[string]any{"operation": a.Operation, "reason": d.Reason, "verificationId": p.ID}, p.ID)
			if a.reported() {
				v.Notifications = append(v.Notifications, n)
			} else {
				*then = append(*then, func() { g.broadcast(n) })
			}
		}
		return v
	case ruling.Standing:
		d.Continue = true
		d.Factors = append(d.Factors, "approval: a human allowed "+a.Server+"."+a.Tool+" for this session ("+r.Approval.ID+")")
		return Verdict{Proceed: true, Directive: d, Approval: r.Approval.ID}
	case ruling.Approved:
		q := r.Confirmation
		*then = append(*then, func() { g.clearNotifications(q.Token) })
		d.Continue = true
		if ans, mine := c.asked[q.Token]; mine {
			d.Factors = append(d.Factors, "confirmation: a human allowed it")
			if ans.Answer == verify.AllowSession {
				d.Factors = append(d.Factors, "approval: and allowed "+a.Server+"."+a.Tool+" for the rest of this session")
			}
			if ans.Answer == verify.AllowForget && q.Forget {
				d.Factors = append(d.Factors, "flows: and cleared what this session had read")
				*then = append(*then, func() { g.ForgetFlows(a.Session) })
			}
		} else {
			d.Factors = append(d.Factors, "confirmation: approved by a human ("+q.Token+")")
		}
		return Verdict{Proceed: true, Directive: d, Token: q.Token}
	case ruling.Denied:
		q := r.Confirmation
		d.Reason = "A human denied this action (asked because: " + d.Reason + ")"
		if _, mine := c.asked[q.Token]; mine {
			*then = append(*then, func() { g.clearNotifications(q.Token) })
			d.Factors = append(d.Factors, "confirmation: a human denied it")
			return Verdict{Directive: d, Token: q.Token, Refusal: confirm.Denied(a.Operation, nil)}
		}
		d.Factors = append(d.Factors, "confirmation: a human denied this very call at "+q.DoneAt.Format(time.RFC3339)+
			"; it is refused without asking again until "+q.ExpiresAt.Format(time.RFC3339))
		return Verdict{Directive: d, Token: q.Token, Refusal: confirm.Denied(a.Operation, q)}
	}
	// unanswered: the question this check waited on is still open.
	q := r.Confirmation
	if r.Why != "" {
		d.Factors = append(d.Factors, r.Why)
		n := g.notification("error", "A human could not be asked: "+r.Why, map[string]any{"operation": a.Operation}, "")
		*then = append(*then, func() { g.broadcast(n) })
	}
	v, n := g.pending(a, q, d, r.Why)
	if n != nil {
		*then = append(*then, func() { g.broadcast(*n) })
	}
	return v
}

// finish completes the changes of the commit that decides the check: the
// step counted (stepped: unless a block or pause stopped it), the
// execution's step, the decision's record, and what memory and the
// process's notifications do once it is written.
func (c *check) finish(m *memory, out *round, ch store.Changes, then []func(), f ruling.Facts, stepped bool) (store.Changes, error) {
	g, a := c.g, c.a
	if stepped {
		m.steps++
	}
	if b := out.block; b != nil {
		ch.Blocks = append(ch.Blocks, *b)
		then = append(then, func() {
			g.observe(b, a.Operation)
			g.log().Warn("principal hard-blocked", "principal", b.Principal, "reason", b.Reason, "verification", b.VerificationID)
		})
	} else {
		b := f.Block
		then = append(then, func() { g.observe(b, "") })
	}
	if out.show != nil {
		ch.Challenges = append(ch.Challenges, out.show.Challenge)
	}
	if e := a.Execution; e != nil {
		rec := f.Execution
		if next := ruling.Counted(rec); next != nil {
			rec = next
			ch.Executions = append(ch.Executions, *next)
		}
		then = append(then, func() { e.refresh(rec) })
	}
	rec := g.decisionRecord(a, out.verdict, c.began)
	out.verdict.argsDigest = rec.ArgsSHA256
	ch.Records = append(ch.Records, rec)
	ch.Then = thenAll(then)
	return ch, nil
}

// thenAll runs fs in order (a commit's hook; g.mu is held).
func thenAll(fs []func()) func(uint64) {
	return func(uint64) {
		for _, f := range fs {
			f()
		}
	}
}

// tooManyCheckins is the refusal of an action that went through more
// check-ins than one action may.
func tooManyCheckins(g *Guard, a Action) Verdict {
	d := evaluator.Directive{Decision: evaluator.NeedsConfirm, Enforced: true,
		Reason: "Too many human check-ins for one action", Factors: []string{"check-ins: more than " + fmt.Sprint(maxCheckins)}}
	return Verdict{Directive: d, Refusal: refusal.Stop(refusal.Checkins, "", map[string]any{"operation": a.Operation}, time.Time{}, time.Time{})}
}

// refuseAsks records and returns the refusal of an action that asked
// more often than one action may (approvals another call kept using
// first).
func (g *Guard) refuseAsks(ctx context.Context, a Action, began time.Time) Verdict {
	v := tooManyCheckins(g, a)
	rec := g.decisionRecord(a, v, began)
	if err := g.appendRecords(ctx, rec); err != nil {
		return g.unavailable(err, "the action is refused")
	}
	v.argsDigest = rec.ArgsSHA256
	return v
}

// shown ends a decided check: a code its commit wrote is shown to the
// human (only now, with its challenge on disk), and whether that worked
// is recorded.
func (g *Guard) shown(ctx context.Context, a Action, out round) Verdict {
	v := out.verdict
	if out.show == nil {
		if r := v.Refusal; r != nil && v.VerificationID != "" && (r.Kind == refusal.Blocked || r.Kind == refusal.Paused) {
			g.codes().ShowAgain(ctx, a.Session, a.Operation, v.VerificationID)
		}
		return v
	}
	req := &out.show.Request
	factor, unshown := g.codes().Show(req)
	v.Directive.Factors = append(v.Directive.Factors, factor)
	result := "code_shown"
	if unshown != "" {
		result = "code_not_shown"
		v.Refusal = v.Refusal.Unheard(unshown)
		g.noteCodeNotShown(ctx, out.block, out.pause)
		n := g.notification("error", "A verification code could not be shown: "+factor, map[string]any{"verificationId": req.Challenge}, "")
		g.mu.Lock()
		g.broadcast(n)
		g.mu.Unlock()
	}
	rec := g.record(store.KindChallenge, a.Session)
	rec.Operation, rec.Tier, rec.ChallengeID, rec.Factors, rec.Result = a.Operation, req.Tier, req.Challenge, []string{factor}, result
	if err := g.appendRecords(ctx, rec); err != nil {
		// The decision (a refusal) is already recorded and stands.
		g.log().Error("recording whether a code was shown", "challenge", req.Challenge, "err", err)
	}
	return v
}

// commit is every commit of the guard: decide runs on the view with a
// copy of the memory as every earlier commit left it, and returns the
// changes; once they are written (and only then) the memory becomes the
// copy decide left and the changes' Then runs, with g.mu held, in commit
// order (store.Changes.Then). g.mu is never held across the commit nor
// waited for inside it for longer than a copy. decide may run more than
// once (store.State.Commit) and must change nothing outside its result.
// Pruning what can no longer be used rides along once an hour.
func (g *Guard) commit(ctx context.Context, decide func(store.View, *memory) (store.Changes, error)) error {
	if f := g.beforeCommit.Load(); f != nil {
		if f = g.beforeCommit.Swap(nil); f != nil {
			(*f)()
		}
	}
	_, err := g.State.Commit(ctx, func(v store.View) (store.Changes, error) {
		g.mu.Lock()
		m := g.mem
		prune := g.now().Sub(g.prunedDB) >= time.Hour
		g.mu.Unlock()
		if g.lot.Parked() {
			return store.Changes{}, parking.ErrParked
		}
		c, err := decide(v, &m)
		if err != nil {
			return c, err
		}
		now := g.now()
		if prune {
			c.PruneBefore = now.Add(-confirm.SpentRetention)
		}
		then := c.Then
		c.Then = func(gen uint64) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.mem = m
			if prune {
				g.prunedDB = now
			}
			if then != nil {
				then(gen)
			}
		}
		return c, nil
	})
	return err
}

// commitState is a commit that changes none of the memory.
func (g *Guard) commitState(ctx context.Context, decide func(store.View) (store.Changes, error)) error {
	return g.commit(ctx, func(v store.View, _ *memory) (store.Changes, error) { return decide(v) })
}

// appendRecords commits records that change no state.
func (g *Guard) appendRecords(ctx context.Context, recs ...store.Record) error {
	return store.AppendRecords(ctx, g.State, recs...)
}

// pausedVerdict refuses an action while a verify-tier challenge is
// pending. g.mu is held.
func (g *Guard) pausedVerdict(a Action, p *pause) Verdict {
	d := evaluator.Directive{Decision: evaluator.NeedsVerify, Enforced: true, Tier: evaluator.Verify,
		Reason:  "Paused: verification " + p.ID + " is pending; a human must enter the code shown to them",
		Factors: []string{"verify pause: until verify_challenge succeeds or " + p.ExpiresAt.Format(time.RFC3339)}}
	r := challenge.Paused(a.Operation, d.Reason, p.ID, p.ExpiresAt)
	if p.notShown.Load() {
		r = r.Unheard("it was not shown when the agent was paused")
	}
	return Verdict{Directive: d, VerificationID: p.ID, Refusal: r}
}

// refusedByPolicy is the refusal of an action a refuse pattern or rule
// matched: this action only; the agent may go on with others.
func refusedByPolicy(operation string, d evaluator.Directive) *refusal.Refusal {
	return refusal.Stop(refusal.Refused, "", map[string]any{"operation": operation, "reason": d.Reason}, time.Time{}, time.Time{})
}

// pending is the refusal of an action whose confirmation is still open:
// CONFIRMATION_REQUIRED with the token, and the notification the spec
// names for it. unasked says why no human could be asked ("": the
// question is on their screen, or waiting for its turn).
func (g *Guard) pending(a Action, c *confirm.Confirmation, d evaluator.Directive, unasked string) (Verdict, *Notification) {
	// Saying that a window is up when none could be shown would send the
	// user looking for it: unasked says why none is (Why).
	r := refusal.Stop(refusal.Pending, strings.TrimPrefix(unasked, "confirmation: "), map[string]any{"operation": a.Operation,
		"reason": d.Reason, "danger_level": evaluator.DangerLevel(d.Risk), "confirmation_token": c.Token}, time.Time{}, c.ExpiresAt)
	v := Verdict{Directive: d, Refusal: r, Token: c.Token}
	meta := map[string]any{"operation": a.Operation, "reason": d.Reason, "confirmationToken": c.Token}
	if c.Kind == ruling.BindAction && !a.reported() && d.Stage == evaluator.StagePattern {
		meta["level"] = "CONFIRM_SINGLE_USE"
		n := g.notification("permission_pending", fmt.Sprintf("Operation '%s' requires confirmation", a.Operation), meta, c.Token)
		return v, &n
	}
	n := g.notification("autonomy_pause", "Paused: "+d.Reason, meta, c.Token)
	if a.reported() {
		v.Notifications = append(v.Notifications, n)
		return v, nil
	}
	return v, &n
}
