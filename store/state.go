package store

import (
	"context"
	"time"
)

// The guard's side of the store is three verbs, so that a distributed
// backend could take bbolt's place without the guard changing: Load reads
// a consistent snapshot through View, Commit reads a snapshot and writes
// the Changes decided from it in one durable transaction, and Append
// writes audit records that change no state (AppendIf: only while the
// state's generation stands). Generation is the cheap signal that any
// process changed state since.
//
// Commit's decide is shaped like a software-transactional-memory
// transaction (etcd's STM, FoundationDB's retry loop): a function of the
// snapshot that returns what to write. bbolt runs it once, under the
// state directory's lock; a backend with optimistic transactions may run
// it again after a conflict, so it must not change anything outside
// itself except the results it hands back.

// View is the state as one transaction reads it. *Tx is one.
type View interface {
	// Block is the principal's hard block, or nil.
	Block(principal string) (*Block, error)
	Challenge(id string) (*Challenge, error)
	Confirmation(token string) (*Confirmation, error)
	// Confirmations lists a principal's confirmations with a status
	// ("": any).
	Confirmations(principal, status string) ([]Confirmation, error)
	Approval(id string) (*Approval, error)
	Approvals() ([]Approval, error)
	// Failures is the principal's verification failure state; ok is false
	// when there is none yet.
	Failures(principal string) (f Failures, ok bool, err error)
	Execution(id string) (*Execution, error)
}

var _ View = (*Tx)(nil)

// Changes are what one commit writes, all or nothing, with the audit
// records that describe them (written to the log first: a crash in
// between leaves a record of a change that did not happen, never a
// change without its record).
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
	// PruneBefore, when set, prunes what expired or finished before it
	// (see Tx.Prune).
	PruneBefore time.Time
	Records     []Record
}

// changesState reports whether c changes state beyond its records.
func (c *Changes) changesState() bool {
	return len(c.Blocks) > 0 || len(c.Unblock) > 0 || len(c.Challenges) > 0 || len(c.Confirmations) > 0 ||
		len(c.Approvals) > 0 || len(c.Executions) > 0 || len(c.Failures) > 0 || !c.PruneBefore.IsZero()
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
