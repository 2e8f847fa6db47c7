package store

import (
	"context"
	"testing"
)

// An allowed call (a commit that reads the block, the approvals, the
// pins and the policy version and appends a record) does not open the
// database while the generation stands; another process's change moves
// the generation and the next commit reads it; this process's own change
// leaves the snapshot current without a read.
func TestCommitFastPathOpensNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	other, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var blocked bool
	allowed := func(v View) (Changes, error) {
		b, err := v.Block("claude")
		if err != nil {
			return Changes{}, err
		}
		blocked = b != nil
		if _, err := v.Approvals(); err != nil {
			return Changes{}, err
		}
		if _, err := v.Pin("fs", "read"); err != nil {
			return Changes{}, err
		}
		if _, err := v.PolicyVersion(); err != nil {
			return Changes{}, err
		}
		return Changes{Records: []Record{{Time: t0, Kind: "decision", Principal: "claude", Result: "allowed"}}}, nil
	}
	commit := func(st *Store, decide func(View) (Changes, error)) (opened int64) {
		t.Helper()
		before := st.opens.Load()
		if _, err := st.Commit(ctx, decide); err != nil {
			t.Fatal(err)
		}
		return st.opens.Load() - before
	}
	if n := commit(s, allowed); n != 1 {
		t.Fatalf("the first commit opened the database %d times, want 1 (to read the snapshot)", n)
	}
	if n := commit(s, allowed); n != 0 || blocked {
		t.Fatalf("the fast path opened the database %d times (blocked %v)", n, blocked)
	}
	block := func(v View) (Changes, error) {
		return Changes{Blocks: []Block{{Principal: "claude", VerificationID: "v1", BlockedAt: t0}}}, nil
	}
	commit(other, block)
	if n := commit(s, allowed); n != 1 || !blocked {
		t.Fatalf("after another process's block: %d opens, blocked %v; want 1 open and the block", n, blocked)
	}
	unblock := func(v View) (Changes, error) { return Changes{Unblock: []string{"claude"}, PolicyVersion: "pv-2"}, nil }
	commit(s, unblock) // this process's own change
	if n := commit(s, allowed); n != 0 || blocked {
		t.Fatalf("after this process's unblock: %d opens, blocked %v; want none and no block", n, blocked)
	}
	var pv string
	if _, err := s.Commit(ctx, func(v View) (Changes, error) { var err error; pv, err = v.PolicyVersion(); return Changes{}, err }); err != nil || pv != "pv-2" {
		t.Fatalf("policy version %q, %v", pv, err)
	}
}

// A snapshot kept at a generation is not taken for the state when the
// count comes back to that generation after a rollback: the last value
// kept wins.
func TestKeptLastWins(t *testing.T) {
	var k Kept[string]
	old, newer := "before the restore", "after"
	k.Keep(7, &old)
	k.Keep(3, &newer) // the state was restored to generation 3
	fresh := "read afresh"
	if got := k.At(7, func() *string { return &fresh }); got != &fresh {
		t.Fatalf("At(7) gave %q after a restore to 3", *got)
	}
	if got := k.At(3, func() *string { return &fresh }); got != &newer {
		t.Fatalf("At(3) gave %q", *got)
	}
}
