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
