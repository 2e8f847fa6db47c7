package store

import (
	"context"
	"path/filepath"
	"time"
)

// State is aqlguard's durable state, whichever backend keeps it: this
// package's Store (bbolt and JSONL segments, one machine) or
// store/pgstate (PostgreSQL, replicas). docs/state.md is the design;
// store/statetest is the behaviour both must show.
//
// Commit is the only way state changes, and commits are serialised: one
// total order across every process (and replica) on the state, which is
// what keeps the audit chain linear and a single-use answer single-use.
// decide is shaped like a software-transactional-memory transaction
// (etcd's STM, FoundationDB's retry loop): a function of the view that
// returns what to write; it must change nothing outside its result, so a
// backend may run it again.
type State interface {
	// Commit runs decide on the state as it is and writes the changes it
	// returns, with their audit records, in one durable commit. It
	// returns the generation the state is at after it. If decide fails,
	// nothing is written.
	Commit(ctx context.Context, decide func(View) (Changes, error)) (uint64, error)
	// Load runs read on a consistent snapshot.
	Load(ctx context.Context, read func(View) error) error
	// Generation moves whenever any process commits a state change:
	// what was read at a generation holds while it stays.
	Generation(ctx context.Context) (uint64, error)
	// Watch calls changed with the current generation once it watches,
	// then each time the generation moves (another process's commit
	// included), until ctx ends; after a lost connection it reads the
	// generation again, so no change is missed. It returns ctx's error,
	// or why it could not start.
	Watch(ctx context.Context, changed func(gen uint64)) error
	// AuditReader reads the audit chain from a position, behind its
	// writers (audit/forward's Log); each reader is one goroutine's.
	AuditReader() AuditReader
	// Cursors keep the audit forwarders' cursors (audit/forward's
	// Cursors).
	Cursors() CursorStore
	// VerifyChain checks the whole audit chain and returns its length.
	VerifyChain(ctx context.Context) (uint64, error)
	// Export calls fn with every row of the state, as Changes in
	// batches, read in one consistent snapshot, and returns the head of
	// the audit chain that snapshot is at (Copy moves a state with it).
	Export(ctx context.Context, fn func(Changes) error) (Head, error)
	// QuestionTurn waits for the principal's turn to put a question to a
	// human, across every process on the state; release ends it.
	QuestionTurn(ctx context.Context, principal string) (release func(), err error)
	// AuditKey keys the digests that stand for secrets in records.
	AuditKey() []byte
	// StateID names the state (anchors, exports).
	StateID() string
	// CopyMark is the mark of an unfinished copy into this state (nil:
	// none); SetCopyMark sets it, or with nil clears it, durably. A
	// state that carries one is refused at open (*IncompleteCopyError)
	// unless the opener is the copy.
	CopyMark(ctx context.Context) (*CopyMark, error)
	SetCopyMark(ctx context.Context, m *CopyMark) error
	Close() error
}

// AppendRecords commits records that change no state (on bbolt, one
// append under the lock; on PostgreSQL, one short transaction).
func AppendRecords(ctx context.Context, st State, recs ...Record) error {
	_, err := st.Commit(ctx, func(View) (Changes, error) { return Changes{Records: recs}, nil })
	return err
}

// AuditReader reads the audit chain in order from a position (the zero
// position is its start). *LogReader is the bbolt backend's.
type AuditReader interface {
	Read(pos LogPosition, max int) ([]LogEntry, error)
	End() (LogPosition, *Record, error)
	Find(seq uint64) (LogPosition, error)
	Close() error
}

// CursorStore keeps how far each destination was delivered, and makes
// one process the forwarder of a destination. ForwardCursors is the
// bbolt backend's.
type CursorStore interface {
	Load(ctx context.Context, name string) (ForwardCursor, bool, error)
	Save(ctx context.Context, name string, c ForwardCursor) error
	Lease(ctx context.Context, name string) (release func(), err error)
	// Where names where a cursor is kept (a file, a row), for people.
	Where(name string) string
}

var (
	_ State       = (*Store)(nil)
	_ AuditReader = (*LogReader)(nil)
	_ CursorStore = ForwardCursors{}
)

