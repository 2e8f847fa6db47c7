//go:build unix

package pgstate

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

// BenchmarkReplicas: the store's ceiling, without the HTTP front, the
// guard or a server: 64 goroutines commit what an allowed call commits
// (decide reads the block and the approvals, one record) on 1 or 3
// replicas of one state (each its own pool and group queue, as in
// separate processes). It reports commits/s, the commits each
// transaction carried, how long a transaction held the head's lock and
// waited for it, this process's CPU per commit, and the share of commits
// made alone in one round trip; "serial" is one committer, the latency. The test cluster
// runs with fsync off; AQLGUARD_BENCH_DSN points it at another.
func BenchmarkReplicas(b *testing.B) {
	for _, n := range []int{0, 1, 3} {
		name := fmt.Sprintf("replicas=%d", n)
		if n == 0 {
			name = "serial" // one replica, one committer: the latency
		}
		serial, n := n == 0, max(n, 1)
		b.Run(name, func(b *testing.B) {
			dsn := os.Getenv("AQLGUARD_BENCH_DSN")
			schema := ""
			if dsn == "" {
				dsn = pgtest.Shared(b).Database(b)
			} else {
				schema = fmt.Sprintf("bench_%d_%d", n, time.Now().UnixNano())
			}
			states := make([]*State, n)
			for i := range states {
				st, err := Open(context.Background(), Options{DSN: dsn, Schema: schema})
				if err != nil {
					b.Fatal(err)
				}
				defer st.Close()
				states[i] = st
			}
			allowed := func(v store.View) (store.Changes, error) {
				if _, err := v.Block("claude"); err != nil {
					return store.Changes{}, err
				}
				if _, err := v.Approvals(); err != nil {
					return store.Changes{}, err
				}
				r := store.Record{Time: time.Now(), Kind: "decision", Principal: "claude", Result: "allowed",
					Operation: "fs_read_file", Server: "fs", Tool: "read_file", ArgsSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}
				return store.Changes{Records: []store.Record{r}}, nil
			}
			var next atomic.Int64
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.SetParallelism(32) // 64 goroutines on 2 CPUs
			b.ResetTimer()
			start := time.Now()
			if serial {
				for range b.N {
					if _, err := states[0].Commit(context.Background(), allowed); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.RunParallel(func(pb *testing.PB) {
					st := states[next.Add(1)%int64(n)]
					for pb.Next() {
						if _, err := st.Commit(context.Background(), allowed); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			elapsed := time.Since(start)
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			var groups, commits, wait, held, alone int64
			for _, st := range states {
				alone += st.stats.alone.Load()
				groups += st.stats.groups.Load()
				commits += st.stats.commits.Load()
				wait += st.stats.waitNs.Load()
				held += st.stats.heldNs.Load()
			}
			cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime) + syscall.TimevalToNsec(ru1.Stime) -
				syscall.TimevalToNsec(ru0.Utime) - syscall.TimevalToNsec(ru0.Stime))
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "commits/s")
			if groups > 0 {
				b.ReportMetric(float64(commits)/float64(groups), "commits/txn")
				b.ReportMetric(float64(wait)/float64(groups)/1e3, "wait-µs/txn")
				b.ReportMetric(float64(held)/float64(groups)/1e3, "held-µs/txn")
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/commit")
			b.ReportMetric(float64(alone)/float64(b.N), "alone/commit")
		})
	}
}
