package pgstate

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

var groupT0 = time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)

// holdFirst makes a commit's decide wait, holding the lead, until
// release is closed: the commits that queue meanwhile are one group.
func holdFirst(release <-chan struct{}) func(store.View) (store.Changes, error) {
	return func(store.View) (store.Changes, error) {
		select {
		case <-release:
		case <-time.After(20 * time.Second):
			return store.Changes{}, errors.New("never released")
		}
		return store.Changes{Records: []store.Record{{Time: groupT0, Kind: "admin", Principal: "claude", Result: "first"}}}, nil
	}
}

// waitQueued waits until n commits wait behind the leader.
func waitQueued(t *testing.T, st *State, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st.gmu.Lock()
		q, leading := len(st.waiting), st.leading
		st.gmu.Unlock()
		if leading && q == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d commits queued (leading %v), want %d", q, leading, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Commits that queue in one process are one transaction, and each
// decide sees what the ones before it wrote and runs after their Then:
// 63 increments of one execution's step count, read through the
// transaction, count 63; the Thens run in commit order with the
// generation each commit left; the chain is one chain.
func TestGroupCommitSeesEarlierMembers(t *testing.T) {
	st := openIn(t, pgtest.Shared(t).Database(t))
	defer st.Close()
	ctx := context.Background()
	const n = 63
	first, release := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := st.Commit(ctx, holdFirst(release))
		first <- err
	}()
	waitQueued(t, st, 0)
	var mu sync.Mutex
	var thens []uint64
	var steps []int
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
				e, err := v.Execution("exec_1")
				if err != nil {
					return store.Changes{}, err
				}
				if e == nil {
					e = &store.Execution{ID: "exec_1", Principal: "claude", Status: "running", StartedAt: groupT0}
				}
				e.Steps++
				s := e.Steps
				return store.Changes{
					Executions: []store.Execution{*e},
					Records:    []store.Record{{Time: groupT0, Kind: "decision", Principal: "claude", Result: fmt.Sprint("step ", s)}},
					Then: func(gen uint64) {
						mu.Lock()
						thens, steps = append(thens, gen), append(steps, s)
						mu.Unlock()
					},
				}, nil
			})
			errs <- err
		}()
	}
	waitQueued(t, st, n)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Commit: %v", err)
		}
	}
	if err := <-first; err != nil {
		t.Fatalf("first Commit: %v", err)
	}
	for i := range steps {
		if steps[i] != i+1 || (i > 0 && thens[i] != thens[i-1]+1) {
			t.Fatalf("Thens ran out of order: steps %v, generations %v", steps, thens)
		}
	}
	var e *store.Execution
	if err := st.Load(ctx, func(v store.View) (err error) { e, err = v.Execution("exec_1"); return err }); err != nil || e == nil || e.Steps != n {
		t.Fatalf("execution after %d grouped increments: %+v, %v", n, e, err)
	}
	if got, err := st.VerifyChain(ctx); err != nil || got != n+1 {
		t.Fatalf("VerifyChain: %d records, %v; want %d", got, err, n+1)
	}
	if g, err := st.Generation(ctx); err != nil || g != thens[len(thens)-1] {
		t.Fatalf("generation %d (%v), the last Then saw %d", g, err, thens[len(thens)-1])
	}
}

// One member's failing decide writes nothing and leaves the others in
// its group be; a waiter that gives up before its group leaves the
// queue, and the lead passes on.
func TestGroupCommitMemberFailsAlone(t *testing.T) {
	st := openIn(t, pgtest.Shared(t).Database(t))
	defer st.Close()
	ctx := context.Background()
	first, release := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := st.Commit(ctx, holdFirst(release))
		first <- err
	}()
	waitQueued(t, st, 0)
	boom := errors.New("decide says no")
	record := func(result string) func(store.View) (store.Changes, error) {
		return func(store.View) (store.Changes, error) {
			return store.Changes{Records: []store.Record{{Time: groupT0, Kind: "decision", Principal: "claude", Result: result}}}, nil
		}
	}
	gaveUp, cancel := context.WithCancel(ctx)
	type result struct {
		name string
		err  error
	}
	out := make(chan result, 5)
	run := func(name string, ctx context.Context, decide func(store.View) (store.Changes, error)) {
		_, err := st.Commit(ctx, decide)
		out <- result{name, err}
	}
	go run("a", ctx, record("a"))
	waitQueued(t, st, 1)
	go run("fails", ctx, func(store.View) (store.Changes, error) { return store.Changes{}, boom })
	waitQueued(t, st, 2)
	go run("gives up", gaveUp, record("never"))
	waitQueued(t, st, 3)
	go run("b", ctx, record("b"))
	waitQueued(t, st, 4)
	cancel()
	waitQueued(t, st, 3) // it left the queue
	close(release)
	got := map[string]error{}
	for range 4 {
		r := <-out
		got[r.name] = r.err
	}
	go run("c", ctx, record("c"))
	got["c"] = (<-out).err
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	if got["a"] != nil || got["b"] != nil || got["c"] != nil || !errors.Is(got["fails"], boom) {
		t.Fatalf("results: %v", got)
	}
	var results []string
	r := st.AuditReader()
	defer r.Close()
	es, err := r.Read(store.LogPosition{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		results = append(results, e.Record.Result)
	}
	want := map[string]bool{"first": true, "a": true, "b": true, "c": true}
	if len(results) != len(want) {
		t.Fatalf("records %v, want one each of first, a, b, c", results)
	}
	for _, res := range results {
		if !want[res] {
			t.Fatalf("records %v, want one each of first, a, b, c", results)
		}
		delete(want, res)
	}
	if !errors.Is(got["gives up"], context.Canceled) {
		t.Fatalf("the commit that gave up: %v, want context.Canceled", got["gives up"])
	}
}

