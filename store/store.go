// Package store keeps aqlguard's durable state under the state directory:
// hard blocks, verification challenges (salted code hashes only),
// verification failure state, executions, confirmation tokens, approvals
// and pins in one bbolt file, and the hash-chained audit log in
// append-only JSONL segments beside it (auditlog.go).
//
// Two aqlguard processes may share a state directory (two clients, one
// principal). bbolt locks its file for as long as it is open, so the store
// does not keep it open: every transaction opens the file, takes the lock
// (waiting at most the configured timeout, then failing with ErrBusy),
// runs, commits with fsync and closes. A decision made in one process is
// therefore on disk, and visible to the other, before it is returned.
//
// bbolt's types stay inside the package: callers see Tx and plain records.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// FileName is the database's name inside the state directory.
const FileName = "aqlguard.db"

// DefaultTimeout is how long a transaction waits for the file lock when
// Options.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// ErrBusy means the database stayed locked by another process for longer
// than the timeout. Callers fail closed on it.
var ErrBusy = errors.New("state database is busy (locked by another aqlguard process)")

// Options tune a Store.
type Options struct {
	// Timeout bounds the wait for the file lock; zero means DefaultTimeout.
	Timeout time.Duration
	// AuditSync says when the audit log is fsync'd (default SyncGrouped).
	AuditSync SyncMode
	// SegmentBytes and SegmentAge bound an audit log segment (defaults
	// DefaultSegmentBytes, DefaultSegmentAge).
	SegmentBytes int64
	SegmentAge   time.Duration
	// Anchor, when set, sends a line to the system log (see anchor.go);
	// its errors are not the caller's: an anchor that could not be sent
	// is retried with the next.
	Anchor func(line string) error
	// ReadOnly opens an existing state only (a missing database is an
	// error) and writes nothing: what the admin commands that read use.
	ReadOnly bool
	// Inspect opens a state even when its history does not add up
	// (history.go), writing nothing at open: HistoryProblem then says
	// what is wrong. For audit reads, `audit seal` and `state reset`.
	Inspect bool
	// IncompleteCopy opens the target of an unfinished copy (CopyMark),
	// which is otherwise refused: for `state copy` alone.
	IncompleteCopy bool
	// Log receives what happens beside the calls (a failed fsync of the
	// audit log); slog.Default() when nil.
	Log *slog.Logger
}

// Store is the state database. It is safe for concurrent use; the
// transactions of one process run one at a time.
type Store struct {
	path string
	// what names the database in a busy error ("state database PATH").
	what    string
	timeout time.Duration
	// mu serialises this process's transactions: bbolt's lock is per open
	// file, so two opens in one process would wait for each other anyway.
	// It is taken through takeTurn, whose wait is bounded.
	mu   sync.Mutex
	lock *fileLock
	// auditKey is read once at Open (see AuditKey).
	auditKey []byte
	log      *auditLog
	gen      *generation
	// snap is what every call reads as it was at one generation
	// (snapshot.go).
	snap Kept[snapshot]
	// opens counts the database's opens (tests: the fast path opens
	// none).
	opens atomic.Int64
	// history is what Open found wrong with the state's history (with
	// Options.Inspect; otherwise Open fails with it); warnings are what
	// it found worth saying.
	history  error
	warnings []string
}

// DefaultDir is $XDG_STATE_HOME/aqlguard, or ~/.local/state/aqlguard.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "aqlguard"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "aqlguard"), nil
}

// Open creates the state directory (mode 0700) and the database (0600) if
// needed, and checks that it can be opened, carries every bucket, is
// private to this user and has the history its audit log and state
// marker say it had (history.go): a database deleted, emptied, replaced
// or rolled back, or a log with records missing, is refused with a
// *HistoryError.
func Open(ctx context.Context, dir string, o Options) (*Store, error) {
	if dir == "" {
		return nil, errors.New("opening the state database: no state directory")
	}
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the messages name it, and a command to run on it
	}
	s, err := open(ctx, dir, o)
	if !o.ReadOnly {
		err = notWritable(dir, err) // (a reader's EACCES is a file it cannot read)
	}
	return s, err
}

