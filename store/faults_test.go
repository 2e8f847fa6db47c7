package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/faultinject"
)

// The faults an operator meets on a bad day, each loud and none losing
// evidence (issue 20).

// withHistory opens a state in dir with a block and some records, and
// closes it: a state directory that has been used.
func withHistory(t *testing.T, dir string) {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.PutBlock(Block{Principal: "claude", Reason: "rm -rf", VerificationID: "v1", BlockedAt: t0}); err != nil {
			return err
		}
		return tx.Append(Record{Time: t0, Kind: "decision", Principal: "claude", Operation: "shell_exec", Decision: "block"})
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "claude", Operation: fmt.Sprint("op", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

func historyProblem(t *testing.T, dir string) *HistoryError {
	t.Helper()
	s, err := Open(context.Background(), dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a state whose history does not add up")
	}
	var herr *HistoryError
	if !errors.As(err, &herr) {
		t.Fatalf("Open = %v, want a *HistoryError", err)
	}
	if !strings.Contains(err.Error(), "aqlguard state reset --i-understand --state-dir "+dir) {
		t.Fatalf("the refusal does not name the command that accepts it: %v", err)
	}
	return herr
}

// TestLostDatabaseIsRefused (fault 1): an emptied, missing, replaced or
// rolled-back database is refused at start, naming what disagrees; the
// read-only admin commands create nothing; a reset accepts it, audited.
func TestLostDatabaseIsRefused(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"deleted", func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
				t.Fatal(err)
			}
		}, "does not exist, but this directory had state before: its audit log holds 4 records"},
		{"emptied", func(t *testing.T, dir string) {
			if err := os.Truncate(filepath.Join(dir, FileName), 0); err != nil {
				t.Fatal(err)
			}
		}, "is empty, but this directory had state before"},
		{"replaced by another directory's", func(t *testing.T, dir string) {
			other := t.TempDir()
			withHistory(t, other)
			raw, err := os.ReadFile(filepath.Join(other, FileName))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, FileName), raw, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "is another state directory's"},
		{"rolled back", func(t *testing.T, dir string) {
			backup, err := os.ReadFile(filepath.Join(dir, FileName))
			if err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Unblock(ctx, "claude", "admin", "host/1", t0); err != nil {
				t.Fatal(err)
			}
			s.Close()
			if err := os.WriteFile(filepath.Join(dir, FileName), backup, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "rolled back"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			withHistory(t, dir)
			tc.damage(t, dir)
			before, _ := os.ReadFile(filepath.Join(dir, FileName))
			herr := historyProblem(t, dir)
			if !strings.Contains(herr.Error(), tc.want) {
				t.Fatalf("refusal %q does not say %q", herr, tc.want)
			}
			// Refused twice the same way: the refusal changed nothing.
			historyProblem(t, dir)
			if after, _ := os.ReadFile(filepath.Join(dir, FileName)); string(after) != string(before) {
				t.Fatal("a refused Open changed the database")
			}
			// A read-only admin command refuses too, and creates nothing.
			if _, err := Open(ctx, dir, Options{ReadOnly: true}); err == nil {
				t.Fatal("a read-only Open accepted it")
			}
			// Reset accepts it, audited; then it starts and verifies.
			s, err := Open(ctx, dir, Options{Inspect: true})
			if err != nil {
				t.Fatal(err)
			}
			if s.HistoryProblem() == nil {
				t.Fatal("Inspect found no problem")
			}
			recs, err := s.Reset(ctx, "root", "host/1", t0)
			s.Close()
			if err != nil || len(recs) == 0 || recs[0].Decision != DecisionReset || !strings.Contains(strings.Join(recs[0].Factors, " "), "accepted by root") {
				t.Fatalf("Reset = %+v, %v", recs, err)
			}
			s, err = Open(ctx, dir, Options{})
			if err != nil {
				t.Fatalf("Open after the reset: %v", err)
			}
			defer s.Close()
			verify(t, s)
		})
	}
	t.Run("read-only commands create nothing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "never-used")
		if _, err := Open(ctx, dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "no state database") {
			t.Fatalf("read-only Open of nothing = %v", err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("a read-only Open created %s (%v)", dir, err)
		}
		empty := t.TempDir()
		if _, err := Open(ctx, empty, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "no state database") {
			t.Fatalf("read-only Open of an empty directory = %v", err)
		}
		if ents, _ := os.ReadDir(empty); len(ents) != 0 {
			t.Fatalf("a read-only Open created %v", ents)
		}
	})
}

