package guard

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// writes is what one check changes beyond memory: written by settle in
// one transaction with the decision's audit record.
type writes struct {
	block     *store.Block
	challenge *store.Challenge
	// replaces is the verification id of the block a reissue replaces.
	replaces string
	pause    *pause
	// show carries the code to the channel once the challenge is on disk.
	show *verify.Request
	// approval is the standing approval the check relied on; settle
	// checks in its transaction that it, and the confirmations the check
	// used (spentConfs), still held (one approval, one execution,
	// whichever process or client tries to use it twice).
	approval string
	// check names this check in the store (see spendFor); made on demand.
	check string

	// What the check does to the principal's state, applied only when
	// its commit succeeds (apply) and dropped when it fails (release): a
	// refusal that says "nothing is approved" leaves nothing approved.
	// spentConfs are the confirmations the check used (reserved in
	// Guard.spending meanwhile); steps the steps the check counted
	// (reserved meanwhile), after a step-limit check-in when reset;
	// failurePause the pause's new value, if it changes.
	spentConfs []*Confirmation
	// exec is the execution whose reported step this check is: the
	// commit counts the step in the store's copy, if it is still running.
	exec         *Execution
	steps        int
	reset        bool
	failurePause *bool
	// reportedFailure says the check's step reported a failure (counted
	// in Guard.reportedFailures until it commits or fails).
	reportedFailure bool
}

func (w *writes) setFailurePause(on bool) { w.failurePause = &on }

// apply carries out a committed check's changes to the principal's
// state. g.mu is held.
func (g *Guard) apply(w *writes) {
	g.unreserve(w) // the spent confirmations are written as used
	if w.reset {
		g.steps = 0
	}
	g.steps += w.steps
	if w.failurePause != nil {
		g.failurePause = *w.failurePause
	}
}

// release drops the reservations of a check whose commit failed (or
// that never reached one), and what it would have changed. g.mu is held.
func (g *Guard) release(w *writes) {
	g.unreserve(w)
	w.exec = nil
	w.steps, w.spentConfs, w.reset, w.failurePause = 0, nil, false, nil
}

// unreserve takes back what other checks counted of w while it was in
// flight: its steps, the confirmations it used, its verify pause, its
// reported failure. g.mu is held.
func (g *Guard) unreserve(w *writes) {
	g.reservedSteps -= w.steps
	for _, c := range w.spentConfs {
		delete(g.spending, c.Token)
	}
	if w.pause != nil && g.reservedPause == w.pause {
		g.reservedPause = nil
	}
	if w.reportedFailure {
		g.reportedFailures--
		w.reportedFailure = false
	}
}

var checkSeq atomic.Uint64

// id names the check writing w, uniquely in this process; with the
// process's id it is unique on the state directory.
func (w *writes) id() string {
	if w.check == "" {
		w.check = strconv.Itoa(os.Getpid()) + "#" + strconv.FormatUint(checkSeq.Add(1), 10) + "#" + processNonce
	}
	return w.check
}

// writesState reports whether the check changes state beyond its audit
// record.
func (w *writes) writesState() bool {
	return w.block != nil || w.challenge != nil || w.replaces != "" || len(w.spentConfs) > 0 || w.approval != "" || w.exec != nil
}

// discard drops a challenge that will not be used: the code is never
// shown.
func (w *writes) discard() {
	w.block, w.challenge, w.replaces, w.pause, w.show = nil, nil, "", nil, nil
}