func open(ctx context.Context, dir string, o Options) (*Store, error) {
	if !o.IncompleteCopy {
		m, err := ReadCopyMark(dir)
		if err != nil {
			return nil, fmt.Errorf("opening the state database: %w", err)
		}
		if m != nil {
			return nil, &IncompleteCopyError{Where: "state directory " + dir, Mark: *m}
		}
	}
	path := filepath.Join(dir, FileName)
	st, statErr := os.Stat(path)
	dbExists := statErr == nil && st.Size() > 0 // an empty file is no database yet
	noDatabase := fmt.Errorf("no state database at %s: aqlguard has not run with this state directory "+
		"(check --state-dir, or state_dir in the config)", path)
	switch {
	case statErr != nil && !os.IsNotExist(statErr):
		return nil, fmt.Errorf("opening the state database: %w", statErr)
	case o.ReadOnly && !dbExists:
		if _, err := os.Stat(dir); err != nil {
			return nil, noDatabase
		}
	case !o.ReadOnly && !o.Inspect:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the state directory: %w", err)
		}
	}
	s := &Store{path: path, what: "state database " + path, timeout: o.Timeout}
	if err := checkPrivate(dir); err != nil {
		if !o.Inspect {
			return nil, err
		}
		s.warnings = append(s.warnings, err.Error())
	}
	if s.timeout <= 0 {
		s.timeout = DefaultTimeout
	}
	writesAtOpen := !o.ReadOnly && !o.Inspect
	var err error
	if s.gen, err = openGeneration(filepath.Join(dir, GenerationFile), o.ReadOnly); err != nil {
		return nil, err
	}
	if s.log, err = openAuditLog(filepath.Join(dir, AuditDir), o.AuditSync, o.SegmentBytes, o.SegmentAge, o.Anchor, !writesAtOpen, o.Log); err != nil {
		return nil, err
	}
	s.log.marker = s.gen
	fail := func(err error) (*Store, error) {
		s.Close()
		return nil, err
	}
	if !dbExists {
		// Nothing to open yet: the history says whether there should be.
		how := "does not exist"
		if statErr == nil {
			how = "is empty"
		}
		if problems, err := s.historyWithoutDatabase(how); err != nil {
			return fail(err)
		} else if len(problems) > 0 {
			herr := &HistoryError{Dir: dir, Problems: problems}
			if !o.Inspect {
				return fail(herr)
			}
			s.history = herr
		} else if o.ReadOnly {
			return fail(noDatabase)
		}
	}
	// The lock file is made only once there is a database to lock, or
	// one to make (a read of nothing creates nothing).
	lock := openLock
	if o.ReadOnly {
		lock = openReadLock
	}
	if s.lock, err = lock(s.path + ".lock"); err != nil {
		return fail(fmt.Errorf("opening the state database: %w", err))
	}
	if !dbExists && !writesAtOpen {
		return s, nil
	}
	open := func(tx *Tx) error {
		problems, warnings, err := s.checkHistory(tx)
		if err != nil {
			return fmt.Errorf("%w; the audit log in %s cannot be read: restore the damaged segment from a backup "+
				"(`aqlguard audit verify` says where the damage is)", err, filepath.Join(dir, AuditDir))
		}
		s.warnings = append(s.warnings, warnings...)
		if len(problems) > 0 {
			herr := &HistoryError{Dir: dir, Problems: problems}
			if !o.Inspect {
				return herr
			}
			s.history = herr
		}
		if !writesAtOpen {
			for _, b := range buckets {
				// (server names are newer than the databases they may be
				// read in: Tx.ServerNames reads none from a database
				// without them)
				if b := string(b); b != string(bucketAudit) && b != string(bucketServerNames) && tx.tx.Bucket([]byte(b)) == nil && s.history == nil {
					return fmt.Errorf("state database %s: bucket %s is missing: it is not an aqlguard database, or it is damaged", s.path, b)
				}
			}
			if tx.tx.Bucket(bucketMeta) != nil {
				s.auditKey, _ = tx.auditKey() // none yet is fine for reading
				if id, err := tx.stateID(); err == nil {
					s.setStateID(id)
				}
			}
			return nil
		}
		if err := s.initState(tx); err != nil {
			return err
		}
		return tx.migrateAudit()
	}
	if writesAtOpen {
		err = s.Update(ctx, open)
	} else {
		err = s.View(ctx, open)
	}
	if err != nil {
		return fail(err)
	}
	return s, nil
}

