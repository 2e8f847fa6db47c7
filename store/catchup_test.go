package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The log's catch-up on a commit reads the marker (with the generation,
// in one pread) and fstats the segment instead of looking for the next
// segment by name (auditLog.catchUp). These are the cases it must still
// see.

// commitRecord appends one record through a commit that changes no
// state: the path every guarded call takes twice.
func commitRecord(s *Store, op string) error {
	return AppendRecords(context.Background(), s, Record{Time: t0, Kind: "decision", Principal: "p", Operation: op})
}

// TestCommitsOfTwoProcessesAcrossRotations: two processes' commits,
// interleaved and concurrent, across many segment rotations by either,
// leave one chain with every record.
func TestCommitsOfTwoProcessesAcrossRotations(t *testing.T) {
	dir := t.TempDir()
	a := openIn(t, dir, Options{SegmentBytes: 1500})
	b := openIn(t, dir, Options{SegmentBytes: 1500})
	for i := range 40 { // strictly alternating: each one's head moves between its commits
		if err := commitRecord([]*Store{a, b}[i%2], fmt.Sprint("seq-", i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 80 {
		wg.Go(func() {
			if err := commitRecord([]*Store{a, b}[i%2], fmt.Sprint("par-", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := verify(t, a); n != 120 {
		t.Fatalf("%d records, want 120", n)
	}
	if ns, _ := a.log.segments(); len(ns) < 10 {
		t.Fatalf("%d segments: the test wanted many rotations", len(ns))
	}
}

// TestCommitSeesAppendsOfAProcessThatDied: a process killed after
// writing a record, before it wrote the head into the marker, left the
// marker naming the head the other process knows. The other's next
// commit still chains after that record: in the same segment its size
// says so; in a new segment the marker names that segment, written
// before the segment was made.
func TestCommitSeesAppendsOfAProcessThatDied(t *testing.T) {
	for _, rotates := range []bool{false, true} {
		t.Run(fmt.Sprint("rotates=", rotates), func(t *testing.T) {
			dir := t.TempDir()
			a := openIn(t, dir, Options{SegmentBytes: 2000})
			b := openIn(t, dir, Options{SegmentBytes: 2000})
			if err := commitRecord(a, "a1"); err != nil {
				t.Fatal(err)
			}
			// The marker's head as a's commit left it.
			gen := filepath.Join(dir, GenerationFile)
			raw, err := os.ReadFile(gen)
			if err != nil || len(raw) != markerSize {
				t.Fatalf("marker: %d bytes, %v", len(raw), err)
			}
			head := raw[markerLogAt:markerSegAt]
			rec := Record{Time: t0, Kind: "decision", Principal: "p", Operation: "b1"}
			if rotates { // b's record does not fit in the segment: b starts the next one
				rec.Result = strings.Repeat("x", 2000)
			}
			if err := AppendRecords(context.Background(), b, rec); err != nil {
				t.Fatal(err)
			}
			if started := b.log.n == a.log.n+1; started != rotates {
				t.Fatalf("b appends to segment %d, a to %d", b.log.n, a.log.n)
			}
			// b "dies" before its head reaches the marker.
			f, err := os.OpenFile(gen, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteAt(head, markerLogAt); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if err := commitRecord(a, "a2"); err != nil {
				t.Fatal(err)
			}
			if ops := loggedOperations(t, a); fmt.Sprint(ops) != "[a1 b1 a2]" {
				t.Fatalf("log %v, want [a1 b1 a2]", ops)
			}
			verify(t, a)
		})
	}
}

// TestCommitSeesItsSegmentDamaged: records removed from the end of the
// segment a process writes, or the segment deleted, stop its commits
// (fail closed) instead of chaining over the loss (as
// TestDeletedSegmentWhileRunning, through a commit).
func TestCommitSeesItsSegmentDamaged(t *testing.T) {
	for _, c := range []struct {
		name, want string
		damage     func(dir, seg string) error
	}{
		{"cut short", "removed", func(_, seg string) error {
			first, err := firstLine(seg)
			if err != nil {
				return err
			}
			return os.Truncate(seg, int64(len(first)+1))
		}},
		{"deleted", "deleted", func(dir, _ string) error { return os.RemoveAll(filepath.Join(dir, AuditDir)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openIn(t, dir, Options{})
			for _, op := range []string{"one", "two"} {
				if err := commitRecord(s, op); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.damage(dir, filepath.Join(dir, AuditDir, segmentName(s.log.n))); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := commitRecord(s, "three"); err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("commit after the segment was %s = %v", c.name, err)
				}
			}
		})
	}
}

// TestMarkerWithoutSegment: a marker written before it named the
// segment (56 bytes) is read as saying nothing of it: the commit looks
// at the files, and the marker names the segment from then on.
func TestMarkerWithoutSegment(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir, Options{})
	if err := commitRecord(s, "one"); err != nil {
		t.Fatal(err)
	}
	gen := filepath.Join(dir, GenerationFile)
	if err := os.Truncate(gen, markerSegAt); err != nil {
		t.Fatal(err)
	}
	if err := commitRecord(s, "two"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(gen); err != nil || st.Size() != markerSize {
		t.Fatalf("marker after a commit: %v, %v; want %d bytes", st.Size(), err, markerSize)
	}
	_, m, err := s.gen.readWithLog()
	if err != nil || !m.ok || m.segment != uint64(s.log.n) {
		t.Fatalf("marker says segment %d (ok %v, %v), want %d", m.segment, m.ok, err, s.log.n)
	}
	s.Close()
	s = openIn(t, dir, Options{})
	if ops := loggedOperations(t, s); fmt.Sprint(ops) != "[one two]" {
		t.Fatalf("log %v", ops)
	}
	verify(t, s)
}
