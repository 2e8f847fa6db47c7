package store

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The audit log is append-only JSONL: one record per line, in segment
// files <state>/audit/audit-00000001.jsonl, ... that together form one
// hash chain (a segment's first record links to the last of the one
// before). A record is one write(2) before the caller goes on, so a
// kill -9 of aqlguard loses nothing it acknowledged; fsync is grouped
// (every AuditSyncInterval, SyncGrouped) or done before the caller goes
// on (SyncAlways, one fsync shared by the writers waiting at that
// moment). Appends of every process on the state directory take the
// store's file lock, so the chain stays one.

// SyncMode says when the audit log is fsync'd.
type SyncMode string

const (
	// SyncGrouped fsyncs at most AuditSyncInterval after a write: a power
	// loss can cost that much of the log, a crashed process nothing.
	SyncGrouped SyncMode = "grouped"
	// SyncAlways fsyncs before an append returns.
	SyncAlways SyncMode = "always"
)

// AuditSyncInterval bounds how long a written record waits for its
// fsync under SyncGrouped.
const AuditSyncInterval = 10 * time.Millisecond

// Segment bounds: a segment is closed when it reaches either.
const (
	DefaultSegmentBytes = 64 << 20
	DefaultSegmentAge   = 24 * time.Hour
)

// AuditDir is the audit log's directory inside the state directory.
const AuditDir = "audit"

const segmentPrefix, segmentSuffix = "audit-", ".jsonl"

func segmentName(n int) string { return fmt.Sprintf("%s%08d%s", segmentPrefix, n, segmentSuffix) }

// auditLog is the writer (one per Store) and the reader of the segments.
type auditLog struct {
	dir       string
	sync      SyncMode
	maxBytes  int64
	maxAge    time.Duration
	mu        sync.Mutex // the fields below
	f         *os.File
	n         int    // the current segment's number
	next      string // the path segment n+1 would have: its existence says another process rotated
	size      int64  // its size as this process last saw or made it
	torn      bool   // it ends inside a record: the next append starts a new one
	first     time.Time
	head      auditHead
	enc       recordEncoder // the lines' encoder, under mu
	scratch   Record        // the record being encoded, under mu
	written   int64         // bytes written through this process, ever
	durable   int64         // of which fsync'd
	syncMu    sync.Mutex
	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closed    bool // under mu: appends fail, nothing is created again

	// anchors (anchor.go): anchor is set at open, stateID (under mu) once
	// the database is read.
	anchor func(line string) error
	// marker (history.go) keeps the log's head beside the database.
	marker *generation
	// lost is set once records this process wrote or saw are gone from
	// the files (a segment deleted while aqlguard ran): nothing more is
	// appended, rather than a new chain begun over the loss.
	lost error
	// unsynced is the last fsync's failure (under mu), until an fsync
	// succeeds: appends fail meanwhile (sync.go). durableSeq is the last
	// record known on disk, syncFailures counts the failures, log says
	// them, syncFile is (*os.File).Sync (tests fail it).
	unsynced     error
	durableSeq   uint64
	syncFailures atomic.Uint64
	log          *slog.Logger
	syncFile     func(*os.File) error

	stateID      string
	anchored     uint64 // the last seq anchored
	lastAnchorAt time.Time
}

// sendAnchor anchors the head if it moved since the last anchor. l.mu is
// held.
func (l *auditLog) sendAnchor() {
	if l.anchor == nil || l.head.Seq == 0 || l.head.Seq == l.anchored {
		return
	}
	a := Anchor{State: l.stateID, Segment: segmentName(l.n), Seq: l.head.Seq, Hash: l.head.Hash}
	if l.anchor(a.String()) == nil {
		l.anchored = l.head.Seq
	}
	l.lastAnchorAt = time.Now()
}

// openAuditLog prepares the log in dir. deferred: create nothing now
// (a read-only store, or one opened for inspection, whose writes, if any,
// come later and create what they need).
func openAuditLog(dir string, mode SyncMode, maxBytes int64, maxAge time.Duration, anchor func(string) error, deferred bool, log *slog.Logger) (*auditLog, error) {
	if !deferred {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("audit log: creating %s: %w", dir, err)
		}
	}
	if mode == "" {
		mode = SyncGrouped
	}
	if maxBytes <= 0 {
		maxBytes = DefaultSegmentBytes
	}
	if maxAge <= 0 {
		maxAge = DefaultSegmentAge
	}
	if log == nil {
		log = slog.Default()
	}
	l := &auditLog{dir: dir, sync: mode, maxBytes: maxBytes, maxAge: maxAge, head: auditHead{Hash: GenesisHash},
		anchor: anchor, stop: make(chan struct{}), stopped: make(chan struct{}), log: log, syncFile: (*os.File).Sync}
	go l.flushLoop()
	return l, nil
}

