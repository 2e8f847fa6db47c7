package forward_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/store"
)

// logBuffer collects log lines, safe for the forwarder and the test.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitUntil polls cond (a condition, not a time) until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDamagedCursor (issue 32, item 3): a cursor that does not match
// the log (truncated, past its end, from another log) stops nothing
// silently: the start logs an error naming the cursor's file and what
// is wrong, CheckCursor (doctor's check) fails with it, and nothing is
// sent; a reset to start, end or a record number repairs it, says what
// will be sent, and the running forwarder sends exactly that.
func TestDamagedCursor(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, w *writer, path, destination string)
		problem string
		to      string
		sends   string
		want    []uint64 // the records sent after the repair, before the 2 written after it
	}{
		{"truncated", func(t *testing.T, w *writer, path, _ string) {
			if err := os.WriteFile(path, []byte(`{"seq":4,"hash":"ab`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "does not read (truncated or damaged", "start", "records 1 to 10 (10 records) are sent", seqs(1, 10)},
		{"past the end", func(t *testing.T, w *writer, _, destination string) {
			cur := store.ForwardCursor{Seq: 500, Hash: "x", Position: store.LogPosition{Segment: 9, Offset: 1 << 20}, Destination: destination}
			if err := (store.ForwardCursors{Dir: w.dir}).Save(ctx, forward.CursorName(destination), cur); err != nil {
				t.Fatal(err)
			}
		}, "is past the end of the audit log: it says record 500 was delivered, the log ends at record 10", "end", "nothing of the log's 10 records is sent", nil},
		{"from another log", func(t *testing.T, w *writer, _, destination string) {
			other := newState(t)
			other.write(t, 12, 0)
			cur, _, err := forward.ResetTo(ctx, store.NewLogReader(other.dir), destination, "7")
			if err != nil {
				t.Fatal(err)
			}
			if err := (store.ForwardCursors{Dir: w.dir}).Save(ctx, forward.CursorName(destination), cur); err != nil {
				t.Fatal(err)
			}
		}, "is from another audit log: it says record 7 with hash", "4", "records 5 to 10 (6 records) are sent", seqs(5, 10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newState(t)
			w.write(t, 10, 0)
			out := filepath.Join(t.TempDir(), "audit.ocsf.jsonl")
			sink := &forward.File{Path: out, Product: "test"}
			destination := sink.Destination()
			cursors := store.ForwardCursors{Dir: w.dir}
			path := cursors.Where(forward.CursorName(destination))
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, w, path, destination)

			// doctor's check
			_, _, err := forward.CheckCursor(ctx, store.NewLogReader(w.dir), cursors, destination)
			if err == nil || !strings.Contains(err.Error(), tc.problem) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), forward.RepairHint) {
				t.Fatalf("CheckCursor: %v", err)
			}

			var logs logBuffer
			fw := &forward.Forwarder{Log: store.NewLogReader(w.dir), Cursors: cursors, Sink: sink, Poll: 10 * time.Millisecond,
				Retry: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			runCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { defer close(done); _ = fw.Run(runCtx) }()
			defer func() { cancel(); <-done }()
			waitUntil(t, "the error line", func() bool { return strings.Contains(logs.String(), "level=ERROR") })
			line := logs.String()
			if !strings.Contains(line, path) || !strings.Contains(line, tc.problem) || !strings.Contains(line, "audit forward reset") {
				t.Fatalf("the start logged:\n%s", line)
			}
			if lines, _ := os.ReadFile(out); len(lines) != 0 {
				t.Fatalf("sent on a damaged cursor:\n%s", lines)
			}
			if st := fw.Status(); !strings.Contains(st.Failing, tc.problem) {
				t.Fatalf("status %+v", st)
			}

			// The repair, as `audit forward reset --to` makes it.
			cur, sends, err := forward.ResetTo(ctx, store.NewLogReader(w.dir), destination, tc.to)
			if err != nil || !strings.HasPrefix(sends, tc.sends) {
				t.Fatalf("ResetTo %s: %q, %v", tc.to, sends, err)
			}
			if err := cursors.Save(ctx, forward.CursorName(destination), cur); err != nil {
				t.Fatal(err)
			}
			w.write(t, 2, 0)
			want := append(tc.want, 11, 12)
			var got []uint64
			waitUntil(t, "the records after the repair", func() bool {
				got = sentSeqs(t, out)
				return len(got) >= len(want)
			})
			if !equal(got, want) {
				t.Fatalf("sent %v after the repair, want %v", got, want)
			}
			if !strings.Contains(logs.String(), "the forwarding cursor was repaired") {
				t.Fatalf("the repair was not logged:\n%s", logs.String())
			}
		})
	}
}

func seqs(from, to uint64) []uint64 {
	var out []uint64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sentSeqs are the records an OCSF file holds, in order.
func sentSeqs(t *testing.T, path string) []uint64 {
	t.Helper()
	data, _ := os.ReadFile(path)
	var out []uint64
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		var ev struct {
			Unmapped struct {
				Seq uint64 `json:"seq"`
			} `json:"unmapped"`
		}
		if json.Unmarshal([]byte(l), &ev) != nil {
			continue // a line being written
		}
		out = append(out, ev.Unmapped.Seq)
	}
	return out
}
