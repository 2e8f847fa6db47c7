package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
)

// The generation is a counter in <state>/aqlguard.gen that every commit
// of state (Update, or a Commit that changes state) raises, under the
// lock, after it committed. A reader that saw generation g and reads g
// again knows no process changed the state meanwhile, with one pread
// instead of opening the database: a Commit decides on the snapshot kept
// at g (snapshot.go) and reopens the database only when it moved.

// GenerationFile is the counter's name inside the state directory.
const GenerationFile = "aqlguard.gen"

// The same file is the state marker: after the counter it keeps the state
// directory's id and the audit log's head (seq and hash), written as the
// log is appended to. It is evidence beside the database, not a trust
// anchor (anchors are): a database emptied, replaced or rolled back, or
// a log whose last records or segments were removed, disagrees with it
// at the next start (history.go).
type generation struct {
	f    *os.File      // nil: read-only on a directory that has none
	last atomic.Uint64 // the value this process last wrote or read
	// mapped is the marker in memory (marker_map_unix.go), for the two
	// accesses every commit makes: readWithLog and setLogHead. It is
	// made once the file holds a whole marker, in a read-write open, and
	// dropped for good (pread and pwrite again) when an access faults or
	// reads what no whole marker holds (a file truncated under it).
	mapped  atomic.Pointer[markerMap]
	mayMap  bool
	dropped atomic.Bool
}

// The marker's layout: little-endian counter, 8 raw bytes of state id,
// little-endian log head seq, 32 raw bytes of its hash, little-endian
// number of the segment appended to. (A marker written before the
// segment number was kept ends after the hash.)
const (
	markerStateAt = 8
	markerLogAt   = 16
	markerSegAt   = 56
	markerSize    = 64
)

// logMark is what the marker says of the log: its head as the last
// append wrote it (seq and raw hash, as laid out in the marker) and the
// segment appends go to. A commit reads it with the generation, in the
// same pread, and the log's catch-up compares it with what this process
// last wrote or saw (auditLog.catchUp).
type logMark struct {
	head    [markerSegAt - markerLogAt]byte
	segment uint64
	ok      bool // the marker holds both
}

// mark is h as the marker lays it out; ok is false for a hash that is
// not 32 hex-encoded bytes (no marker holds it).
func (h auditHead) mark() (b [markerSegAt - markerLogAt]byte, ok bool) {
	binary.LittleEndian.PutUint64(b[:8], h.Seq)
	n, err := hex.Decode(b[8:], []byte(h.Hash))
	return b, err == nil && n == len(b)-8
}

func openGeneration(path string, readOnly bool) (*generation, error) {
	flag := os.O_RDWR | os.O_CREATE
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0o600)
	if err != nil {
		if readOnly && os.IsNotExist(err) {
			return &generation{}, nil
		}
		return nil, fmt.Errorf("opening the state generation: %w", err)
	}
	return &generation{f: f, mayMap: !readOnly}, nil
}

func (g *generation) close() {
	g.unmap()
	if g.f != nil {
		_ = g.f.Close()
	}
}

// unmap drops the mapping for good.
func (g *generation) unmap() {
	g.dropped.Store(true)
	if m := g.mapped.Swap(nil); m != nil {
		m.drop()
	}
}

// marker is what the marker file says; a part never written is zero.
type marker struct {
	gen   uint64
	state string
	log   auditHead
}

func (g *generation) readMarker() (marker, error) {
	var m marker
	if g.f == nil {
		return m, nil
	}
	var b [markerSize]byte
	n, err := g.f.ReadAt(b[:], 0)
	if n < markerSize && err != nil && !errors.Is(err, io.EOF) {
		return m, fmt.Errorf("reading the state marker: %w", err)
	}
	if n >= 8 {
		m.gen = binary.LittleEndian.Uint64(b[:8])
	}
	if n >= markerLogAt && !allZero(b[markerStateAt:markerLogAt]) {
		m.state = hex.EncodeToString(b[markerStateAt:markerLogAt])
	}
	if n >= markerSegAt {
		if seq := binary.LittleEndian.Uint64(b[markerLogAt : markerLogAt+8]); seq > 0 {
			m.log = auditHead{Seq: seq, Hash: hex.EncodeToString(b[markerLogAt+8 : markerSegAt])}
		}
	}
	return m, nil
}