// segments lists the segment numbers in order.
func (l *auditLog) segments() ([]int, error) {
	entries, err := os.ReadDir(l.dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	var ns []int
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, segmentPrefix) || !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, segmentPrefix), segmentSuffix))
		if err != nil || n <= 0 {
			continue
		}
		ns = append(ns, n)
	}
	sort.Ints(ns)
	return ns, nil
}

// catchUp makes the writer's view current: another process may have
// appended to the segment or started a new one since, or the segment may
// have been deleted or cut short. Called with the store's file lock held
// and l.mu held. seen, when set, is what the marker said of the log when
// the lock was taken (a commit reads it with the generation).
//
// Every append writes the head it reached into the marker, and every
// process writes the number of the segment it is about to start there
// before the segment exists (adopt). So while the marker names this
// process's head and segment, no process started another segment (not
// even one killed right after creating it), and one fstat of the segment
// tells the rest: its size moved if anyone appended to it, its link
// count is zero if it was deleted. Otherwise, or without seen, the next
// segment's name and the files say where the log is.
func (l *auditLog) catchUp(seen *logMark) error {
	if l.lost != nil {
		return l.lost
	}
	if seen != nil && seen.ok && l.f != nil && seen.segment == uint64(l.n) {
		if head, ok := l.head.mark(); ok && head == seen.head {
			if same, err := l.unchanged(); err != nil || same {
				return err // nil: nobody else wrote, the head is ours
			}
		}
	}
	if err := l.catchUpFromFiles(); err != nil {
		return err
	}
	if l.f != nil && l.marker != nil && (seen == nil || !seen.ok || seen.segment != uint64(l.n)) {
		// The marker names another segment (one a process was about to
		// start when it died, or none yet): it names this one from now
		// on, so that the next commit need not look again.
		if err := l.marker.setSegment(l.n); err != nil {
			return err
		}
	}
	return nil
}

// unchanged reports whether the segment is as this process left it: of
// the size it wrote. A segment deleted meanwhile is an error, and
// nothing more is appended.
func (l *auditLog) unchanged() (bool, error) {
	size, gone, err := sizeAndUnlinked(l.f)
	if err != nil {
		return false, fmt.Errorf("audit log: %w", err)
	}
	if gone {
		l.lost = fmt.Errorf("audit log: %s was deleted while aqlguard was writing it; records up to %d are gone, "+
			"and nothing more is written (restart aqlguard to see what is missing)", segmentName(l.n), l.head.Seq)
		return false, l.lost
	}
	return size == l.size, nil
}

// catchUpFromFiles is catchUp without the marker: the next segment's
// name, the segment's size and, when either says something changed, the
// files.
func (l *auditLog) catchUpFromFiles() error {
	if l.f != nil {
		if _, err := os.Stat(l.next); err != nil {
			if same, err := l.unchanged(); err != nil || same {
				return err // nil: nobody else wrote, the head is ours
			}
		}
	}
	ns, err := l.segments()
	if err != nil {
		return err
	}
	head, err := l.lastRecord()
	if err != nil {
		return err
	}
	if head.Seq < l.head.Seq {
		l.lost = fmt.Errorf("audit log: the log ends at record %d, but record %d was written: records were removed while "+
			"aqlguard ran, and nothing more is written (restart aqlguard to see what is missing)", head.Seq, l.head.Seq)
		return l.lost
	}
	l.head = head
	if l.durable == l.written {
		// Nothing of this process's waits for an fsync: what the files
		// hold is not its to vouch for (syncFailed names its own).
		l.durableSeq = head.Seq
	}
	if len(ns) == 0 {
		return nil
	}
	return l.adopt(ns[len(ns)-1])
}

