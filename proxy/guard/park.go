package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// Parking: `aqlguard serve` makes a guard for each principal its clients
// authenticate as and drops the guard of one nobody has used for a while
// (proxy/httpfront Principals), so that memory follows the principals
// that are active, not every principal ever seen. Dropping a guard must
// not loosen anything. What the guard holds is of three sorts:
//
//   - In the state already, so a new guard reads it at its first call:
//     the block, challenges and the failure budget, confirmations (a
//     question answered while nobody waited is found by the retry),
//     standing approvals, executions, pins.
//   - In this process's memory alone, and owed to the principal: the
//     step count and the failure pause. Park writes them to the state
//     (a parked row, below) and Resume, in the principal's next guard
//     (in this process or another on the state), takes them over before
//     its first call, so a budget goes on where it stopped and a pause
//     waits for its check-in.
//   - What cannot be written, and so keeps the guard: a verify pause in
//     force (spec 8.8.3 keeps it in memory; it ends with its challenge's
//     expiry, and so does the reason to keep the guard), a question on
//     or waiting for the human's screen, a code being shown. Park refuses
//     with ErrBusy while any is there.
//
// The rest ends with the principal's sessions, which are all closed
// before serve parks a guard: executions (cancelled when their session
// ends), their notifications, the sessions' flows, what a question
// showed.
//
// The parked row is an execution row (store.Execution) with an id no
// execute_agent gives ("loop_" and the principal): the principal's loop
// outside any execution, its Steps the step count and its Status
// "parked" (or "parked_failure_pause"). It is never pruned while
// parked; Resume marks it "resumed" and finished, and the usual pruning
// of finished executions removes it later. Its audit records say what
// was parked and taken over. Every row is the principal's, whichever
// process wrote it: parking again merges (the higher count, either
// pause), so two replicas that each park the principal keep the stricter
// of the two.

// ErrBusy says the guard holds what parking it would lose; nothing was
// written and the guard goes on as before.
var ErrBusy = ruling.ErrBusy

// errParked refuses a commit of a guard that was parked: its memory is in
// the state now, and a decision here would not be counted there.
var errParked = errors.New("this principal's guard was dropped after it was idle; the call is refused (retry: a new one takes its place)")

// parkedPrefix begins a parked row's id (see above).
const parkedPrefix = "loop_"

// parkedID is the id of the principal's parked row.
func parkedID(principal string) string { return parkedPrefix + principal }

// isParkedID says whether an execution id names a parked row, which no
// execution operation may touch.
func isParkedID(id string) bool { return strings.HasPrefix(id, parkedPrefix) }

// Park writes the step count and the failure pause to the state and
// closes the guard to decisions: every commit after Park's is refused
// (fail closed), so the caller must not use the guard again; it drops it
// and calls Close. It returns ErrBusy (wrapped, saying why) and changes
// nothing while a verify pause is in force, a question is on or waiting
// for the human's screen, or a code is being shown; any other error
// (the state unreachable) leaves the guard as it was too.
func (g *Guard) Park(ctx context.Context) error {
	principal := g.Principal()
	id := parkedID(principal)
	var wrote, closed bool
	err := g.commit(ctx, func(v store.View, m *memory) (store.Changes, error) {
		wrote = false
		cur, err := v.Execution(id)
		if err != nil {
			return store.Changes{}, err
		}
		p, err := ruling.Park(g.busy(m), m.steps, m.failurePause, cur)
		if err != nil {
			return store.Changes{}, err
		}
		parked := func(uint64) { g.parked, closed = true, true } // g.mu is held
		if !p.Write {
			return store.Changes{Then: parked}, nil
		}
		row := store.Execution{ID: id, Principal: principal, Status: p.Status(), Steps: p.Steps, StartedAt: g.now(),
			Reason: "the principal's guard was dropped after it was idle; its next guard takes this over"}
		rec := g.record(store.KindExecution, "")
		rec.Operation, rec.Execution, rec.Result = "guard_park", id, row.Status
		rec.Factors = memoryFactors(p.Steps, p.FailurePause)
		wrote = true
		return store.Changes{Executions: []store.Execution{row}, Records: []store.Record{rec}, Then: parked}, nil
	})
	if err != nil {
		g.mu.Lock()
		defer g.mu.Unlock()
		if closed {
			// The hook ran but the commit failed after it (a failed
			// fsync, a failed group commit): the row may not be there,
			// so the guard goes on with its memory, which is whole, and
			// is parked again later (a row written after all is merged).
			g.parked = false
		}
		return err
	}
	if wrote {
		g.log().Info("what the principal's guard held is parked in the state", "principal", principal)
	}
	return nil
}

