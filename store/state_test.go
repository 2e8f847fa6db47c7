package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Commit writes what decide returns from the snapshot it read, in one
// transaction: every kind of change lands, a decide that fails writes
// nothing, records alone take no database commit (the generation stays,
// so no other process re-reads), and the generation returned is the one
// the state is at after the commit.
func TestCommit(t *testing.T) {
	ctx := context.Background()
	rec := func(kind string) Record { return Record{Time: t0, Kind: kind, Principal: "claude"} }
	all := Changes{
		Blocks:        []Block{{Principal: "claude", Reason: "r", VerificationID: "v1", BlockedAt: t0}},
		Challenges:    []Challenge{{ID: "v1", Principal: "claude", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}},
		Confirmations: []Confirmation{{Token: "conf_1", Principal: "claude", Status: "pending", ExpiresAt: t0.Add(time.Hour)}},
		Approvals:     []Approval{{ID: "appr_1", Principal: "claude", ExpiresAt: t0.Add(time.Hour)}},
		Executions:    []Execution{{ID: "exec_1", Principal: "claude", Status: "running", StartedAt: t0}},
		Failures:      map[string]Failures{"claude": {Tokens: 3, At: t0}},
		Records:       []Record{rec("decision")},
	}
	tests := []struct {
		name      string
		changes   Changes
		fail      error
		raises    bool // the generation moves
		records   int  // records appended
		wantBlock bool
	}{
		{"every kind of change", all, nil, true, 1, true},
		{"records alone", Changes{Records: []Record{rec("decision"), rec("outcome")}}, nil, false, 2, false},
		{"nothing", Changes{}, nil, false, 0, false},
		{"decide fails", all, errors.New("no"), false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			before, err := s.Generation(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			gen, err := s.Commit(ctx, func(v View) (Changes, error) {
				if b, err := v.Block("claude"); err != nil || b != nil {
					t.Errorf("the snapshot's block: %v %v", b, err)
				}
				return tt.changes, tt.fail
			})
			if !errors.Is(err, tt.fail) {
				t.Fatalf("Commit: %v", err)
			}
			after, _ := s.Generation(context.Background())
			if moved := after != before; moved != tt.raises {
				t.Errorf("generation %d → %d; want it raised: %v", before, after, tt.raises)
			}
			if err == nil && gen != after {
				t.Errorf("Commit returned generation %d; the state is at %d", gen, after)
			}
			var n int
			var blk *Block
			var f Failures
			if err := s.View(ctx, func(tx *Tx) error {
				if err := tx.Records(1, func(Record, []byte) error { n++; return nil }); err != nil {
					return err
				}
				var err error
				if blk, err = tx.Block("claude"); err != nil {
					return err
				}
				f, _, err = tx.Failures("claude")
				for _, check := range []func() (bool, error){
					func() (bool, error) { c, err := tx.Challenge("v1"); return c != nil, err },
					func() (bool, error) { c, err := tx.Confirmation("conf_1"); return c != nil, err },
					func() (bool, error) { a, err := tx.Approval("appr_1"); return a != nil, err },
					func() (bool, error) { e, err := tx.Execution("exec_1"); return e != nil, err },
				} {
					if there, err := check(); err != nil || there != tt.wantBlock {
						t.Errorf("a change is there: %v, want %v (%v)", there, tt.wantBlock, err)
					}
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if n != tt.records {
				t.Errorf("%d records, want %d", n, tt.records)
			}
			if (blk != nil) != tt.wantBlock || tt.wantBlock && f.Tokens != 3 {
				t.Errorf("block %v, failures %+v", blk, f)
			}
		})
	}
}

// Unblock and PruneBefore are changes too.
func TestCommitUnblocksAndPrunes(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	if _, err := s.Commit(ctx, func(View) (Changes, error) {
		return Changes{Blocks: []Block{{Principal: "claude", VerificationID: "v1", BlockedAt: t0}},
			Confirmations: []Confirmation{{Token: "conf_old", Principal: "claude", ExpiresAt: t0}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Commit(ctx, func(View) (Changes, error) {
		return Changes{Unblock: []string{"claude"}, PruneBefore: t0.Add(time.Minute)}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Load(ctx, func(v View) error {
		b, err := v.Block("claude")
		if err != nil || b != nil {
			t.Errorf("still blocked: %v %v", b, err)
		}
		c, err := v.Confirmation("conf_old")
		if err != nil || c != nil {
			t.Errorf("not pruned: %v %v", c, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
