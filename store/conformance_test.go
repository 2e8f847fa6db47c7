package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
)

// fresh makes a state directory; each open is another process's Store
// on it. Commits wait up to 30 s for their turn: 64 racers on a loaded
// machine are a test of atomicity, not of latency.
func fresh(t testing.TB) func(t testing.TB) store.State {
	dir := t.TempDir()
	return func(t testing.TB) store.State {
		st, err := store.Open(context.Background(), dir, store.Options{Timeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return st
	}
}

// TestConformance runs the State conformance suite on bbolt.
func TestConformance(t *testing.T) {
	statetest.Run(t, statetest.Backend{Fresh: fresh})
}

// BenchmarkState: the guard's commits on bbolt (statetest.Bench).
func BenchmarkState(b *testing.B) { statetest.Bench(b, fresh) }
