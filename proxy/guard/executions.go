package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// Execution states (spec 8.4.1). Terminal states stay terminal.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// States lists the lifecycle states, for introspection.
var States = []string{StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled}

// Execution is one monitored run of an agent (execute_agent). Its
// element_name is only a label under the configured principal.
//
// The store is its only home: any process on the state directory may
// report a step on it or finish it (by id), so every operation reads it
// there first and every change is made to the store's copy in the
// transaction that writes it. The record is that copy as this process
// last read or wrote it, for replies; inbox and finishing are this
// process's own work.
type Execution struct {
	store.Execution

	inbox []Notification
	// finishing says this process is committing its move to a terminal
	// state.
	finishing bool
}

// refresh takes the execution's state from the store's copy r (nil: it
// is gone from the store, pruned after it finished).
func (e *Execution) refresh(r *store.Execution) {
	if r == nil {
		if e.Status == StatusRunning || e.Status == StatusPending {
			e.Status = StatusCancelled
		}
		return
	}
	e.Execution = *r
}

// finishedVerdict refuses a step on an execution that was finished (by
// another process) after the check read it; r is the store's copy.
func finishedVerdict(e *Execution, r *store.Execution) Verdict {
	status := StatusCancelled
	if r != nil {
		status = r.Status
	}
	d := evaluator.Directive{Enforced: true, Reason: fmt.Sprintf("Execution '%s' is %s; a terminal execution cannot report steps", e.ID, status),
		Factors: []string{"execution: finished meanwhile (by another aqlguard process)"}}
	return Verdict{Directive: d, Refusal: terminalRefusal(e.ID, status, "report steps")}
}

// Notification is an AgentNotification (spec 8.7.3).
type Notification struct {
	Type      string         `json:"type"`
	Message   string         `json:"message"`
	Metadata  map[string]any `json:"metadata,omitempty"`
	Timestamp string         `json:"timestamp"`

	key string // token or challenge id it is cleared by
}

func (g *Guard) notification(typ, msg string, meta map[string]any, key string) Notification {
	return Notification{Type: typ, Message: msg, Metadata: meta, Timestamp: g.now().Format(time.RFC3339), key: key}
}

// broadcast queues n for every running execution, of every session: one
// aqlguard process serves one principal, and what happens to it concerns
// all its executing agents (danger_zone must reach them all, spec 8.8.1).
func (g *Guard) broadcast(n Notification) {
	for _, e := range g.order {
		if e.Status == StatusRunning {
			e.inbox = append(e.inbox, n)
		}
	}
}

// clearNotifications drops undelivered notifications cleared by key
// (a confirmed token, a verified or expired challenge).
func (g *Guard) clearNotifications(key string) {
	if key == "" {
		return
	}
	for _, e := range g.order {
		kept := e.inbox[:0]
		for _, n := range e.inbox {
			if n.key != key {
				kept = append(kept, n)
			}
		}
		e.inbox = kept
	}
}

func newExecutionID() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "exec_" + hex.EncodeToString(b), nil
}

// ExecuteAgent starts a monitored execution. A hard-blocked principal
// cannot start one: a new execution never escapes a block. The execution
// and its audit record are durable before it is returned.
func (g *Guard) ExecuteAgent(ctx context.Context, session, element string) (store.Execution, *refusal.Refusal) {
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	id, err := newExecutionID()
	if err != nil {
		g.log().Error("creating an execution id", "err", err)
		return store.Execution{}, refusal.Fail("the execution could not be created", nil)
	}
	// Nothing to prepare: pending → running at once (spec 8.4.2 "start").
	// It exists, in memory too, once it is written.
	principal := g.pol().Principal
	e := &Execution{Execution: store.Execution{ID: id, Principal: principal, ElementName: element, Session: session,
		Status: StatusRunning, StartedAt: g.now()}}
	var blocked *store.Block
	err = g.commit(ctx, func(v store.View, _ *memory) (store.Changes, error) {
		b, err := v.Block(principal)
		if blocked = b; err != nil {
			return store.Changes{}, err
		}
		if !ruling.Start(b) {
			// A blocked principal starts nothing: the refusal is recorded.
			rec := g.record(store.KindDecision, session)
			rec.Operation, rec.Decision, rec.Tier, rec.ChallengeID = "execute_agent", "block", "danger_zone", b.VerificationID
			rec.Result, rec.Factors = refusal.Blocked.String(), []string{"hard block: " + b.Reason}
			return store.Changes{Records: []store.Record{rec}, Then: func(uint64) { g.observe(b, "") }}, nil
		}
		return store.Changes{Executions: []store.Execution{e.Execution}, Records: []store.Record{g.executionRecord(e, "execute_agent", "started")},
			Then: func(uint64) {
				g.executions[id] = e
				g.order = append(g.order, e)
			}}, nil
	})
	if err != nil {
		g.log().Error("recording an execution", "execution", id, "err", err)
		return store.Execution{}, refusal.StateUnavailable(err, "no execution was started")
	}
	if blocked != nil {
		return store.Execution{}, challenge.Blocked("execute_agent", g.pol().Principal, blocked)
	}
	g.log().Info("execution started", "execution", id, "element", element, "session", session)
	return e.Execution, nil
}

