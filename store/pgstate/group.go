package pgstate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/store"
)

// Group commit. Every commit of every replica queues on the one row of
// state_head, and each used to hold it for its own round trips and its
// own WAL flush: one replica committed at most 1/(two round trips + a
// flush) times a second, however many calls waited, and three replicas
// no more than one. Now the commits that wait in one process at the
// moment a transaction starts are one transaction: one lock of the head,
// each decide run in turn on the state the ones before it left (their
// writes sent first whenever a later decide reads through the
// transaction), their records chained one after the other, one move of
// the head, one COMMIT and one flush. No Commit returns before that
// COMMIT: a decision is still durable before its call is forwarded.
//
// Each decide sees every earlier member's writes and runs after every
// earlier member's Then, as one commit after another would. A member
// whose decide fails writes nothing and leaves the others be; a
// statement that fails (a conflict, a lost connection) or a COMMIT that
// fails fails every member that wrote or read in the transaction, and
// nothing of theirs is written (as for a commit alone) — but the Then of
// those before the last has run by then, with its memory ahead of the
// state, as bbolt's Then runs before a failed fsync (store.Changes).

// maxGroup bounds the commits in one transaction: the head's lock is
// held for all of them.
const maxGroup = 128

// groupStats count what the groups did.
type groupStats struct {
	// groups and commits are the transactions and the commits in them.
	groups, commits atomic.Int64
	// waitNs is the time from BEGIN to holding the head's lock (one
	// round trip, and the wait for other replicas), heldNs the time
	// from holding it to the end of COMMIT.
	waitNs, heldNs atomic.Int64
}

// pending is one Commit waiting for, or in, a group.
type pending struct {
	ctx    context.Context
	decide func(store.View) (store.Changes, error)
	// lead is closed when this waiter is to run the next group.
	lead chan struct{}
	// done is closed when gen and err are the commit's result.
	done chan struct{}
	gen  uint64
	err  error
	// taken and promoted are under State.gmu: in a group; told to lead.
	taken, promoted bool
}

// Commit locks the head row (every commit of every replica queues
// there), runs decide on the state as it is, and writes what it returns
// in the same transaction: each row decide read as a compare-and-set on
// the version it read, the audit records chained after the head, the
// head and the generation, and a notification to the other replicas
// when state changed. It returns the generation after the commit.
//
// Concurrent commits of this process share one transaction (see above).
// A commit alone is two round trips when decide reads only what the
// snapshot holds: BEGIN with the head's lock, then the writes with
// COMMIT.
func (s *State) Commit(ctx context.Context, decide func(store.View) (store.Changes, error)) (uint64, error) {
	p := &pending{ctx: ctx, decide: decide, lead: make(chan struct{}), done: make(chan struct{})}
	s.gmu.Lock()
	s.waiting = append(s.waiting, p)
	first := !s.leading
	s.leading = true
	s.gmu.Unlock()
	if first {
		s.lead()
		<-p.done
		return p.gen, p.err
	}
	select {
	case <-p.lead:
		s.lead()
	case <-p.done:
	case <-ctx.Done():
		s.gmu.Lock()
		if !p.taken {
			for i, w := range s.waiting {
				if w == p {
					s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
					break
				}
			}
			if p.promoted {
				s.handOver()
			}
			s.gmu.Unlock()
			return 0, s.wrap("committing", ctx.Err())
		}
		s.gmu.Unlock()
	}
	<-p.done // in a group: bounded by the state's timeout
	return p.gen, p.err
}

// lead runs one group of the waiting commits (the leader's own among
// them: it is first in line), then hands the lead on.
func (s *State) lead() {
	s.gmu.Lock()
	n := min(len(s.waiting), maxGroup)
	group := make([]*pending, n)
	copy(group, s.waiting)
	s.waiting = append(s.waiting[:0], s.waiting[n:]...)
	for _, p := range group {
		p.taken = true
	}
	s.gmu.Unlock()
	s.runGroup(group)
	for _, p := range group {
		close(p.done)
	}
	s.gmu.Lock()
	s.handOver()
	s.gmu.Unlock()
}

// handOver makes the first waiter the next leader, or ends the lead.
// Under gmu.
func (s *State) handOver() {
	if len(s.waiting) == 0 {
		s.leading = false
		return
	}
	next := s.waiting[0]
	if !next.promoted {
		next.promoted = true
		close(next.lead)
	}
}

// groupTx is a group's transaction: what its members wrote and has not
// been sent yet goes before anything read through it.
type groupTx struct {
	ctx     context.Context
	s       *State
	conn    *pgx.Conn
	pending []stmt
	failed  error
}

// flush sends the pending writes (without COMMIT).
func (g *groupTx) flush() error {
	if g.failed != nil {
		return g.failed
	}
	if len(g.pending) == 0 {
		return nil
	}
	err := g.s.send(g.ctx, g.conn, g.pending)
	g.pending = nil
	g.failed = err
	return err
}

func (g *groupTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := g.flush(); err != nil {
		return nil, err
	}
	return g.conn.Query(ctx, sql, args...)
}

func (g *groupTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := g.flush(); err != nil {
		return errRow{err}
	}
	return g.conn.QueryRow(ctx, sql, args...)
}

// errRow is a row that is an error.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// broken is why the transaction can take nothing more (nil: it can).
func (g *groupTx) broken() error {
	if g.failed != nil {
		return g.failed
	}
	if g.conn.PgConn().TxStatus() != 'T' {
		return errors.New("the transaction failed")
	}
	return nil
}

