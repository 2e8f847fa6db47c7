package store

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The fast path lives here, not in the guard: what every call's decision
// reads (the blocks, the approvals, the pins, the policy version) is kept
// as it was at one generation. A Commit reads the generation under the
// lock (one pread) and, while it is the snapshot's, decides on the
// snapshot without opening the database; an allowed call is then one
// pread and one append to the log. A commit that changes state leaves
// the snapshot at the generation it raised to, with its own changes, so
// this process never re-reads what it wrote; another process's commit
// moves the generation and the next commit reads afresh.

// snapshot is the state's often-read part at generation gen. Each kind
// is read on first use (nil until then) and never changed after: the
// next generation's is a copy.
type snapshot struct {
	gen uint64
	// file is the database file as of the snapshot: a snapshot is good
	// only while both the generation and the file are what they were.
	file      fileStamp
	mu        sync.Mutex
	blocks    map[string]Block
	approvals []Approval // as Tx.Approvals: oldest first
	pins      map[string]Pin
	policy    *string
}

// snapshotAt is the kept snapshot if it is at gen and the database file
// is still as it was, else a new one.
func (s *Store) snapshotAt(gen uint64, file fileStamp) *snapshot {
	fresh := func() *snapshot { return &snapshot{gen: gen, file: file} }
	if sn := s.snap.At(gen, fresh); sn.file == file {
		return sn
	}
	return fresh()
}

// fileStamp is what the database file's metadata says of its content:
// every write transaction of any process changes its modification time
// (bbolt writes the file). The generation file says that the state
// changed without opening the database, but an agent that can write the
// state directory can rewind it to a count a kept snapshot was read at;
// the database file's stamp, one stat, then still tells the snapshot
// from the state.
type fileStamp struct {
	size  int64
	mtime int64
}

// stamp reads the database file's stamp.
func (s *Store) stamp() (fileStamp, error) {
	fi, err := os.Stat(s.path)
	if err != nil {
		return fileStamp{}, fmt.Errorf("state database %s: %w", s.path, err)
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano()}, nil
}

// install keeps sn (the last kept wins: see Kept).
func (s *Store) install(sn *snapshot) { s.snap.Keep(sn.gen, sn) }

// next is the snapshot at gen: sn with c applied. A prune leaves the
// approvals to be read again.
func (sn *snapshot) next(gen uint64, file fileStamp, c *Changes) *snapshot {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	n := &snapshot{gen: gen, file: file, policy: sn.policy}
	if sn.blocks != nil {
		n.blocks = maps.Clone(sn.blocks)
		for _, b := range c.Blocks {
			n.blocks[b.Principal] = b
		}
		for _, p := range c.Unblock {
			delete(n.blocks, p)
		}
	}
	if sn.approvals != nil && c.PruneBefore.IsZero() {
		byID := map[string]Approval{}
		for _, a := range sn.approvals {
			byID[a.ID] = a
		}
		for _, a := range c.Approvals {
			byID[a.ID] = a
		}
		n.approvals = sortedApprovals(slices.Collect(maps.Values(byID)))
	}
	if sn.pins != nil {
		n.pins = maps.Clone(sn.pins)
		for _, p := range c.Pins {
			n.pins[pinKey(p.Server, p.Tool)] = p
		}
		for _, k := range c.Unpin {
			delete(n.pins, pinKey(k.Server, k.Tool))
		}
	}
	if c.PolicyVersion != "" {
		pv := c.PolicyVersion
		n.policy = &pv
	}
	return n
}

func sortedApprovals(out []Approval) []Approval {
	if out == nil {
		out = []Approval{}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// commitView is the View a Commit decides on: the snapshot for what it
// keeps, a read-only transaction, opened on first need, for the rest.
type commitView struct {
	s   *Store
	gen uint64
	// snap is the snapshot at gen, found (one stat of the database file)
	// when decide first reads what it keeps: a commit of records alone,
	// such as a call's outcome, reads nothing and stats nothing.
	snap *snapshot
	tx   *Tx
	// The database, opened (open) on first need, with the transaction's
	// lock deadline; a commit opens it only when decide reads what the
	// snapshot does not keep. Every mode of run opens it through here.
	db              *bolt.DB
	deadline, start time.Time
	readOnly        bool
}

// open opens the database for the transaction, once.
func (v *commitView) open() error {
	if v.db != nil {
		return nil
	}
	db, err := v.s.openDB(v.deadline, v.readOnly)
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("state database %s: %w (waited %s)", v.s.path, ErrBusy, v.deadline.Sub(v.start).Round(time.Millisecond))
		}
		return err
	}
	v.db = db
	return nil
}

// snapshot is the snapshot decide reads, found on first use.
func (v *commitView) snapshot() (*snapshot, error) {
	if v.snap == nil {
		file, err := v.s.stamp()
		if err != nil {
			return nil, err
		}
		v.snap = v.s.snapshotAt(v.gen, file)
	}
	return v.snap, nil
}

var _ View = (*commitView)(nil)

// read is the read-only transaction, begun on first use.
func (v *commitView) read() (*Tx, error) {
	if v.tx == nil {
		if err := v.open(); err != nil {
			return nil, err
		}
		btx, err := v.db.Begin(false)
		if err != nil {
			return nil, err
		}
		v.tx = &Tx{tx: btx, s: v.s}
	}
	return v.tx, nil
}

