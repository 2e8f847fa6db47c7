// Package statetest is the conformance suite of store.State: one table
// of behaviours that every backend (bbolt in store, PostgreSQL in
// store/pgstate) must show, run by each backend's tests.
package statetest

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit"
	"github.com/aqlguard/aqlguard/store"
)

// Backend opens states for the suite.
type Backend struct {
	// Fresh makes a new, empty state and returns how to open it: each
	// open is another process (or replica) on that same state. The suite
	// closes what it opens.
	Fresh func(t testing.TB) (open func(t testing.TB) store.State)
	// Disconnect, when set, cuts the connection st's Watch listens on
	// (the backend then has one to lose).
	Disconnect func(t *testing.T, st store.State)
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// Run runs every behaviour against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b Backend)
	}{
		{"commit writes every kind of change, all or nothing", commitAtomic},
		{"another process's commit is seen by the next commit", seenByNext},
		{"a single-use answer is spent once by 64 racers", singleUse},
		{"attempts are counted exactly under 64 racers", attemptsCounted},
		{"blocks survive a reopen", blocksSurvive},
		{"the audit chain is one linear chain across processes", chainLinear},
		{"watch reports another process's commit", watchSeesOthers},
		{"watch re-syncs after a lost connection", watchResyncs},
		{"keys a model can make up name nothing", hostileKeys},
		{"cursors, leases and question turns", cursorsAndLeases},
		{"prune removes what can no longer be used", prune},
		{"what a view hands out is the caller's to change", handedOut},
		{"Then runs in commit order, before the next commit decides, and only for commits written", thenInOrder},
		{"server names: one record per principal and server, replaced, read by every process", serverNames},
		{"signed checkpoints hold, and a re-chained rewrite fails at the first one after the edit", checkpoints},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, b) })
	}
}