// View is the state as one commit (or load) reads it: what a decision
// may rest on. *Tx is the bbolt backend's.
type View interface {
	// Block is the principal's hard block, or nil; Blocks lists every
	// block, by principal.
	Block(principal string) (*Block, error)
	Blocks() ([]Block, error)
	Challenge(id string) (*Challenge, error)
	Confirmation(token string) (*Confirmation, error)
	// Confirmations lists a principal's confirmations with a status
	// ("": any).
	Confirmations(principal, status string) ([]Confirmation, error)
	Approval(id string) (*Approval, error)
	// Approvals lists every approval, oldest first.
	Approvals() ([]Approval, error)
	// Failures is the principal's verification failure state (the
	// attempt budget); ok is false when there is none yet.
	Failures(principal string) (f Failures, ok bool, err error)
	Execution(id string) (*Execution, error)
	// Pin is a server's tool's pin, or nil; Pins lists a server's ("":
	// every server's), by server and tool.
	Pin(server, tool string) (*Pin, error)
	Pins(server string) ([]Pin, error)
	// ServerNames lists the names recorded of a principal's servers
	// ("": every principal's), by principal and server.
	ServerNames(principal string) ([]ServerNames, error)
	// PolicyVersion is the policy version the state's processes last
	// recorded ("" before any).
	PolicyVersion() (string, error)
	// AuditHead is the last record of the audit chain (Seq 0 and the
	// genesis hash for an empty chain).
	AuditHead() (Head, error)
}

var _ View = (*Tx)(nil)

// Head is a position in the audit chain: a record's sequence number and
// hash.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// PinKey names one pin.
type PinKey struct{ Server, Tool string }

// Changes are what one commit writes, all or nothing, with the audit
// records that describe them (in bbolt, written to the log first: a
// crash in between leaves a record of a change that did not happen,
// never a change without its record).
type Changes struct {
	Blocks []Block
	// Unblock lists principals whose block is lifted.
	Unblock       []string
	Challenges    []Challenge
	Confirmations []Confirmation
	Approvals     []Approval
	Executions    []Execution
	// Failures is verification failure state by principal.
	Failures map[string]Failures
	Pins     []Pin
	// Unpin lists pins forgotten.
	Unpin []PinKey
	// ServerNames are the names of servers' tools and prompts, recorded
	// (each replaces the record of its principal and server).
	ServerNames []ServerNames
	// PolicyVersion, when set, is recorded as the state's policy version.
	PolicyVersion string
	// PruneBefore, when set, prunes what expired or finished before it
	// (see Tx.Prune).
	PruneBefore time.Time
	Records     []Record
	// Then, when set, runs once the commit is written, with the
	// generation it left, before any later commit of this process
	// decides: memory that follows the state (a guard's counts, its
	// pauses) changes there, in commit order, and never for a commit
	// that was not written. (On bbolt with SyncAlways the fsync comes
	// after it: a failed fsync is Commit's error although Then ran. On
	// PostgreSQL a commit that shares its transaction with later ones
	// runs Then before that transaction's COMMIT, so that they decide
	// after it: a failed COMMIT is Commit's error although Then ran.)
	Then func(gen uint64)
}

// ChangesState reports whether c changes state beyond its records (and
// so raises the generation).
func (c *Changes) ChangesState() bool {
	return len(c.Blocks) > 0 || len(c.Unblock) > 0 || len(c.Challenges) > 0 || len(c.Confirmations) > 0 ||
		len(c.Approvals) > 0 || len(c.Executions) > 0 || len(c.Failures) > 0 || len(c.Pins) > 0 || len(c.Unpin) > 0 ||
		len(c.ServerNames) > 0 ||
		c.PolicyVersion != "" || !c.PruneBefore.IsZero()
}

