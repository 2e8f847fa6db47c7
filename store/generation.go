package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
)

// The generation is a counter in <state>/aqlguard.gen that every commit
// of state (Update, or a Commit that changes state) raises, under the
// lock, after it committed. A reader that saw generation g and reads g
// again knows no process changed the state meanwhile, with one pread
// instead of opening the database: the guard decides on the block it
// read at g and appends its decision only while g stands (AppendIf), and
// reopens the database only when it moved.

// GenerationFile is the counter's name inside the state directory.
const GenerationFile = "aqlguard.gen"

type generation struct {
	f    *os.File
	last atomic.Uint64 // the value this process last wrote or read
}

func openGeneration(path string) (*generation, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the state generation: %w", err)
	}
	return &generation{f: f}, nil
}

func (g *generation) read() (uint64, error) {
	var b [8]byte
	n, err := g.f.ReadAt(b[:], 0)
	if n < len(b) {
		if n == 0 {
			return 0, nil // never raised
		}
		return 0, fmt.Errorf("reading the state generation: %d bytes: %w", n, err)
	}
	v := binary.LittleEndian.Uint64(b[:])
	g.last.Store(v)
	return v, nil
}

// raise adds one and returns the new value; the caller holds the
// exclusive lock.
func (g *generation) raise() (uint64, error) {
	v, err := g.read()
	if err != nil {
		return 0, err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v+1)
	if _, err := g.f.WriteAt(b[:], 0); err != nil {
		return 0, fmt.Errorf("raising the state generation: %w", err)
	}
	g.last.Store(v + 1)
	return v + 1, nil
}

// Generation is the state's generation: equal values, read at two
// moments, mean no process committed a state change in between.
func (s *Store) Generation() (uint64, error) {
	return s.gen.read()
}
