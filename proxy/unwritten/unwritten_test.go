package unwritten

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
)

// TestHeldBlockIsWritten: a held block is written once the state takes
// it (over no block: the block, its challenge and record; over another
// block: its record alone), its code shown only when it was written, and
// then it is held no more.
func TestHeldBlockIsWritten(t *testing.T) {
	for _, tt := range []struct {
		name      string
		already   bool // the state holds another block by then
		wantShown bool
	}{
		{"over no block", false, true},
		{"over another block", true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := statetest.Open(t)
			ctx := context.Background()
			if tt.already {
				if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
					return store.Changes{Blocks: []store.Block{{Principal: "agent", VerificationID: "ver_first", BlockedAt: time.Now()}}}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			var down atomic.Bool
			down.Store(true)
			loop := Loop{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Within: time.Second,
				Commit: func(ctx context.Context, decide func(store.View) (store.Changes, error)) error {
					if down.Load() {
						return errors.New("the state is down")
					}
					_, err := st.Commit(ctx, decide)
					return err
				}}
			var shown, observed atomic.Int32
			var observedCur atomic.Pointer[store.Block]
			b := &Block{Block: store.Block{Principal: "agent", VerificationID: "ver_held", BlockedAt: time.Now()},
				Challenge: &store.Challenge{ID: "ver_held", Principal: "agent", ExpiresAt: time.Now().Add(time.Hour)},
				Record:    store.NewRecord(time.Now(), store.KindDecision, "agent", "test", ""),
				Observed:  func(cur *store.Block) { observed.Add(1); observedCur.Store(cur) },
				Show:      func(context.Context) { shown.Add(1) }}
			var h Hold
			var running sync.WaitGroup
			bg, stop := context.WithCancel(ctx)
			defer func() { stop(); running.Wait() }()
			if got := h.Keep(bg, b, loop, &running); got != b {
				t.Fatal("the first block is not the one held")
			}
			if got := h.Keep(bg, &Block{}, loop, &running); got != b {
				t.Fatal("a second block replaced the first")
			}
			if err := h.Write(ctx, b, loop); err == nil {
				t.Fatal("written while the state is down")
			}
			down.Store(false) // the retry writes it now
			for deadline := time.Now().Add(10 * time.Second); h.Held() != nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the retry never wrote the block")
				}
			}
			var cur *store.Block
			if err := st.Load(ctx, func(v store.View) (err error) { cur, err = v.Block("agent"); return }); err != nil {
				t.Fatal(err)
			}
			want := "ver_held"
			if tt.already {
				want = "ver_first"
			}
			if cur == nil || cur.VerificationID != want {
				t.Fatalf("the state holds %+v, want verification %s", cur, want)
			}
			if observed.Load() != 1 || (observedCur.Load() == nil) != !tt.already {
				t.Fatalf("observed %d times, with %+v", observed.Load(), observedCur.Load())
			}
			if (shown.Load() == 1) != tt.wantShown || shown.Load() > 1 {
				t.Fatalf("its code shown %d times, want shown: %v", shown.Load(), tt.wantShown)
			}
		})
	}
}
