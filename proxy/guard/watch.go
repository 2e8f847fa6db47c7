package guard

import (
	"context"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// Status is the guard's state for the people who run it.
type Status struct {
	// Principal is whose guard this is.
	Principal string
	// PendingQuestions are the questions put to the human that wait for
	// an answer, in this process.
	PendingQuestions int
	// Blocked says the principal is hard-blocked (in the state, so set by
	// any process sharing it).
	Blocked bool
}

// Status reads the guard's state; an error says the state cannot be
// read (a readiness probe's question).
func (g *Guard) Status(ctx context.Context) (Status, error) {
	g.mu.Lock()
	g.initDesk()
	d := g.desk
	g.mu.Unlock()
	pending := d.Waiting()
	principal := g.pol().Principal
	st := Status{Principal: principal, PendingQuestions: pending}
	err := g.State.Load(ctx, func(v store.View) error {
		b, err := v.Block(principal)
		st.Blocked = b != nil
		return err
	})
	st.Blocked = st.Blocked || g.hold.Held() != nil // a block not written yet holds here (proxy/unwritten)
	return st, err
}

// watch follows the state's generation (State.Watch: NOTIFY on
// PostgreSQL, the generation file on bbolt) until ctx ends: a block set
// by any process sharing the state reaches this process's running
// executions as danger_zone at once, not at their next call. Reading the
// block is a commit that changes nothing, so it is ordered with every
// other commit and served from the store's snapshot.
func (g *Guard) watch(ctx context.Context) {
	defer g.running.Done()
	principal := g.pol().Principal
	look := func(uint64) {
		_, err := g.State.Commit(ctx, func(v store.View) (store.Changes, error) {
			b, err := v.Block(principal)
			return store.Changes{Then: func(uint64) {
				g.mu.Lock()
				defer g.mu.Unlock()
				g.observe(b, "")
			}}, err
		})
		if err != nil && ctx.Err() == nil {
			g.log().Debug("reading the block after a state change", "err", err)
		}
	}
	for ctx.Err() == nil {
		err := g.State.Watch(ctx, look)
		if ctx.Err() != nil {
			return
		}
		g.log().Warn("watching the state failed; watching again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}