// opened opens a state and closes it when the test ends.
func opened(t *testing.T, open func(t testing.TB) store.State) store.State {
	t.Helper()
	st := open(t)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func rec(kind, result string) store.Record {
	return store.Record{Time: t0, Kind: kind, Principal: "claude", Result: result}
}

// chainEnd is the last record's sequence number (0: none).
func chainEnd(t *testing.T, st store.State) uint64 {
	t.Helper()
	r := st.AuditReader()
	defer r.Close()
	_, last, err := r.End()
	if err != nil {
		t.Fatalf("End: %v", err)
	}
	if last == nil {
		return 0
	}
	return last.Seq
}

func generation(t *testing.T, st store.State) uint64 {
	t.Helper()
	g, err := st.Generation(context.Background())
	if err != nil {
		t.Fatalf("Generation: %v", err)
	}
	return g
}

func everything() store.Changes {
	return store.Changes{
		Blocks:        []store.Block{{Principal: "claude", Reason: "deny rule", VerificationID: "v1", BlockedAt: t0}},
		Challenges:    []store.Challenge{{ID: "v1", Principal: "claude", Salt: []byte{1, 2}, Hash: []byte{3, 4}, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}},
		Confirmations: []store.Confirmation{{Token: "conf_1", Principal: "claude", Status: "pending", ExpiresAt: t0.Add(time.Hour)}},
		Approvals:     []store.Approval{{ID: "appr_1", Principal: "claude", Server: "fs", Tool: "read", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}},
		Executions:    []store.Execution{{ID: "exec_1", Principal: "claude", Status: "running", Steps: 3, StartedAt: t0}},
		Failures:      map[string]store.Failures{"claude": {Tokens: 3, At: t0, Violations: 1}},
		Pins:          []store.Pin{{Server: "fs", Tool: "read\x00odd", Hash: "h1", Definition: []byte(`{"name":"read"}`), ApprovedAt: t0}},
		ServerNames: []store.ServerNames{{Principal: "claude", Server: "fs", Tools: []string{"read"}, SeenAt: t0},
			{Principal: "claude\x00x", Server: "fs", Tools: []string{"x"}, Prompts: []string{}, PromptsListed: true, SeenAt: t0}},
		PolicyVersion: "pv-1",
		Records:       []store.Record{rec("decision", "blocked")},
	}
}

func commitAtomic(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	st := opened(t, open)
	g0 := generation(t, st)

	// A decide that fails writes nothing.
	boom := errors.New("decide failed")
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return everything(), boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing decide: %v", err)
	}
	if g := generation(t, st); g != g0 || chainEnd(t, st) != 0 {
		t.Fatalf("a failing decide wrote: generation %d → %d, %d records", g0, g, chainEnd(t, st))
	}

	// Every kind lands, with its record, and the generation moves once.
	g1, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
		if b, err := v.Block("claude"); err != nil || b != nil {
			return store.Changes{}, fmt.Errorf("block before: %v %v", b, err)
		}
		return everything(), nil
	})
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if g1 != g0+1 || generation(t, st) != g1 {
		t.Fatalf("generation %d → %d (Generation says %d), want %d", g0, g1, generation(t, st), g0+1)
	}
	if chainEnd(t, st) != 1 {
		t.Fatalf("records: %d, want 1", chainEnd(t, st))
	}
	check := func(v store.View) error {
		var problems []string
		say := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
		if b, err := v.Block("claude"); err != nil || b == nil || b.VerificationID != "v1" || !b.BlockedAt.Equal(t0) {
			say("block %+v %v", b, err)
		}
		if bs, err := v.Blocks(); err != nil || len(bs) != 1 {
			say("blocks %+v %v", bs, err)
		}
		if c, err := v.Challenge("v1"); err != nil || c == nil || string(c.Hash) != "\x03\x04" {
			say("challenge %+v %v", c, err)
		}
		if c, err := v.Confirmation("conf_1"); err != nil || c == nil || c.Status != "pending" {
			say("confirmation %+v %v", c, err)
		}
		if cs, err := v.Confirmations("claude", "pending"); err != nil || len(cs) != 1 {
			say("confirmations %+v %v", cs, err)
		}
		if cs, err := v.Confirmations("claude", "used"); err != nil || len(cs) != 0 {
			say("used confirmations %+v %v", cs, err)
		}
		if a, err := v.Approval("appr_1"); err != nil || a == nil || a.Tool != "read" {
			say("approval %+v %v", a, err)
		}
		if as, err := v.Approvals(); err != nil || len(as) != 1 {
			say("approvals %+v %v", as, err)
		}
		if e, err := v.Execution("exec_1"); err != nil || e == nil || e.Steps != 3 {
			say("execution %+v %v", e, err)
		}
		if f, ok, err := v.Failures("claude"); err != nil || !ok || f.Violations != 1 || f.Tokens != 3 || !f.At.Equal(t0) {
			say("failures %+v %v %v", f, ok, err)
		}
		if p, err := v.Pin("fs", "read\x00odd"); err != nil || p == nil || p.Hash != "h1" {
			say("pin %+v %v", p, err)
		}
		if ps, err := v.Pins("fs"); err != nil || len(ps) != 1 {
			say("pins %+v %v", ps, err)
		}
		if ps, err := v.Pins("other"); err != nil || len(ps) != 0 {
			say("another server's pins %+v %v", ps, err)
		}
		if ns, err := v.ServerNames("claude"); err != nil || len(ns) != 1 || len(ns[0].Tools) != 1 || !ns[0].SeenAt.Equal(t0) {
			say("server names %+v %v", ns, err)
		}
		if ns, err := v.ServerNames(""); err != nil || len(ns) != 2 || ns[0].Principal != "claude" || !ns[1].PromptsListed {
			say("every principal's server names %+v %v", ns, err)
		}
		if ns, err := v.ServerNames("other"); err != nil || len(ns) != 0 {
			say("another principal's server names %+v %v", ns, err)
		}
		if pv, err := v.PolicyVersion(); err != nil || pv != "pv-1" {
			say("policy version %q %v", pv, err)
		}
		if h, err := v.AuditHead(); err != nil || h.Seq != 1 || len(h.Hash) != 64 {
			say("audit head %+v %v", h, err)
		}
		if len(problems) > 0 {
			return fmt.Errorf("%q", problems)
		}
		return nil
	}
	if err := st.Load(ctx, check); err != nil {
		t.Errorf("this process reads: %v", err)
	}
	other := opened(t, open) // another process on the same state
	if err := other.Load(ctx, check); err != nil {
		t.Errorf("another process reads: %v", err)
	}

	// Records alone leave the generation where it is (an open may have
	// moved it: bbolt's writes at open count).
	g1 = generation(t, st)
	g2, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Records: []store.Record{rec("decision", "allowed"), rec("outcome", "success")}}, nil
	})
	if err != nil || g2 != g1 || generation(t, st) != g1 || chainEnd(t, st) != 3 {
		t.Fatalf("records alone: generation %d (want %d), %d records, %v", g2, g1, chainEnd(t, st), err)
	}
	// And nothing at all writes nothing.
	if g3, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return store.Changes{}, nil }); err != nil || g3 != g1 || chainEnd(t, st) != 3 {
		t.Fatalf("nothing: generation %d, %d records, %v", g3, chainEnd(t, st), err)
	}
}