// sync reads the principal's block from the store. A block this process
// has not seen before (set by another process) is broadcast as
// danger_zone to this process's running executions, once. g.mu is held
// on entry and return, and let go across the reads.
func (g *Guard) sync(ctx context.Context) (*store.Block, error) {
	// Unless a process committed state since the last read (the store's
	// generation moved), what was read then still holds: one pread
	// instead of opening the database on every call.
	var gen uint64
	var err error
	g.unlocked(func() { gen, err = g.State.Generation(ctx) })
	if err != nil {
		return nil, err
	}
	if g.synced && gen == g.syncedGen {
		g.observe(g.syncedBlock, "")
		return g.syncedBlock, nil
	}
	var b *store.Block
	var pauseUsed bool
	pause := g.verifyPause
	g.unlocked(func() {
		err = g.State.Load(ctx, func(st store.View) error {
			var err error
			if b, err = st.Block(g.pol().Principal); err != nil {
				return err
			}
			if pause != nil {
				// verified through another process?
				c, err := st.Challenge(pause.ID)
				pauseUsed = err == nil && c != nil && c.Used
				return err
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if pauseUsed && g.verifyPause == pause {
		g.clearNotifications(pause.ID)
		g.verifyPause = nil
	}
	g.cacheBlock(gen, b)
	g.observe(b, "")
	return b, nil
}

// blockForCheck is the block a check decides on. While this process
// knows of no block and no verify pause, it is the cached "none", taken
// without any I/O: the decision is only as good as the generation it was
// read at, and every way a decision takes effect checks that generation
// or reads the block again — an append only while the generation stands
// (settle), a commit against the block it reads (settleAgainst), a
// question with the block in its snapshot (humanFacts). A block set
// elsewhere meanwhile is found there and wins. Otherwise (a block or a
// pause known here, which another process may have lifted or used), it
// is sync. g.mu is held on entry and return.
func (g *Guard) blockForCheck(ctx context.Context) (*store.Block, error) {
	if g.synced && g.syncedBlock == nil && g.verifyPause == nil && g.reservedPause == nil {
		return nil, nil
	}
	return g.sync(ctx)
}

// unlocked runs f with g.mu let go: the store is never waited for with
// g.mu held. g.mu is held on entry and return.
func (g *Guard) unlocked(f func()) {
	g.mu.Unlock()
	defer g.mu.Lock()
	f()
}

// loadUnlocked reads one record from the store with g.mu let go. g.mu is
// held on entry and return.
func loadUnlocked[T any](g *Guard, ctx context.Context, get func(store.View) (*T, error)) (*T, error) {
	var rec *T
	var err error
	g.unlocked(func() {
		err = g.State.Load(ctx, func(st store.View) (err error) { rec, err = get(st); return })
	})
	return rec, err
}

// observe broadcasts a block not seen before. operation names the call
// that set it, when this process did.
func (g *Guard) observe(b *store.Block, operation string) {
	if b == nil {
		g.seenBlock = ""
		return
	}
	if b.VerificationID == g.seenBlock {
		return
	}
	g.seenBlock = b.VerificationID
	if operation == "" {
		operation = b.Operation
	}
	g.broadcast(g.notification("danger_zone",
		fmt.Sprintf("Agent '%s' is hard-blocked: %s", b.Principal, b.Reason),
		map[string]any{"operation": operation, "reason": b.Reason, "verificationId": b.VerificationID}, b.VerificationID))
}

// settle writes the decision: the block, challenge and confirmations it
// changed and its audit record, in one durable transaction, then applies
// what the check changed to memory. A block set meanwhile by another
// process wins over whatever this check decided. Only then are
// notifications sent and the code shown. g.mu is not held across the
// commit: other calls are decided meanwhile, counting this check's
// reservations.
func (g *Guard) settle(ctx context.Context, a Action, v Verdict, w *writes, began time.Time) Verdict {
	if v.storeDown {
		g.mu.Lock()
		g.release(w)
		g.mu.Unlock()
		return v
	}
	g.mu.Lock()
	// A check that changes no state but writes its decision record (the
	// common allowed or refused call) needs no database commit. If no
	// process changed state since the check read it (the generation has
	// not moved) and the block it read does not overrule the verdict, the
	// record is appended and that is all; otherwise it goes through a
	// commit that reads the block again (one that changes only records
	// appends them without a database commit).
	writing := w.writesState() || g.now().Sub(g.prunedDB) >= time.Hour
	cur, gen := g.syncedBlock, g.syncedGen
	appendOnly := !writing && g.synced && w.pause == nil && w.show == nil && (cur == nil || blockedBy(v, cur))
	g.mu.Unlock()
	if appendOnly {
		rec := g.decisionRecord(a, v, began)
		appended, err := g.State.AppendIf(ctx, gen, rec)
		if err == nil && !appended {
			// The generation moved since the check read it. If only to
			// where this process's cache has followed it (its own commit,
			// which knows the block it left), the verdict still stands
			// against that block: try once more at the new generation.
			g.mu.Lock()
			cur, next := g.syncedBlock, g.syncedGen
			retry := g.synced && next != gen && (cur == nil || blockedBy(v, cur))
			g.mu.Unlock()
			if retry {
				appended, err = g.State.AppendIf(ctx, next, rec)
			}
		}
		if err != nil {
			return g.notRecorded(a, w, err)
		}
		if appended {
			v.argsDigest = rec.ArgsSHA256
			g.mu.Lock()
			g.apply(w)
			g.mu.Unlock()
			return v
		}
	}
	// What the commit found decides what the check did; decide may run
	// more than once (see store.Commit), so it starts from the verdict
	// and the writes the check made each time and changes neither.
	spent := g.spentRecords(w)
	var found settled
	err := g.commitState(ctx, func(st store.View) (store.Changes, error) {
		var c store.Changes
		var err error
		found, err = g.settleAgainst(st, a, v, w, spent, began)
		if err != nil {
			return c, err
		}
		c.Confirmations = found.spent
		if found.keep {
			if w.challenge != nil {
				c.Challenges = append(c.Challenges, *w.challenge)
			}
			if w.block != nil {
				c.Blocks = append(c.Blocks, *w.block)
			}
		}
		if found.stepped != nil && !found.finishedMeanwhile {
			c.Executions = append(c.Executions, *found.stepped)
		}
		c.Records = []store.Record{found.record}
		return c, nil
	})
	if err != nil {
		return g.notRecorded(a, w, err)
	}
	v = found.verdict
	v.argsDigest = found.record.ArgsSHA256 // for the outcome record
	if !found.keep {
		w.discard()
	}
	g.mu.Lock()
	if e := w.exec; e != nil && found.stepped != nil {
		e.refresh(found.stepped) // as the commit wrote or found it
	}
	if found.blockedMeanwhile || found.finishedMeanwhile {
		// Refused by what the commit found: nothing the check decided
		// holds, but a reported failure stands, whatever the block.
		reported := w.reportedFailure && found.blockedMeanwhile
		g.release(w)
		if reported {
			g.failurePause = true
		}
	}
	g.apply(w)
	if w.block != nil {
		g.observe(w.block, a.Operation)
		g.log().Warn("principal hard-blocked", "principal", g.pol().Principal, "reason", w.block.Reason,
			"verification", w.block.VerificationID)
	}
	if w.pause != nil {
		g.verifyPause = w.pause
		n := g.notification("autonomy_pause", "Paused for out-of-band verification: "+v.Directive.Reason,
			map[string]any{"operation": a.Operation, "reason": v.Directive.Reason, "verificationId": w.pause.ID}, w.pause.ID)
		if a.reported() {
			v.Notifications = append(v.Notifications, n)
		} else {
			g.broadcast(n)
		}
	}
	g.mu.Unlock()
	if w.show != nil {
		factor, unshown := g.show(ctx, w.show)
		v.Directive.Factors = append(v.Directive.Factors, factor)
		result := "code_shown"
		if unshown != "" {
			result = "code_not_shown"
			v.Err = g.codeNotShown(v.Err, unshown)
			g.noteCodeNotShown(ctx, w)
			g.mu.Lock()
			g.broadcast(g.notification("error", "A verification code could not be shown: "+factor,
				map[string]any{"verificationId": w.show.Challenge}, ""))
			g.mu.Unlock()
		}
		rec := g.record("challenge", a.Session)
		rec.Operation, rec.Tier, rec.ChallengeID, rec.Factors, rec.Result = a.Operation, w.show.Tier, w.show.Challenge, []string{factor}, result
		if err := g.State.Append(ctx, rec); err != nil {
			// The decision (a refusal) is already recorded and stands.
			g.log().Error("recording whether a code was shown", "challenge", w.show.Challenge, "err", err)
		}
	}
	return v
}

// settled is what a check's commit found in the store, and the verdict
// and record that follow from it.
type settled struct {
	verdict Verdict
	record  store.Record
	// keep says the block and challenge the check made are written (not
	// when a block set or lifted meanwhile made them moot).
	keep bool
	// spent are the approvals written as used.
	spent []store.Confirmation
	// stepped is the execution with the reported step counted (or, when
	// finishedMeanwhile, as found).
	stepped                             *store.Execution
	blockedMeanwhile, finishedMeanwhile bool
}

// settleAgainst is the decision of a check against the state as the
// commit reads it: a block set meanwhile by another process wins over
// whatever the check decided; an execution finished meanwhile takes no
// step; an approval used meanwhile runs nothing. It changes nothing but
// its result.
func (g *Guard) settleAgainst(st store.View, a Action, v Verdict, w *writes, spent []store.Confirmation, began time.Time) (settled, error) {
	out := settled{verdict: v, keep: true}
	cur, err := st.Block(g.pol().Principal)
	if err != nil {
		return out, err
	}
	switch {
	case cur != nil && w.replaces != "" && w.replaces == cur.VerificationID:
		// the reissue goes ahead
	case cur != nil && !blockedBy(v, cur):
		out.blockedMeanwhile, out.keep = true, false // nothing it reserved is used
		out.verdict = g.blockedVerdict(a, cur, "hard block: set meanwhile (by another aqlguard process)")
	case cur == nil && w.replaces != "":
		out.keep = false // lifted meanwhile; this call is still refused
	}
	if e := w.exec; e != nil && !out.blockedMeanwhile {
		rec, err := st.Execution(e.ID)
		if err != nil {
			return out, err
		}
		out.stepped = rec
		if rec == nil || rec.Status != StatusRunning {
			// Finished meanwhile: the step is refused as if it came after
			// the finish, and decides nothing.
			out.finishedMeanwhile, out.keep = true, false
			out.verdict = finishedVerdict(e, rec)
		} else {
			next := *rec
			next.Steps++
			out.stepped = &next
		}
	}
	if !out.blockedMeanwhile && !out.finishedMeanwhile {
		why, err := g.spendsHold(st, w)
		if err != nil {
			return out, err
		}
		if why != "" {
			out.verdict = usedMeanwhile(a, out.verdict, why) // and what the other process wrote stays
		} else {
			out.spent = spent
		}
	}
	out.record = g.decisionRecord(a, out.verdict, began)
	return out, nil
}

// noteCodeNotShown notes, where the next refusals read it, that the code of
// w's block or verify pause could not be shown: on the block in the store
// (if it is still that block), on the pause in memory. A failure to write
// it is logged; the refusal stands either way.
func (g *Guard) noteCodeNotShown(ctx context.Context, w *writes) {
	if p := w.pause; p != nil {
		g.mu.Lock()
		p.notShown = true
		g.mu.Unlock()
	}
	b := w.block
	if b == nil {
		return
	}
	err := g.commitState(ctx, func(st store.View) (store.Changes, error) {
		cur, err := st.Block(b.Principal)
		if err != nil || cur == nil || cur.VerificationID != b.VerificationID {
			return store.Changes{}, err
		}
		marked := *cur
		marked.CodeNotShown = true
		return store.Changes{Blocks: []store.Block{marked}}, nil
	})
	if err != nil {
		g.log().Error("noting that a block's code could not be shown", "challenge", b.VerificationID, "err", err)
	}
}

// notRecorded is the refusal of an action whose decision could not be
// written: its reservations are dropped, nothing it decided holds.
func (g *Guard) notRecorded(a Action, w *writes, err error) Verdict {
	g.mu.Lock()
	g.release(w)
	g.mu.Unlock()
	g.log().Error("the decision could not be recorded; the action is refused", "operation", a.Operation, "err", err)
	return g.unavailable(err, "the action is refused")
}

// blockedBy reports whether v is the refusal of this very block.
func blockedBy(v Verdict, b *store.Block) bool {
	return v.Err != nil && v.Err.Code == aql.CodeAgentBlocked && v.VerificationID == b.VerificationID
}

// spentRecords are the approvals a check used, as used by it.
func (g *Guard) spentRecords(w *writes) []store.Confirmation {
	recs := make([]store.Confirmation, 0, len(w.spentConfs))
	now := g.now()
	for _, c := range w.spentConfs {
		r := c.record()
		r.Status, r.DoneAt, r.UsedBy = statusUsed, now, w.id()
		recs = append(recs, r)
	}
	return recs
}

// spendsHold checks, in the transaction that spends them, that the
// approvals a check used are approved in the store, unexpired and unused:
// not used (or revoked) meanwhile by another process. It returns why not,
// or "".
func (g *Guard) spendsHold(st store.View, w *writes) (string, error) {
	now := g.now()
	for _, c := range w.spentConfs {
		tok := c.Token
		cur, err := st.Confirmation(tok)
		if err != nil {
			return "", err
		}
		switch {
		case cur == nil:
			return "the approval " + tok + " is no longer in the state database", nil
		case cur.Status == statusUsed:
			return "the approval " + tok + " was used meanwhile (by another aqlguard process)", nil
		case cur.Status != statusApproved:
			return "the approval " + tok + " is " + cur.Status + " in the state database", nil
		case !now.Before(cur.ExpiresAt):
			return "the approval " + tok + " expired before it could be used", nil
		}
	}
	if w.approval != "" {
		ap, err := st.Approval(w.approval)
		if err != nil {
			return "", err
		}
		if ap == nil || !ap.Active(now) {
			return "the standing approval " + w.approval + " was revoked meanwhile", nil
		}
	}
	return "", nil
}

// usedMeanwhile refuses an action whose approval was used elsewhere
// first.
func usedMeanwhile(a Action, v Verdict, why string) Verdict {
	d := v.Directive
	d.Continue = false
	d.Factors = append(d.Factors, "confirmation: "+why)
	d.Reason = "Not run: " + why
	return Verdict{Directive: d, Token: v.Token, Err: &aql.Error{Code: aql.CodeTokenUsed,
		Message: "Confirmation token has already been used: " + why,
		Details: map[string]any{"operation": a.Operation, "token": v.Token}}}
}

// blockedVerdict refuses an action because the principal is blocked.
func (g *Guard) blockedVerdict(a Action, b *store.Block, factors ...string) Verdict {
	d := evaluator.Directive{Stopped: true, Decision: evaluator.Block, Enforced: true, Tier: evaluator.DangerZone,
		Reason:  fmt.Sprintf("Agent '%s' is hard-blocked: %s; verification %s", g.pol().Principal, b.Reason, b.VerificationID),
		Factors: factors}
	return Verdict{Directive: d, VerificationID: b.VerificationID, Err: g.blockedError(a.Operation, b)}
}

// unavailable is the fail-closed verdict when the store cannot be used.
func (g *Guard) unavailable(err error, what string) Verdict {
	g.log().Error("the state database could not be used; the action is refused", "err", err)
	d := evaluator.Directive{Enforced: true, Reason: "state database unavailable",
		Factors: []string{"fail closed: " + stateProblem(err)}}
	return Verdict{Directive: d, Err: stateUnavailable(err, what), storeDown: true}
}

// queued is what a commit does besides its own changes: pruning what
// can no longer be used or replayed, at most once an hour.
type queued struct {
	// pruned is when the database was last pruned before this commit
	// prunes it; prune says it does.
	pruned time.Time
	prune  bool
}

// takeQueued takes the queued work for a commit. g.mu and g.commitMu are
// held.
func (g *Guard) takeQueued() queued {
	var q queued
	if now := g.now(); now.Sub(g.prunedDB) >= time.Hour {
		q.prune, q.pruned, g.prunedDB = true, g.prunedDB, now
	}
	return q
}

// add puts q's work in a commit's changes.
func (q queued) add(c *store.Changes, now time.Time) {
	if q.prune {
		c.PruneBefore = now.Add(-spentRetention)
	}
}

// restoreQueued gives a failed commit's work back to the next one. g.mu
// is held.
func (g *Guard) restoreQueued(q queued) {
	if q.prune {
		g.prunedDB = q.pruned
	}
}

// commitState commits the changes decide makes of the state, together
// with the work queued for the next commit: every commit of the guard
// goes through here. Called without g.mu; decide must not take it, and
// may run more than once (see store.Commit). Commits of this process are
// ordered (commitMu), and no lock of the guard is taken inside a
// transaction: the store's lock is never waited for with g.mu held.
func (g *Guard) commitState(ctx context.Context, decide func(store.View) (store.Changes, error)) error {
	g.commitMu.Lock()
	g.mu.Lock()
	q := g.takeQueued()
	g.mu.Unlock()
	if f := g.beforeCommit.Swap(nil); f != nil {
		(*f)()
	}
	var left *store.Block
	gen, err := g.State.Commit(ctx, func(st store.View) (store.Changes, error) {
		c, err := decide(st)
		if err != nil {
			return c, err
		}
		q.add(&c, g.now())
		left, err = blockAfter(st, &c, g.pol().Principal)
		return c, err
	})
	g.commitMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.restoreQueued(q)
		return err
	}
	// The commit read the block, and wrote its own, under the lock at the
	// generation it returned: that is the block at that generation, so
	// the next call need not open the database to learn it. Whatever the
	// generation file says later decides only whether to read again (a
	// rewound file makes the next call read: the database is the truth).
	if g.cacheBlock(gen, left) {
		g.observe(left, "")
	}
	return nil
}

// blockAfter is principal's block once c is written over the snapshot.
func blockAfter(st store.View, c *store.Changes, principal string) (*store.Block, error) {
	for _, p := range c.Unblock {
		if p == principal {
			return nil, nil
		}
	}
	for i := len(c.Blocks) - 1; i >= 0; i-- {
		if c.Blocks[i].Principal == principal {
			return &c.Blocks[i], nil
		}
	}
	return st.Block(principal)
}

// cacheBlock remembers b as the principal's block at store generation
// gen, read by sync or left by a commit under the lock that raised the
// generation to gen. A read that raced with a newer one is used for its
// own check only; cacheBlock reports whether it was remembered. g.mu is
// held.
func (g *Guard) cacheBlock(gen uint64, b *store.Block) bool {
	if g.synced && gen < g.syncedGen {
		return false
	}
	g.synced, g.syncedGen, g.syncedBlock = true, gen, b
	return true
}

// decisionRecord is the audit record of one check.
func (g *Guard) decisionRecord(a Action, v Verdict, began time.Time) store.Record {
	d := v.Directive
	args := a.Arguments
	if a.reported() {
		args = map[string]any{"next_action_hint": a.Hint}
	}
	a = g.prepare(a)
	redacted := a.redacted
	if a.reported() {
		redacted = args
	}
	r := g.record("decision", a.Session)
	r.Server, r.Operation, r.ArgsSHA256, r.Decision = a.Server, a.Operation, Digest(args), decisionWord(v)
	if !a.reported() {
		r.Tool = a.Tool
	}
	r.Stage, r.Tier, r.Risk, r.Factors, r.Layer = string(d.Stage), string(d.Tier), d.Risk, d.Factors, d.Layer
	r.ChallengeID, r.Token, r.Approval, r.DurationMS = v.VerificationID, v.Token, v.Approval, ms(r.Time.Sub(began))
	r.Args, r.ArgsText, r.ArgsBytes = argsForRecord(redacted, g.MaxArgumentBytes)
	if a.reported() {
		r.Execution = a.Execution.ID
	}
	if v.Err != nil {
		r.Result = string(v.Err.Code)
	}
	return r
}

// record is the start of every audit record the guard writes: when,
// what kind, whose, from which process and session.
func (g *Guard) record(kind, session string) store.Record {
	r := store.Record{Time: g.now(), Kind: kind, Principal: g.Principal(), Process: g.Process, Session: session}
	if g.SessionClient != nil && session != "" {
		r.Client = g.SessionClient(session)
	}
	return r
}

func decisionWord(v Verdict) string {
	if v.Proceed {
		return "allow"
	}
	if v.Directive.Decision == evaluator.Refuse && v.Directive.Enforced {
		return "refuse" // a refuse pattern or rule: this call alone
	}
	if v.Err == nil {
		return "refuse"
	}
	switch v.Err.Code {
	case aql.CodeConfirmation:
		return "confirm"
	case aql.CodeVerification:
		return "verify"
	case aql.CodeAgentBlocked:
		return "block"
	case aql.CodePermissionDenied:
		return "deny"
	}
	return "refuse"
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Outcome records what became of an action v allowed: result is "ok",
// "tool_error" or an error code. If the record cannot be written the
// caller must not hand the result on (fail closed).
func (g *Guard) Outcome(ctx context.Context, a Action, v Verdict, result string, took time.Duration) error {
	digest := v.argsDigest
	if digest == "" {
		digest = Digest(a.Arguments)
	}
	rec := g.record("outcome", a.Session)
	rec.Server, rec.Operation, rec.ArgsSHA256, rec.Result, rec.DurationMS = a.Server, a.Operation, digest, result, ms(took)
	err := g.State.Append(ctx, rec)
	if err != nil {
		return fmt.Errorf("recording the outcome of %s: %w", a.Operation, err)
	}
	return nil
}