// adopt makes segment n the one appended to. The marker names it first:
// a process that sees its own segment named there knows no other
// process started a new one (catchUp), even if that process was killed
// between creating the segment and writing the marker's head.
func (l *auditLog) adopt(n int) error {
	if l.f == nil || l.n != n {
		if err := os.MkdirAll(l.dir, 0o700); err != nil {
			return fmt.Errorf("audit log: creating %s: %w", l.dir, err)
		}
		// The segment closed is on disk before the next is named.
		if err := l.closeFile(); err != nil {
			return err
		}
		if l.marker != nil {
			if err := l.marker.setSegment(n); err != nil {
				return err
			}
		}
		// Read-write, so that its last byte can be read (below).
		f, err := os.OpenFile(filepath.Join(l.dir, segmentName(n)), os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		l.f, l.n, l.next = f, n, filepath.Join(l.dir, segmentName(n+1))
		l.first = time.Time{}
		if first, err := firstLine(filepath.Join(l.dir, segmentName(n))); err == nil && first != nil {
			var r Record
			if json.Unmarshal(first, &r) == nil {
				l.first = r.Time
			}
		}
	}
	st, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	l.size = st.Size()
	// A segment that ends inside a record (a write cut by a power loss)
	// is left as it is, for verify to report; the log goes on in a new
	// one rather than glue the next record to the torn one.
	l.torn = false
	if l.size > 0 {
		var last [1]byte
		if _, err := l.f.ReadAt(last[:], l.size-1); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		l.torn = last[0] != '\n'
	}
	return nil
}

// closeFile fsyncs and closes the segment appended to. l.mu is held. A
// failed fsync keeps it open (and is the caller's error): what it holds
// is not on disk yet, and the next sync tries again.
func (l *auditLog) closeFile() error {
	if l.f == nil {
		return nil
	}
	if err := l.syncFile(l.f); err != nil {
		return l.syncFailed(err, l.head.Seq)
	}
	l.synced(l.written, l.head.Seq)
	_ = l.f.Close()
	l.f = nil
	return nil
}

// append chains and writes records, one write each, rotating segments as
// they fill. Called with the store's file lock held; seen is what the
// marker said of the log when it was taken, nil when it was not read
// (catchUp). It returns the position the caller waits on under
// SyncAlways.
func (l *auditLog) append(recs []Record, seen *logMark) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, errors.New("audit log: closed")
	}
	if err := l.syncAgain(); err != nil {
		return 0, err
	}
	if err := l.catchUp(seen); err != nil {
		return 0, err
	}
	before := l.written
	pos, err := l.appendLocked(recs)
	if l.written > before && l.marker != nil {
		// The state marker follows the head, so that a start can tell a
		// log whose last records were removed (see history.go).
		if merr := l.marker.setLogHead(l.head); merr != nil && err == nil {
			err = merr
		}
	}
	if err != nil && l.written == before {
		return 0, err
	}
	return pos, err
}

// appendLocked writes recs; l.mu is held and the writer caught up.
func (l *auditLog) appendLocked(recs []Record) (int64, error) {
	// The record being written is l.scratch, not a copy on the stack: the
	// encoder's interface would move every copy to the heap.
	r := &l.scratch
	defer func() { *r = Record{} }() // keeps nothing of the caller's
	for i := range recs {
		*r = recs[i]
		r.Seq, r.Prev = l.head.Seq+1, l.head.Hash
		r.Time = r.Time.UTC()
		line, err := l.enc.encode(r)
		if err != nil {
			return 0, fmt.Errorf("audit log: encoding record %d: %w", r.Seq, err)
		}
		if l.f == nil || l.torn || l.size > 0 && (l.size+int64(len(line)) > l.maxBytes || !l.first.IsZero() && r.Time.Sub(l.first) > l.maxAge) {
			l.sendAnchor() // the closing segment's last record
			next := l.n + 1
			if err := l.adopt(next); err != nil {
				return 0, err
			}
			if err := syncDir(l.dir); err != nil {
				return 0, err
			}
		}
		if n, err := l.f.Write(line); err != nil {
			// A short write (a full disk) is cut back to the last whole
			// record, so that the next append does not follow a torn one;
			// if even that fails, the next append starts a new segment.
			if n > 0 {
				if terr := l.f.Truncate(l.size); terr != nil {
					l.torn = true
					err = errors.Join(err, fmt.Errorf("cutting the partial record back: %w", terr))
				}
			}
			return l.written, fmt.Errorf("audit log: writing record %d: %w", r.Seq, err)
		}
		if l.size == 0 {
			l.first = r.Time
		}
		l.size += int64(len(line))
		l.written += int64(len(line))
		l.head = auditHead{Seq: r.Seq, Hash: r.Hash}
	}
	return l.written, nil
}

// waitDurable returns once what this process wrote up to pos is fsync'd:
// at once under SyncGrouped (the flusher gets to it), after one fsync
// shared with the other writers waiting under SyncAlways.
func (l *auditLog) waitDurable(pos int64) error {
	if l.sync != SyncAlways {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	return l.flush(pos)
}

// flush fsyncs the current segment if pos is not durable yet. syncMu is
// held.
func (l *auditLog) flush(pos int64) error {
	l.mu.Lock()
	if l.durable >= pos || l.f == nil {
		l.mu.Unlock()
		return nil
	}
	f, upto, seq, sync := l.f, l.written, l.head.Seq, l.syncFile
	l.mu.Unlock()
	err := sync(f)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		return l.syncFailed(err, seq)
	}
	l.synced(upto, seq)
	return nil
}

