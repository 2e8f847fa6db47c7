package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func openTest(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), t.TempDir(), Options{Timeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func TestRecordsRoundTrip(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	blk := Block{Principal: "claude", Reason: "deny pattern *rm -rf*", VerificationID: "id-1", BlockedAt: t0, Operation: "fs_write"}
	ch := Challenge{ID: "id-1", Principal: "claude", Action: "rm -rf /", Tier: "danger_zone",
		Salt: []byte{1, 2}, Hash: []byte{3, 4}, CreatedAt: t0, ExpiresAt: t0.Add(5 * time.Minute)}
	f := Failures{Tokens: 7.5, At: t0, Violations: 2, LockedUntil: t0.Add(time.Minute)}
	ex := Execution{ID: "exec_1", Principal: "claude", ElementName: "a", Status: "running", StartedAt: t0}
	cf := Confirmation{Token: "conf_1", Kind: "action", Principal: "claude", Operation: "op", Status: "pending",
		CreatedAt: t0, ExpiresAt: t0.Add(time.Minute)}
	if err := s.Update(ctx, func(tx *Tx) error {
		return errors.Join(tx.PutBlock(blk), tx.PutChallenge(ch), tx.PutFailures("claude", f),
			tx.PutExecution(ex), tx.PutConfirmation(cf))
	}); err != nil {
		t.Fatal(err)
	}
	err := s.View(ctx, func(tx *Tx) error {
		gotB, err := tx.Block("claude")
		if err != nil || gotB == nil || *gotB != blk {
			t.Errorf("Block = %+v, %v; want %+v", gotB, err, blk)
		}
		if b, _ := tx.Block("other"); b != nil {
			t.Errorf("Block(other) = %+v, want nil", b)
		}
		gotC, err := tx.Challenge("id-1")
		if err != nil || gotC == nil || string(gotC.Hash) != string(ch.Hash) || !gotC.ExpiresAt.Equal(ch.ExpiresAt) {
			t.Errorf("Challenge = %+v, %v", gotC, err)
		}
		gotF, ok, err := tx.Failures("claude")
		if err != nil || !ok || gotF != f {
			t.Errorf("Failures = %+v %v %v; want %+v", gotF, ok, err, f)
		}
		if _, ok, _ := tx.Failures("other"); ok {
			t.Error("Failures(other) exists")
		}
		if gotE, _ := tx.Execution("exec_1"); gotE == nil || *gotE != ex {
			t.Errorf("Execution = %+v", gotE)
		}
		if gotCf, _ := tx.Confirmation("conf_1"); gotCf == nil || !reflect.DeepEqual(*gotCf, cf) {
			t.Errorf("Confirmation = %+v", gotCf)
		}
		all, err := tx.Blocks()
		if err != nil || len(all) != 1 || all[0] != blk {
			t.Errorf("Blocks = %+v, %v", all, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteBlock("claude") }); err != nil {
		t.Fatal(err)
	}
	_ = s.View(ctx, func(tx *Tx) error {
		if b, _ := tx.Block("claude"); b != nil {
			t.Errorf("block still there after DeleteBlock: %+v", b)
		}
		return nil
	})
}

func TestUpdateErrorWritesNothing(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.PutBlock(Block{Principal: "p"}); err != nil {
			return err
		}
		if err := tx.Append(Record{Kind: "decision", Principal: "p"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	_ = s.View(ctx, func(tx *Tx) error {
		if b, _ := tx.Block("p"); b != nil {
			t.Error("a failed transaction left a block")
		}
		if n, err := tx.VerifyChain(); n != 0 || err != nil {
			t.Errorf("VerifyChain = %d, %v; want an empty chain", n, err)
		}
		return nil
	})
}

func TestBusyFailsWithinTheTimeout(t *testing.T) {
	s := openTest(t)
	// Another holder of the file (as another process would be).
	db, err := bolt.Open(s.Path(), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = s.Update(context.Background(), func(*Tx) error { return nil })
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Update while locked = %v, want ErrBusy", err)
	}
	if !strings.Contains(err.Error(), s.Path()) {
		t.Errorf("error %q does not name the file", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.View(ctx, func(*Tx) error { return nil }); !errors.Is(err, ErrBusy) {
		t.Fatalf("View while locked = %v, want ErrBusy", err)
	}
}

// TestBusyInThisProcessFailsWithinTheTimeout: a transaction of this
// process that holds the state does not make the others wait without end
// (issue 19: a flood of tool-list refreshes stalled every call); they
// fail with ErrBusy, as they would behind another process.
func TestBusyInThisProcessFailsWithinTheTimeout(t *testing.T) {
	s := openTest(t)
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(context.Background(), func(*Tx) error { close(held); <-release; return nil })
	}()
	<-held
	waited := make(chan error, 2)
	go func() { waited <- s.View(context.Background(), func(*Tx) error { return nil }) }()
	go func() { waited <- s.Append(context.Background(), Record{Kind: "test"}) }()
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() { cancelled <- s.View(ctx, func(*Tx) error { return nil }) }()
	cancel()
	for range 3 {
		select {
		case err := <-waited:
			if !errors.Is(err, ErrBusy) {
				t.Errorf("a transaction behind one that holds the state = %v, want ErrBusy", err)
			}
		case err := <-cancelled:
			// A request that ended while it waited: its own error.
			if !errors.Is(err, context.Canceled) {
				t.Errorf("a cancelled transaction behind one that holds the state = %v, want context.Canceled", err)
			}
		case <-time.After(time.Minute): // a hang guard, not a measurement
			t.Fatal("a transaction waits without end behind another of the same process")
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := s.View(context.Background(), func(*Tx) error { return nil }); err != nil {
		t.Errorf("the state after the holder let go: %v", err)
	}
}

func TestAuditChain(t *testing.T) {
	// 20 transactions at once wait for each other's fsync: more than
	// openTest's 200 ms on a slow machine.
	s, err := Open(context.Background(), t.TempDir(), Options{Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Update(ctx, func(tx *Tx) error {
				err := tx.Append(Record{Time: t0.Add(time.Duration(i) * time.Second), Kind: "decision",
					Principal: "claude", Operation: "op", Factors: []string{"f"}, DurationMS: 1.25})
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var n uint64
	if err := s.View(ctx, func(tx *Tx) (err error) { n, err = tx.VerifyChain(); return }); err != nil || n != 20 {
		t.Fatalf("VerifyChain = %d, %v; want 20 records", n, err)
	}

	// An exported copy verifies line by line.
	v := NewChainVerifier()
	_ = s.View(ctx, func(tx *Tx) error {
		return tx.Records(0, func(_ Record, raw []byte) error {
			if _, err := v.Next(append([]byte(nil), raw...)); err != nil {
				t.Error(err)
			}
			return nil
		})
	})
	if v.Count() != 20 {
		t.Errorf("export verified %d records, want 20", v.Count())
	}

	// Lines of the log, to tamper with: segment files hold one record
	// per line.
	type lines = [][]byte
	tamper := []struct {
		name string
		edit func(ls lines) lines
	}{
		{"changed field", func(ls lines) lines {
			var r Record
			_ = json.Unmarshal(ls[4], &r)
			r.Decision = "allow"
			ls[4], _ = json.Marshal(r)
			return ls
		}},
		{"rehashed record", func(ls lines) lines {
			var r Record
			_ = json.Unmarshal(ls[4], &r)
			r.Operation = "other"
			r.Hash, _ = hashOf(r)
			ls[4], _ = json.Marshal(r)
			return ls
		}},
		{"removed record", func(ls lines) lines { return append(ls[:6:6], ls[7:]...) }},
		{"truncated tail", func(ls lines) lines { return ls[:19] }},
		{"extra field", func(ls lines) lines {
			ls[2] = append(ls[2][:len(ls[2])-1:len(ls[2])-1], []byte(`,"x":1}`)...)
			return ls
		}},
	}
	for _, tc := range tamper {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c, err := Open(ctx, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var ls lines
			_ = s.View(ctx, func(tx *Tx) error {
				return tx.Records(0, func(_ Record, raw []byte) error {
					ls = append(ls, append([]byte(nil), raw...))
					return nil
				})
			})
			copyHead(t, s, c)
			var out []byte
			for _, l := range tc.edit(ls) {
				out = append(append(out, l...), '\n')
			}
			if err := os.WriteFile(filepath.Join(dir, AuditDir, segmentName(1)), out, 0o600); err != nil {
				t.Fatal(err)
			}
			err = c.View(ctx, func(tx *Tx) error { _, err := tx.VerifyChain(); return err })
			if !errors.Is(err, ErrChainBroken) {
				t.Fatalf("VerifyChain after %s = %v, want ErrChainBroken", tc.name, err)
			}
		})
	}
}

// copyHead copies the chain head the database records from one store to
// another.
func copyHead(t *testing.T, from, to *Store) {
	t.Helper()
	var head []byte
	_ = from.View(context.Background(), func(tx *Tx) error {
		head = append([]byte(nil), tx.tx.Bucket(bucketMeta).Get(keyAuditHead)...)
		return nil
	})
	if err := to.Update(context.Background(), func(tx *Tx) error {
		return tx.tx.Bucket(bucketMeta).Put(keyAuditHead, head)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPrune(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	_ = s.Update(ctx, func(tx *Tx) error {
		return errors.Join(
			tx.PutChallenge(Challenge{ID: "old", ExpiresAt: t0.Add(-2 * time.Hour)}),
			tx.PutChallenge(Challenge{ID: "new", ExpiresAt: t0.Add(time.Hour)}),
			tx.PutConfirmation(Confirmation{Token: "old", ExpiresAt: t0.Add(-2 * time.Hour)}),
			tx.PutExecution(Execution{ID: "done", FinishedAt: t0.Add(-2 * time.Hour)}),
			tx.PutExecution(Execution{ID: "running", StartedAt: t0.Add(-2 * time.Hour)}),
			tx.PutBlock(Block{Principal: "p", BlockedAt: t0.Add(-48 * time.Hour)}),
		)
	})
	var n int
	if err := s.Update(ctx, func(tx *Tx) (err error) { n, err = tx.Prune(t0.Add(-time.Hour)); return }); err != nil || n != 3 {
		t.Fatalf("Prune = %d, %v; want 3", n, err)
	}
	_ = s.View(ctx, func(tx *Tx) error {
		for _, id := range []string{"new"} {
			if c, _ := tx.Challenge(id); c == nil {
				t.Errorf("challenge %s pruned", id)
			}
		}
		if e, _ := tx.Execution("running"); e == nil {
			t.Error("running execution pruned")
		}
		if b, _ := tx.Block("p"); b == nil {
			t.Error("a block was pruned")
		}
		return nil
	})
}

// TestNoBoltTypesInTheAPI keeps bbolt inside the package: no exported
// declaration may mention it.
func TestNoBoltTypesInTheAPI(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			var exported []ast.Node
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() {
					exported = append(exported, d.Type)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.IsExported() {
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								if len(fld.Names) > 0 && fld.Names[0].IsExported() {
									exported = append(exported, fld.Type)
								}
							}
						} else {
							exported = append(exported, ts.Type)
						}
					}
				}
			}
			for _, n := range exported {
				ast.Inspect(n, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "bolt" || id.Name == "bolterrors") {
							t.Errorf("%s: exported API mentions %s.%s", fset.Position(sel.Pos()), id.Name, sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
}

// TestUnblock: the override lifts the block, revokes its challenge and
// is audited with who ran it; an agent that is not blocked is reported
// as such and nothing is written.
func TestUnblock(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if err := s.Update(ctx, func(tx *Tx) error {
		if err := tx.PutChallenge(Challenge{ID: "ver_1", Principal: "agent", ExpiresAt: now.Add(time.Hour)}); err != nil {
			return err
		}
		return tx.PutBlock(Block{Principal: "agent", VerificationID: "ver_1", Reason: "rm -rf /", BlockedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		principal string
		lifted    bool
	}{
		{"other", false},
		{"agent", true},
		{"agent", false}, // once
	}
	for _, tt := range tests {
		b, err := s.Unblock(ctx, tt.principal, "alice", "host/1", now)
		if err != nil {
			t.Fatal(err)
		}
		if (b != nil) != tt.lifted {
			t.Fatalf("Unblock(%s) = %+v, want lifted %v", tt.principal, b, tt.lifted)
		}
	}
	var records []Record
	if err := s.View(ctx, func(tx *Tx) error {
		if b, err := tx.Block("agent"); err != nil || b != nil {
			return fmt.Errorf("block still there: %+v %v", b, err)
		}
		if c, err := tx.Challenge("ver_1"); err != nil || c == nil || !c.Revoked {
			return fmt.Errorf("challenge not revoked: %+v %v", c, err)
		}
		return tx.Records(0, func(r Record, _ []byte) error {
			if r.Kind == "admin" {
				records = append(records, r)
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].Principal != "agent" || records[0].Process != "host/1" ||
		!strings.Contains(strings.Join(records[0].Factors, " "), "alice") {
		t.Fatalf("audit: %+v", records)
	}
}

// TestEncodeRecord: the line the log writes is the record's JSON with
// its hash, byte for byte as json.Marshal writes it, and the hash is the
// one verify computes.
func TestEncodeRecord(t *testing.T) {
	at := time.Date(2026, 11, 24, 9, 0, 0, 123456789, time.UTC)
	for name, r := range map[string]Record{
		"least": {Seq: 1, Time: at, Prev: GenesisHash},
		"decision": {Seq: 7, Time: at, Kind: "decision", Principal: "p", Session: "s-1", Server: "fs", Operation: "fs.write_file",
			Args: json.RawMessage(`{"path":"/tmp/a","content":"x"}`), Decision: "allow", Stage: "risk_tolerance", Risk: 30,
			Factors: []string{"step limit: step 1 of 100", "risk <= 30"}, Prev: strings.Repeat("ab", 32), DurationMS: 0.25},
		"escapes": {Seq: 2, Time: at, Kind: "outcome", Principal: "ünïcode \u2028 <b>&amp;</b> \"quoted\" \\", ArgsText: "\x00\x1f\ufffd",
			Result: "line\nbreak", Prev: GenesisHash},
	} {
		var e recordEncoder
		line, err := e.encode(&r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, _ := json.Marshal(r)
		want = append(want, '\n')
		if string(line) != string(want) {
			t.Errorf("%s: the line differs from json.Marshal:\n got %s\nwant %s", name, line, want)
		}
		if h, _ := hashOf(r); h != r.Hash {
			t.Errorf("%s: hash %s, verify computes %s", name, r.Hash, h)
		}
	}
}