// readWithLog is read, with what the marker says of the log, in one
// pread: what a commit reads first, under the exclusive lock.
func (g *generation) readWithLog() (uint64, logMark, error) {
	var lm logMark
	if g.f == nil {
		return 0, lm, nil
	}
	var b [markerSize]byte
	if m := g.mapped.Load(); m != nil {
		// A whole marker names a record (seq > 0) and a segment (> 0);
		// zeros are what a mapping reads past the end of a file cut
		// short under it.
		if m.read(&b) && binary.LittleEndian.Uint64(b[markerLogAt:]) > 0 && binary.LittleEndian.Uint64(b[markerSegAt:]) > 0 {
			v := binary.LittleEndian.Uint64(b[:8])
			g.last.Store(v)
			copy(lm.head[:], b[markerLogAt:markerSegAt])
			lm.segment = binary.LittleEndian.Uint64(b[markerSegAt:])
			lm.ok = true
			return v, lm, nil
		}
		g.unmap()
	}
	n, err := g.f.ReadAt(b[:], 0)
	if n < 8 {
		if n == 0 && (err == nil || errors.Is(err, io.EOF)) {
			return 0, lm, nil // never raised
		}
		return 0, lm, fmt.Errorf("reading the state generation: %d bytes: %w", n, err)
	}
	v := binary.LittleEndian.Uint64(b[:8])
	g.last.Store(v)
	if n == markerSize {
		copy(lm.head[:], b[markerLogAt:markerSegAt])
		lm.segment = binary.LittleEndian.Uint64(b[markerSegAt:])
		lm.ok = true
		if g.mayMap && !g.dropped.Load() && g.mapped.Load() == nil {
			if m := mapMarker(g.f); m != nil {
				g.mapped.Store(m)
			} else {
				g.dropped.Store(true) // not to be mapped: never try again
			}
		}
	}
	return v, lm, nil
}

// setSegment writes into the marker the number of the segment appends
// go to, before the first record goes there; the caller holds the
// exclusive lock.
func (g *generation) setSegment(n int) error {
	if g.f == nil {
		return nil
	}
	var b [markerSize - markerSegAt]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	if _, err := g.f.WriteAt(b[:], markerSegAt); err != nil {
		return fmt.Errorf("writing the state marker: %w", err)
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// setState writes the state id (16 hex digits) into the marker.
func (g *generation) setState(id string) error {
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != markerLogAt-markerStateAt || g.f == nil {
		return nil // not an id this layout holds: nothing to compare later
	}
	if _, err := g.f.WriteAt(raw, markerStateAt); err != nil {
		return fmt.Errorf("writing the state marker: %w", err)
	}
	return nil
}

// setLogHead writes the log's head into the marker; the caller holds
// the exclusive lock.
func (g *generation) setLogHead(h auditHead) error {
	if g.f == nil {
		return nil
	}
	b, ok := h.mark()
	if !ok {
		return nil
	}
	// Through the mapping when there is one: written to a file cut short
	// under it, the head is lost (the next readWithLog drops the mapping
	// and the catch-up reads the files), never wrong.
	if m := g.mapped.Load(); m != nil {
		if m.write(markerLogAt, b[:]) {
			return nil
		}
		g.unmap()
	}
	if _, err := g.f.WriteAt(b[:], markerLogAt); err != nil {
		return fmt.Errorf("writing the state marker: %w", err)
	}
	return nil
}

func (g *generation) read() (uint64, error) {
	if g.f == nil {
		return 0, nil
	}
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
// moments, mean no process committed a state change in between. It is
// one pread: ctx is the interface's (State), never waited on.
func (s *Store) Generation(context.Context) (uint64, error) {
	return s.gen.read()
}
