package flows

import (
	"os"
	"strconv"
	"testing"
)

// evictCG is the walk between calls under cachegrind: twice its model's
// last level (bench/RESULTS.md (ar), (ba)).
var evictCG = make([]byte, 4<<20)

// TestCachegrindObserve makes AQLGUARD_CG_CALLS calls of Observe of the
// 1 KiB net/http result, each after a walk that empties the caches, for
// a run under valgrind --tool=cachegrind: per call figures are the
// difference of two runs (say 400 and 100 calls) divided by 300,
// functions of the walk (evictWalk) left out. Skipped without the
// variable.
func TestCachegrindObserve(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AQLGUARD_CG_CALLS"))
	if n <= 0 {
		t.Skip("AQLGUARD_CG_CALLS not set: run under cachegrind only")
	}
	pol, read := oneKiBRead(t)
	var s Session
	s.Observe(read(), pol) // compile the rules
	for range n {
		evictWalk()
		s.Observe(read(), pol)
	}
}

//go:noinline
func evictWalk() {
	for i := 0; i < len(evictCG); i += 64 {
		evictCG[i]++
	}
}