// TestFullDiskLeavesNoPartialRecord (fault 2): a record cut short by a
// full disk is cut back; once space returns the log goes on and
// verifies.
func TestFullDiskLeavesNoPartialRecord(t *testing.T) {
	disk := faultinject.SmallDisk(t, 1<<20)
	dir := filepath.Join(disk, "state")
	ctx := context.Background()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: "before"}); err != nil {
		t.Fatal(err)
	}
	free := faultinject.Fill(t, disk)
	big := strings.Repeat("x", 8000) // more than any page left
	failed := 0
	for range 3 {
		if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: "lost", Result: big}); err != nil {
			failed++
		}
	}
	if failed != 3 {
		t.Fatalf("%d of 3 appends failed on a full disk", failed)
	}
	free()
	if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: "after"}); err != nil {
		t.Fatal(err)
	}
	if ops := loggedOperations(t, s); fmt.Sprint(ops) != "[before after]" {
		t.Fatalf("log %v, want [before after]", ops)
	}
	verify(t, s)
	s.Close()
	s2, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("a start after the full disk: %v", err)
	}
	defer s2.Close()
	if w := s2.Warnings(); len(w) != 0 {
		t.Fatalf("warnings after a full disk: %v", w)
	}
}

// TestDeletedSegmentIsRefusedAtEveryStart (fault 3): a segment removed
// (the last one, or one in the middle) is refused at every start, never
// a new chain begun over it; a reset records the gap and verify passes
// with it acknowledged.
func TestDeletedSegmentIsRefusedAtEveryStart(t *testing.T) {
	ctx := context.Background()
	for _, which := range []string{"last", "middle"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(ctx, dir, Options{SegmentBytes: 600})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				if err := s.Update(ctx, func(tx *Tx) error {
					return tx.Append(Record{Time: t0, Kind: "decision", Principal: "p", Operation: fmt.Sprint("op", i)})
				}); err != nil {
					t.Fatal(err)
				}
			}
			ns, _ := s.log.segments()
			s.Close()
			if len(ns) < 3 {
				t.Fatalf("segments %v: want at least 3", ns)
			}
			victim := ns[len(ns)-1]
			if which == "middle" {
				victim = ns[1]
			}
			if err := os.Remove(filepath.Join(dir, AuditDir, segmentName(victim))); err != nil {
				t.Fatal(err)
			}
			for range 2 { // the second start is refused as the first
				herr := historyProblem(t, dir)
				if !strings.Contains(herr.Error(), "removed") && !strings.Contains(herr.Error(), "is missing") {
					t.Fatalf("refusal %v does not say what is missing", herr)
				}
			}
			s, err = Open(ctx, dir, Options{Inspect: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Reset(ctx, "root", "host/1", t0); err != nil {
				t.Fatal(err)
			}
			s.Close()
			s, err = Open(ctx, dir, Options{})
			if err != nil {
				t.Fatalf("Open after the reset: %v", err)
			}
			defer s.Close()
			var v *ChainVerifier
			err = s.View(ctx, func(tx *Tx) (err error) { v, err = tx.VerifyChainDetail(); return })
			if err != nil {
				t.Fatalf("verify after the reset: %v", err)
			}
			if which == "middle" && len(v.Acknowledged()) != 1 {
				t.Fatalf("acknowledged gaps %+v, want the middle segment's", v.Acknowledged())
			}
		})
	}
}

