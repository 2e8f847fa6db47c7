package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// A state's history is kept in three places that must agree: the
// database (its state id, its generation, the log head its last state
// change recorded), the state marker beside it (generation.go: the
// generation, the state id, the log's head) and the audit log itself.
// A database deleted, emptied, replaced by another or rolled back to a
// backup, and a log with segments or last records removed, disagree
// with the others; Open refuses such a state, naming what disagrees and
// the command that accepts it deliberately (Reset, audited). Nothing is
// ever started afresh in silence: a fresh database would have forgotten
// every block.

// HistoryError says a state directory's database and audit log do not
// tell the same history.
type HistoryError struct {
	Dir      string
	Problems []string
}

func (e *HistoryError) Error() string {
	return fmt.Sprintf("the state in %s does not add up: %s. Restore what is missing from a backup, or accept the "+
		"state directory as it is now, deliberately: aqlguard state reset --i-understand --state-dir %s (the reset is audited)",
		e.Dir, strings.Join(e.Problems, "; "), e.Dir)
}

var (
	keyGeneration = []byte("generation")
	keyAccepted   = []byte("accepted")
)

// accepted is what resets and seals accepted of the log's damage, so
// that a start does not refuse it again.
type accepted struct {
	// MissingSegments are segment numbers a reset accepted as gone.
	MissingSegments []int `json:"missing_segments,omitempty"`
	// Sealed are the torn tails sealed, as "segment@offset".
	Sealed []string `json:"sealed,omitempty"`
}

func (t *Tx) accepted() (accepted, error) {
	var a accepted
	meta := t.tx.Bucket(bucketMeta)
	if meta == nil {
		return a, nil
	}
	if raw := meta.Get(keyAccepted); raw != nil {
		if err := json.Unmarshal(raw, &a); err != nil {
			return a, fmt.Errorf("state database: what was accepted of the log is damaged: %w", err)
		}
	}
	return a, nil
}

func (t *Tx) putAccepted(a accepted) error {
	meta, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(a)
	return meta.Put(keyAccepted, raw)
}

// putGeneration records in the database the generation this write
// raises the marker to. The caller holds the exclusive lock.
func (t *Tx) putGeneration() error {
	meta := t.tx.Bucket(bucketMeta)
	if meta == nil {
		return nil
	}
	g, err := t.s.gen.read()
	if err != nil {
		return err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], g+1)
	return meta.Put(keyGeneration, b[:])
}

// historyWithoutDatabase: the database file does not exist. That is a
// new state directory, unless the marker or the log say there was one.
func (s *Store) historyWithoutDatabase(how string) ([]string, error) {
	m, err := s.gen.readMarker()
	if err != nil {
		return nil, err
	}
	last, err := s.log.lastRecord()
	if err != nil {
		return nil, err
	}
	return lostDatabase(s.path, how, m, last), nil
}

func lostDatabase(path, how string, m marker, last auditHead) []string {
	var had []string
	if last.Seq > 0 {
		had = append(had, fmt.Sprintf("its audit log holds %d records", last.Seq))
	}
	if m.gen > 0 || m.state != "" {
		had = append(had, fmt.Sprintf("its state marker (%s) says state %s was changed %d times", GenerationFile, orNone(m.state), m.gen))
	}
	if len(had) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("the state database %s %s, but this directory had state before: %s; the database was deleted, "+
		"emptied or replaced, and the blocks, challenges and approvals it held are gone", path, how, strings.Join(had, " and "))}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// checkHistory compares the database tx reads with the marker and the
