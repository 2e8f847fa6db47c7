// Package registry is how the parts that a configuration names by kind
// (state backends, human channels, audit destinations) make themselves
// known: each registers under its name from an init function, and the
// room that opens them looks the configured name up, so a new one is a
// package of its own and the core lists none of them in a switch.
package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Of holds the registered T of one kind. The zero value is empty and
// ready; it is safe for concurrent use.
type Of[T any] struct {
	// Kind names what is registered, for errors ("[state] backend").
	Kind string

	mu sync.Mutex
	by map[string][]T
}

// Register makes t available under name. Registering a name twice is a
// mistake of the build, which Lookup reports when the name is asked for
// (no panic at init).
func (r *Of[T]) Register(name string, t T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[string][]T{}
	}
	r.by[name] = append(r.by[name], t)
}

// Names are the registered names, sorted.
func (r *Of[T]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.by))
	for n := range r.by {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Lookup is what is registered under name, or an error that says what
// this build has instead.
func (r *Of[T]) Lookup(name string) (T, error) {
	r.mu.Lock()
	found := slices.Clone(r.by[name])
	r.mu.Unlock()
	var zero T
	switch len(found) {
	case 0:
		return zero, fmt.Errorf("%s = %q is not in this build (it has %s)", r.Kind, name, strings.Join(r.Names(), ", "))
	case 1:
		return found[0], nil
	}
	return zero, fmt.Errorf("%s = %q: %d are registered under that name in this build, so it cannot tell which", r.Kind, name, len(found))
}
