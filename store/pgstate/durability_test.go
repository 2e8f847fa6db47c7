package pgstate

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

// noteDurability makes PostgreSQL itself say how each transaction that
// appends audit records commits: a deferred constraint trigger fires at
// COMMIT, after every statement of the transaction, and notes the
// synchronous_commit in force then beside each record's seq.
func noteDurability(t *testing.T, st *State) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, st.dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	for _, q := range []string{
		`CREATE TABLE aqlguard.durability_seen (seq bigint PRIMARY KEY, setting text NOT NULL)`,
		`CREATE FUNCTION aqlguard.note_durability() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO aqlguard.durability_seen VALUES (NEW.seq, current_setting('synchronous_commit'));
			RETURN NULL;
		END $$`,
		`CREATE CONSTRAINT TRIGGER note_durability AFTER INSERT ON ` + st.t.records + `
			DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION aqlguard.note_durability()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return conn
}

// durabilityOf is how the transaction that appended record seq committed.
func durabilityOf(t *testing.T, conn *pgx.Conn, seq uint64) string {
	t.Helper()
	var setting string
	if err := conn.QueryRow(context.Background(), `SELECT setting FROM aqlguard.durability_seen WHERE seq = $1`, int64(seq)).Scan(&setting); err != nil {
		t.Fatalf("record %d: %v", seq, err)
	}
	return setting
}

func callRecord(kind store.RecordKind, decision string) store.Record {
	r := store.NewRecord(groupT0, kind, "claude", "p1", "s1")
	r.Decision, r.Server, r.Tool = decision, "fs", "read"
	return r
}

// The records of an allowed call that changes no state (its decision
// and its outcome) commit with synchronous_commit off; a commit that
// changes state, or appends any other record (a refusal's among them), commits
// synchronously, alone or in a group, and so does a group that holds
// one such commit among calls' records.
func TestOnlyCallRecordsCommitLazily(t *testing.T) {
	st := openIn(t, pgtest.Shared(t).Database(t))
	defer st.Close()
	conn := noteDurability(t, st)
	ctx := context.Background()
	records := func(rs ...store.Record) store.Changes { return store.Changes{Records: rs} }
	with := func(c store.Changes, rs ...store.Record) store.Changes { c.Records = rs; return c }
	expires := groupT0.Add(time.Hour)
	cases := []struct {
		name    string
		changes store.Changes
		want    string
	}{
		{"allowed call's decision", records(callRecord(store.KindDecision, "allow")), "off"},
		{"allowed call's outcome", records(callRecord(store.KindOutcome, "")), "off"},
		{"refusal of a blocked principal's call", records(callRecord(store.KindDecision, "block")), "on"},
		{"refusal by a refuse rule", records(callRecord(store.KindDecision, "refuse")), "on"},
		{"allowed call's decision beside a refusal's", records(callRecord(store.KindDecision, "allow"), callRecord(store.KindDecision, "deny")), "on"},
		{"decision and outcome together", records(callRecord(store.KindDecision, "allow"), callRecord(store.KindOutcome, "")), "off"},
		{"block", with(store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "r", VerificationID: "v1", BlockedAt: groupT0}}},
			callRecord(store.KindDecision, "deny")), "on"},
		{"challenge", with(store.Changes{Challenges: []store.Challenge{{ID: "c1", Principal: "claude", CreatedAt: groupT0, ExpiresAt: expires}}},
			callRecord(store.KindDecision, "confirm")), "on"},
		{"confirmation (a spent answer)", with(store.Changes{Confirmations: []store.Confirmation{{Token: "t1", Kind: "call", Principal: "claude", Operation: "x"}}},
			callRecord(store.KindDecision, "allow")), "on"},
		{"approval", with(store.Changes{Approvals: []store.Approval{{ID: "a1", Principal: "claude", Operation: "x"}}},
			callRecord(store.KindDecision, "allow")), "on"},
		{"pin", with(store.Changes{Pins: []store.Pin{{Server: "fs", Tool: "read", Hash: "h", Definition: json.RawMessage(`{}`), FirstSeen: groupT0, ApprovedAt: groupT0}}},
			store.NewRecord(groupT0, store.KindPin, "claude", "p1", "")), "on"},
		{"execution step", with(store.Changes{Executions: []store.Execution{{ID: "e1", Principal: "claude"}}},
			callRecord(store.KindDecision, "allow")), "on"},
		{"an operator's record", records(store.NewRecord(groupT0, store.KindAdmin, "claude", "p1", "")), "on"},
		{"a checkpoint", records(store.NewRecord(groupT0, store.KindCheckpoint, "", "p1", "")), "on"},
		{"call record beside an admin record", records(callRecord(store.KindDecision, "allow"), store.NewRecord(groupT0, store.KindAdmin, "claude", "p1", "")), "on"},
	}
	// Each case twice: in round 0 this process's guess holds and each
	// commit goes alone (one round trip; the very first after Open is a
	// group of one); in round 1 another replica moves the head first,
	// so each goes through the group's path under the lock.
	other := openIn(t, st.dsn)
	defer other.Close()
	for round := range 2 {
		for _, tc := range cases {
			if round == 1 {
				if _, err := other.Commit(ctx, func(store.View) (store.Changes, error) {
					return records(store.NewRecord(groupT0, store.KindAdmin, "claude", "p2", "")), nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			before := st.stats.alone.Load()
			if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return tc.changes, nil }); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			alone := st.stats.alone.Load() > before
			var head store.Head
			if err := st.Load(ctx, func(v store.View) error { var err error; head, err = v.AuditHead(); return err }); err != nil {
				t.Fatal(err)
			}
			for i := range tc.changes.Records {
				seq := head.Seq - uint64(len(tc.changes.Records)-1-i)
				if got := durabilityOf(t, conn, seq); got != tc.want {
					t.Errorf("round %d, %s (alone %v): record %d committed with synchronous_commit %s, want %s", round, tc.name, alone, seq, got, tc.want)
				}
			}
		}
	}
	if st.stats.alone.Load() < int64(len(cases))/2 || st.stats.groups.Load() < int64(len(cases)) {
		t.Fatalf("both paths should have run: %d alone, %d groups", st.stats.alone.Load(), st.stats.groups.Load())
	}
}

// A group is lazy only when every member that writes is a call's
// records: one block among them makes the whole transaction wait for
// its flush, the calls' records with it.
func TestGroupCommitsLazilyOnlyWhenEveryMemberMay(t *testing.T) {
	st := openIn(t, pgtest.Shared(t).Database(t))
	defer st.Close()
	conn := noteDurability(t, st)
	ctx := context.Background()
	group := func(last store.Changes) []string {
		t.Helper()
		release := make(chan struct{})
		first := make(chan error, 1)
		go func() {
			_, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
				<-release
				return store.Changes{Records: []store.Record{callRecord(store.KindDecision, "allow")}}, nil
			})
			first <- err
		}()
		waitQueued(t, st, 0)
		const n = 4
		errs := make(chan error, n)
		for i := range n {
			c := store.Changes{Records: []store.Record{callRecord(store.KindOutcome, "")}}
			if i == n-1 {
				c = last
			}
			go func() {
				_, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return c, nil })
				errs <- err
			}()
			waitQueued(t, st, i+1)
		}
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		var head store.Head
		if err := st.Load(ctx, func(v store.View) error { var err error; head, err = v.AuditHead(); return err }); err != nil {
			t.Fatal(err)
		}
		var got []string
		for seq := head.Seq - n; seq <= head.Seq; seq++ {
			got = append(got, durabilityOf(t, conn, seq))
		}
		return got
	}
	// The first group is the leader's alone (the others queue behind
	// it); the second takes the four queued.
	lazy := group(store.Changes{Records: []store.Record{callRecord(store.KindOutcome, "")}})
	for i, s := range lazy {
		if s != "off" {
			t.Errorf("calls' records only: record %d of 5 committed with synchronous_commit %s, want off", i+1, s)
		}
	}
	blocked := group(store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "r", VerificationID: "v2", BlockedAt: groupT0}},
		Records: []store.Record{callRecord(store.KindDecision, "deny")}})
	for i, s := range blocked[1:] {
		if s != "on" {
			t.Errorf("a block among calls' records: record %d of the group committed with synchronous_commit %s, want on", i+1, s)
		}
	}
}

// PostgreSQL crashing (an immediate stop: no WAL flushed at the end)
// may lose the last call records committed lazily, but never leaves a
// broken chain: what survives is a prefix, the head row moved with it,
// and this process, whose memory of the head is now ahead of the
// database, finds its guess refused and chains its next records after
// the head that survived. A synchronous commit after it survives the
// next crash whole.
func TestLazyCommitsLostInACrashLeaveOneChain(t *testing.T) {
	ctx := context.Background()
	cluster := pgtest.Private(t)
	st, err := Open(ctx, Options{DSN: cluster.Database(t), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	call := func(result string) store.Changes {
		r := callRecord(store.KindOutcome, "")
		r.Result = result
		return store.Changes{Records: []store.Record{r}}
	}
	commit := func(c store.Changes) error {
		_, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return c, nil })
		return err
	}
	// commitAgain retries while PostgreSQL comes back.
	commitAgain := func(c store.Changes) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := commit(c)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("no commit after the restart: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	const n = 300
	for i := range n {
		if err := commit(call(fmt.Sprint("before ", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	commitAgain(call("after the crash"))
	block := store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "r", VerificationID: "v9", BlockedAt: groupT0}},
		Records: []store.Record{callRecord(store.KindDecision, "deny")}}
	if err := commit(block); err != nil {
		t.Fatal(err)
	}
	head, err := st.VerifyChain(ctx)
	if err != nil {
		t.Fatalf("the chain after a crash: %v", err)
	}
	lost := n + 2 - int(head)
	t.Logf("%d of %d lazily committed records lost in the crash", lost, n)
	if lost < 0 || lost > n {
		t.Fatalf("the chain ends at %d after %d commits", head, n+2)
	}
	// The block and its record were committed synchronously: another
	// crash keeps them.
	if err := cluster.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Start(); err != nil {
		t.Fatal(err)
	}
	commitAgain(call("after the second crash"))
	again, err := st.VerifyChain(ctx)
	if err != nil {
		t.Fatalf("the chain after a second crash: %v", err)
	}
	if again != head+1 {
		t.Fatalf("the chain ends at %d after the second crash, want %d (the block's record kept, one more)", again, head+1)
	}
	if err := st.Load(ctx, func(v store.View) error {
		b, err := v.Block("claude")
		if err == nil && b == nil {
			return fmt.Errorf("the block was lost")
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