// log. problems make the state refused; warnings are for the human.
func (s *Store) checkHistory(tx *Tx) (problems, warnings []string, err error) {
	m, err := s.gen.readMarker()
	if err != nil {
		return nil, nil, err
	}
	last, err := s.log.lastRecord()
	if err != nil {
		return nil, nil, err
	}
	meta := tx.tx.Bucket(bucketMeta)
	var dbState string
	if meta != nil {
		dbState = string(meta.Get(keyStateID))
	}
	if dbState == "" {
		// A database that never ran (or was emptied): fine only where
		// nothing else remembers a state.
		return lostDatabase(s.path, "holds no state", m, last), nil, nil
	}
	if m.state != "" && m.state != dbState {
		problems = append(problems, fmt.Sprintf("the state database is another state directory's (state %s; this directory's is %s): "+
			"it was replaced", dbState, m.state))
	}
	if raw := meta.Get(keyGeneration); len(raw) == 8 {
		if g := binary.LittleEndian.Uint64(raw); g < m.gen {
			problems = append(problems, fmt.Sprintf("the state database is older than this directory's state (it is at "+
				"generation %d, the state marker at %d): it was rolled back or restored from a backup, and what changed "+
				"since (blocks, answers, approvals) is gone", g, m.gen))
		}
	}
	acc, err := tx.accepted()
	if err != nil {
		return nil, nil, err
	}
	ns, err := s.log.segments()
	if err != nil {
		return nil, nil, err
	}
	if len(ns) > 0 {
		for n := 1; n < ns[len(ns)-1]; n++ {
			if !slices.Contains(ns, n) && !slices.Contains(acc.MissingSegments, n) {
				problems = append(problems, fmt.Sprintf("audit segment %s is missing (the log has segments up to %s)",
					segmentName(n), segmentName(ns[len(ns)-1])))
			}
		}
	}
	head, err := tx.dbHead()
	if err != nil {
		return nil, nil, err
	}
	for _, want := range []struct {
		head auditHead
		who  string
	}{{head, "the database"}, {m.log, "the state marker"}} {
		if want.head.Seq == 0 {
			continue
		}
		hash, found, err := s.log.find(want.head.Seq)
		if err != nil {
			return nil, nil, err
		}
		switch {
		case !found:
			problems = append(problems, fmt.Sprintf("the audit log ends at record %d, but record %d was written (%s says so): "+
				"the log's last records or segments were removed", last.Seq, want.head.Seq, want.who))
		case hash != want.head.Hash:
			problems = append(problems, fmt.Sprintf("record %d of the audit log is not the record written as %d (%s names "+
				"another): the log was rewritten, or the database replaced", want.head.Seq, want.head.Seq, want.who))
		}
	}
	torn, err := s.log.tornTails()
	if err != nil {
		return nil, nil, err
	}
	for _, g := range torn {
		if !slices.Contains(acc.Sealed, sealKey(g)) {
			warnings = append(warnings, fmt.Sprintf("audit segment %s ends in %d bytes that are no whole record (a write cut "+
				"short by a crash, a power loss or a full disk); `aqlguard audit seal` records them as evidence, and until then "+
				"`aqlguard audit verify` reports them", g.Segment, g.Bytes))
		}
	}
	return problems, warnings, nil
}

func sealKey(g Gap) string { return g.Segment + "@" + strconv.FormatInt(g.Offset, 10) }

// lastRecord is the head of the log as its files say.
func (l *auditLog) lastRecord() (auditHead, error) {
	ns, err := l.segments()
	if err != nil {
		return auditHead{}, err
	}
	for i := len(ns) - 1; i >= 0; i-- {
		last, err := lastLine(filepath.Join(l.dir, segmentName(ns[i])))
		if err != nil {
			return auditHead{}, err
		}
		if last == nil {
			continue
		}
		var r Record
		if err := json.Unmarshal(last, &r); err != nil {
			return auditHead{}, fmt.Errorf("audit log: the last record of %s is damaged: %w", segmentName(ns[i]), err)
		}
		return auditHead{Seq: r.Seq, Hash: r.Hash}, nil
	}
	return auditHead{Hash: GenesisHash}, nil
}

var errFound = errors.New("found")

// find looks for record seq and returns its hash: in the newest segment
// that starts at or before it.
func (l *auditLog) find(seq uint64) (hash string, found bool, err error) {
	ns, err := l.segments()
	if err != nil {
		return "", false, err
	}
	for i := len(ns) - 1; i >= 0; i-- {
		first, err := firstLine(filepath.Join(l.dir, segmentName(ns[i])))
		if err != nil {
			return "", false, fmt.Errorf("audit log: %w", err)
		}
		var r Record
		if first == nil || json.Unmarshal(first, &r) != nil || r.Seq > seq {
			continue
		}
		// The record looked for is the head, or close to it: read the
		// segment from its end, so that opening a state costs the same
		// on a log of a million records as on one of ten (a hook opens
		// the state at every tool call). A line that does not decode
		// sends the search to the segment's forward reading, which says
		// what is wrong with it.
		hash, found, decided, err := findBackward(filepath.Join(l.dir, segmentName(ns[i])), seq)
		if err != nil || decided {
			return hash, found, err
		}
		err = l.readSegment(ns[i], seq, func(r Record, _ []byte) error {
			if r.Seq == seq {
				hash, found = r.Hash, true
				return errFound
			}
			return nil
		}, nil)
		if err != nil && !errors.Is(err, errFound) {
			return "", false, err
		}
		return hash, found, nil
	}
	return "", false, nil
}

