package pgstate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

// Replicas opening a fresh database together create the schema once,
// agree on the state's id and key, and a reopen changes nothing.
func TestOpenMigratesOnce(t *testing.T) {
	dsn := pgtest.Shared(t).Database(t)
	const n = 8
	states := make([]*State, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			states[i], errs[i] = Open(context.Background(), Options{DSN: dsn})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		defer states[i].Close()
	}
	for _, st := range states[1:] {
		if st.StateID() != states[0].StateID() || string(st.AuditKey()) != string(states[0].AuditKey()) {
			t.Fatalf("replicas disagree on the state: %s vs %s", st.StateID(), states[0].StateID())
		}
	}
	var versions []int
	rows, err := states[0].pool.Query(context.Background(), `SELECT version FROM `+states[0].t.version+` ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var v int
		_ = rows.Scan(&v)
		versions = append(versions, v)
	}
	if rows.Err() != nil || len(versions) != SchemaVersion() || versions[len(versions)-1] != SchemaVersion() {
		t.Fatalf("schema versions recorded: %v (%v), want 1..%d", versions, rows.Err(), SchemaVersion())
	}
}

// A state of schema version 1 (before server names) is migrated at the
// next open, keeping what it held, and takes server names from then on.
func TestOpenMigratesVersion1(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).Database(t)
	st := openIn(t, dsn)
	for _, stmt := range []string{`DROP TABLE ` + st.t.serverNames, `DELETE FROM ` + st.t.version + ` WHERE version > 1`} {
		if _, err := st.pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "deny rule"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = openIn(t, dsn)
	defer st.Close()
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{ServerNames: []store.ServerNames{{Principal: "claude", Server: "fs", Tools: []string{"read"}}}}, nil
	}); err != nil {
		t.Fatalf("server names after the migration: %v", err)
	}
	err := st.Load(ctx, func(v store.View) error {
		b, err := v.Block("claude")
		if err != nil || b == nil {
			return errors.Join(errors.New("the block did not survive the migration"), err)
		}
		ns, err := v.ServerNames("claude")
		if err != nil || len(ns) != 1 {
			return errors.Join(errors.New("server names not read back"), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A schema a newer aqlguard wrote is refused, naming both versions.
func TestOpenRefusesNewerSchema(t *testing.T) {
	dsn := pgtest.Shared(t).Database(t)
	st := openIn(t, dsn)
	if _, err := st.pool.Exec(context.Background(), `INSERT INTO `+st.t.version+` (version) VALUES ($1)`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	st.Close()
	_, err := Open(context.Background(), Options{DSN: dsn})
	if err == nil || !strings.Contains(err.Error(), "a newer aqlguard wrote it") {
		t.Fatalf("a newer schema: %v", err)
	}
}

// Two schemas in one database are two states.
func TestSchemasAreSeparateStates(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).Database(t)
	a, err := Open(ctx, Options{DSN: dsn, Schema: "team_a"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, Options{DSN: dsn, Schema: "team_b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Blocks: []store.Block{{Principal: "claude", VerificationID: "v"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	var blk *store.Block
	if err := b.Load(ctx, func(v store.View) (err error) { blk, err = v.Block("claude"); return }); err != nil || blk != nil {
		t.Fatalf("team_b sees team_a's block: %v %v", blk, err)
	}
	if a.StateID() == b.StateID() {
		t.Fatal("two schemas, one state id")
	}
	for _, bad := range []string{"Team", "a;drop", "", "1x"} {
		if bad == "" {
			continue // the default
		}
		if _, err := Open(ctx, Options{DSN: dsn, Schema: bad}); err == nil {
			t.Errorf("schema %q was accepted", bad)
		}
	}
}

// The password of a connection string is in no error.
func TestErrorsKeepThePassword(t *testing.T) {
	for _, dsn := range []string{
		"postgres://aqlguard:s3cret-pw@127.0.0.1:1/db?connect_timeout=1",
		"host=127.0.0.1 port=1 user=aqlguard password=s3cret-pw connect_timeout=1",
		"postgres://aqlguard:s3cret-pw@[::1", // does not parse
	} {
		_, err := Open(context.Background(), Options{DSN: dsn, Timeout: time.Second})
		if err == nil {
			t.Fatalf("%s: opened", dsn)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the error says the password: %v", err)
		}
	}
}

// Without PostgreSQL a commit fails closed, in bounded time, with an
// error that names the backend; when PostgreSQL is back the same State
// commits again by itself, and Watch reports what changed meanwhile.
func TestFailsClosedAndRecovers(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Private(t)
	dsn := cluster.Database(t)
	st, err := Open(ctx, Options{DSN: dsn, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var latest uint64
	var mu sync.Mutex
	wctx, stop := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = st.Watch(wctx, func(g uint64) { mu.Lock(); latest = g; mu.Unlock() })
	}()
	defer func() { stop(); <-watched }()
	commit := func(id string) (uint64, error) {
		return st.Commit(ctx, func(store.View) (store.Changes, error) {
			return store.Changes{Blocks: []store.Block{{Principal: "claude", VerificationID: id}},
				Records: []store.Record{{Kind: "decision", Principal: "claude", Result: id}}}, nil
		})
	}
	if _, err := commit("before"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err = commit("during")
	if err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("a commit without PostgreSQL: %v", err)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("the refusal took %s", d)
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	var gen uint64
	deadline := time.Now().Add(20 * time.Second)
	for {
		if gen, err = commit("after"); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("no commit after PostgreSQL came back: %v", err)
	}
	ok := false
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		ok = latest >= gen
		mu.Unlock()
		if ok {
			break
		}
	}
	if !ok {
		t.Errorf("Watch did not report generation %d after the restart (latest %d)", gen, latest)
	}
	n, err := st.VerifyChain(ctx)
	if err != nil || n != 2 {
		t.Fatalf("the chain after the restart: %d records, %v (want before and after)", n, err)
	}
}

// A row decide read that changes before the commit writes it (a writer
// that did not take the head lock: a hand-made UPDATE) fails the commit
// with ErrConflict and writes nothing: the answer is not spent twice.
func TestWriteComparesTheVersionRead(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).Database(t)
	st := openIn(t, dsn)
	defer st.Close()
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Confirmations: []store.Confirmation{{Token: "conf_1", Principal: "claude", Status: "approved"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, meddle := range []string{
		`UPDATE ` + st.t.confirmations + ` SET version = version + 1 WHERE key = 'conf_1'`,
		`DELETE FROM ` + st.t.confirmations + ` WHERE key = 'conf_1'`,
	} {
		gen, _ := st.Generation(ctx)
		_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
			c, err := v.Confirmation("conf_1")
			if err != nil || c == nil {
				return store.Changes{}, errors.New("no confirmation")
			}
			if _, err := st.pool.Exec(ctx, meddle); err != nil { // another connection, no head lock
				return store.Changes{}, err
			}
			c.Status = "used"
			return store.Changes{Confirmations: []store.Confirmation{*c}, Records: []store.Record{{Kind: "decision", Principal: "claude"}}}, nil
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("%s: commit: %v, want ErrConflict", meddle, err)
		}
		if g, _ := st.Generation(ctx); g != gen {
			t.Errorf("%s: the generation moved", meddle)
		}
		if n, err := st.VerifyChain(ctx); err != nil || n != 0 {
			t.Errorf("%s: %d records written, %v", meddle, n, err)
		}
	}
}
