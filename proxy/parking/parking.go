// Package parking drops an idle principal's guard without loosening
// anything. `aqlguard serve` makes a guard for each principal its
// clients authenticate as and drops the guard of one nobody has used for
// a while (proxy/httpfront Principals), so that memory follows the
// principals that are active, not every principal ever seen. What the
// guard holds is of three sorts:
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
//     or waiting for the human's screen, a code being shown, a block not
//     written yet. Park refuses with ErrBusy while any is there (the
//     guard says which: Memory.Busy).
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
// of the two. What each commit writes is proxy/ruling's (Park, Resume).
//
// Locking: Lot.mu guards whether the guard is parked and nothing else;
// it is a leaf (a commit's hook takes it with the guard's lock held).
package parking

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// ErrBusy says the guard holds what parking it would lose; nothing was
// written and the guard goes on as before.
var ErrBusy = ruling.ErrBusy

// ErrParked refuses a commit of a guard that was parked: its memory is
// in the state now, and a decision there would not be counted there.
var ErrParked error = parkedError{}

type parkedError struct{}

func (parkedError) Error() string {
	return "this principal's guard was dropped after it was idle; the call is refused (retry: a new one takes its place)"
}

// Phrase is what the model is told of it (refusal.StateProblem).
func (parkedError) Phrase() string {
	return "this principal's guard was dropped while idle; retry the call"
}

// prefix begins a parked row's id (see above).
const prefix = "loop_"

// ID is the id of the principal's parked row.
func ID(principal string) string { return prefix + principal }

// IsID says whether an execution id names a parked row, which no
// execution operation may touch.
func IsID(id string) bool { return strings.HasPrefix(id, prefix) }

// Memory is what of the guard's memory parking reads and takes over.
type Memory struct {
	Steps        int
	FailurePause bool
}

// Loop is what a Lot needs of the guard it parks.
type Loop struct {
	State     store.State
	Principal string
	// Commit is one commit of the guard: decide gets the guard's memory
	// as every earlier commit left it, to read and change (it becomes the
	// memory once the commit is written), and busy says what keeps the
	// guard from being parked ("": nothing).
	Commit func(ctx context.Context, decide func(v store.View, m *Memory, busy func() string) (store.Changes, error)) error
	// Record starts one of the guard's audit records.
	Record func(kind store.RecordKind, session string) store.Record
	Now    func() time.Time
	Log    *slog.Logger
	// Within bounds a take-over once its request has ended.
	Within time.Duration
}

// Lot says whether its guard was parked. The zero Lot is a guard not
// parked.
type Lot struct {
	mu     sync.Mutex
	parked bool
}

// Parked says Park wrote the memory to the state: every commit of the
// guard from then on is refused (ErrParked).
func (l *Lot) Parked() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.parked
}

func (l *Lot) set(parked bool) {
	l.mu.Lock()
	l.parked = parked
	l.mu.Unlock()
}

// Park writes the step count and the failure pause to the state and
// closes the guard to decisions: every commit after Park's is refused
// (fail closed), so the caller must not use the guard again; it drops it
// and calls Close. It returns ErrBusy (wrapped, saying why) and changes
// nothing while the guard is busy; any other error (the state
// unreachable) leaves the guard as it was too.
func (l *Lot) Park(ctx context.Context, loop Loop) error {
	id := ID(loop.Principal)
	var wrote, closed bool
	err := loop.Commit(ctx, func(v store.View, m *Memory, busy func() string) (store.Changes, error) {
		wrote = false
		cur, err := v.Execution(id)
		if err != nil {
			return store.Changes{}, err
		}
		p, err := ruling.Park(busy(), m.Steps, m.FailurePause, cur)
		if err != nil {
			return store.Changes{}, err
		}
		parked := func(uint64) { l.set(true); closed = true }
		if !p.Write {
			return store.Changes{Then: parked}, nil
		}
		row := store.Execution{ID: id, Principal: loop.Principal, Status: p.Status(), Steps: p.Steps, StartedAt: loop.Now(),
			Reason: "the principal's guard was dropped after it was idle; its next guard takes this over"}
		rec := loop.Record(store.KindExecution, "")
		rec.Operation, rec.Execution, rec.Result = "guard_park", id, row.Status
		rec.Factors = factors(p.Steps, p.FailurePause)
		wrote = true
		return store.Changes{Executions: []store.Execution{row}, Records: []store.Record{rec}, Then: parked}, nil
	})
	if err != nil {
		if closed {
			// The hook ran but the commit failed after it (a failed
			// fsync, a failed group commit): the row may not be there,
			// so the guard goes on with its memory, which is whole, and
			// is parked again later (a row written after all is merged).
			l.set(false)
		}
		return err
	}
	if wrote {
		loop.Log.Info("what the principal's guard held is parked in the state", "principal", loop.Principal)
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
func Resume(ctx context.Context, loop Loop) error {
	// Not the request's to end: a take-over that was written but whose
	// answer never came back would lose what was parked.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loop.Within)
	defer cancel()
	id := ID(loop.Principal)
	var row *store.Execution
	if err := loop.State.Load(ctx, func(v store.View) (err error) { row, err = v.Execution(id); return }); err != nil {
		return fmt.Errorf("reading what the principal's last guard parked: %w", err)
	}
	if _, _, ok := ruling.ParkedMemory(row); !ok {
		return nil
	}
	var took *store.Execution
	err := loop.Commit(ctx, func(v store.View, m *Memory, _ func() string) (store.Changes, error) {
		took = nil
		cur, err := v.Execution(id)
		if err != nil {
			return store.Changes{}, err
		}
		var ok bool
		if m.Steps, m.FailurePause, ok = ruling.Resume(m.Steps, m.FailurePause, cur); !ok {
			return store.Changes{}, nil // taken over meanwhile, by another guard of the principal
		}
		steps, failurePause, _ := ruling.ParkedMemory(cur)
		done := *cur
		done.Status, done.FinishedAt = ruling.StatusResumed, loop.Now()
		rec := loop.Record(store.KindExecution, "")
		rec.Operation, rec.Execution, rec.Result = "guard_resume", id, ruling.StatusResumed
		rec.Factors = factors(steps, failurePause)
		took = cur
		return store.Changes{Executions: []store.Execution{done}, Records: []store.Record{rec}}, nil
	})
	if err != nil {
		return fmt.Errorf("taking over what the principal's last guard parked: %w", err)
	}
	if took != nil {
		loop.Log.Info("what the principal's last guard parked is taken over", "principal", loop.Principal, "steps", took.Steps,
			"failure_pause", took.Status == ruling.StatusParkedFailurePause)
	}
	return nil
}

// factors are the audit factors of a parked memory.
func factors(steps int, failurePause bool) []string {
	f := []string{fmt.Sprintf("steps: %d since the last check-in", steps)}
	if failurePause {
		f = append(f, "failure pause: a reported step failed; the next action waits for a human check-in")
	}
	return f
}