// executionRecord is the audit record of a move in e's lifecycle.
func (g *Guard) executionRecord(e *Execution, op, result string) store.Record {
	rec := g.record(store.KindExecution, e.Session)
	rec.Operation, rec.Execution, rec.Preview, rec.Result = op, e.ID, e.ElementName, result
	if e.Reason != "" {
		rec.Factors = []string{e.Reason}
	}
	return rec
}

// finish moves e to a terminal status, if the store still holds it as
// running or pending, with an audit record; e follows what the commit
// found or wrote. g.mu is held on entry and return; it is let go across
// the commit, with e marked as finishing so no other call finishes it
// meanwhile.
func (g *Guard) finish(ctx context.Context, e *Execution, status, reason, op string) *refusal.Refusal {
	next := &Execution{Execution: e.Execution}
	next.Status, next.FinishedAt, next.Reason = status, g.now(), reason
	rec := g.executionRecord(next, op, status)
	written := next.Execution
	changed := false
	e.finishing = true
	g.mu.Unlock()
	err := g.commit(ctx, func(v store.View, _ *memory) (store.Changes, error) {
		changed = false
		cur, err := v.Execution(e.ID)
		if err != nil {
			return store.Changes{}, err
		}
		w := ruling.Finish(cur, written)
		if w == nil {
			return store.Changes{Then: func(uint64) { e.refresh(cur) }}, nil
		}
		changed = true
		return store.Changes{Executions: []store.Execution{*w}, Records: []store.Record{rec},
			Then: func(uint64) { e.refresh(w) }}, nil
	})
	g.mu.Lock()
	e.finishing = false
	if err != nil {
		g.log().Error("recording an execution", "execution", e.ID, "err", err)
		return refusal.StateUnavailable(err, "the execution was not changed")
	}
	if !changed {
		return terminal(e, "change state") // finished meanwhile, elsewhere
	}
	return nil
}

// find resolves an execution by id, or the latest one of the session
// with this element name that is still running, and reads it from the
// store (it may have been started before a restart, or reported on or
// finished by another process of this principal). g.mu is held on entry
// and return, and let go across the reads.
func (g *Guard) find(ctx context.Context, session, id, element string) (*Execution, *refusal.Refusal) {
	if id != "" {
		if parking.IsID(id) {
			// The principal's parked loop (proxy/parking) is no execution.
			return nil, notFoundExecution(id)
		}
		rec, aerr := g.readExecution(ctx, id)
		if aerr != nil {
			return nil, aerr
		}
		if rec == nil || rec.Principal != g.pol().Principal {
			return nil, notFoundExecution(id)
		}
		e, ok := g.executions[id]
		if !ok {
			e = &Execution{Execution: *rec}
			g.executions[id] = e
			g.order = append(g.order, e)
		}
		e.refresh(rec)
		return e, nil
	}
	for i := len(g.order) - 1; i >= 0; i-- {
		e := g.order[i]
		if e.Session != session || e.ElementName != element || e.Status != StatusRunning {
			continue
		}
		rec, aerr := g.readExecution(ctx, e.ID)
		if aerr != nil {
			return nil, aerr
		}
		e.refresh(rec)
		if e.Status == StatusRunning {
			return e, nil
		}
	}
	return nil, refusal.New(refusal.NotFound, "Resource 'execution' not found: no running execution of '{resource_id}' in this session; call execute_agent first",
		map[string]any{"resource_type": "execution", "resource_id": element})
}

// readExecution reads an execution from the store. g.mu is held on entry
// and return, and let go across the read.
func (g *Guard) readExecution(ctx context.Context, id string) (*store.Execution, *refusal.Refusal) {
	var rec *store.Execution
	var err error
	func() { // the store is never waited for with g.mu held
		g.mu.Unlock()
		defer g.mu.Lock()
		err = g.State.Load(ctx, func(st store.View) (err error) { rec, err = st.Execution(id); return })
	}()
	if err != nil {
		return nil, refusal.StateUnavailable(err, "the execution could not be read")
	}
	return rec, nil
}