// Resume takes over what a dropped guard of the principal parked in the
// state, before this guard's first call: the step count goes on from
// there and a failure pause still waits for its check-in. It reads
// first and writes only when there is a parked row (marking it taken
// over, with an audit record), so a principal never parked costs one
// read. An error means the guard must not be used (fail closed: it
// could be looser than the one dropped).
func (g *Guard) Resume(ctx context.Context) error {
	// Not the request's to end: a take-over that was written but whose
	// answer never came back would lose what was parked.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWithin)
	defer cancel()
	principal := g.Principal()
	id := parkedID(principal)
	var row *store.Execution
	if err := g.State.Load(ctx, func(v store.View) (err error) { row, err = v.Execution(id); return }); err != nil {
		return fmt.Errorf("reading what the principal's last guard parked: %w", err)
	}
	if _, _, ok := ruling.ParkedMemory(row); !ok {
		return nil
	}
	var took *store.Execution
	err := g.commit(ctx, func(v store.View, m *memory) (store.Changes, error) {
		took = nil
		cur, err := v.Execution(id)
		if err != nil {
			return store.Changes{}, err
		}
		var ok bool
		if m.steps, m.failurePause, ok = ruling.Resume(m.steps, m.failurePause, cur); !ok {
			return store.Changes{}, nil // taken over meanwhile, by another guard of the principal
		}
		steps, failurePause, _ := ruling.ParkedMemory(cur)
		done := *cur
		done.Status, done.FinishedAt = ruling.StatusResumed, g.now()
		rec := g.record(store.KindExecution, "")
		rec.Operation, rec.Execution, rec.Result = "guard_resume", id, ruling.StatusResumed
		rec.Factors = memoryFactors(steps, failurePause)
		took = cur
		return store.Changes{Executions: []store.Execution{done}, Records: []store.Record{rec}}, nil
	})
	if err != nil {
		return fmt.Errorf("taking over what the principal's last guard parked: %w", err)
	}
	if took != nil {
		g.log().Info("what the principal's last guard parked is taken over", "principal", principal, "steps", took.Steps,
			"failure_pause", took.Status == ruling.StatusParkedFailurePause)
	}
	return nil
}

// memoryFactors are the audit factors of a parked memory.
func memoryFactors(steps int, failurePause bool) []string {
	f := []string{fmt.Sprintf("steps: %d since the last check-in", steps)}
	if failurePause {
		f = append(f, "failure pause: a reported step failed; the next action waits for a human check-in")
	}
	return f
}

// busy says what keeps the guard from being parked ("" for nothing),
// with m the memory as every earlier commit left it: a verify pause in
// force, what the desk holds (proxy/desk: a question, a code), a block
// not written yet.
func (g *Guard) busy(m *memory) string {
	if m.pause != nil && g.now().Before(m.pause.ExpiresAt) {
		return "a verify pause is in force until " + m.pause.ExpiresAt.Format("15:04:05")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.initDesk()
	if why := g.desk.Busy(); why != "" {
		return why
	}
	if g.unwritten != nil {
		// Held in memory only until the state takes it (unwritten.go):
		// a dropped guard would drop the block with it.
		return "a hard block is waiting to be written to the state"
	}
	return ""
}