// seenByNext: what one process commits, the next commit (and load) of
// another reads, however warm the other's snapshot of that kind was.
func seenByNext(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	a, other := opened(t, open), opened(t, open)
	read := func(st store.State) (blocked bool, pins int, approvals int, pv string) {
		t.Helper()
		_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
			b, err := v.Block("claude")
			if err != nil {
				return store.Changes{}, err
			}
			ps, err := v.Pins("")
			if err != nil {
				return store.Changes{}, err
			}
			as, err := v.Approvals()
			if err != nil {
				return store.Changes{}, err
			}
			pv, err = v.PolicyVersion()
			blocked, pins, approvals = b != nil, len(ps), len(as)
			return store.Changes{Records: []store.Record{rec("decision", "allowed")}}, err
		})
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
		return
	}
	if blocked, pins, approvals, pv := read(a); blocked || pins != 0 || approvals != 0 || pv != "" { // warms a's snapshot
		t.Fatalf("a fresh state: blocked %v, %d pins, %d approvals, policy %q", blocked, pins, approvals, pv)
	}
	c := everything()
	c.Records = []store.Record{rec("decision", "blocked")}
	if _, err := other.Commit(ctx, func(store.View) (store.Changes, error) { return c, nil }); err != nil {
		t.Fatal(err)
	}
	if blocked, pins, approvals, pv := read(a); !blocked || pins != 1 || approvals != 1 || pv != "pv-1" {
		t.Fatalf("after another process's commit: blocked %v, %d pins, %d approvals, policy %q", blocked, pins, approvals, pv)
	}
	if _, err := other.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Unblock: []string{"claude"}, Unpin: []store.PinKey{{Server: "fs", Tool: "read\x00odd"}},
			PolicyVersion: "pv-2", Records: []store.Record{rec("admin", "unblocked")}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if blocked, pins, _, pv := read(a); blocked || pins != 0 || pv != "pv-2" {
		t.Fatalf("after the unblock: blocked %v, %d pins, policy %q", blocked, pins, pv)
	}
	var blocked bool
	if err := a.Load(ctx, func(v store.View) error { b, err := v.Block("claude"); blocked = b != nil; return err }); err != nil || blocked {
		t.Fatalf("Load after the unblock: blocked %v, %v", blocked, err)
	}
}

// racers runs n commits at once, spread over two processes, and returns
// how many succeeded.
func racers(t *testing.T, open func(t testing.TB) store.State, n int, decide func(i int) func(store.View) (store.Changes, error), lose error) int {
	t.Helper()
	procs := []store.State{opened(t, open), opened(t, open)}
	var wins atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := procs[i%2].Commit(ctx, decide(i))
			switch {
			case err == nil:
				wins.Add(1)
			case lose != nil && errors.Is(err, lose):
			default:
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a racer failed: %v", err)
	}
	return int(wins.Load())
}

var errSpent = errors.New("already spent")