func notFoundExecution(id string) *refusal.Refusal {
	return refusal.New(refusal.NotFound, "Resource 'execution' not found: '{resource_id}'", map[string]any{"resource_type": "execution", "resource_id": id})
}

// terminalRefusal refuses what op says to do to an execution in a
// terminal status.
func terminalRefusal(id, status, op string) *refusal.Refusal {
	return refusal.New(refusal.Conflict, "Execution '{execution_id}' is {status}; a terminal execution cannot "+op,
		map[string]any{"execution_id": id, "status": status})
}

func terminal(e *Execution, op string) *refusal.Refusal { return terminalRefusal(e.ID, e.Status, op) }

// Finish moves a running execution to completed or cancelled.
func (g *Guard) Finish(ctx context.Context, session, id, element, status, reason string) (store.Execution, *refusal.Refusal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	e, err := g.find(ctx, session, id, element)
	if err != nil {
		return store.Execution{}, err
	}
	if e.Status != StatusRunning && e.Status != StatusPending {
		return store.Execution{}, terminal(e, "change state")
	}
	if e.finishing {
		return store.Execution{}, refusal.New(refusal.Conflict, "Execution '{execution_id}' is being finished already",
			map[string]any{"execution_id": e.ID, "status": e.Status})
	}
	op := "complete_execution"
	if status == StatusCancelled {
		op = "abort_execution"
	}
	if aerr := g.finish(ctx, e, status, reason, op); aerr != nil {
		return store.Execution{}, aerr
	}
	g.log().Info("execution finished", "execution", e.ID, "status", status, "reason", reason)
	return e.Execution, nil
}

// Report is one record_execution_step.
type Report struct {
	Session, ExecutionID, ElementName    string
	NextActionHint, StepDescription      string
	Outcome, Findings, ConfirmationToken string
	// Category and Annotations classify the announced action (from the
	// operation the hint names, or its verb); empty scores like EXECUTE.
	Category    policy.Category
	Annotations evaluator.Annotations
}

// Directive is the AutonomyDirective of a reported step (spec 8.7.1),
// plus where to go on: the execution and any token or challenge.
type Directive struct {
	Continue       bool           `json:"continue"`
	Factors        []string       `json:"factors"`
	Stopped        bool           `json:"stopped,omitempty"`
	Reason         string         `json:"reason,omitempty"`
	StepsRemaining *int           `json:"stepsRemaining,omitempty"`
	NextStepRisk   string         `json:"nextStepRisk,omitempty"`
	Notifications  []Notification `json:"notifications,omitempty"`

	ExecutionID  string         `json:"execution_id"`
	Confirmation *refusal.Offer `json:"confirmation,omitempty"`
	Verification string         `json:"verification_id,omitempty"`
}

// RecordStep evaluates a reported intended action and returns the
// directive with every notification queued for this execution (each
// delivered once).
func (g *Guard) RecordStep(ctx context.Context, r Report) (*Directive, *refusal.Refusal) {
	g.mu.Lock()
	g.init()
	e, err := g.find(ctx, r.Session, r.ExecutionID, r.ElementName)
	if err == nil && e.Status != StatusRunning {
		err = terminal(e, "report steps")
	}
	if err != nil {
		g.mu.Unlock()
		return nil, err
	}
	mode := g.pol().Loop
	g.mu.Unlock()

	a := Action{Session: r.Session, Operation: "record_execution_step", Hint: r.NextActionHint,
		Category: r.Category, Annotations: r.Annotations, Outcome: r.Outcome, Execution: e, Token: r.ConfirmationToken}
	var v Verdict
	switch mode {
	case policy.LoopLogging, policy.LoopDisabled:
		v = g.recordStep(ctx, a, mode) // recorded all the same
	default:
		v = g.Check(ctx, a)
	}
	d := v.Directive
	out := &Directive{Continue: v.Proceed, Factors: d.Factors, Stopped: d.Stopped && d.Enforced, Reason: d.Reason,
		ExecutionID: e.ID, Confirmation: v.Refusal.Offer(), Verification: v.VerificationID}
	// Every pause, block and human denial is a directive (spec 8.7.1,
	// execution-safety-loop.md): the step was evaluated, and the answer
	// is "do not go on". Only a request that could not be evaluated (a
	// bad token, the state database down) is an error.
	if v.Refusal != nil && !v.Refusal.Stopped() {
		return nil, v.Refusal
	}
	if out.Factors == nil {
		out.Factors = []string{}
	}
	if mode == policy.LoopEnforcing || mode == policy.LoopMonitoring {
		if d.Tier != "" {
			out.NextStepRisk = string(d.Tier)
		}
		g.mu.Lock()
		remaining := max(0, g.pol().MaxSteps-g.mem.steps)
		g.mu.Unlock()
		out.StepsRemaining = &remaining
	}
	g.mu.Lock()
	out.Notifications = append(append([]Notification{}, e.inbox...), v.Notifications...)
	e.inbox = nil
	g.mu.Unlock()
	g.log().Info("execution step", "execution", e.ID, "hint", r.NextActionHint, "outcome", r.Outcome,
		"step_description", r.StepDescription, "findings_bytes", len(r.Findings), "continue", out.Continue, "stopped", out.Stopped,
		"reason", out.Reason, "notifications", len(out.Notifications))
	return out, nil
}