func (l *auditLog) flushLoop() {
	defer close(l.stopped)
	tick := time.NewTicker(AuditSyncInterval)
	defer tick.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		pending := l.written
		if time.Since(l.lastAnchorAt) >= AnchorInterval {
			l.sendAnchor()
		}
		l.mu.Unlock()
		if l.sync == SyncGrouped {
			l.syncMu.Lock()
			_ = l.flush(pending) // a failure is logged, counted and fails the next append (syncFailed)
			l.syncMu.Unlock()
		}
	}
}

func (l *auditLog) close() {
	l.closeOnce.Do(func() {
		close(l.stop)
		<-l.stopped
		l.mu.Lock()
		_ = l.closeFile() // a failure is logged (syncFailed)
		l.sendAnchor()
		l.closed = true
		l.mu.Unlock()
	})
}

// records calls fn with every record from seq from on, across segments,
// in order; raw is the line without its newline. A torn tail (bytes at
// the end of a segment that are no whole record) is not a record and is
// skipped: VerifyChain reports it.
func (l *auditLog) records(from uint64, fn func(r Record, raw []byte) error) error {
	return l.walk(from, fn, nil)
}

// walk is records, also telling torn (when set) of every torn tail.
func (l *auditLog) walk(from uint64, fn func(r Record, raw []byte) error, torn func(Gap)) error {
	ns, err := l.segments()
	if err != nil {
		return err
	}
	for _, n := range ns {
		if err := l.readSegment(n, from, fn, torn); err != nil {
			return err
		}
	}
	return nil
}

func (l *auditLog) readSegment(n int, from uint64, fn func(r Record, raw []byte) error, torn func(Gap)) error {
	f, err := os.Open(filepath.Join(l.dir, segmentName(n)))
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	rd := bufio.NewReaderSize(f, 64<<10)
	var offset int64
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] != '\n' {
			if torn != nil {
				sum := sha256.Sum256(line)
				torn(Gap{Segment: segmentName(n), Offset: offset, Bytes: int64(len(line)), Torn: hex.EncodeToString(sum[:])})
			}
			return nil
		}
		offset += int64(len(line))
		if len(line) > 0 {
			raw := line[:len(line)-1]
			var r Record
			if jerr := json.Unmarshal(raw, &r); jerr != nil {
				return fmt.Errorf("%w: a record of %s does not decode: %v", ErrChainBroken, segmentName(n), jerr)
			}
			if r.Seq >= from {
				if ferr := fn(r, raw); ferr != nil {
					return ferr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit log: reading %s: %w", segmentName(n), err)
		}
	}
}

// lastLine is the last complete line of a file, nil when it has none.
func lastLine(path string) (last []byte, err error) {
	err = linesBackward(path, func(line []byte) bool {
		last = bytes.Clone(line)
		return false
	})
	return last, err
}

// linesBackward hands fn a file's complete lines (without their
// newline), from the last one back, until fn returns false or the file's
// start. What follows the file's last newline (a record cut short) is
// no line. It reads 64 KiB from the end, then more only as the lines
// fn asks for need, so finding the last lines of a long file reads
// only its end. A line is valid only during
// fn's call.
func linesBackward(path string, fn func(line []byte) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	chunk := int64(64 << 10)
	end := st.Size() // the file's bytes before end are not read yet
	var carry []byte // the start of a line whose beginning is before end
	torn := true     // what follows the last newline is no line
	for end > 0 || len(carry) > 0 {
		start := max(0, end-chunk)
		buf := make([]byte, end-start, end-start+int64(len(carry)))
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit log: %w", err)
		}
		buf = append(buf, carry...)
		end, carry = start, nil
		for {
			nl := bytes.LastIndexByte(buf, '\n')
			if nl < 0 && start > 0 {
				// A line longer than what was read: read more, four times
				// as much each time, so that a long line is copied a
				// bounded number of times.
				carry, chunk = buf, chunk*4
				break
			}
			line := buf[nl+1:]
			buf = buf[:max(nl, 0)]
			if torn {
				torn = false // the bytes after the file's last newline
			} else if !fn(line) {
				return nil
			}
			if nl < 0 {
				break
			}
		}
	}
	return nil
}

// firstLine is a file's first complete line, nil when it has none.
func firstLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(f, 64<<10).ReadBytes('\n')
	if err != nil {
		return nil, nil
	}
	return line[:len(line)-1], nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("audit log: fsync %s: %w", dir, err)
	}
	return nil
}
