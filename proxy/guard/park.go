package guard

import (
	"context"

	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/store"
)

// Parking an idle principal's guard is proxy/park's: the step count and
// the failure pause go to the state, and the principal's next guard
// takes them over. What cannot be written keeps the guard (busy).

// Park writes the step count and the failure pause to the state and
// closes the guard to decisions (parking.Lot.Park): the caller drops it and
// calls Close.
func (g *Guard) Park(ctx context.Context) error { return g.lot.Park(ctx, g.parkLoop()) }

// Resume takes over what a dropped guard of the principal parked, before
// this guard's first call (parking.Resume). An error means the guard must
// not be used.
func (g *Guard) Resume(ctx context.Context) error { return parking.Resume(ctx, g.parkLoop()) }

// parking is what proxy/park reaches of the guard.
func (g *Guard) parkLoop() parking.Loop {
	return parking.Loop{State: g.State, Principal: g.Principal(), Record: g.record, Now: g.now, Log: g.log(), Within: recordWithin,
		Commit: func(ctx context.Context, decide func(store.View, *parking.Memory, func() string) (store.Changes, error)) error {
			return g.commit(ctx, func(v store.View, m *memory) (store.Changes, error) {
				pm := parking.Memory{Steps: m.steps, FailurePause: m.failurePause}
				ch, err := decide(v, &pm, func() string { return g.busy(m) })
				m.steps, m.failurePause = pm.Steps, pm.FailurePause
				return ch, err
			})
		}}
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
	g.initDesk()
	d := g.desk
	g.mu.Unlock()
	if why := d.Busy(); why != "" {
		return why
	}
	if g.hold.Held() != nil {
		// Held in memory only until the state takes it (proxy/unwritten):
		// a dropped guard would drop the block with it.
		return "a hard block is waiting to be written to the state"
	}
	return ""
}