// recordStep records a reported step the loop does not evaluate
// (logging, disabled): counted on its execution, if that still runs.
func (g *Guard) recordStep(ctx context.Context, a Action, mode policy.LoopMode) Verdict {
	began := g.now()
	a = g.prepare(a)
	recorded := Verdict{Proceed: true, Directive: evaluator.Directive{Continue: true,
		Factors: []string{fmt.Sprintf("%s: step recorded, not evaluated", mode)}}}
	var v Verdict
	e := a.Execution
	err := g.commit(ctx, func(view store.View, _ *memory) (store.Changes, error) {
		rec, err := view.Execution(e.ID)
		if err != nil {
			return store.Changes{}, err
		}
		var c store.Changes
		out := recorded
		if next := ruling.Counted(rec); next == nil {
			out = finishedVerdict(e, rec)
		} else {
			rec = next
			c.Executions = []store.Execution{*next}
		}
		r := g.decisionRecord(a, out, began)
		c.Records = []store.Record{r}
		c.Then = func(uint64) { e.refresh(rec) }
		v, v.argsDigest = out, r.ArgsSHA256
		return c, nil
	})
	if err != nil {
		return g.unavailable(err, "the step was not recorded")
	}
	return v
}

// EndSession cancels the executions a session left running: they cannot
// go on without it (MCP-AQL 2.3.3). Each is recorded as cancelled, with
// an audit record. Its questions still waiting for the human are
// withdrawn (their dialogs close), and its standing approvals end.
func (g *Guard) EndSession(ctx context.Context, session string) {
	g.mu.Lock()
	g.init()
	d := g.desk
	g.mu.Unlock()
	d.WithdrawSession(session)
	g.endApprovals(ctx, session)
	g.sessions().End(session)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	for _, e := range g.order {
		if e.Session != session || e.Status != StatusRunning && e.Status != StatusPending {
			continue
		}
		if e.finishing {
			continue
		}
		if aerr := g.finish(ctx, e, StatusCancelled, "the MCP session ended", "session_end"); aerr != nil {
			if aerr.Kind == refusal.Conflict {
				continue // finished meanwhile, by another process
			}
			g.log().Error("an execution of an ended session could not be cancelled", "execution", e.ID, "refusal", aerr.Say)
			continue
		}
		g.log().Info("execution cancelled: its session ended", "execution", e.ID, "session", session)
	}
}

// endApprovals marks the session's standing approvals ended, with an
// audit record each: no call can use them any more, and aqlguard
// approvals list says so rather than showing them as active.
func (g *Guard) endApprovals(ctx context.Context, session string) {
	if session == "" || g.SessionApprovalTTL <= 0 {
		return
	}
	var ended []store.Approval
	err := g.commit(ctx, func(st store.View, _ *memory) (store.Changes, error) {
		all, err := st.Approvals()
		if err != nil {
			return store.Changes{}, err
		}
		ended = ruling.EndApprovals(all, g.pol().Principal, session, g.now())
		c := store.Changes{Approvals: ended}
		for _, a := range ended {
			rec := g.record(store.KindApproval, session)
			rec.Server, rec.Operation, rec.Approval, rec.Decision, rec.Result = a.Server, a.Operation, a.ID, "session_ended", "ended"
			rec.Factors = []string{"approval of " + a.Server + "." + a.Tool + " ended with its MCP session"}
			c.Records = append(c.Records, rec)
		}
		return c, nil
	})
	if err != nil {
		g.log().Error("the approvals of an ended session could not be marked ended (they cannot be used: the session is gone)",
			"session", session, "err", err)
		return
	}
	for _, a := range ended {
		g.log().Info("standing approval ended with its session", "approval", a.ID, "session", session)
	}
}
