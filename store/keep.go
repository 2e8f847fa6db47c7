package store

import "sync"

// Kept holds the newest of the values a backend read or wrote at some
// generation (its snapshot of what every call reads): a value is good
// for exactly the generation it is stamped with. Safe for concurrent
// use; the zero value holds nothing.
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

// Keep keeps v, at gen, unless a value of a newer generation is kept.
func (k *Kept[T]) Keep(gen uint64, v *T) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.v == nil || gen >= k.gen {
		k.gen, k.v = gen, v
	}
}
