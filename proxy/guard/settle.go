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
	// spent are the confirmations this check used, and approval the
	// standing approval it relied on: settle checks in its transaction
	// that they still held (one approval, one execution, whichever process
	// or client tries to use it twice).
	spent    []string
	approval string
	// check names this check in the store (see spendFor); made on demand.
	check string
	// undo puts back what the check changed in memory (approvals spent,
	// check-ins applied) when its commit fails: a refusal that says
	// "nothing is approved" must leave nothing approved.
	undo []func()
}

// rollback undoes the check's changes to memory, newest first. g.mu is
// held.
func (w *writes) rollback() {
	for i := len(w.undo) - 1; i >= 0; i-- {
		w.undo[i]()
	}
	w.undo = nil
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
	return w.block != nil || w.challenge != nil || w.replaces != "" || len(w.spent) > 0 || w.approval != ""
}

// discard drops a challenge that will not be used: the code is never
// shown.
func (w *writes) discard() {
	w.block, w.challenge, w.replaces, w.pause, w.show = nil, nil, "", nil, nil
}

// sync reads the principal's block from the store. A block this process
// has not seen before (set by another process) is broadcast as
// danger_zone to this process's running executions, once. g.mu is held.
func (g *Guard) sync(ctx context.Context) (*store.Block, error) {
	// Unless a process committed state since the last read (the store's
	// generation moved), what was read then still holds: one pread
	// instead of opening the database on every call.
	gen, err := g.Store.Generation()
	if err != nil {
		return nil, err
	}
	if g.synced && gen == g.syncedGen {
		g.observe(g.syncedBlock, "")
		return g.syncedBlock, nil
	}
	var b *store.Block
	var pauseUsed bool
	err = g.Store.View(ctx, func(tx *store.Tx) error {
		var err error
		if b, err = tx.Block(g.pol().Principal); err != nil {
			return err
		}
		if p := g.verifyPause; p != nil {
			// verified through another process?
			c, err := tx.Challenge(p.ID)
			pauseUsed = err == nil && c != nil && c.Used
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if pauseUsed {
		g.clearNotifications(g.verifyPause.ID)
		g.verifyPause = nil
	}
	g.synced, g.syncedGen, g.syncedBlock = true, gen, b
	g.observe(b, "")
	return b, nil
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
// changed and its audit record, in one durable transaction. A block set
// meanwhile by another process wins over whatever this check decided.
// Only then are notifications sent and the code shown.
func (g *Guard) settle(ctx context.Context, a Action, v Verdict, w *writes, began time.Time) Verdict {
	if v.storeDown {
		g.mu.Lock()
		w.rollback()
		g.mu.Unlock()
		return v
	}
	g.mu.Lock()
	// A check that changes no state but writes its decision record (the
	// common allowed or refused call) needs no database commit. If no
	// process changed state since the check read it (the generation has
	// not moved) and the block it read does not overrule the verdict, the
	// record is appended and that is all; otherwise it re-reads in a
	// read-only transaction and appends to the log.
	commit, writing := g.Store.ViewAppend, false
	if w.writesState() || len(g.dirty) > 0 || len(g.dirtyExec) > 0 || g.now().Sub(g.prunedDB) >= time.Hour {
		commit, writing = g.Store.Update, true
	} else if cur := g.syncedBlock; g.synced && w.pause == nil && w.show == nil && (cur == nil || v.Err != nil && v.Err.Code == aql.CodeAgentBlocked && v.VerificationID == cur.VerificationID) {
		rec := g.decisionRecord(a, v, began)
		appended, err := g.Store.AppendIf(ctx, g.syncedGen, rec)
		if err != nil {
			w.rollback()
			g.mu.Unlock()
			g.log().Error("the decision could not be recorded; the action is refused", "operation", a.Operation, "err", err)
			return g.unavailable(err, "the action is refused")
		}
		if appended {
			v.argsDigest = rec.ArgsSHA256
			g.mu.Unlock()
			return v
		}
	}
	err := commit(ctx, func(tx *store.Tx) error {
		cur, err := tx.Block(g.pol().Principal)
		if err != nil {
			return err
		}
		switch {
		case cur != nil && w.replaces != "" && w.replaces == cur.VerificationID:
			// the reissue goes ahead
		case cur != nil && !(v.Err != nil && v.Err.Code == aql.CodeAgentBlocked && v.VerificationID == cur.VerificationID):
			w.discard()
			v = g.blockedVerdict(a, cur, "hard block: set meanwhile (by another aqlguard process)")
		case cur == nil && w.replaces != "":
			w.discard() // lifted meanwhile; this call is still refused
		}
		if why, err := g.spendsHold(tx, w); err != nil {
			return err
		} else if why != "" {
			v = usedMeanwhile(a, v, why) // and what the other process wrote stays
		} else {
			for _, tok := range w.spent {
				if c := g.spent[tok]; c != nil {
					if err := tx.PutConfirmation(c.record()); err != nil {
						return err
					}
				}
			}
		}
		if w.challenge != nil {
			if err := tx.PutChallenge(*w.challenge); err != nil {
				return err
			}
		}
		if w.block != nil {
			if err := tx.PutBlock(*w.block); err != nil {
				return err
			}
		}
		if err := g.flush(tx); err != nil {
			return err
		}
		rec := g.decisionRecord(a, v, began)
		v.argsDigest = rec.ArgsSHA256 // for the outcome record
		err = tx.Append(rec)
		return err
	})
	if err != nil {
		w.rollback()
		g.mu.Unlock()
		g.log().Error("the decision could not be recorded; the action is refused", "operation", a.Operation, "err", err)
		return g.unavailable(err, "the action is refused")
	}
	g.clean()
	for _, tok := range w.spent {
		delete(g.spending, tok)
	}
	// What this check wrote is read back at the next one, whatever the
	// generation file says: it is only a hint that others changed state,
	// and a block this process set must not hang on it.
	if writing {
		g.synced = false
	}
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
		factor, shown := g.show(ctx, w.show)
		v.Directive.Factors = append(v.Directive.Factors, factor)
		result := "code_shown"
		if !shown {
			result = "code_not_shown"
			g.mu.Lock()
			g.broadcast(g.notification("error", "A verification code could not be shown: "+factor,
				map[string]any{"verificationId": w.show.Challenge}, ""))
			g.mu.Unlock()
		}
		rec := g.record("challenge", a.Session)
		rec.Operation, rec.Tier, rec.ChallengeID, rec.Factors, rec.Result = a.Operation, w.show.Tier, w.show.Challenge, []string{factor}, result
		if err := g.Store.Append(ctx, rec); err != nil {
			// The decision (a refusal) is already recorded and stands.
			g.log().Error("recording whether a code was shown", "challenge", w.show.Challenge, "err", err)
		}
	}
	return v
}

// spendsHold checks that the approvals a check used were not used (or
// revoked) meanwhile by another process: it returns why not, or "".
func (g *Guard) spendsHold(tx *store.Tx, w *writes) (string, error) {
	for _, tok := range w.spent {
		cur, err := tx.Confirmation(tok)
		if err != nil {
			return "", err
		}
		if cur != nil && (cur.Status == statusDenied || cur.Status == statusUsed && cur.UsedBy != w.id()) {
			return "the approval " + tok + " was used meanwhile (by another aqlguard process)", nil
		}
	}
	if w.approval != "" {
		ap, err := tx.Approval(w.approval)
		if err != nil {
			return "", err
		}
		if ap == nil || !ap.Active(g.now()) {
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
	d := evaluator.Directive{Enforced: true, Reason: "state database unavailable",
		Factors: []string{"fail closed: " + err.Error()}}
	return Verdict{Directive: d, Err: stateUnavailable(err, what), storeDown: true}
}

// flush writes the confirmations and executions changed since the last
// commit, and now and then prunes what can no longer be used or
// replayed. g.mu is held; the caller clears the dirty sets once the
// transaction has committed (clean).
func (g *Guard) flush(tx *store.Tx) error {
	for _, c := range g.dirty {
		if g.spending[c.Token] {
			continue // its check writes it, once it made sure it may
		}
		if err := tx.PutConfirmation(c.record()); err != nil {
			return err
		}
	}
	for _, e := range g.dirtyExec {
		if err := tx.PutExecution(e.record(g.pol().Principal)); err != nil {
			return err
		}
	}
	if now := g.now(); now.Sub(g.prunedDB) >= time.Hour {
		if _, err := tx.Prune(now.Add(-spentRetention)); err != nil {
			return err
		}
		g.prunedDB = now
	}
	return nil
}

func (g *Guard) clean() {
	for tok := range g.dirty {
		if !g.spending[tok] {
			delete(g.dirty, tok)
		}
	}
	clear(g.dirtyExec)
}

func (g *Guard) markDirty(c *Confirmation) { g.dirty[c.Token] = c }

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
	r.Stage, r.Tier, r.Risk, r.Factors = string(d.Stage), string(d.Tier), d.Risk, d.Factors
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
	return store.Record{Time: g.now(), Kind: kind, Principal: g.Principal(), Process: g.Process, Session: session}
}

func decisionWord(v Verdict) string {
	if v.Proceed {
		return "allow"
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
	err := g.Store.Append(ctx, rec)
	if err != nil {
		return fmt.Errorf("recording the outcome of %s: %w", a.Operation, err)
	}
	return nil
}
