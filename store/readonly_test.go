package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aqlguard/aqlguard/internal/fixture/faultinject"
)

// notDamage fails the test unless err names a state directory that
// cannot be written, and says neither "damaged" nor to reset the state
// (a reset would throw its blocks away).
func notDamage(t *testing.T, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s on a read-only state directory succeeded", what)
	}
	msg := err.Error()
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(msg, "read-only") {
		t.Errorf("%s: %v\nwant it named as read-only (ErrReadOnly)", what, err)
	}
	if strings.Contains(msg, "damaged") || strings.Contains(msg, "state reset") {
		t.Errorf("%s: %v\ncalls a read-only state directory damaged, or suggests a reset", what, err)
	}
}

// A state directory whose file system turns read-only under a running
// aqlguard (a read-only bind mount over it, as errors=remount-ro leaves
// a disk) is named as read-only, never as damaged and never with `state
// reset`: a commit that changes state, and a start on it. Once it is
// writable again the same Store commits.
func TestReadOnlyStateIsNotDamage(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	dir, readOnly := faultinject.BindMount(t, src)
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	block := func(p string) error {
		_, err := s.Commit(ctx, func(View) (Changes, error) {
			return Changes{Blocks: []Block{{Principal: p, VerificationID: "v-" + p, BlockedAt: t0}},
				Records: []Record{{Time: t0, Kind: "decision", Principal: p, Operation: "deny"}}}, nil
		})
		return err
	}
	if err := block("before"); err != nil {
		t.Fatal(err)
	}
	readOnly(true)
	notDamage(t, "a commit that blocks", block("during"))
	_, err = Open(ctx, dir, Options{})
	notDamage(t, "a start", err)
	readOnly(false)
	if err := block("after"); err != nil {
		t.Fatalf("a commit once the directory is writable again: %v", err)
	}
}

// `audit verify` works on a read-only copy of a state directory (a
// backup on a read-only mount): the read-only open takes no lock it
// cannot create, and the chain verifies.
func TestVerifyReadOnlyCopy(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	s, err := Open(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"one", "two", "three"} {
		if err := s.Append(ctx, Record{Time: t0, Kind: "outcome", Principal: "p", Operation: op}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	for _, lock := range []string{"with", "without"} {
		t.Run(lock+" a lock file", func(t *testing.T) {
			if lock == "without" {
				removeLockFile(t, src)
			}
			dir, readOnly := faultinject.BindMount(t, src)
			readOnly(true)
			ro, err := Open(ctx, dir, Options{ReadOnly: true, Inspect: true})
			if err != nil {
				t.Fatalf("a read-only open of a read-only copy: %v", err)
			}
			defer ro.Close()
			if p := ro.HistoryProblem(); p != nil {
				t.Fatalf("history: %v", p)
			}
			n, err := ro.VerifyChain(ctx)
			if err != nil || n != 3 {
				t.Fatalf("verify: %d records, %v", n, err)
			}
			if _, err := ro.Export(ctx, func(Changes) error { return nil }); err != nil {
				t.Fatalf("reading the rows: %v", err)
			}
		})
	}
}

func removeLockFile(t *testing.T, dir string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, FileName+".lock")); err != nil {
		t.Fatal(err)
	}
}

// What says a directory cannot be written is named so; nothing else is.
func TestNotWritable(t *testing.T) {
	for _, c := range []struct {
		err  error
		ro   bool
		says string
	}{
		{&os.PathError{Op: "open", Path: "/s/aqlguard.db", Err: syscall.EROFS}, true, "(read-only file system)"},
		{&os.PathError{Op: "open", Path: "/s/aqlguard.db", Err: syscall.EACCES}, true, "(permission denied: read-only for this user)"},
		{&os.PathError{Op: "open", Path: "/s/aqlguard.db", Err: syscall.EPERM}, true, "(permission denied: read-only for this user)"},
		{&os.PathError{Op: "write", Path: "/s/aqlguard.db", Err: syscall.ENOSPC}, false, "no space"},
		{&DamagedError{Path: "/s/aqlguard.db", Cause: "page 3: invalid type"}, false, "damaged"},
		{nil, false, ""},
	} {
		err := notWritable("/s", c.err)
		if errors.Is(err, ErrReadOnly) != c.ro || err != nil && !strings.Contains(err.Error(), c.says) {
			t.Errorf("notWritable(%v) = %v", c.err, err)
		}
	}
}
