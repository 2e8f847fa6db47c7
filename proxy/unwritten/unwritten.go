// Package unwritten holds a hard block decided while the state could not
// be written (the database down, the state directory read-only or busy).
// Such a deny must not end as one refused call that the next call, once
// the state is back, walks past. The block, its challenge and the
// decision's record are kept in memory, the principal is refused as
// blocked by this process meanwhile (the guard's), and they are written
// as soon as the state takes them: by the principal's next check, or by
// a retry that runs until then. Only once written is the code shown (a
// code is shown only with its challenge on disk). Memory is this
// process's: other processes on the state learn of the block when it is
// written, and a process that ends before that loses it (nothing else
// could have kept it). Whether to write it over a block the state holds
// by then is proxy/ruling's (Unwritten).
//
// Locking: Hold.mu guards the block held and nothing else; it is a leaf
// (a commit's hook takes it with the guard's lock held).
package unwritten

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
)

// Block is a hard block decided but not written yet.
type Block struct {
	Block store.Block
	// Challenge is the block's challenge (nil: none was made).
	Challenge *store.Challenge
	// Record is the decision's audit record.
	Record store.Record
	// Observed runs in the hook of the commit that writes the block's
	// record (the guard's lock held): cur is the block the state held
	// then, nil when this one was written.
	Observed func(cur *store.Block)
	// Show shows the block's code, once the block is written.
	Show func(ctx context.Context)
}

// Loop is what a Hold needs of the guard.
type Loop struct {
	// Commit is one commit of the guard that changes none of its memory.
	Commit func(ctx context.Context, decide func(store.View) (store.Changes, error)) error
	Log    *slog.Logger
	// Within bounds each retry's write.
	Within time.Duration
}

// Retry waits for an unwritten block.
const (
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// Hold keeps at most one unwritten block. The zero Hold holds none.
type Hold struct {
	mu   sync.Mutex
	held *Block
}

// Held is the block held, nil for none.
func (h *Hold) Held() *Block {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

// Keep holds b unless a block is held already (one block at a time: the
// first stands), and returns the block held. When it keeps b, it starts
// the retry that writes it once the state takes it, until ctx ends;
// running counts that goroutine.
func (h *Hold) Keep(ctx context.Context, b *Block, loop Loop, running *sync.WaitGroup) (held *Block) {
	h.mu.Lock()
	if h.held != nil {
		defer h.mu.Unlock()
		return h.held
	}
	h.held = b
	running.Add(1)
	h.mu.Unlock()
	go h.retry(ctx, loop, running)
	return b
}

// Write writes b (if no block is in the state already: then only its
// record), shows its code, and forgets it.
func (h *Hold) Write(ctx context.Context, b *Block, loop Loop) error {
	var wrote, gone bool
	err := loop.Commit(ctx, func(v store.View) (store.Changes, error) {
		gone = h.Held() != b // written by a commit before this one
		if gone {
			return store.Changes{}, nil
		}
		cur, err := v.Block(b.Block.Principal)
		if err != nil {
			return store.Changes{}, err
		}
		wrote = ruling.Unwritten(cur)
		c := store.Changes{Records: []store.Record{b.Record}}
		if wrote {
			cur = nil
			c.Blocks = []store.Block{b.Block}
			if b.Challenge != nil {
				c.Challenges = []store.Challenge{*b.Challenge}
			}
		}
		c.Then = func(uint64) {
			h.mu.Lock()
			if h.held == b {
				h.held = nil
			}
			h.mu.Unlock()
			b.Observed(cur)
		}
		return c, nil
	})
	if err != nil || gone {
		return err
	}
	if !wrote || b.Challenge == nil {
		loop.Log.Warn("a block decided while the state could not be written was recorded; another block was in force by then",
			"principal", b.Block.Principal, "verification", b.Block.VerificationID)
		return nil
	}
	loop.Log.Warn("principal hard-blocked: the block decided while the state could not be written is written now",
		"principal", b.Block.Principal, "reason", b.Block.Reason, "verification", b.Block.VerificationID)
	b.Show(ctx)
	return nil
}

// retry writes the block held once the state takes it, if no check did
// first, until ctx ends.
func (h *Hold) retry(ctx context.Context, loop Loop, running *sync.WaitGroup) {
	defer running.Done()
	wait := retryMin
	for {
		select {
		case <-ctx.Done():
			if b := h.Held(); b != nil {
				loop.Log.Error("aqlguard stopped before a block could be written: it is lost",
					"principal", b.Block.Principal, "reason", b.Block.Reason, "verification", b.Block.VerificationID)
			}
			return
		case <-time.After(wait):
		}
		b := h.Held()
		if b == nil {
			return
		}
		wctx, cancel := context.WithTimeout(ctx, loop.Within)
		err := h.Write(wctx, b, loop)
		cancel()
		if err == nil {
			return
		}
		wait = min(2*wait, retryMax)
	}
}