// initState makes what every state has, where it is missing: the
// buckets, the audit key and the state id (also written into the
// marker).
func (s *Store) initState(tx *Tx) error {
	for _, b := range buckets {
		if _, err := tx.tx.CreateBucketIfNotExists(b); err != nil {
			return fmt.Errorf("creating bucket %s: %w", b, err)
		}
	}
	key, err := tx.auditKey()
	if err != nil {
		return err
	}
	s.auditKey = key
	id, err := tx.stateID()
	if err != nil {
		return err
	}
	s.setStateID(id)
	return s.gen.setState(id)
}

func (s *Store) setStateID(id string) {
	s.log.mu.Lock()
	s.log.stateID = id
	s.log.mu.Unlock()
}

// HistoryProblem is what Open (with Options.Inspect) found wrong with
// the state's history, as a *HistoryError; nil when nothing.
func (s *Store) HistoryProblem() error { return s.history }

// Warnings are what Open found worth telling the human: torn segments
// not sealed yet, and (with Options.Inspect) a state directory others
// can write.
func (s *Store) Warnings() []string { return s.warnings }

// StateID is the state directory's id, as anchors name it.
func (s *Store) StateID() string {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.stateID
}

// Close fsyncs the audit log, anchors its head and stops its flusher.
// The Store must not be used after.
func (s *Store) Close() error {
	if s != nil && s.log != nil {
		s.log.close()
		s.gen.close()
		s.mu.Lock() // no transaction of this process is using the lock
		if s.lock != nil {
			_ = s.lock.close()
		}
		s.mu.Unlock()
	}
	return nil
}

// AuditKey is the state directory's secret key for the digests that stand
// in for redacted values (HMAC-SHA256): equal secrets give equal digests,
// so an auditor can correlate them, and nobody holding only the log can
// test guesses against them. It is made from crypto/rand when the
// database is created and never leaves it but through this method.
func (s *Store) AuditKey() []byte { return s.auditKey }

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Timeout is how long a transaction waits for the lock.
func (s *Store) Timeout() time.Duration { return s.timeout }

// Update runs fn in a read-write transaction and commits it durably
// (fsync) before returning. If fn returns an error nothing is written.
// (The guard commits through Commit, state.go; Update serves the admin
// commands, pins and tests.)
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	return s.run(ctx, txWrite, fn, nil, nil)
}

// View runs fn in a read-only transaction.
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	return s.run(ctx, txRead, fn, nil, nil)
}

type txMode int

const (
	txRead txMode = iota
	txWrite
	// txCommit: Commit's read, then its changes (state.go).
	txCommit
)