// closeRead ends the read-only transaction, if one was begun.
func (v *commitView) closeRead() {
	if v.tx != nil {
		_ = v.tx.tx.Rollback()
		v.tx = nil
	}
}

// fill reads a kind into the snapshot on first use. sn.mu is held.
func (v *commitView) fill(missing bool, read func(tx *Tx) error) error {
	if !missing {
		return nil
	}
	tx, err := v.read()
	if err != nil {
		return err
	}
	return read(tx)
}

func (v *commitView) blocks() (map[string]Block, error) {
	sn, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	err = v.fill(sn.blocks == nil, func(tx *Tx) error {
		list, err := tx.Blocks()
		if err != nil {
			return err
		}
		m := make(map[string]Block, len(list))
		for _, b := range list {
			m[b.Principal] = b
		}
		sn.blocks = m
		return nil
	})
	return sn.blocks, err
}

func (v *commitView) Block(principal string) (*Block, error) {
	m, err := v.blocks()
	if err != nil {
		return nil, err
	}
	b, ok := m[principal]
	if !ok {
		return nil, nil
	}
	found := b // (on the heap only when there is one)
	return &found, nil
}

func (v *commitView) Blocks() ([]Block, error) {
	m, err := v.blocks()
	if err != nil {
		return nil, err
	}
	out := slices.Collect(maps.Values(m))
	sort.Slice(out, func(i, j int) bool { return out[i].Principal < out[j].Principal })
	return out, nil
}

func (v *commitView) approvals() ([]Approval, error) {
	sn, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	err = v.fill(sn.approvals == nil, func(tx *Tx) error {
		list, err := tx.Approvals()
		if err == nil {
			sn.approvals = sortedApprovals(list)
		}
		return err
	})
	return sn.approvals, err
}

func (v *commitView) Approval(id string) (*Approval, error) {
	list, err := v.approvals()
	if err != nil {
		return nil, err
	}
	for _, a := range list {
		if a.ID == id {
			return &a, nil
		}
	}
	return nil, nil
}

func (v *commitView) Approvals() ([]Approval, error) {
	list, err := v.approvals()
	return slices.Clone(list), err
}

func (v *commitView) pins() (map[string]Pin, error) {
	sn, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	err = v.fill(sn.pins == nil, func(tx *Tx) error {
		list, err := tx.Pins("")
		if err != nil {
			return err
		}
		m := make(map[string]Pin, len(list))
		for _, p := range list {
			m[pinKey(p.Server, p.Tool)] = p
		}
		sn.pins = m
		return nil
	})
	return sn.pins, err
}

func (v *commitView) Pin(server, tool string) (*Pin, error) {
	m, err := v.pins()
	if err != nil {
		return nil, err
	}
	p, ok := m[pinKey(server, tool)]
	if !ok {
		return nil, nil
	}
	p = p.Clone()
	return &p, nil
}

func (v *commitView) Pins(server string) ([]Pin, error) {
	m, err := v.pins()
	if err != nil {
		return nil, err
	}
	var out []Pin
	for _, p := range m {
		if server == "" || p.Server == server {
			out = append(out, p.Clone())
		}
	}
	sort.Slice(out, func(i, j int) bool { return pinKey(out[i].Server, out[i].Tool) < pinKey(out[j].Server, out[j].Tool) })
	return out, nil
}

func (v *commitView) PolicyVersion() (string, error) {
	sn, err := v.snapshot()
	if err != nil {
		return "", err
	}
	sn.mu.Lock()
	defer sn.mu.Unlock()
	err = v.fill(sn.policy == nil, func(tx *Tx) error {
		pv, err := tx.PolicyVersion()
		if err == nil {
			sn.policy = &pv
		}
		return err
	})
	if err != nil {
		return "", err
	}
	return *sn.policy, nil
}

func (v *commitView) AuditHead() (Head, error) {
	h, err := v.s.log.lastRecord()
	return Head(h), err
}

func (v *commitView) Challenge(id string) (*Challenge, error) {
	tx, err := v.read()
	if err != nil {
		return nil, err
	}
	return tx.Challenge(id)
}

func (v *commitView) Confirmation(token string) (*Confirmation, error) {
	tx, err := v.read()
	if err != nil {
		return nil, err
	}
	return tx.Confirmation(token)
}

func (v *commitView) Confirmations(principal, status string) ([]Confirmation, error) {
	tx, err := v.read()
	if err != nil {
		return nil, err
	}
	return tx.Confirmations(principal, status)
}

func (v *commitView) Failures(principal string) (Failures, bool, error) {
	tx, err := v.read()
	if err != nil {
		return Failures{}, false, err
	}
	return tx.Failures(principal)
}

func (v *commitView) ServerNames(principal string) ([]ServerNames, error) {
	tx, err := v.read()
	if err != nil {
		return nil, err
	}
	return tx.ServerNames(principal)
}

func (v *commitView) Execution(id string) (*Execution, error) {
	tx, err := v.read()
	if err != nil {
		return nil, err
	}
	return tx.Execution(id)
}
