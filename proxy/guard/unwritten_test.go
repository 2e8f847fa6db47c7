package guard

import (
	"context"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
)

// downAfterDeciding is a state whose commits, while down, decide on the
// state as it is and then fail to write (a COMMIT that fails, a disk
// that turned read-only under the write).
type downAfterDeciding struct {
	store.State
	down atomic.Bool
}

var errWriteFailed = errors.New("state database (test): the write failed")

func (s *downAfterDeciding) Commit(ctx context.Context, decide func(store.View) (store.Changes, error)) (uint64, error) {
	if !s.down.Load() {
		return s.State.Commit(ctx, decide)
	}
	err := s.State.Load(ctx, func(v store.View) error {
		_, err := decide(v)
		return err
	})
	return 0, errors.Join(errWriteFailed, err)
}

// A deny decided while the state cannot be written blocks the principal
// all the same: it is refused as blocked by this process (a harmless
// call included) until the block can be written, then the block, its
// challenge and the deny's record are written by themselves and the
// code is shown; from then on the state holds it as any block. Two ways
// the state fails: before the decision (the lock held by a stuck
// process) and after it (the write fails).
func TestDenyWhileTheStateIsDownStaysBlocked(t *testing.T) {
	for _, how := range []string{"before deciding", "after deciding"} {
		t.Run(how, func(t *testing.T) {
			ctx := context.Background()
			h := &fakeHuman{}
			g, dir := lockedGuard(t, h)
			dirStore := storeOf(g)
			var up func()
			switch how {
			case "before deciding":
				up = holdLock(t, dir, syscall.LOCK_EX)
			case "after deciding":
				st := &downAfterDeciding{State: g.State}
				st.down.Store(true)
				g.State = st
				up = func() { st.down.Store(false) }
			}
			deny := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"}))
			if deny.Proceed || deny.Refusal == nil || deny.Refusal.Kind != refusal.Blocked || deny.VerificationID == "" {
				t.Fatalf("a deny while the state is down: %+v %+v", deny.Directive, deny.Refusal)
			}
			if v := g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
				t.Fatalf("a harmless call after the deny, the state still down: %+v %+v", v.Directive, v.Refusal)
			}
			h.mu.Lock()
			shown := len(h.shown)
			h.mu.Unlock()
			if shown != 0 {
				t.Fatal("a code was shown before its challenge was written")
			}
			up()
			waitFor(t, func() bool {
				h.mu.Lock()
				defer h.mu.Unlock()
				return len(h.shown) == 1 && h.shown[0].Challenge == deny.VerificationID
			})
			var b *store.Block
			var ch *store.Challenge
			if err := dirStore.View(ctx, func(tx *store.Tx) (err error) {
				if b, err = tx.Block("unit"); err != nil {
					return err
				}
				ch, err = tx.Challenge(deny.VerificationID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if b == nil || b.VerificationID != deny.VerificationID || ch == nil {
				t.Fatalf("once the state is back: block %+v, challenge %+v", b, ch)
			}
			if v := g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
				t.Fatalf("a harmless call once the block is written: %+v %+v", v.Directive, v.Refusal)
			}
			denies := 0
			for _, r := range records(t, &Guard{State: dirStore}, string(store.KindDecision)) {
				if r.Operation == "db_drop_database" {
					denies++
				}
			}
			if denies != 1 {
				t.Fatalf("%d records of the deny, want 1", denies)
			}
		})
	}
}

// A guard that holds a block the state has not taken yet is not parked:
// a dropped guard would take the block with it, and the principal's
// next guard would let it through.
func TestUnwrittenBlockKeepsTheGuard(t *testing.T) {
	ctx := context.Background()
	g, _ := lockedGuard(t, &fakeHuman{})
	st := &downAfterDeciding{State: g.State}
	st.down.Store(true)
	g.State = st
	if deny := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"})); deny.Proceed || deny.Refusal == nil || deny.Refusal.Kind != refusal.Blocked {
		t.Fatalf("a deny while the state is down: %+v %+v", deny.Directive, deny.Refusal)
	}
	if err := g.Park(ctx); !errors.Is(err, parking.ErrBusy) {
		t.Fatalf("Park with an unwritten block: %v, want parking.ErrBusy", err)
	}
	if v := g.Check(ctx, call("db_get_row", map[string]any{"id": "1"})); v.Proceed || v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("after the refused park: %+v %+v", v.Directive, v.Refusal)
	}
}
