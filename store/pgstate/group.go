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
	// alone counts the commits made in one round trip (alone), moved
	// the guesses another commit had moved the head under.
	alone, moved atomic.Int64
}

// guess is where this process left the head with its last commit, and
// whether it found the head where it had left it before that (no other
// writer between): then a commit alone guesses nobody wrote since.
type guess struct {
	head    store.Head
	gen     uint64
	set, ok bool
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
// A commit alone, when nobody else moved the head since this process's
// last commit (guess) and decide reads only what the snapshot holds, is
// one round trip: BEGIN, the head's conditional move, the writes and
// COMMIT in one batch; otherwise two: BEGIN with the head's lock, then
// the writes with COMMIT.
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

// lead runs one group of the waiting commits, then hands the lead on.
func (s *State) lead() {
	group := s.runGroup()
	for _, p := range group {
		close(p.done)
	}
	s.gmu.Lock()
	s.handOver()
	s.gmu.Unlock()
}

// take moves up to n waiting commits into a group (the leader's own
// among them: it is first in line).
func (s *State) take(n int) []*pending {
	s.gmu.Lock()
	defer s.gmu.Unlock()
	n = min(len(s.waiting), n)
	group := make([]*pending, n)
	copy(group, s.waiting)
	s.waiting = append(s.waiting[:0], s.waiting[n:]...)
	for _, p := range group {
		p.taken = true
	}
	return group
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

// runGroup commits the waiting commits in one transaction, setting each
// one's result, and returns them. It takes them once it holds the
// head's lock, so that the commits that queued while another replica
// held it go in this transaction too.
func (s *State) runGroup() []*pending {
	// The transaction is the group's, not one caller's: one that gives
	// up before its decide runs is skipped; after, it has its result.
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	var group []*pending
	fail := func(ps []*pending, err error) {
		for _, p := range ps {
			if p.err == nil {
				p.gen, p.err = 0, err
			}
		}
	}
	failAll := func(err error) []*pending {
		group = append(group, s.take(maxGroup-len(group))...)
		fail(group, s.wrap("committing", err))
		return group
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return failAll(err)
	}
	// A connection left inside a transaction (a failure below) is
	// closed by the pool, not reused.
	defer conn.Release()
	if s.guess.ok {
		s.gmu.Lock()
		one := len(s.waiting) == 1
		s.gmu.Unlock()
		if one {
			group = s.take(1)
			if group[0].ctx.Err() == nil && s.alone(ctx, conn.Conn(), group[0]) {
				s.stats.alone.Add(1)
				return group
			}
		}
	}
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
		return failAll(err)
	}
	if s.locked != nil {
		s.locked()
	}
	group = append(group, s.take(maxGroup-len(group))...)
	s.stats.groups.Add(1)
	s.stats.commits.Add(int64(len(group)))
	locked := time.Now()
	s.stats.waitNs.Add(int64(locked.Sub(asked)))
	defer func() { s.stats.heldNs.Add(int64(time.Since(locked))) }()
	tx := &groupTx{ctx: ctx, s: s, conn: conn.Conn()}
	rollback := func() { _, _ = tx.conn.Exec(context.Background(), `ROLLBACK`) }
	head, gen := store.Head{Seq: uint64(seq), Hash: hash}, uint64(gen64)
	// The next commit alone may guess the head if nobody else moved it
	// since this process's last commit.
	found := s.guess.set && s.guess.head == head && s.guess.gen == gen
	s.guess.ok = false
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
	// lazy: every member that writes is a call's records alone.
	wrote, changed, lazy := false, false, true
	for _, p := range group {
		if err := p.ctx.Err(); err != nil {
			p.err = s.wrap("committing", err)
			continue
		}
		if err := settle(); err != nil {
			fail(group, err)
			rollback()
			return group
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
			return group
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
		w, end, err := s.queue(v, &c, head)
		if err != nil {
			p.err = err
			bound, last.c = bound[:len(bound)-1], nil
			continue
		}
		tx.pending = append(tx.pending, w.stmts...)
		head, wrote = end, true
		lazy = lazy && c.AllowedCallRecords()
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
		s.guess = guess{head: head, gen: gen, set: true, ok: found}
		return group
	}
	tx.pending = append(tx.pending, s.moveHead(head, gen, changed, lazy, nil)...)
	if err := tx.flush(); err != nil {
		rollback()
		fail(bound, err)
		return group
	}
	// The last member's state change and Then, now that it is written.
	if last.c != nil && last.w != nil && last.c.ChangesState() {
		sn = sn.next(last.gen, last.c, last.w.versions, s.t)
	}
	s.install(sn)
	s.guess = guess{head: head, gen: gen, set: true, ok: found}
	if last.c != nil && last.c.Then != nil {
		last.c.Then(last.gen)
	}
	return group
}

// errNeedsLock is what a view outside a transaction answers a read that
// needs one.
var errNeedsLock = errors.New("this read needs the head's lock")

// noTx is a queryer outside any transaction: a decide that reads
// through it runs again under the lock.
type noTx struct{ used bool }

func (q *noTx) Query(context.Context, string, ...any) (pgx.Rows, error) {
	q.used = true
	return nil, errNeedsLock
}

func (q *noTx) QueryRow(context.Context, string, ...any) pgx.Row {
	q.used = true
	return errRow{errNeedsLock}
}

// errHeadMoved is a guessed head that another commit moved.
var errHeadMoved = errors.New("the head moved")

// alone commits p in one round trip when its guess holds: decide runs
// on the snapshot at the head this process left, and one batch moves
// the head only if it is still there (the statement takes the row's
// lock, and finds it moved if another commit came between), then writes
// and commits. It reports whether p has its result; false means nothing
// was written and p is to be committed under the lock (decide read what
// the snapshot does not hold, failed, wrote nothing, or the head moved).
// A decide is pure: running it again is what store.State allows.
func (s *State) alone(ctx context.Context, conn *pgx.Conn, p *pending) bool {
	g := s.guess
	s.guess.ok = false // set again by the commit that ends this
	sn := s.snapshotAt(g.gen)
	q := &noTx{}
	v := &view{ctx: ctx, q: q, s: s, snap: sn, head: g.head, read: map[string]int64{}}
	c, err := p.decide(v)
	if q.used || err != nil || !c.ChangesState() && len(c.Records) == 0 {
		return false
	}
	w, end, err := s.queue(v, &c, g.head)
	if err != nil {
		return false
	}
	gen, changed := g.gen, c.ChangesState()
	if changed {
		gen++
	}
	stmts := append([]stmt{{`BEGIN`, nil, execCheck}}, s.moveHead(end, gen, false, false, &g)...)
	stmts = append(stmts, w.stmts...)
	// The notification, the commit's durability and COMMIT.
	stmts = append(stmts, s.moveHead(end, gen, changed, c.AllowedCallRecords(), nil)[1:]...)
	err = s.send(ctx, conn, stmts)
	if err != nil {
		_, _ = conn.Exec(context.Background(), `ROLLBACK`)
		if errors.Is(err, errHeadMoved) {
			s.stats.moved.Add(1)
			return false
		}
		p.gen, p.err = 0, err
		return true
	}
	if changed {
		sn = sn.next(gen, &c, w.versions, s.t)
	}
	s.install(sn)
	s.guess = guess{head: end, gen: gen, set: true, ok: true}
	p.gen = gen
	if c.Then != nil {
		c.Then(gen)
	}
	return true
}

// queue is a member's writes: its changes and its records chained after
// head, and the head after them. Nothing is queued anywhere on an error.
func (s *State) queue(v *view, c *store.Changes, head store.Head) (*writer, store.Head, error) {
	w := newWriter(v)
	if err := w.changes(c); err != nil {
		return nil, head, err
	}
	chain := store.NewChainer(head)
	for i := range c.Records {
		r := c.Records[i]
		line, err := chain.Next(&r)
		if err != nil {
			return nil, head, err
		}
		w.exec(`INSERT INTO `+s.t.records+` (seq, prev, hash, time, raw) VALUES ($1, $2, $3, $4, $5)`,
			int64(r.Seq), r.Prev, r.Hash, r.Time, string(line))
	}
	return w, chain.Head(), nil
}

// moveHead ends a transaction: the head moved to head and gen (only if
// it is still at from, when from is set), the other replicas notified
// when state changed, and COMMIT; lazy commits without waiting for the
// WAL flush (store.Changes.AllowedCallRecords, docs/state.md "Durability").
func (s *State) moveHead(head store.Head, gen uint64, changed, lazy bool, from *guess) []stmt {
	out := []stmt{{`UPDATE ` + s.t.head + ` SET seq = $1, hash = $2, generation = $3 WHERE id = 1`,
		[]any{int64(head.Seq), head.Hash, int64(gen)}, execCheck}}
	if from != nil {
		// No row back (the head moved) fails the transaction in this
		// statement: nothing after it runs.
		out[0] = stmt{`WITH u AS (UPDATE ` + s.t.head + ` SET seq = $1, hash = $2, generation = $3
			WHERE id = 1 AND seq = $4 AND hash = $5 AND generation = $6 RETURNING 1)
			SELECT coalesce((SELECT 1 FROM u), ` + s.t.conflict + `('the head'))`,
			[]any{int64(head.Seq), head.Hash, int64(gen), int64(from.head.Seq), from.head.Hash, int64(from.gen)},
			func(br pgx.BatchResults) error {
				var one int64
				if err := br.QueryRow().Scan(&one); err != nil {
					if errors.Is(conflictOr(err), ErrConflict) {
						return errHeadMoved
					}
					return err
				}
				return nil
			}}
		return out
	}
	if changed {
		// Delivered at COMMIT, to every replica listening.
		out = append(out, stmt{`SELECT pg_notify($1, $2)`, []any{s.channel, strconv.FormatUint(gen, 10)}, execCheck})
	}
	if lazy {
		// This transaction's alone: the WAL writer flushes it within
		// three wal_writer_delay, and any later synchronous commit
		// flushes it first (the WAL is one sequence), so PostgreSQL or
		// its host crashing loses a suffix of these records, never a
		// link of the chain before a block or an answer.
		out = append(out, stmt{`SET LOCAL synchronous_commit = off`, nil, execCheck})
	}
	// COMMIT in the same batch: after a failed statement PostgreSQL
	// answers it with ROLLBACK, which the tag says.
	return append(out, stmt{`COMMIT`, nil, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err == nil && tag.String() != "COMMIT" {
			err = fmt.Errorf("the transaction ended in %s", tag.String())
		}
		return err
	}})
}