// A commit alone, when nobody else wrote since this process's last, is
// one round trip on the snapshot; when another replica wrote meanwhile
// (here: a block), the guess fails in the statement that takes the
// head's lock, nothing is written, and decide runs again under the lock
// on the state as it is: the blocked agent is refused, and the chain is
// one chain.
func TestCommitAloneGuessesAndFallsBack(t *testing.T) {
	dsn := pgtest.Shared(t).Database(t)
	st, other := openIn(t, dsn), openIn(t, dsn)
	defer st.Close()
	defer other.Close()
	ctx := context.Background()
	var thens []uint64
	call := func(v store.View) (store.Changes, error) {
		b, err := v.Block("claude")
		if err != nil {
			return store.Changes{}, err
		}
		result := "allowed"
		if b != nil {
			result = "blocked"
		}
		return store.Changes{Records: []store.Record{{Time: groupT0, Kind: "decision", Principal: "claude", Result: result}},
			Then: func(gen uint64) { thens = append(thens, gen) }}, nil
	}
	for range 3 {
		if _, err := st.Commit(ctx, call); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.stats.alone.Load(); n != 1 {
		t.Fatalf("%d of 3 commits went alone, want the third (the second found the head where the first left it)", n)
	}
	if _, err := other.Commit(ctx, func(store.View) (store.Changes, error) {
		return store.Changes{Blocks: []store.Block{{Principal: "claude", Reason: "test", VerificationID: "v1", BlockedAt: groupT0}},
			Records: []store.Record{{Time: groupT0, Kind: "block", Principal: "claude", Result: "blocked"}}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	gen, err := st.Commit(ctx, call)
	if err != nil {
		t.Fatal(err)
	}
	if n, moved := st.stats.alone.Load(), st.stats.moved.Load(); n != 1 || moved != 1 {
		t.Fatalf("the commit after another replica's: %d alone, %d guesses found moved; want 1 and 1", n, moved)
	}
	if gen != 1 || len(thens) != 4 || thens[3] != 1 {
		t.Fatalf("generation %d, Thens %v: want 1, once each", gen, thens)
	}
	r := st.AuditReader()
	defer r.Close()
	es, err := r.Read(store.LogPosition{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, e := range es {
		results = append(results, e.Record.Result)
	}
	if fmt.Sprint(results) != "[allowed allowed allowed blocked blocked]" {
		t.Fatalf("records %v: the call after the block must be refused", results)
	}
	if n, err := st.VerifyChain(ctx); err != nil || n != 5 {
		t.Fatalf("VerifyChain: %d, %v", n, err)
	}
	// The guess holds again after a commit that found the head in place.
	for range 2 {
		if _, err := st.Commit(ctx, call); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.stats.alone.Load(); n != 2 {
		t.Fatalf("%d commits alone, want 2", n)
	}
}

// Within a group a member reads what the snapshot holds (approvals,
// blocks, pins) as the members before it left it: an approval revoked
// by one is revoked for the next, and a block set by one refuses the
// next.
func TestGroupCommitCarriesTheSnapshot(t *testing.T) {
	st := openIn(t, pgtest.Shared(t).Database(t))
	defer st.Close()
	ctx := context.Background()
	a := store.Approval{ID: "appr_1", Principal: "claude", Server: "fs", Tool: "write", CreatedAt: groupT0, ExpiresAt: groupT0.Add(time.Hour)}
	if _, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
		if _, err := v.Approvals(); err != nil { // cached at this generation
			return store.Changes{}, err
		}
		return store.Changes{Approvals: []store.Approval{a}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	first, release := make(chan error, 1), make(chan struct{})
	go func() {
		_, err := st.Commit(ctx, holdFirst(release))
		first <- err
	}()
	waitQueued(t, st, 0)
	done := make(chan error, 3)
	go func() {
		_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
			got, err := v.Approval("appr_1")
			if err != nil || got == nil {
				return store.Changes{}, fmt.Errorf("approval before the revoke: %v, %v", got, err)
			}
			got.RevokedAt, got.RevokedBy = groupT0, "admin"
			return store.Changes{Approvals: []store.Approval{*got},
				Blocks: []store.Block{{Principal: "claude", Reason: "test", VerificationID: "v1", BlockedAt: groupT0}}}, nil
		})
		done <- err
	}()
	waitQueued(t, st, 1)
	var seen *store.Approval
	var blocked *store.Block
	go func() {
		_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
			var err error
			if seen, err = v.Approval("appr_1"); err != nil {
				return store.Changes{}, err
			}
			if blocked, err = v.Block("claude"); err != nil {
				return store.Changes{}, err
			}
			return store.Changes{Records: []store.Record{{Time: groupT0, Kind: "decision", Principal: "claude", Result: "checked"}}}, nil
		})
		done <- err
	}()
	waitQueued(t, st, 2)
	close(release)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if st.stats.groups.Load() < 2 || seen == nil || seen.Active(groupT0.Add(time.Minute)) || blocked == nil {
		t.Fatalf("the member after a revoke and a block in its group saw approval %+v, block %+v", seen, blocked)
	}
}