// findBackward reads a segment's complete lines from the last one back
// until record seq or an earlier one; decided is false when a line on
// the way does not decode, or the segment's records do not go down as
// the search goes back (then the caller reads the segment forward).
func findBackward(path string, seq uint64) (hash string, found, decided bool, err error) {
	prev := uint64(0) // the seq of the line read before (0: none yet)
	decided = true
	err = linesBackward(path, func(line []byte) bool {
		if len(line) == 0 {
			return true
		}
		var r struct {
			Seq  uint64 `json:"seq"`
			Hash string `json:"hash"`
		}
		if json.Unmarshal(line, &r) != nil || prev != 0 && r.Seq >= prev {
			decided = false
			return false
		}
		prev = r.Seq
		if r.Seq == seq {
			hash, found = r.Hash, true
		}
		return r.Seq > seq // on back while the records are later
	})
	if err != nil {
		return "", false, false, err
	}
	if !decided {
		return "", false, false, nil
	}
	return hash, found, true, nil
}

// tornTails lists the segments that end inside a record.
func (l *auditLog) tornTails() ([]Gap, error) {
	ns, err := l.segments()
	if err != nil {
		return nil, err
	}
	var out []Gap
	for _, n := range ns {
		g, ok, err := tornTail(filepath.Join(l.dir, segmentName(n)))
		if err != nil {
			return nil, err
		}
		if ok {
			g.Segment = segmentName(n)
			out = append(out, g)
		}
	}
	return out, nil
}

// tornTail reads what follows a file's last newline, if anything.
func tornTail(path string) (Gap, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return Gap{}, false, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return Gap{}, false, err
	}
	var lastByte [1]byte
	if _, err := f.ReadAt(lastByte[:], st.Size()-1); err != nil {
		return Gap{}, false, fmt.Errorf("audit log: %w", err)
	}
	if lastByte[0] == '\n' {
		return Gap{}, false, nil
	}
	// The tail is what follows the last newline: read back until one.
	var tail []byte
	for chunk := int64(64 << 10); ; chunk *= 4 {
		start := max(0, st.Size()-chunk)
		buf := make([]byte, st.Size()-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return Gap{}, false, fmt.Errorf("audit log: %w", err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 || start == 0 {
			tail = buf[i+1:]
			break
		}
	}
	sum := sha256.Sum256(tail)
	return Gap{Offset: st.Size() - int64(len(tail)), Bytes: int64(len(tail)), Torn: hex.EncodeToString(sum[:])}, true, nil
}

// DamagedError says the database file cannot be read: bbolt found a page
// that is not what it should be (it panics on those; the store turns the
// panic into this error).
type DamagedError struct {
	Path  string
	Cause string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("the state database %s is damaged (%s): move it aside and restore it from a backup; or, to go on "+
		"without the blocks and approvals it held, move it aside and run aqlguard state reset --i-understand --state-dir %s "+
		"(audited)", e.Path, e.Cause, filepath.Dir(e.Path))
}

// guard runs fn, turning a panic inside bbolt (a damaged page) and a
// memory fault on its mapping (a file cut short under it) into a
// *DamagedError. bbolt rolls back the transaction it panicked in.
func (s *Store) guard(fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			err = &DamagedError{Path: s.path, Cause: fmt.Sprint(r)}
		}
	}()
	return fn()
}

// openDB opens the database file for one transaction.
func (s *Store) openDB(deadline time.Time, readOnly bool) (db *bolt.DB, err error) {
	s.opens.Add(1)
	var file *os.File
	err = s.guard(func() error {
		var oerr error
		db, oerr = bolt.Open(s.path, 0o600, &bolt.Options{Timeout: max(time.Until(deadline), time.Millisecond), ReadOnly: readOnly,
			OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
				f, err := os.OpenFile(name, flag, perm)
				file = f
				return f, err
			}})
		return oerr
	})
	var damaged *DamagedError
	if errors.As(err, &damaged) && file != nil {
		// bbolt panicked while opening, with the file open, locked and
		// mapped (the mapping keeps the file, and so its lock, alive):
		// let the lock go and close it, or this process would wait on
		// its own lock.
		unlockFile(file)
		_ = file.Close()
	}
	switch {
	case err == nil:
		return db, nil
	case errors.As(err, &damaged), errors.Is(err, bolterrors.ErrTimeout):
		return nil, err
	case !readOnly && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)):
		// Not damage: a file system that turned read-only, or files
		// that are not this user's to write.
		return nil, notWritable(filepath.Dir(s.path), fmt.Errorf("opening the state database %s: %w", s.path, err))
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return nil, fmt.Errorf("opening the state database %s: %w", s.path, err)
	}
	return nil, &DamagedError{Path: s.path, Cause: err.Error()}
}