// AllowedCallRecords reports whether c is only the records of an allowed
// call: no state change, and every record the decision "allow" or an
// outcome (what became of an allowed call) — an allowed call's two
// commits. A backend may make these durable lazily, as bbolt's grouped
// fsync does and PostgreSQL with synchronous_commit off for that
// transaction (docs/state.md, "Durability"): nothing is lost when
// aqlguard dies, a bounded window of them when the machine, or the
// database server or its host, crashes. Every other commit (blocks,
// challenges, spent answers, approvals, pins, a refusal's record, an
// operator's record, a checkpoint) is durable before Commit returns.
func (c *Changes) AllowedCallRecords() bool {
	if len(c.Records) == 0 || c.ChangesState() {
		return false
	}
	for i := range c.Records {
		r := &c.Records[i]
		switch RecordKind(r.Kind) {
		case KindOutcome:
		case KindDecision:
			if r.Decision != "allow" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// write puts c's state changes in tx (its records go with the commit).
func (c *Changes) write(tx *Tx) error {
	for _, b := range c.Blocks {
		if err := tx.PutBlock(b); err != nil {
			return err
		}
	}
	for _, p := range c.Unblock {
		if err := tx.DeleteBlock(p); err != nil {
			return err
		}
	}
	for _, ch := range c.Challenges {
		if err := tx.PutChallenge(ch); err != nil {
			return err
		}
	}
	for _, cf := range c.Confirmations {
		if err := tx.PutConfirmation(cf); err != nil {
			return err
		}
	}
	for _, a := range c.Approvals {
		if err := tx.PutApproval(a); err != nil {
			return err
		}
	}
	for _, e := range c.Executions {
		if err := tx.PutExecution(e); err != nil {
			return err
		}
	}
	for p, f := range c.Failures {
		if err := tx.PutFailures(p, f); err != nil {
			return err
		}
	}
	for _, p := range c.Pins {
		if err := tx.PutPin(p); err != nil {
			return err
		}
	}
	for _, k := range c.Unpin {
		if err := tx.DeletePin(k.Server, k.Tool); err != nil {
			return err
		}
	}
	for _, n := range c.ServerNames {
		if err := tx.PutServerNames(n); err != nil {
			return err
		}
	}
	if c.PolicyVersion != "" {
		if err := tx.putPolicyVersion(c.PolicyVersion); err != nil {
			return err
		}
	}
	if !c.PruneBefore.IsZero() {
		if _, err := tx.Prune(c.PruneBefore); err != nil {
			return err
		}
	}
	tx.pending = append(tx.pending, c.Records...)
	return nil
}

// Load runs read on a consistent snapshot of the state.
func (s *Store) Load(ctx context.Context, read func(View) error) error {
	return s.View(ctx, func(tx *Tx) error { return read(tx) })
}

// Commit runs decide on the state as it is and writes the changes it
// returns in one durable transaction, with their audit records. Changes
// with records alone take no database commit (nor its fsync): the records
// are appended under the lock decide read under, so they are in order
// with every state change. It returns the state generation the snapshot
// decide saw is current at, after the commit: what decide read and wrote
// is the state at that generation, and a caller may cache it for as long
// as the generation stays there. If decide fails nothing is written.
func (s *Store) Commit(ctx context.Context, decide func(View) (Changes, error)) (uint64, error) {
	var gen uint64
	err := s.run(ctx, txCommit, nil, decide, &gen)
	return gen, err
}

// WatchInterval is how often a bbolt Watch reads the generation.
const WatchInterval = 20 * time.Millisecond

// Watch calls changed with the generation, then each time it moves,
// reading it (one pread of the marker) every WatchInterval, until ctx
// ends.
func (s *Store) Watch(ctx context.Context, changed func(gen uint64)) error {
	last, err := s.gen.read()
	if err != nil {
		return err
	}
	changed(last)
	tick := time.NewTicker(WatchInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		g, err := s.gen.read()
		if err != nil || g == last {
			continue // an unreadable marker is read again next tick
		}
		last = g
		changed(g)
	}
}

// AuditReader reads this store's audit log (a LogReader).
func (s *Store) AuditReader() AuditReader { return s.LogReader() }

// Cursors keeps the forwarders' cursors in the state directory.
func (s *Store) Cursors() CursorStore { return ForwardCursors{Dir: filepath.Dir(s.path)} }

// VerifyChain checks the whole audit chain (Tx.VerifyChain).
func (s *Store) VerifyChain(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.View(ctx, func(tx *Tx) (err error) { n, err = tx.VerifyChain(); return })
	return n, err
}

var keyPolicyVersion = []byte("policy_version")

// PolicyVersion is the policy version last recorded.
func (t *Tx) PolicyVersion() (string, error) {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return "", err
	}
	return string(b.Get(keyPolicyVersion)), nil
}

func (t *Tx) putPolicyVersion(v string) error {
	b, err := t.bucket(bucketMeta)
	if err != nil {
		return err
	}
	return b.Put(keyPolicyVersion, []byte(v))
}

// AuditHead is the audit log's last record, as its files say.
func (t *Tx) AuditHead() (Head, error) {
	h, err := t.s.log.lastRecord()
	return Head(h), err
}
