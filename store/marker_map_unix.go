//go:build unix

package store

import (
	"os"
	"runtime/debug"
	"sync"
	"syscall"
)

// markerMap is the state marker mapped into memory (MAP_SHARED, so the
// page cache that pread and pwrite go through): a commit reads the
// generation with the log's mark, and writes the log's head, without a
// system call each (two preads and two pwrites per allowed call,
// bench/RESULTS.md, issue 33). An access to a file truncated under the
// mapping faults; that fault is caught (panic on fault) and the caller
// falls back to pread and pwrite, as it does when the mapping reads what
// no whole marker holds.
type markerMap struct {
	mu sync.RWMutex
	b  []byte // nil once dropped
}

// mapMarker maps f's first markerSize bytes, or returns nil.
func mapMarker(f *os.File) *markerMap {
	b, err := syscall.Mmap(int(f.Fd()), 0, markerSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil
	}
	return &markerMap{b: b}
}

// noFault runs fn, reporting false if it faulted (a truncated file).
func noFault(fn func()) (ok bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	fn()
	return true
}

// read copies the marker into b; false: use pread.
func (m *markerMap) read(b *[markerSize]byte) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.b != nil && noFault(func() { copy(b[:], m.b) })
}

// write copies p to offset off; false: use pwrite.
func (m *markerMap) write(off int, p []byte) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.b != nil && noFault(func() { copy(m.b[off:], p) })
}

// drop unmaps it; every access after it falls back.
func (m *markerMap) drop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.b != nil {
		_ = syscall.Munmap(m.b)
		m.b = nil
	}
}