// Reset accepts the state directory as it is now: what Open found wrong
// with its history (a database deleted, emptied, replaced or rolled
// back, log segments or records missing) is written into the audit log,
// naming who accepted it, every break in the chain with its exact ends,
// and the database and marker are made to agree with the log from here
// on. It returns the records written; none when there was nothing to
// accept. The store must have been opened with Options.Inspect.
func (s *Store) Reset(ctx context.Context, by, process string, now time.Time) ([]Record, error) {
	var recs []Record
	err := s.Update(ctx, func(tx *Tx) error {
		recs = nil
		problems, _, err := s.checkHistory(tx)
		if err != nil {
			return err
		}
		// Breaks in the chain that no reset acknowledged yet.
		v := NewChainVerifier()
		var walkErr error
		if err := s.log.walk(0, func(_ Record, raw []byte) error {
			_, err := v.Next(raw)
			return err
		}, v.Torn); err != nil {
			walkErr = err // a changed record: not a gap; verify keeps saying so
		}
		var breaks []Gap
		acked := v.Acknowledged()
		for _, b := range v.breaks {
			if !slices.Contains(acked, b) {
				breaks = append(breaks, b)
			}
		}
		if len(problems) == 0 && len(breaks) == 0 {
			return nil
		}
		if err := s.initState(tx); err != nil {
			return err
		}
		acc, err := tx.accepted()
		if err != nil {
			return err
		}
		ns, err := s.log.segments()
		if err != nil {
			return err
		}
		if len(ns) > 0 {
			for n := 1; n < ns[len(ns)-1]; n++ {
				if !slices.Contains(ns, n) && !slices.Contains(acc.MissingSegments, n) {
					acc.MissingSegments = append(acc.MissingSegments, n)
				}
			}
		}
		if err := tx.putAccepted(acc); err != nil {
			return err
		}
		factors := append([]string{"accepted by " + by + " with --i-understand"}, problems...)
		if walkErr != nil {
			factors = append(factors, "not accepted (a reset cannot): "+walkErr.Error())
		}
		recs = append(recs, adminRecord(now, "aqlguard", process, "state reset", DecisionReset, "accepted", factors...))
		for _, b := range breaks {
			b := b
			r := adminRecord(now, "aqlguard", process, "state reset", DecisionReset, "gap_accepted",
				fmt.Sprintf("records %d to %d are missing from the log; accepted by %s", b.AfterSeq+1, b.ResumeSeq-1, by))
			r.Gap = &b
			recs = append(recs, r)
		}
		for _, r := range recs {
			if err := tx.Append(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.history = nil
	s.numberWritten(recs)
	return recs, nil
}

// numberWritten gives the records an admin command just wrote (the last
// it appended) their sequence numbers, for it to say where they are.
func (s *Store) numberWritten(recs []Record) {
	s.log.mu.Lock()
	last := s.log.head.Seq
	s.log.mu.Unlock()
	for i := range recs {
		recs[i].Seq = last - uint64(len(recs)-1-i)
	}
}

// Seal records every torn tail of the log that no seal recorded yet: its
// segment, offset, length and SHA-256, as an admin record naming who
// sealed it. The torn bytes stay where they are, as evidence; the log
// goes on in a new segment; verify accepts exactly those bytes from then
// on. It returns the records written.
func (s *Store) Seal(ctx context.Context, by, process string, now time.Time) ([]Record, error) {
	var recs []Record
	err := s.Update(ctx, func(tx *Tx) error {
		recs = nil
		if tx.tx.Bucket(bucketMeta) == nil {
			return errors.New("the state database holds no state: run aqlguard state reset --i-understand first")
		}
		acc, err := tx.accepted()
		if err != nil {
			return err
		}
		torn, err := s.log.tornTails()
		if err != nil {
			return err
		}
		for _, g := range torn {
			if slices.Contains(acc.Sealed, sealKey(g)) {
				continue
			}
			g := g
			acc.Sealed = append(acc.Sealed, sealKey(g))
			r := adminRecord(now, "aqlguard", process, "audit seal", DecisionSeal, "sealed",
				fmt.Sprintf("%s ends in %d bytes that are no whole record (a write cut short); kept as evidence, "+
					"sealed by %s", g.Segment, g.Bytes, by))
			r.Gap = &g
			recs = append(recs, r)
		}
		if len(recs) == 0 {
			return nil
		}
		if err := tx.putAccepted(acc); err != nil {
			return err
		}
		for _, r := range recs {
			if err := tx.Append(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.numberWritten(recs)
	return recs, nil
}