// runGroup commits group in one transaction, setting each member's
// result.
func (s *State) runGroup(group []*pending) {
	// The transaction is the group's, not one caller's: one that gives
	// up before its decide runs is skipped; after, it has its result.
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	fail := func(ps []*pending, err error) {
		for _, p := range ps {
			if p.err == nil {
				p.gen, p.err = 0, err
			}
		}
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		fail(group, s.wrap("committing", err))
		return
	}
	// A connection left inside a transaction (a failure below) is
	// closed by the pool, not reused.
	defer conn.Release()
	s.stats.groups.Add(1)
	s.stats.commits.Add(int64(len(group)))
	asked := time.Now()
	begin := &pgx.Batch{}
	begin.Queue(`BEGIN`)
	begin.Queue(`SELECT seq, hash, generation FROM ` + s.t.head + ` WHERE id = 1 FOR UPDATE`)
	br := conn.SendBatch(ctx, begin)
	_, err = br.Exec()
	var seq, gen64 int64
	var hash string
	if err == nil {
		err = br.QueryRow().Scan(&seq, &hash, &gen64)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fail(group, s.wrap("committing", err))
		return
	}
	locked := time.Now()
	s.stats.waitNs.Add(int64(locked.Sub(asked)))
	defer func() { s.stats.heldNs.Add(int64(time.Since(locked))) }()
	tx := &groupTx{ctx: ctx, s: s, conn: conn.Conn()}
	rollback := func() { _, _ = tx.conn.Exec(context.Background(), `ROLLBACK`) }
	head, gen := store.Head{Seq: uint64(seq), Hash: hash}, uint64(gen64)
	sn := s.snapshotAt(gen)
	// bound are the members whose result is the transaction's: they
	// wrote, or read what earlier members wrote.
	var bound []*pending
	// last is the member before the next: its state change is applied
	// to the snapshot and its Then run before the next decides.
	var last struct {
		c   *store.Changes
		w   *writer
		gen uint64
	}
	settle := func() error {
		if last.c == nil {
			return nil
		}
		if last.w != nil && last.c.ChangesState() {
			if err := tx.flush(); err != nil {
				return err
			}
			sn = sn.next(last.gen, last.c, last.w.versions, s.t)
		}
		if last.c.Then != nil {
			last.c.Then(last.gen)
		}
		last.c, last.w = nil, nil
		return nil
	}
	wrote, changed := false, false
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.err = s.wrap("committing", err)
			continue
		}
		if err := settle(); err != nil {
			fail(group, err)
			rollback()
			return
		}
		v := &view{ctx: ctx, q: tx, s: s, snap: sn, head: head, read: map[string]int64{}}
		c, err := p.decide(v)
		if berr := tx.broken(); berr != nil {
			// A read failed in the transaction: it is over, for the
			// members before this one too.
			if err == nil {
				err = s.wrap("committing", berr)
			}
			p.err = err
			fail(group, err)
			rollback()
			return
		}
		if err != nil {
			p.err = err
			continue
		}
		bound = append(bound, p)
		p.gen = gen
		last.c, last.gen = &c, gen
		if !c.ChangesState() && len(c.Records) == 0 {
			continue // read only: its result is the group's still
		}
		w := newWriter(v)
		if err := w.changes(&c); err != nil {
			p.err = err
			bound, last.c = bound[:len(bound)-1], nil
			continue
		}
		chain := store.NewChainer(head)
		var cerr error
		for i := range c.Records {
			r := c.Records[i]
			line, err := chain.Next(&r)
			if err != nil {
				cerr = err
				break
			}
			w.exec(`INSERT INTO `+s.t.records+` (seq, prev, hash, time, raw) VALUES ($1, $2, $3, $4, $5)`,
				int64(r.Seq), r.Prev, r.Hash, r.Time, string(line))
		}
		if cerr != nil {
			p.err = cerr
			bound, last.c = bound[:len(bound)-1], nil
			continue
		}
		tx.pending = append(tx.pending, w.stmts...)
		head, wrote = chain.Head(), true
		if c.ChangesState() {
			gen++
			changed = true
		}
		p.gen, last.gen, last.w = gen, gen, w
	}
	if !wrote {
		rollback()
		_ = settle() // Thens alone: nothing was written, nothing to send
		s.install(sn)
		return
	}
	tx.pending = append(tx.pending, stmt{`UPDATE ` + s.t.head + ` SET seq = $1, hash = $2, generation = $3 WHERE id = 1`,
		[]any{int64(head.Seq), head.Hash, int64(gen)}, execCheck})
	if changed {
		// Delivered at COMMIT, to every replica listening.
		tx.pending = append(tx.pending, stmt{`SELECT pg_notify($1, $2)`, []any{s.channel, strconv.FormatUint(gen, 10)}, execCheck})
	}
	// COMMIT in the same batch: after a failed statement PostgreSQL
	// answers it with ROLLBACK, which the tag says.
	tx.pending = append(tx.pending, stmt{`COMMIT`, nil, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("the transaction ended in %s", tag.String())
		}
		return err
	}})
	if err := tx.flush(); err != nil {
		rollback()
		fail(bound, err)
		return
	}
	// The last member's state change and Then, now that it is written.
	if last.c != nil && last.w != nil && last.c.ChangesState() {
		sn = sn.next(last.gen, last.c, last.w.versions, s.t)
	}
	s.install(sn)
	if last.c != nil && last.c.Then != nil {
		last.c.Then(last.gen)
	}
}
