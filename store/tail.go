package store

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// LogPosition is where a reader of the audit log is: a segment's number
// and a byte offset in it, just after a whole record. The zero position
// is the start of the log.
type LogPosition struct {
	Segment int   `json:"segment"`
	Offset  int64 `json:"offset"`
}

// LogEntry is one record read by a LogReader: the record, its line as
// stored (without its newline: what its hash covers, with "hash"), and
// the position just after it.
type LogEntry struct {
	Record Record
	Raw    []byte
	Next   LogPosition
}

// LogReader reads the audit log from a position, behind its writers:
// without the state's lock (a record is appended whole, by one write, so
// a reader sees it whole or not yet) and without the database. It is
// what ships the log as it is written (audit/forward) and costs a call
// nothing. Not safe for concurrent use.
type LogReader struct {
	dir string
	f   *os.File // the segment last read
	n   int      // its number
}

// NewLogReader reads the audit log of the state directory dir.
func NewLogReader(dir string) *LogReader {
	return &LogReader{dir: filepath.Join(dir, AuditDir)}
}

// LogReader reads this store's audit log (NewLogReader).
func (s *Store) LogReader() *LogReader { return NewLogReader(filepath.Dir(s.path)) }

// Close lets go of the segment held open.
func (r *LogReader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// ErrTornSkipped is returned, with the entries read, when a segment
// ended in a torn record (a write cut short by a crash) and the reader
// went on in the next one: the torn bytes are not a record.
var ErrTornSkipped = errors.New("audit log: a segment ends in a torn record; reading went on in the next segment")

// Read returns up to max whole records after pos, in order, crossing
// into the next segment at the end of one. Fewer (none) means the log
// has no more yet.
func (r *LogReader) Read(pos LogPosition, max int) ([]LogEntry, error) {
	var out []LogEntry
	var torn error
	if pos.Segment == 0 {
		first, err := r.firstSegment(0)
		if err != nil || first == 0 {
			return nil, err
		}
		pos = LogPosition{Segment: first}
	}
	for len(out) < max {
		f, err := r.open(pos.Segment)
		if errors.Is(err, os.ErrNotExist) {
			// A segment that is gone: the next one that exists, if any
			// (a log reset removed it; the receiver's chain check shows
			// the gap).
			next, nerr := r.firstSegment(pos.Segment)
			if nerr != nil || next == 0 {
				return out, nerr
			}
			pos = LogPosition{Segment: next}
			continue
		}
		if err != nil {
			return out, err
		}
		if _, err := f.Seek(pos.Offset, io.SeekStart); err != nil {
			return out, fmt.Errorf("audit log: %w", err)
		}
		rd := bufio.NewReaderSize(f, 64<<10)
		partial := false
		for len(out) < max {
			line, err := rd.ReadBytes('\n')
			if len(line) > 0 && line[len(line)-1] == '\n' {
				raw := line[:len(line)-1]
				var rec Record
				if jerr := json.Unmarshal(raw, &rec); jerr != nil {
					return out, fmt.Errorf("%w: a record of %s at byte %d does not decode: %v", ErrChainBroken, segmentName(pos.Segment), pos.Offset, jerr)
				}
				pos.Offset += int64(len(line))
				out = append(out, LogEntry{Record: rec, Raw: raw, Next: pos})
				continue
			}
			partial = len(line) > 0
			if err != nil && !errors.Is(err, io.EOF) {
				return out, fmt.Errorf("audit log: reading %s: %w", segmentName(pos.Segment), err)
			}
			break
		}
		if len(out) >= max {
			break
		}
		// The end of this segment: on to the next if there is one (this
		// one is closed then), else no more yet.
		next := pos.Segment + 1
		if _, err := os.Stat(filepath.Join(r.dir, segmentName(next))); err != nil {
			break
		}
		if partial {
			torn = ErrTornSkipped
		}
		pos = LogPosition{Segment: next}
	}
	return out, torn
}

// End is the position after the last whole record, and that record (nil
// for an empty log).
func (r *LogReader) End() (LogPosition, *Record, error) {
	ns, err := (&auditLog{dir: r.dir}).segments()
	if err != nil || len(ns) == 0 {
		return LogPosition{}, nil, err
	}
	for i := len(ns) - 1; i >= 0; i-- {
		path := filepath.Join(r.dir, segmentName(ns[i]))
		line, err := lastLine(path)
		if err != nil {
			return LogPosition{}, nil, err
		}
		if line == nil {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return LogPosition{}, nil, fmt.Errorf("%w: the last record of %s does not decode: %v", ErrChainBroken, segmentName(ns[i]), err)
		}
		st, err := os.Stat(path)
		if err != nil {
			return LogPosition{}, nil, fmt.Errorf("audit log: %w", err)
		}
		// After the last newline: a torn tail is not a record.
		f, err := os.Open(path)
		if err != nil {
			return LogPosition{}, nil, fmt.Errorf("audit log: %w", err)
		}
		end := st.Size()
		buf := make([]byte, 1)
		for end > 0 {
			if _, err := f.ReadAt(buf, end-1); err != nil || buf[0] == '\n' {
				break
			}
			end--
		}
		f.Close()
		return LogPosition{Segment: ns[i], Offset: end}, &rec, nil
	}
	return LogPosition{Segment: ns[len(ns)-1]}, nil, nil
}

// Find is the position of the first record whose sequence number is at
// least seq, scanning from the start: for a cursor whose position no
// longer holds what it says (a log reset).
func (r *LogReader) Find(seq uint64) (LogPosition, error) {
	var pos LogPosition
	for {
		batch, err := r.Read(pos, 1024)
		if err != nil && !errors.Is(err, ErrTornSkipped) {
			return pos, err
		}
		if len(batch) == 0 {
			return pos, nil
		}
		for i, e := range batch {
			if e.Record.Seq >= seq {
				if i > 0 {
					return batch[i-1].Next, nil
				}
				return pos, nil
			}
		}
		pos = batch[len(batch)-1].Next
	}
}

// open returns segment n, kept open between reads.
func (r *LogReader) open(n int) (*os.File, error) {
	if r.f != nil && r.n == n {
		return r.f, nil
	}
	r.Close()
	f, err := os.Open(filepath.Join(r.dir, segmentName(n)))
	if err != nil {
		return nil, err
	}
	r.f, r.n = f, n
	return f, nil
}

// firstSegment is the first segment numbered above after (0: none).
func (r *LogReader) firstSegment(after int) (int, error) {
	ns, err := (&auditLog{dir: r.dir}).segments()
	if err != nil {
		return 0, err
	}
	for _, n := range ns {
		if n > after {
			return n, nil
		}
	}
	return 0, nil
}
