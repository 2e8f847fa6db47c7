package store

import "sync"

// Kept holds the value a backend last read or wrote at some generation
// (its snapshot of what every call reads): a value is good for exactly
// the generation it is stamped with. The last value kept wins, not the
// one of the highest generation: a state restored from a backup counts
// its generations again from lower down, and a snapshot kept from
// before must never pass for the state when the count comes back to it.
// Safe for concurrent use; the zero value holds nothing.
type Kept[T any] struct {
	mu  sync.Mutex
	gen uint64
	v   *T
}

// At is the value kept if it is at gen, else a new one from fresh.
func (k *Kept[T]) At(gen uint64, fresh func() *T) *T {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.v != nil && k.gen == gen {
		return k.v
	}
	return fresh()
}

// Keep keeps v, at gen.
func (k *Kept[T]) Keep(gen uint64, v *T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen, k.v = gen, v
}
