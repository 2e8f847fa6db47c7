package pgstate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// rowsOf is every row of st, as sorted JSON lines: two states with the
// same rows give the same lines.
func rowsOf(t *testing.T, st store.State) ([]string, store.Head) {
	t.Helper()
	var lines []string
	head, err := st.Export(context.Background(), func(c store.Changes) error {
		add := func(kind string, v any) {
			b, _ := json.Marshal(v)
			lines = append(lines, kind+" "+string(b))
		}
		for _, x := range c.Blocks {
			add("block", x)
		}
		for _, x := range c.Challenges {
			add("challenge", x)
		}
		for _, x := range c.Confirmations {
			add("confirmation", x)
		}
		for _, x := range c.Approvals {
			add("approval", x)
		}
		for _, x := range c.Executions {
			add("execution", x)
		}
		for _, x := range c.Pins {
			add("pin", x)
		}
		for _, x := range c.ServerNames {
			add("server names", x)
		}
		for k, x := range c.Failures {
			add("failures "+k, x)
		}
		if c.PolicyVersion != "" {
			add("policy", c.PolicyVersion)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	sort.Strings(lines)
	return lines, head
}

func rawChain(t *testing.T, st store.State) [][]byte {
	t.Helper()
	r := st.AuditReader()
	defer r.Close()
	var out [][]byte
	var pos store.LogPosition
	for {
		batch, err := r.Read(pos, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			return out
		}
		for _, e := range batch {
			out = append(out, bytes.Clone(e.Raw))
		}
		pos = batch[len(batch)-1].Next
	}
}

func openBolt(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dir, store.Options{Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A state moves from bbolt to PostgreSQL and back: every row, and the
// audit chain byte for byte (with one admin record per move saying where
// it came from), both chains verifying.
func TestCopyBetweenBackends(t *testing.T) {
	ctx := context.Background()
	src := openBolt(t, t.TempDir())
	const records = 1234 // more than two batches
	for i := 0; i < records; i += 100 {
		c := store.Changes{
			Blocks:        []store.Block{{Principal: fmt.Sprint("agent-", i), Reason: "deny rule", VerificationID: fmt.Sprint("v", i), BlockedAt: t0}},
			Challenges:    []store.Challenge{{ID: fmt.Sprint("v", i), Principal: "claude", Salt: []byte{1}, Hash: []byte{2}, ExpiresAt: t0}},
			Confirmations: []store.Confirmation{{Token: fmt.Sprint("conf_", i), Principal: "claude", Status: "approved", Arguments: json.RawMessage(`{"a":"\u0000"}`)}},
			Approvals:     []store.Approval{{ID: fmt.Sprint("appr_", i), Principal: "claude", CreatedAt: t0.Add(time.Duration(i)), ExpiresAt: t0}},
			Executions:    []store.Execution{{ID: fmt.Sprint("exec_", i), Principal: "claude", Steps: i}},
			Failures:      map[string]store.Failures{fmt.Sprint("agent-", i): {Tokens: 1.5, Violations: i}},
			Pins:          []store.Pin{{Server: "fs", Tool: fmt.Sprint("tool\x00", i), Hash: "h", Definition: json.RawMessage(`{"x":1}`)}},
			ServerNames:   []store.ServerNames{{Principal: "claude", Server: fmt.Sprint("s", i), Tools: []string{"read", "r\x00"}, SeenAt: t0}},
			PolicyVersion: fmt.Sprint("pv-", i),
		}
		for j := i; j < min(i+100, records); j++ {
			c.Records = append(c.Records, store.Record{Time: t0.Add(time.Duration(j) * time.Millisecond), Kind: "decision",
				Principal: "claude", Result: fmt.Sprint("call ", j), Factors: []string{"\x00\xff odd"}})
		}
		if _, err := src.Commit(ctx, func(store.View) (store.Changes, error) { return c, nil }); err != nil {
			t.Fatal(err)
		}
	}
	pg := openIn(t, pgtest.Shared(t).Database(t))
	defer pg.Close()
	sum, err := store.Copy(ctx, src, pg, "alice", t0, store.CopyOptions{})
	if err != nil {
		t.Fatalf("bbolt → PostgreSQL: %v", err)
	}
	if sum.Records != records || sum.Rows != 13*8 {
		t.Fatalf("bbolt → PostgreSQL copied %+v; want %d records and %d rows", sum, records, 13*8)
	}
	back := openBolt(t, t.TempDir())
	if _, err := store.Copy(ctx, pg, back, "bob", t0, store.CopyOptions{}); err != nil {
		t.Fatalf("PostgreSQL → bbolt: %v", err)
	}
	want, _ := rowsOf(t, src)
	for name, st := range map[string]store.State{"PostgreSQL": pg, "bbolt again": back} {
		if got, _ := rowsOf(t, st); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s's rows differ from the source's:\n%s\nwant\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	srcChain, pgChain, backChain := rawChain(t, src), rawChain(t, pg), rawChain(t, back)
	if len(pgChain) != records+1 || len(backChain) != records+2 {
		t.Fatalf("chains of %d, %d and %d records", len(srcChain), len(pgChain), len(backChain))
	}
	for i := range srcChain {
		if !bytes.Equal(srcChain[i], pgChain[i]) || !bytes.Equal(srcChain[i], backChain[i]) {
			t.Fatalf("record %d differs after the moves", i+1)
		}
	}
	if !bytes.Equal(pgChain[records], backChain[records]) || !strings.Contains(string(backChain[records+1]), "copied by bob from state "+pg.StateID()) {
		t.Fatalf("the moves' own records: %s / %s", pgChain[records], backChain[records+1])
	}
	for name, st := range map[string]store.State{"source": src, "PostgreSQL": pg, "bbolt again": back} {
		if _, err := st.VerifyChain(ctx); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Not into a state that has a history, nor into itself.
	if _, err := store.Copy(ctx, src, pg, "alice", t0, store.CopyOptions{}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a copy into a state with a history: %v", err)
	}
	if _, err := store.Copy(ctx, pg, pg, "alice", t0, store.CopyOptions{}); err == nil {
		t.Error("a copy of a state into itself")
	}
}

// fillBolt gives a new state directory n audit records and a block.
func fillBolt(t *testing.T, n int) *store.Store {
	t.Helper()
	src := openBolt(t, t.TempDir())
	c := store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "deny rule", VerificationID: "v1", BlockedAt: t0}}}
	for j := range n {
		c.Records = append(c.Records, store.Record{Time: t0.Add(time.Duration(j) * time.Millisecond), Kind: "decision",
			Principal: "claude", Result: fmt.Sprint("call ", j)})
	}
	if _, err := src.Commit(context.Background(), func(store.View) (store.Changes, error) { return c, nil }); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestCopyStoppedHalfway (issue 32, item 2): a copy stopped at a record
// boundary, into either backend, leaves a state that every open refuses
// as an incomplete copy; a rerun says so and names --resume, which
// finishes it; the finished copy is whole and opens.
func TestCopyStoppedHalfway(t *testing.T) {
	ctx := context.Background()
	const records = 1234 // more than two batches: stopped after the first
	stop := errors.New("stopped (as by kill -9)")
	halfway := store.CopyOptions{AfterBatch: func(n uint64) error {
		if n < records {
			return stop
		}
		return nil
	}}
	cluster := pgtest.Shared(t)
	for _, tc := range []struct {
		name string
		// from and to make the two states; reopen opens the target as a
		// process after the copy would, with o.
		run func(t *testing.T) (from, to store.State, reopen func(incomplete bool) (store.State, error))
	}{
		{"into PostgreSQL", func(t *testing.T) (store.State, store.State, func(bool) (store.State, error)) {
			dsn := cluster.Database(t)
			to := openIn(t, dsn)
			t.Cleanup(func() { to.Close() })
			return fillBolt(t, records), to, func(incomplete bool) (store.State, error) {
				return Open(ctx, Options{DSN: dsn, Timeout: 30 * time.Second, IncompleteCopy: incomplete})
			}
		}},
		{"into a state directory", func(t *testing.T) (store.State, store.State, func(bool) (store.State, error)) {
			pg := openIn(t, cluster.Database(t))
			t.Cleanup(func() { pg.Close() })
			if _, err := store.Copy(ctx, fillBolt(t, records), pg, "alice", t0, store.CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			return pg, openBolt(t, dir), func(incomplete bool) (store.State, error) {
				return store.Open(ctx, dir, store.Options{Timeout: 30 * time.Second, ReadOnly: true, IncompleteCopy: incomplete})
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to, reopen := tc.run(t)
			if _, err := store.Copy(ctx, from, to, "alice", t0, halfway); !errors.Is(err, stop) {
				t.Fatalf("the copy stopped halfway: %v", err)
			}
			var incomplete *store.IncompleteCopyError
			if st, err := reopen(false); !errors.As(err, &incomplete) || !strings.Contains(err.Error(), "incomplete copy") ||
				!strings.Contains(err.Error(), from.StateID()) || !strings.Contains(err.Error(), "--resume") {
				if st != nil {
					st.Close()
				}
				t.Fatalf("opening the target of a stopped copy: %v", err)
			}
			if _, err := store.Copy(ctx, from, to, "alice", t0, store.CopyOptions{}); err == nil ||
				!strings.Contains(err.Error(), "incomplete copy of state "+from.StateID()) || !strings.Contains(err.Error(), "--resume") {
				t.Fatalf("a rerun without --resume: %v", err)
			}
			sum, err := store.Copy(ctx, from, to, "bob", t0, store.CopyOptions{Resume: true})
			if err != nil {
				t.Fatalf("--resume: %v", err)
			}
			if got := len(rawChain(t, to)); sum.Head.Seq != uint64(got-1) {
				t.Fatalf("after --resume the target holds %d records; the source's head is %d", got, sum.Head.Seq)
			}
			st, err := reopen(false)
			if err != nil {
				t.Fatalf("the finished copy does not open: %v", err)
			}
			defer st.Close()
			if n, err := st.VerifyChain(ctx); err != nil || n != sum.Head.Seq+1 {
				t.Fatalf("the finished copy verifies %d records: %v", n, err)
			}
			src, got := rawChain(t, from), rawChain(t, st)
			for i := range src[:sum.Head.Seq] {
				if !bytes.Equal(src[i], got[i]) {
					t.Fatalf("record %d differs after the resumed copy", i+1)
				}
			}
			want, _ := rowsOf(t, from)
			if have, _ := rowsOf(t, st); strings.Join(have, "\n") != strings.Join(want, "\n") {
				t.Fatalf("the rows differ after the resumed copy")
			}
			if _, err := store.Copy(ctx, from, to, "bob", t0, store.CopyOptions{Resume: true}); err == nil || !strings.Contains(err.Error(), "no incomplete copy") {
				t.Fatalf("--resume of a finished copy: %v", err)
			}
		})
	}
}