// TestDeletedSegmentWhileRunning (fault 3): a segment deleted under a
// running store stops its appends (fail closed) instead of starting a
// new chain.
func TestDeletedSegmentWhileRunning(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openIn(t, dir, Options{})
	if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, AuditDir)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p"}); err == nil || !strings.Contains(err.Error(), "deleted") {
			t.Fatalf("Append after its segment was deleted = %v", err)
		}
	}
}

// TestDamagedPageIsAnError (fault 4): a damaged data page is an error
// naming the file and what to do, never a panic.
func TestDamagedPageIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	withHistory(t, dir)
	faultinject.DamagePages(t, filepath.Join(dir, FileName), 2)
	_, err := Open(ctx, dir, Options{})
	var damaged *DamagedError
	if !errors.As(err, &damaged) {
		t.Fatalf("Open of a damaged database = %v, want a *DamagedError", err)
	}
	for _, want := range []string{filepath.Join(dir, FileName), "damaged", "restore it from a backup", "state reset --i-understand"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if _, err := Open(ctx, dir, Options{ReadOnly: true}); !errors.As(err, &damaged) {
		t.Fatalf("read-only Open of a damaged database = %v, want a *DamagedError", err)
	}
}

// TestDamagedSegmentIsAnError (fault 4): a segment whose last record
// does not decode is an error naming it and what to do, never a panic.
func TestDamagedSegmentIsAnError(t *testing.T) {
	dir := t.TempDir()
	withHistory(t, dir)
	seg := filepath.Join(dir, AuditDir, segmentName(1))
	raw, _ := os.ReadFile(seg)
	if err := os.WriteFile(seg, append(raw, []byte("{\"seq\":5,garbage}\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), dir, Options{})
	if err == nil || !strings.Contains(err.Error(), segmentName(1)) || !strings.Contains(err.Error(), "restore the damaged segment") {
		t.Fatalf("Open with a damaged segment = %v", err)
	}
}

// TestCancelledIsNotBusy (fault 5): a request that ended is its own
// error; ErrBusy is another process holding the lock past the timeout,
// and names its pid.
func TestCancelledIsNotBusy(t *testing.T) {
	dir := t.TempDir()
	s := openIn(t, dir, Options{Timeout: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p"})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) {
		t.Fatalf("Append with a cancelled context = %v, want context.Canceled, not ErrBusy", err)
	}
	err = s.Update(ctx, func(*Tx) error { return nil })
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBusy) {
		t.Fatalf("Update with a cancelled context = %v, want context.Canceled, not ErrBusy", err)
	}
	pid, release := faultinject.HoldLock(t, filepath.Join(dir, FileName+".lock"))
	err = s.Append(context.Background(), Record{Time: t0, Kind: "outcome", Principal: "p"})
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", pid)) {
		t.Fatalf("Append while pid %d holds the lock = %v, want ErrBusy naming it", pid, err)
	}
	release()
	if err := s.Append(context.Background(), Record{Time: t0, Kind: "outcome", Principal: "p"}); err != nil {
		t.Fatal(err)
	}
}

// TestStateDirectoryMustBePrivate (fault 9): a state directory or file
// others can write is refused at start, as ssh refuses such a key.
func TestStateDirectoryMustBePrivate(t *testing.T) {
	ctx := context.Background()
	for _, which := range []string{"directory", "database"} {
		t.Run(which, func(t *testing.T) {
			dir := t.TempDir()
			withHistory(t, dir)
			path := dir
			if which == "database" {
				path = filepath.Join(dir, FileName)
			}
			if err := os.Chmod(path, 0o777); err != nil {
				t.Fatal(err)
			}
			_, err := Open(ctx, dir, Options{})
			if err == nil || !strings.Contains(err.Error(), "writable by others") || !strings.Contains(err.Error(), "chmod -R go-w") {
				t.Fatalf("Open of a world-writable %s = %v", which, err)
			}
			if err := os.Chmod(path, 0o700); err != nil {
				t.Fatal(err)
			}
			s, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
		})
	}
}
