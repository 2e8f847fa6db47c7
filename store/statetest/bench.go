package statetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aqlguard/aqlguard/store"
)

// Bench measures the commits a guarded call makes, on one backend:
//
//   - allowed: the fast path, a call that changes no state: decide reads
//     the principal's block and the approvals, the commit appends one
//     record;
//   - step: a call that changes state: an execution's step count and a
//     record;
//   - allowed-parallel: allowed from 8 goroutines per CPU (b.RunParallel)
//     on two processes of the state, for throughput.
//
// bench/RESULTS.md puts the figures as ratios; the backends' own
// benchmarks call this.
func Bench(b *testing.B, fresh func(t testing.TB) func(t testing.TB) store.State) {
	ctx := context.Background()
	allowed := func(v store.View) (store.Changes, error) {
		blk, err := v.Block("claude")
		if err != nil {
			return store.Changes{}, err
		}
		if _, err := v.Approvals(); err != nil {
			return store.Changes{}, err
		}
		r := rec("decision", "allowed")
		r.Operation, r.Server, r.Tool, r.ArgsSHA256 = "fs_read_file", "fs", "read_file", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
		if blk != nil {
			r.Result = "blocked"
		}
		return store.Changes{Records: []store.Record{r}}, nil
	}
	b.Run("allowed", func(b *testing.B) {
		st := fresh(b)(b)
		defer st.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := st.Commit(ctx, allowed); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("step", func(b *testing.B) {
		st := fresh(b)(b)
		defer st.Close()
		b.ResetTimer()
		for b.Loop() {
			if _, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
				e, err := v.Execution("exec_1")
				if err != nil {
					return store.Changes{}, err
				}
				if e == nil {
					e = &store.Execution{ID: "exec_1", Principal: "claude", Status: "running", StartedAt: t0}
				}
				e.Steps++
				return store.Changes{Executions: []store.Execution{*e}, Records: []store.Record{rec("decision", fmt.Sprint("step ", e.Steps))}}, nil
			}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("allowed-parallel", func(b *testing.B) {
		open := fresh(b)
		procs := []store.State{open(b), open(b)}
		defer procs[0].Close()
		defer procs[1].Close()
		var n atomic.Int64
		b.SetParallelism(8)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			st := procs[n.Add(1)%2]
			for pb.Next() {
				if _, err := st.Commit(ctx, allowed); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
