package app

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// ServeHeadroom is how much a serving process may allocate between two
// collections while what it holds is smaller than that: 48 MiB, against
// the ~11 MB `serve` holds with 32 sessions (bench/RESULTS.md (av)).
const ServeHeadroom = 48 << 20

// HeapHeadroom lets the heap grow by headroom bytes between two
// collections while the live heap is smaller than headroom, and by the
// live heap (Go's default, GOGC=100) once it is larger. Go's default
// collects a process that holds 11 MB every 11 MB allocated, each time
// marking all 11 MB: for `serve` under load that was a collection every
// ~500 calls and ~10% of its CPU. At most headroom bytes more are held
// than with the default, and never more than it once the live heap
// passes headroom. An operator's GOGC is left alone (as is GOMEMLIMIT,
// which the runtime honours either way). It adjusts every second until
// ctx ends.
func HeapHeadroom(ctx context.Context, headroom uint64) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	last := 100
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	defer debug.SetGCPercent(100)
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if p := headroomPercent(sample[0].Value.Uint64(), headroom); p != last {
				debug.SetGCPercent(p)
				last = p
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// headroomPercent is the GOGC that lets a live heap of live bytes grow
// by headroom before the next collection (at least Go's default 100, at
// most 2000), rounded down to a multiple of ten so that it changes
// rarely.
func headroomPercent(live, headroom uint64) int {
	const most = 2000 // a heap that holds almost nothing: 20 times it, and no more
	if live == 0 || live*most/100 <= headroom {
		return most
	}
	p := int(headroom * 100 / live)
	if p <= 100 {
		return 100
	}
	return p / 10 * 10
}