// run runs one transaction: fn in the mode's transaction, or, for
// txCommit, decide on a view (snapshot.go: what every call reads comes
// from the snapshot kept at the current generation, the rest from a
// read-only transaction opened only if decide asks for it) and the
// changes it returns in a read-write one, all under the directory's
// exclusive lock. gen, when set, receives the generation the state is at
// after it.
func (s *Store) run(ctx context.Context, mode txMode, fn func(*Tx) error, decide func(View) (Changes, error), gen *uint64) error {
	readOnly := mode == txRead
	if s == nil {
		return errors.New("no state database is configured")
	}
	start := time.Now()
	deadline, err := s.acquire(ctx, mode == txRead, s.what)
	if err != nil {
		return err
	}
	released := false
	defer func() {
		if !released { // decide or Then panicked
			s.release()
		}
	}()
	// v is the commit's view, and for every mode the database, opened
	// only when the transaction needs it: one allocation, no closures.
	v := &commitView{s: s, deadline: deadline, start: start, readOnly: readOnly}
	var written int64 // the audit log position this transaction's records reach
	var next *snapshot
	// mark is what the marker said of the log as a commit began (under
	// the lock, which is held until the records are appended): nil for
	// Update, whose append reads the files.
	var mark *logMark
	var seen logMark
	txErr := func() error {
		switch mode {
		case txCommit:
			// The directory's lock is exclusive: nothing changes the state
			// until it is let go, so the view decide read stays the state
			// its changes are written over.
			cur, lm, err := s.gen.readWithLog()
			if err != nil {
				return err
			}
			seen, mark = lm, &seen
			v.gen = cur
			var c Changes
			err = s.guard(func() error {
				var err error
				c, err = decide(v)
				return err
			})
			v.closeRead()
			if err != nil {
				return err
			}
			if !c.ChangesState() {
				if v.snap != nil {
					s.install(v.snap)
				}
				if gen != nil {
					*gen = cur
				}
				if len(c.Records) > 0 {
					if written, err = s.log.append(c.Records, mark); err != nil {
						return err
					}
				}
				if c.Then != nil {
					c.Then(cur) // under the lock: before the next commit decides
				}
				return nil
			}
			// What the commit read is carried over with its changes: found
			// now, before the write changes the file, if decide read none
			// of it (a state change writes the database; a stat more is
			// nothing to it). When the stat fails, nothing is carried
			// over: the next commit reads the state afresh.
			before, _ := v.snapshot()
			// (a copy, on the heap only on this path: the method value
			// would move c there on every commit)
			changes := c
			fn = changes.write
			defer func() {
				if next == nil {
					return
				}
				if before != nil {
					next = before.next(next.gen, next.file, &changes)
				}
				if changes.Then != nil {
					changes.Then(next.gen)
				}
			}()
		case txRead:
			if err := v.open(); err != nil {
				return err
			}
			return s.guard(func() error {
				return v.db.View(func(btx *bolt.Tx) error { return fn(&Tx{tx: btx, s: s}) })
			})
		}
		if err := v.open(); err != nil {
			return err
		}
		var pending int
		err := s.guard(func() error {
			return v.db.Update(func(btx *bolt.Tx) error {
				tx := &Tx{tx: btx, s: s}
				if err := fn(tx); err != nil {
					return err
				}
				// The database says which generation it is, so that a start
				// can tell it from one rolled back (history.go).
				if err := tx.putGeneration(); err != nil {
					return err
				}
				if pending = len(tx.pending); pending == 0 {
					return nil
				}
				// The records go to the log before the state they describe
				// commits: a crash in between leaves a record of a change
				// that did not happen, never a change without its record.
				var err error
				if written, err = s.log.append(tx.pending, mark); err != nil {
					return err
				}
				return tx.putHead()
			})
		})
		if err == nil {
			// Readers of the generation see the change from now on. A
			// failure here is reported (the caller fails closed) but the
			// change did commit: no rollback record.
			raised, gerr := s.gen.raise()
			if gerr != nil {
				return fmt.Errorf("the state change committed, but other processes may not notice it: %w", gerr)
			}
			if gen != nil {
				*gen = raised
			}
			// The file as this commit left it (the lock is still held).
			file, serr := s.stamp()
			if serr != nil {
				file = fileStamp{mtime: -1} // matches no file: read afresh
			}
			next = &snapshot{gen: raised, file: file}
			return nil
		}
		if pending > 0 && written > 0 {
			// The state change did not commit although its records were
			// written: say so in the log.
			r := NewRecord(time.Now(), KindRollback, "aqlguard", "", "")
			r.Result = fmt.Sprintf("the state change of the %d record(s) before this one did not commit: %v", pending, err)
			written, _ = s.log.append([]Record{r}, nil)
		}
		return err
	}()
	if next != nil {
		// What a commit left, known without reading it; after any other
		// write, an empty snapshot at its generation (read afresh), so
		// one kept from before can never pass for the state again, even
		// when the generation file is rewound to the count it had.
		s.install(next)
	}
	if v.db != nil {
		if err := s.guard(v.db.Close); err != nil && txErr == nil {
			txErr = fmt.Errorf("closing the state database: %w", err)
		}
	}
	released = true
	s.release() // no lock is held across the fsync: the writers waiting share it
	if written > 0 {
		if err := s.log.waitDurable(written); err != nil && txErr == nil {
			txErr = err
		}
	}
	if readOnly {
		return txErr
	}
	return notWritable(filepath.Dir(s.path), txErr)
}

