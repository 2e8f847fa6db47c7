package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// openIn opens a store on dir for the test, closed when it ends.
func openIn(t *testing.T, dir string, o Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// loggedOperations is every record's Operation, in chain order.
func loggedOperations(t *testing.T, s *Store) []string {
	t.Helper()
	var ops []string
	if err := s.View(context.Background(), func(tx *Tx) error {
		return tx.Records(1, func(r Record, _ []byte) error { ops = append(ops, r.Operation); return nil })
	}); err != nil {
		t.Fatal(err)
	}
	return ops
}

// TestConcurrentAppends: concurrent Append calls and record-only
// Commits (decided on the state they read), across segment rotations
// while state changes move the generation, leave exactly the records
// their callers were told were written, each caller's in its order, on
// one chain that verifies.
func TestConcurrentAppends(t *testing.T) {
	ctx := context.Background()
	s := openIn(t, t.TempDir(), Options{SegmentBytes: 4000})
	const callers, each = 12, 40
	var mu sync.Mutex
	written := map[string]bool{}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for i := range each {
				op := fmt.Sprintf("c%d-%03d", c, i)
				rec := Record{Time: t0, Kind: "decision", Principal: "p", Operation: op}
				var ok bool
				var err error
				switch i % 3 {
				case 0:
					ok, err = true, s.Append(ctx, rec)
				case 1:
					ok, err = true, AppendRecords(ctx, s, rec)
				case 2:
					// Written only when no block is set: decided on the view.
					_, err = s.Commit(ctx, func(v View) (Changes, error) {
						b, err := v.Block("b0")
						ok = err == nil && b == nil
						if !ok {
							return Changes{}, err
						}
						return Changes{Records: []Record{rec}}, nil
					})
				}
				if err != nil {
					t.Errorf("%s: %v", op, err)
					return
				}
				mu.Lock()
				written[op] = ok
				mu.Unlock()
			}
		})
	}
	wg.Go(func() { // moves the generation under the callers' feet
		for i := range 20 {
			if err := s.Update(ctx, func(tx *Tx) error {
				return tx.PutBlock(Block{Principal: fmt.Sprint("b", i), BlockedAt: t0})
			}); err != nil {
				t.Error(err)
			}
		}
	})
	wg.Wait()
	if t.Failed() {
		return
	}
	last := map[string]string{}
	seen := map[string]bool{}
	for _, op := range loggedOperations(t, s) {
		if op == "" {
			continue // a state change's own records
		}
		if !written[op] || seen[op] {
			t.Fatalf("%s is in the log (told written: %v, seen before: %v)", op, written[op], seen[op])
		}
		seen[op] = true
		var c, i int
		fmt.Sscanf(op, "c%d-%d", &c, &i)
		key := fmt.Sprint(c)
		if last[key] >= op {
			t.Fatalf("%s after %s: a caller's records out of order", op, last[key])
		}
		last[key] = op
	}
	for op, ok := range written {
		if ok && !seen[op] {
			t.Fatalf("%s was reported written and is not in the log", op)
		}
	}
	if len(seen) < callers*each/2 {
		t.Fatalf("only %d records written", len(seen))
	}
	verify(t, s)
}

// TestAppendWhileAnotherProcessHoldsTheLock: a caller whose context ends
// while another process holds the lock fails alone, with its context's
// error (not ErrBusy: the database was not busy past its timeout); the
// callers waiting with it are written when the lock is free, and what
// each was told matches the log.
func TestAppendWhileAnotherProcessHoldsTheLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, dir, Options{Timeout: time.Minute})
	other := openIn(t, dir, Options{Timeout: time.Minute}) // another process on the directory
	held, free := make(chan struct{}), make(chan struct{})
	go func() {
		_ = other.Update(ctx, func(*Tx) error { close(held); <-free; return nil })
	}()
	<-held
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	type result struct {
		op  string
		err error
	}
	results := make(chan result, 4)
	for i := range 4 {
		c := ctx
		if i%2 == 0 {
			c = short
		}
		go func() {
			op := fmt.Sprint("op", i)
			results <- result{op, s.Append(c, Record{Time: t0, Kind: "decision", Principal: "p", Operation: op})}
		}()
		if i == 0 {
			time.Sleep(5 * time.Millisecond) // op0 waits first
		}
	}
	time.Sleep(100 * time.Millisecond) // the short contexts end, waiting
	close(free)
	told := map[string]error{}
	for range 4 {
		r := <-results
		if r.err != nil && (!errors.Is(r.err, context.DeadlineExceeded) || errors.Is(r.err, ErrBusy)) {
			t.Fatalf("%s: %v, want context.DeadlineExceeded (not ErrBusy) or nil", r.op, r.err)
		}
		told[r.op] = r.err
	}
	if told["op0"] == nil {
		t.Fatal("op0's context ended while another process held the lock, and it was told its record was written")
	}
	ops := loggedOperations(t, s)
	for op, err := range told {
		if slices.Contains(ops, op) != (err == nil) {
			t.Fatalf("%s was told %v; the log is %v", op, err, ops)
		}
	}
	for _, op := range []string{"op1", "op3"} {
		if told[op] != nil {
			t.Fatalf("%s, under a context that allowed waiting, failed: %v", op, told[op])
		}
	}
	verify(t, s)
}

// TestAppendWriteFails: when the write fails the head stays on the last
// record in the file, the caller hears it, and the next append goes on
// from that head.
func TestAppendWriteFails(t *testing.T) {
	ctx := context.Background()
	s := openIn(t, t.TempDir(), Options{})
	if err := s.Append(ctx, Record{Time: t0, Kind: "decision", Principal: "p", Operation: "before"}); err != nil {
		t.Fatal(err)
	}
	l := s.log
	l.mu.Lock()
	readOnly, err := os.Open(filepath.Join(l.dir, segmentName(l.n)))
	if err != nil {
		t.Fatal(err)
	}
	f := l.f
	l.f = readOnly
	l.mu.Unlock()
	if err := s.Append(ctx, Record{Time: t0, Kind: "decision", Principal: "p", Operation: "lost"}); err == nil {
		t.Fatal("Append to a file it cannot write succeeded")
	}
	l.mu.Lock()
	l.f = f
	l.mu.Unlock()
	readOnly.Close()
	if err := s.Append(ctx, Record{Time: t0, Kind: "decision", Principal: "p", Operation: "after"}); err != nil {
		t.Fatal(err)
	}
	if ops := loggedOperations(t, s); fmt.Sprint(ops) != "[before after]" {
		t.Fatalf("log %v, want [before after]", ops)
	}
	verify(t, s)
}
