package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// syncedWriter is a log sink tests read while the flusher writes.
type syncedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A failed fsync of the audit log (injected: a real disk failing an
// fsync needs device-mapper, which the test machine has not) is logged,
// naming the records not known to be on disk, and counted; the next
// call fails closed until an fsync succeeds, and then calls are taken
// again, with a line that says so. Both sync modes: grouped (the
// periodic fsync, whose error was dropped) and always.
func TestFailedFsyncIsLoud(t *testing.T) {
	for _, mode := range []SyncMode{SyncGrouped, SyncAlways} {
		t.Run(string(mode), func(t *testing.T) {
			ctx := context.Background()
			var logged syncedWriter
			s, err := Open(ctx, t.TempDir(), Options{AuditSync: mode, Log: slog.New(slog.NewTextHandler(&logged, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			appendOne := func(op string) error {
				return AppendRecords(ctx, s, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: op})
			}
			if err := appendOne("before"); err != nil {
				t.Fatal(err)
			}
			waitDurable(t, s)
			var broken atomic.Bool
			broken.Store(true)
			s.log.mu.Lock()
			s.log.syncFile = func(f *os.File) error {
				if broken.Load() {
					return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
				}
				return f.Sync()
			}
			s.log.mu.Unlock()

			err = appendOne("unsynced")
			if mode == SyncAlways && err == nil {
				t.Fatal("an append under sync = always succeeded although its fsync failed")
			}
			deadline := time.Now().Add(10 * time.Second)
			for s.SyncFailures() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if n := s.SyncFailures(); n == 0 {
				t.Fatal("the failed fsync was not counted")
			}
			if out := logged.String(); !strings.Contains(out, "fsync failed") || !strings.Contains(out, "records_not_known_on_disk=\"2 to 2\"") {
				t.Fatalf("the failed fsync was not logged with the records at risk:\n%s", out)
			}
			err = appendOne("refused")
			if err == nil || !strings.Contains(err.Error(), "fsync") || !errors.Is(err, syscall.EIO) {
				t.Fatalf("an append after a failed fsync: %v, want a refusal naming the fsync", err)
			}
			broken.Store(false)
			if err := appendOne("after"); err != nil {
				t.Fatalf("an append once fsync works again: %v", err)
			}
			if out := logged.String(); !strings.Contains(out, "fsync works again") {
				t.Fatalf("the recovery was not logged:\n%s", out)
			}
			if ops := loggedOperations(t, s); strings.Join(ops, " ") != "before unsynced after" {
				t.Fatalf("log %v, want before unsynced after", ops)
			}
			verify(t, s)
		})
	}
}

// waitDurable waits until the flusher has synced what was written.
func waitDurable(t *testing.T, s *Store) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		s.log.mu.Lock()
		done := s.log.durable == s.log.written
		s.log.mu.Unlock()
		if done {
			return
		}
	}
	t.Fatal("the audit log was not synced within 10s")
}

// The fsync of a segment closed at rotation is checked too: it used to
// be dropped. A failed one refuses the append that rotates, and the
// segment stays the one appended to until an fsync passes.
func TestFailedFsyncAtRotation(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{AuditSync: SyncGrouped, SegmentBytes: 1, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	appendOne := func(op string) error {
		return AppendRecords(ctx, s, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: op})
	}
	if err := appendOne("first"); err != nil {
		t.Fatal(err)
	}
	var broken atomic.Bool
	broken.Store(true)
	s.log.mu.Lock()
	s.log.syncFile = func(f *os.File) error {
		if broken.Load() {
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
		return f.Sync()
	}
	s.log.mu.Unlock()
	if err := appendOne("rotates"); err == nil || !errors.Is(err, syscall.EIO) {
		t.Fatalf("an append whose rotation could not sync the closed segment: %v", err)
	}
	if s.SyncFailures() == 0 {
		t.Fatal("not counted")
	}
	broken.Store(false)
	if err := appendOne("after"); err != nil {
		t.Fatal(err)
	}
	if ops := loggedOperations(t, s); strings.Join(ops, " ") != "first after" {
		t.Fatalf("log %v, want first after", ops)
	}
	verify(t, s)
}