func singleUse(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	st := opened(t, open)
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Confirmations: []store.Confirmation{{Token: "conf_once", Principal: "claude", Status: "approved",
			ExpiresAt: t0.Add(time.Hour)}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	wins := racers(t, open, 64, func(i int) func(store.View) (store.Changes, error) {
		return func(v store.View) (store.Changes, error) {
			c, err := v.Confirmation("conf_once")
			if err != nil {
				return store.Changes{}, err
			}
			if c == nil || c.Status != "approved" {
				return store.Changes{}, errSpent
			}
			c.Status, c.UsedBy = "used", fmt.Sprint("racer ", i)
			r := rec("decision", "allowed")
			r.Token, r.Factors = c.Token, []string{c.UsedBy}
			return store.Changes{Confirmations: []store.Confirmation{*c}, Records: []store.Record{r}}, nil
		}
	}, errSpent)
	if wins != 1 {
		t.Fatalf("%d racers spent the answer, want exactly 1", wins)
	}
	var used *store.Confirmation
	if err := st.Load(ctx, func(v store.View) (err error) { used, err = v.Confirmation("conf_once"); return }); err != nil {
		t.Fatal(err)
	}
	r := st.AuditReader()
	defer r.Close()
	entries, err := r.Read(store.LogPosition{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || used == nil || used.Status != "used" || entries[0].Record.Factors[0] != used.UsedBy {
		t.Fatalf("after the race: %d records, confirmation %+v", len(entries), used)
	}
}

func attemptsCounted(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	const n = 64
	wins := racers(t, open, n, func(int) func(store.View) (store.Changes, error) {
		return func(v store.View) (store.Changes, error) {
			f, _, err := v.Failures("claude")
			if err != nil {
				return store.Changes{}, err
			}
			f.Violations++
			f.Tokens -= 0.5
			return store.Changes{Failures: map[string]store.Failures{"claude": f}, Records: []store.Record{rec("verify", "wrong_code")}}, nil
		}
	}, nil)
	st := opened(t, open)
	var f store.Failures
	if err := st.Load(ctx, func(v store.View) (err error) { f, _, err = v.Failures("claude"); return }); err != nil {
		t.Fatal(err)
	}
	if wins != n || f.Violations != n || f.Tokens != -n/2 || chainEnd(t, st) != n {
		t.Fatalf("%d commits: %d violations, %v tokens, %d records; want %d of each", wins, f.Violations, f.Tokens, chainEnd(t, st), n)
	}
}

func blocksSurvive(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	st := open(t)
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) { return everything(), nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	again := opened(t, open)
	var blk *store.Block
	var ch *store.Challenge
	if err := again.Load(ctx, func(v store.View) (err error) {
		if blk, err = v.Block("claude"); err != nil {
			return err
		}
		ch, err = v.Challenge("v1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if blk == nil || blk.Reason != "deny rule" || ch == nil || ch.Principal != "claude" {
		t.Fatalf("after a reopen: block %+v, challenge %+v", blk, ch)
	}
	if n, err := again.VerifyChain(ctx); err != nil || n != 1 {
		t.Fatalf("VerifyChain after a reopen: %d, %v", n, err)
	}
}

func chainLinear(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	const n, per = 32, 3 // commits, records each
	wins := racers(t, open, n, func(i int) func(store.View) (store.Changes, error) {
		return func(store.View) (store.Changes, error) {
			c := store.Changes{}
			for j := range per {
				c.Records = append(c.Records, rec("decision", fmt.Sprintf("%d.%d", i, j)))
			}
			if i%4 == 0 { // some change state too
				c.Executions = []store.Execution{{ID: fmt.Sprint("exec_", i), Principal: "claude", Status: "running"}}
			}
			return c, nil
		}
	}, nil)
	st := opened(t, open)
	if got, err := st.VerifyChain(ctx); err != nil || got != n*per || wins != n {
		t.Fatalf("VerifyChain: %d records, %v; want %d", got, err, n*per)
	}
	r := st.AuditReader()
	defer r.Close()
	var all []store.LogEntry
	var pos store.LogPosition
	for {
		batch, err := r.Read(pos, 7) // small batches: positions carry on
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 {
			break
		}
		all = append(all, batch...)
		pos = batch[len(batch)-1].Next
	}
	v := store.NewChainVerifier()
	order := map[string]int{} // each commit's records together, in order
	for i, e := range all {
		if e.Record.Seq != uint64(i+1) {
			t.Fatalf("record %d has seq %d", i+1, e.Record.Seq)
		}
		if _, err := v.Next(e.Raw); err != nil {
			t.Fatal(err)
		}
		var who, j int
		fmt.Sscanf(e.Record.Result, "%d.%d", &who, &j)
		if i%per != j {
			t.Fatalf("record %d (%s): a commit's records are not together", i+1, e.Record.Result)
		}
		order[e.Record.Result] = i
	}
	if err := v.Finish(); err != nil || len(all) != n*per {
		t.Fatalf("read %d records: %v", len(all), err)
	}
	// Find and End agree with what Read returned.
	pos, err := r.Find(10)
	if err != nil {
		t.Fatal(err)
	}
	if batch, err := r.Read(pos, 1); err != nil || len(batch) != 1 || batch[0].Record.Seq != 10 {
		t.Fatalf("Read from Find(10): %+v %v", batch, err)
	}
	end, last, err := r.End()
	if err != nil || last == nil || last.Seq != n*per || end != all[len(all)-1].Next {
		t.Fatalf("End: %+v %+v %v", end, last, err)
	}
	if batch, err := r.Read(end, 10); err != nil || len(batch) != 0 {
		t.Fatalf("Read from End: %d records, %v", len(batch), err)
	}
	var head store.Head
	if err := st.Load(ctx, func(v store.View) (err error) { head, err = v.AuditHead(); return }); err != nil || head.Seq != last.Seq || head.Hash != last.Hash {
		t.Fatalf("AuditHead %+v, last record %d %s: %v", head, last.Seq, last.Hash, err)
	}
}

// watching runs st.Watch until the test ends and returns, once it
// watches (its first report, the current generation), the newest
// generation it reported, as a function.
func watching(t *testing.T, st store.State) func() uint64 {
	t.Helper()
	var latest atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	started := make(chan uint64, 1)
	go func() {
		defer close(done)
		err := st.Watch(ctx, func(g uint64) {
			latest.Store(g)
			select {
			case started <- g:
			default:
			}
		})
		if ctx.Err() == nil {
			t.Errorf("Watch: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case g := <-started:
		if want := generation(t, st); g != want {
			t.Errorf("Watch's first report is %d; the generation is %d", g, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not report the current generation")
	}
	return latest.Load
}

// within waits up to d for ok.
func within(d time.Duration, ok func() bool) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ok() {
			return true
		}
	}
	return ok()
}

func block(t *testing.T, st store.State, id string) uint64 {
	t.Helper()
	g, err := st.Commit(context.Background(), func(store.View) (store.Changes, error) {
		return store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "r", VerificationID: id, BlockedAt: t0}},
			Records: []store.Record{rec("decision", "blocked")}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func watchSeesOthers(t *testing.T, b Backend) {
	open := b.Fresh(t)
	a, other := opened(t, open), opened(t, open)
	latest := watching(t, a)
	g := block(t, other, "v1")
	if !within(5*time.Second, func() bool { return latest() >= g }) {
		t.Fatalf("watch reported generation %d; another process committed %d", latest(), g)
	}
}

func watchResyncs(t *testing.T, b Backend) {
	if b.Disconnect == nil {
		t.Skip("the backend's Watch has no connection to lose")
	}
	open := b.Fresh(t)
	a, other := opened(t, open), opened(t, open)
	latest := watching(t, a)
	g := block(t, other, "v1")
	if !within(5*time.Second, func() bool { return latest() >= g }) {
		t.Fatalf("watch reported %d, want %d", latest(), g)
	}
	b.Disconnect(t, a)
	g = block(t, other, "v2") // while a's Watch is reconnecting, most likely
	if !within(10*time.Second, func() bool { return latest() >= g }) {
		t.Fatalf("after a lost connection, watch reported %d; another process committed %d", latest(), g)
	}
}

func hostileKeys(t *testing.T, b Backend) {
	ctx := context.Background()
	st := opened(t, b.Fresh(t))
	for _, k := range []string{"tok\x00en", "\xff\xfe", "a\u0000b", "", "conf_\u202e1"} {
		err := st.Load(ctx, func(v store.View) error {
			if c, err := v.Confirmation(k); err != nil || c != nil {
				return fmt.Errorf("confirmation: %v %v", c, err)
			}
			if c, err := v.Challenge(k); err != nil || c != nil {
				return fmt.Errorf("challenge: %v %v", c, err)
			}
			if b, err := v.Block(k); err != nil || b != nil {
				return fmt.Errorf("block: %v %v", b, err)
			}
			if e, err := v.Execution(k); err != nil || e != nil {
				return fmt.Errorf("execution: %v %v", e, err)
			}
			if cs, err := v.Confirmations(k, ""); err != nil || len(cs) != 0 {
				return fmt.Errorf("confirmations: %v %v", cs, err)
			}
			if ns, err := v.ServerNames(k); err != nil || len(ns) != 0 && k != "" {
				return fmt.Errorf("server names: %v %v", ns, err)
			}
			return nil
		})
		if err != nil {
			t.Errorf("key %q: %v", k, err)
		}
	}
	// A record carrying what a model sent, NUL and broken UTF-8 included,
	// is written and verifies.
	r := rec("decision", "refused")
	r.Args = []byte(`{"x":"a\u0000b"}`)
	r.Factors = []string{"\x00", "\xff"}
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Executions: []store.Execution{{ID: "exec_x", Principal: "claude", ElementName: "a\x00b\xff"}},
			Records: []store.Record{r}}, nil
	}); err != nil {
		t.Fatalf("a commit of hostile strings: %v", err)
	}
	if n, err := st.VerifyChain(ctx); err != nil || n != 1 {
		t.Fatalf("VerifyChain: %d %v", n, err)
	}
	// Rows whose bodies carry what a model sent (a \u0000 escape in a
	// confirmation's arguments, NUL in an element name) break no later
	// lookup or prune: one such row must not fail every commit after it.
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Confirmations: []store.Confirmation{{Token: "conf_nul", Principal: "claude", Status: "pending",
			Arguments: []byte(`{"cmd":"rm\u0000 -rf"}`), Action: "a\x00b", ExpiresAt: t0}},
			Executions: []store.Execution{{ID: "exec_nul", Principal: "claude", ElementName: "\x00", FinishedAt: t0}}}, nil
	}); err != nil {
		t.Fatalf("a commit of rows with NUL: %v", err)
	}
	var cs []store.Confirmation
	if err := st.Load(ctx, func(v store.View) (err error) { cs, err = v.Confirmations("claude", "pending"); return }); err != nil || len(cs) != 1 {
		t.Fatalf("Confirmations after a row with NUL: %d, %v", len(cs), err)
	}
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{PruneBefore: t0.Add(time.Hour), Records: []store.Record{rec("prune", "pruned")}}, nil
	}); err != nil {
		t.Fatalf("a prune over rows with NUL: %v", err)
	}
	err := st.Load(ctx, func(v store.View) error {
		c, err := v.Confirmation("conf_nul")
		if err == nil && c != nil {
			err = errors.New("conf_nul survived the prune")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func cursorsAndLeases(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	a, other := opened(t, open), opened(t, open)
	cur := store.ForwardCursor{Seq: 7, Hash: "abc", Position: store.LogPosition{Segment: 1, Offset: 7}, Destination: "https://collector", At: t0}
	if _, ok, err := a.Cursors().Load(ctx, "siem"); err != nil || ok {
		t.Fatalf("a cursor never saved: %v %v", ok, err)
	}
	if err := a.Cursors().Save(ctx, "siem", cur); err != nil {
		t.Fatal(err)
	}
	got, ok, err := other.Cursors().Load(ctx, "siem")
	if err != nil || !ok || got.Seq != 7 || got.Position != cur.Position || !got.At.Equal(t0) {
		t.Fatalf("the cursor another process reads: %+v %v %v", got, ok, err)
	}
	for _, lease := range []struct {
		name string
		take func(st store.State, ctx context.Context) (func(), error)
	}{
		{"forward lease", func(st store.State, ctx context.Context) (func(), error) { return st.Cursors().Lease(ctx, "siem") }},
		{"question turn", func(st store.State, ctx context.Context) (func(), error) { return st.QuestionTurn(ctx, "claude") }},
	} {
		release, err := lease.take(a, ctx)
		if err != nil {
			t.Fatalf("%s: %v", lease.name, err)
		}
		short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if r, err := lease.take(other, short); err == nil {
			r()
			t.Errorf("%s: taken twice", lease.name)
		}
		cancel()
		got := make(chan func(), 1)
		go func() {
			r, err := lease.take(other, ctx)
			if err != nil {
				t.Errorf("%s after release: %v", lease.name, err)
				r = func() {}
			}
			got <- r
		}()
		time.Sleep(50 * time.Millisecond)
		release()
		select {
		case r := <-got:
			r()
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not handed over after release", lease.name)
		}
	}
}

func prune(t *testing.T, b Backend) {
	ctx := context.Background()
	st := opened(t, b.Fresh(t))
	old, fresh := t0.Add(-2*time.Hour), t0.Add(time.Hour)
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{
			Blocks:        []store.Block{{Principal: "claude", VerificationID: "c_old", BlockedAt: old}},
			Challenges:    []store.Challenge{{ID: "c_old", ExpiresAt: old}, {ID: "c_new", ExpiresAt: fresh}},
			Confirmations: []store.Confirmation{{Token: "t_old", Principal: "claude", ExpiresAt: old}, {Token: "t_new", Principal: "claude", ExpiresAt: fresh}},
			Approvals:     []store.Approval{{ID: "a_old", ExpiresAt: old}, {ID: "a_new", ExpiresAt: fresh}},
			Executions: []store.Execution{{ID: "e_old", StartedAt: old, FinishedAt: old}, {ID: "e_running", StartedAt: old},
				{ID: "e_new", FinishedAt: fresh}},
		}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
		_, err := v.Approvals() // a warm snapshot of approvals must not outlive the prune
		return store.Changes{PruneBefore: t0}, err
	}); err != nil {
		t.Fatal(err)
	}
	err := st.Load(ctx, func(v store.View) error {
		present := map[string]bool{}
		for _, id := range []string{"c_old", "c_new"} {
			c, err := v.Challenge(id)
			if err != nil {
				return err
			}
			present[id] = c != nil
		}
		for _, id := range []string{"t_old", "t_new"} {
			c, err := v.Confirmation(id)
			if err != nil {
				return err
			}
			present[id] = c != nil
		}
		for _, id := range []string{"a_old", "a_new"} {
			a, err := v.Approval(id)
			if err != nil {
				return err
			}
			present[id] = a != nil
		}
		for _, id := range []string{"e_old", "e_running", "e_new"} {
			e, err := v.Execution(id)
			if err != nil {
				return err
			}
			present[id] = e != nil
		}
		blk, err := v.Block("claude")
		if err != nil {
			return err
		}
		present["block"] = blk != nil
		want := map[string]bool{"c_old": false, "c_new": true, "t_old": false, "t_new": true, "a_old": false, "a_new": true,
			"e_old": false, "e_running": true, "e_new": true, "block": true}
		for k, w := range want {
			if present[k] != w {
				return fmt.Errorf("%s: present %v, want %v", k, present[k], w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func handedOut(t *testing.T, b Backend) {
	ctx := context.Background()
	st := opened(t, b.Fresh(t))
	pin := store.Pin{Server: "fs", Tool: "read", Hash: "h1", Definition: []byte(`{"name":"read"}`),
		Pending: &store.PendingChange{Hash: "h2", Definition: []byte(`{"name":"read2"}`)}}
	blk := store.Block{Principal: "claude", Reason: "r", VerificationID: "v1"}
	if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Pins: []store.Pin{pin}, Blocks: []store.Block{blk}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	for round := range 2 { // the second round reads what the first changed, if it leaked
		if _, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
			p, err := v.Pin("fs", "read")
			if err != nil || p == nil {
				return store.Changes{}, fmt.Errorf("pin: %v %v", p, err)
			}
			ps, err := v.Pins("")
			if err != nil || len(ps) != 1 {
				return store.Changes{}, fmt.Errorf("pins: %v %v", ps, err)
			}
			b, err := v.Block("claude")
			if err != nil || b == nil {
				return store.Changes{}, fmt.Errorf("block: %v %v", b, err)
			}
			for _, p := range []*store.Pin{p, &ps[0]} {
				if string(p.Definition) != string(pin.Definition) || p.Pending == nil || p.Pending.Hash != "h2" ||
					string(p.Pending.Definition) != string(pin.Pending.Definition) {
					return store.Changes{}, fmt.Errorf("round %d: the pin read is %+v", round, p)
				}
				p.Definition[0], p.Pending.Hash, p.Pending.Definition[0] = 'X', "changed", 'X'
			}
			if b.Reason != "r" {
				return store.Changes{}, fmt.Errorf("round %d: the block read is %+v", round, b)
			}
			b.Reason = "changed"
			return store.Changes{Records: []store.Record{rec("decision", "allowed")}}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func thenInOrder(t *testing.T, b Backend) {
	ctx := context.Background()
	st := opened(t, b.Fresh(t))
	// mem is memory that follows the state: read by decide, changed by
	// Then alone, with no lock of its own (the race detector checks that
	// the backend orders them).
	mem := 0
	var failed, ran atomic.Int64
	const n = 32
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail := i%4 == 3
			_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
				steps := mem + 1
				if fail {
					return store.Changes{Then: func(uint64) { failed.Add(1) }}, errSpent
				}
				c := store.Changes{
					Records: []store.Record{rec("decision", fmt.Sprint("step ", steps))},
					Then:    func(uint64) { mem = steps; ran.Add(1) },
				}
				if i%2 == 0 { // some change state, some only append
					c.Executions = []store.Execution{{ID: "exec_1", Principal: "claude", Status: "running", Steps: steps}}
				}
				return c, nil
			})
			if fail != (err != nil) {
				t.Errorf("commit %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	want := n - n/4
	if failed.Load() != 0 || ran.Load() != int64(want) || mem != want {
		t.Fatalf("Then ran %d times (want %d), after failed decides %d times; memory says %d steps", ran.Load(), want, failed.Load(), mem)
	}
	// Each step was decided on the memory the commit before it left.
	r := st.AuditReader()
	defer r.Close()
	entries, err := r.Read(store.LogPosition{}, 1000)
	if err != nil || len(entries) != want {
		t.Fatalf("%d records, %v", len(entries), err)
	}
	for i, e := range entries {
		if e.Record.Result != fmt.Sprint("step ", i+1) {
			t.Fatalf("record %d says %q: a commit decided before the one before it ran its Then", i+1, e.Record.Result)
		}
	}
}

// serverNames: a server's names are one record per principal and
// server, which a later commit replaces; another process reads the last.
func serverNames(t *testing.T, b Backend) {
	ctx := context.Background()
	open := b.Fresh(t)
	st, other := opened(t, open), opened(t, open)
	put := func(st store.State, n store.ServerNames) {
		t.Helper()
		if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
			return store.Changes{ServerNames: []store.ServerNames{n}}, nil
		}); err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	read := func(st store.State, principal string) []store.ServerNames {
		t.Helper()
		var out []store.ServerNames
		if err := st.Load(ctx, func(v store.View) (err error) { out, err = v.ServerNames(principal); return }); err != nil {
			t.Fatalf("ServerNames: %v", err)
		}
		return out
	}
	put(st, store.ServerNames{Principal: "claude", Server: "github", Tools: []string{"create_issue"}, Process: "h/1", SeenAt: t0})
	put(other, store.ServerNames{Principal: "claude", Server: "evil", Tools: []string{"create_issue", "x"}, Process: "h/2", SeenAt: t0})
	put(other, store.ServerNames{Principal: "cursor", Server: "github", Tools: []string{"y"}, Process: "h/2", SeenAt: t0})
	put(st, store.ServerNames{Principal: "claude", Server: "evil", Tools: []string{"x"}, Prompts: []string{"p"}, PromptsListed: true,
		Process: "h/1", SeenAt: t0.Add(time.Minute)})
	for _, s := range []store.State{st, other} {
		got := read(s, "claude")
		if len(got) != 2 || got[0].Server != "evil" || got[1].Server != "github" ||
			len(got[0].Tools) != 1 || got[0].Prompts[0] != "p" || !got[0].SeenAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("claude's server names: %+v", got)
		}
		if got := read(s, ""); len(got) != 3 {
			t.Errorf("every principal's server names: %+v", got)
		}
		if got := read(s, "cursor"); len(got) != 1 || got[0].Tools[0] != "y" {
			t.Errorf("cursor's server names: %+v", got)
		}
	}
}

// checkpoints: `audit seal --key` on the backend (audit.Seal) writes
// checkpoint records that verify; someone who can write the state
// rewrites one record and re-chains everything after it with the
// backend's own append (a fresh state, every record appended again,
// checkpoints included): the chain verifies, and the first checkpoint
// after the edit does not; one before it still holds.
func checkpoints(t *testing.T, b Backend) {
	ctx := context.Background()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	st := opened(t, b.Fresh(t))
	var cps []store.Checkpoint
	for i := range 3 {
		var recs []store.Record
		for j := range 5 {
			recs = append(recs, rec("decision", fmt.Sprintf("%d.%d", i, j)))
		}
		if err := store.AppendRecords(ctx, st, recs...); err != nil {
			t.Fatal(err)
		}
		c, earlier, err := audit.Seal(ctx, st, key, "operator", "host/1", t0.Add(time.Duration(i)*time.Hour))
		if err != nil || len(earlier.Verified) != i {
			t.Fatalf("seal %d: %v (earlier checkpoints verified: %d)", i, err, len(earlier.Verified))
		}
		cps = append(cps, c)
	}
	// Records 1-5, checkpoint 6 (of 5), 7-11, checkpoint 12 (of 11), 13-17, checkpoint 18 (of 17).
	if cps[1].Seq != 11 || cps[2].Seq != 17 {
		t.Fatalf("checkpoints of %d, %d, %d", cps[0].Seq, cps[1].Seq, cps[2].Seq)
	}
	pub := key.Public().(ed25519.PublicKey)
	got, err := audit.VerifyCheckpoints(pub, audit.StateRecords(st))
	if err != nil || len(got.Verified) != 3 {
		t.Fatalf("VerifyCheckpoints: %d, %v", len(got.Verified), err)
	}

	var all []store.Record
	if err := audit.StateRecords(st)(func(r store.Record) error { all = append(all, r); return nil }); err != nil {
		t.Fatal(err)
	}
	all[8].Result = "nothing happened here" // record 9: after the first checkpoint, before the second
	forged := opened(t, b.Fresh(t))
	if err := store.AppendRecords(ctx, forged, all...); err != nil {
		t.Fatal(err)
	}
	if n, err := forged.VerifyChain(ctx); err != nil || n != uint64(len(all)) {
		t.Fatalf("the rewritten chain should verify on its own (that is the attack): %d, %v", n, err)
	}
	_, err = audit.VerifyCheckpoints(pub, audit.StateRecords(forged))
	var bad *audit.CheckpointError
	if !errors.As(err, &bad) || bad.Record != 12 || bad.Checkpoint.Seq != 11 {
		t.Fatalf("the rewritten history: %v; want the checkpoint in record 12 named", err)
	}
	if _, _, err := audit.Seal(ctx, forged, key, "operator", "host/1", t0.Add(5*time.Hour)); err == nil {
		t.Fatal("seal signed a history that no longer matches its own earlier checkpoints")
	}
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := audit.VerifyCheckpoints(other.Public().(ed25519.PublicKey), audit.StateRecords(st)); !errors.Is(err, audit.ErrNoCheckpoint) {
		t.Fatalf("another key: %v", err)
	}
}