// acquire takes this process's turn and the state directory's lock
// (shared or exclusive), waiting at most the store's timeout or until
// ctx's deadline, whichever comes first, for both together: a flood of
// transactions in this process makes the others fail with ErrBusy, never
// wait without end. s.release lets both go. what names the lock's user
// in a busy error.
func (s *Store) acquire(ctx context.Context, shared bool, what string) (deadline time.Time, err error) {
	wait, ctxBound := s.timeout, false
	if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
		wait, ctxBound = time.Until(d), true
	}
	if err := ctx.Err(); err != nil || wait <= 0 {
		// The caller's request ended (or its time ran out) before the
		// lock was even tried: that is its own error, not a busy
		// database.
		if err == nil {
			err = context.DeadlineExceeded
		}
		return time.Time{}, fmt.Errorf("%s: the request ended before it could be read or written: %w", what, err)
	}
	deadline = time.Now().Add(wait)
	if !s.takeTurn(ctx, wait) {
		// As for the lock below: the request's own end is its error; the
		// store's timeout is a busy database (here, busy in this process).
		if ctxErr := ctx.Err(); ctxErr != nil {
			return time.Time{}, fmt.Errorf("%s: the request ended while it waited for its turn: %w", what, ctxErr)
		}
		if ctxBound {
			return time.Time{}, fmt.Errorf("%s: the request's deadline passed while this process's other transactions held the database: %w",
				what, context.DeadlineExceeded)
		}
		return time.Time{}, fmt.Errorf("%s: %w (this process's other transactions held it for %s)", what, ErrBusy, wait.Round(time.Millisecond))
	}
	if err := s.lock.lock(ctx, shared, deadline); err != nil {
		s.mu.Unlock()
		if errors.Is(err, ErrBusy) && ctxBound {
			// The request's own deadline, not the store's timeout, ended
			// the wait: its error, whoever held the lock.
			return time.Time{}, fmt.Errorf("%s: the request's deadline passed while it waited for the lock (%v): %w",
				what, err, context.DeadlineExceeded)
		}
		if errors.Is(err, ErrBusy) {
			return time.Time{}, fmt.Errorf("%s: %w (waited %s)", what, err, wait.Round(time.Millisecond))
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return time.Time{}, fmt.Errorf("%s: the request ended while it waited for the lock: %w", what, ctxErr)
		}
		return time.Time{}, err
	}
	return deadline, nil
}

// release lets go of what acquire took: the directory's lock and this
// process's turn. Called once per acquire that succeeded.
func (s *Store) release() {
	_ = s.lock.unlock()
	s.mu.Unlock()
}

// takeTurn takes this process's turn (s.mu) within wait, before ctx
// ends, and reports whether it did. A wait for a sync.Mutex cannot be
// abandoned, so a contended one is left to a helper goroutine that queues
// for the mutex, keeping its order and fairness, and hands the turn over,
// or lets it go at once if the waiter gave up meanwhile.
func (s *Store) takeTurn(ctx context.Context, wait time.Duration) bool {
	if s.mu.TryLock() {
		return true
	}
	const waiting, handed, gaveUp = 0, 1, 2
	var state atomic.Int32
	got := make(chan struct{})
	go func() {
		s.mu.Lock()
		if state.CompareAndSwap(waiting, handed) {
			close(got)
			return
		}
		s.mu.Unlock()
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-got:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	if state.CompareAndSwap(waiting, gaveUp) {
		return false
	}
	<-got // handed over as the wait ended
	return true
}

// Tx is one transaction. It is valid only inside the function it was
// passed to.
type Tx struct {
	tx      *bolt.Tx
	s       *Store
	pending []Record // audit records, written when fn returns without error
}

var (
	bucketBlocks        = []byte("blocks")
	bucketChallenges    = []byte("challenges")
	bucketFailures      = []byte("failures")
	bucketExecutions    = []byte("executions")
	bucketConfirmations = []byte("confirmations")
	bucketAudit         = []byte("audit")
	bucketMeta          = []byte("meta")
	bucketApprovals     = []byte("approvals")
	bucketPins          = []byte("pins")
	bucketServerNames   = []byte("server_names")
	buckets             = [][]byte{bucketApprovals, bucketBlocks, bucketChallenges, bucketFailures, bucketExecutions,
		bucketConfirmations, bucketAudit, bucketMeta, bucketPins, bucketServerNames}
)

// bucket returns a bucket Open created; its absence means the file is not
// an aqlguard database (or was damaged).
func (t *Tx) bucket(name []byte) (*bolt.Bucket, error) {
	b := t.tx.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("state database: bucket %s is missing", name)
	}
	return b, nil
}
