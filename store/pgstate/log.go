package pgstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/store"
)

// The audit chain's position in a database is the sequence number of
// the last record read, in LogPosition.Offset (Segment 1; the zero
// position is the start): audit/forward keeps it in its cursors as it
// keeps a file offset.

// logSegment is the one "segment" a database's chain is.
const logSegment = 1

type auditReader struct{ s *State }

// AuditReader reads the chain from the database, behind its writers: a
// record is visible once the commit that appended it is.
func (s *State) AuditReader() store.AuditReader { return auditReader{s} }

func (r auditReader) Close() error { return nil }

// Read returns up to max records after pos, in order.
func (r auditReader) Read(pos store.LogPosition, max int) ([]store.LogEntry, error) {
	ctx, cancel := r.s.bounded(context.Background())
	defer cancel()
	rows, err := r.s.pool.Query(ctx, `SELECT seq, raw FROM `+r.s.t.records+` WHERE seq > $1 ORDER BY seq LIMIT $2`, pos.Offset, max)
	if err != nil {
		return nil, r.s.wrap("reading the audit chain", err)
	}
	defer rows.Close()
	var out []store.LogEntry
	for rows.Next() {
		var seq int64
		var raw string
		if err := rows.Scan(&seq, &raw); err != nil {
			return out, r.s.wrap("reading the audit chain", err)
		}
		e := store.LogEntry{Raw: []byte(raw), Next: store.LogPosition{Segment: logSegment, Offset: seq}}
		if err := json.Unmarshal(e.Raw, &e.Record); err != nil {
			return out, fmt.Errorf("%w: record %d does not decode: %v", store.ErrChainBroken, seq, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return out, r.s.wrap("reading the audit chain", err)
	}
	return out, nil
}

// End is the position after the last record, and that record (nil for
// an empty chain).
func (r auditReader) End() (store.LogPosition, *store.Record, error) {
	ctx, cancel := r.s.bounded(context.Background())
	defer cancel()
	var seq int64
	var raw string
	err := r.s.pool.QueryRow(ctx, `SELECT seq, raw FROM `+r.s.t.records+` ORDER BY seq DESC LIMIT 1`).Scan(&seq, &raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.LogPosition{}, nil, nil
	}
	if err != nil {
		return store.LogPosition{}, nil, r.s.wrap("reading the audit chain", err)
	}
	var rec store.Record
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		return store.LogPosition{}, nil, fmt.Errorf("%w: record %d does not decode: %v", store.ErrChainBroken, seq, err)
	}
	return store.LogPosition{Segment: logSegment, Offset: seq}, &rec, nil
}

// Find is the position from which Read returns the first record whose
// sequence number is at least seq.
func (r auditReader) Find(seq uint64) (store.LogPosition, error) {
	if seq == 0 {
		return store.LogPosition{}, nil
	}
	return store.LogPosition{Segment: logSegment, Offset: int64(seq - 1)}, nil
}

// VerifyChain checks every record (its hash, its exact bytes, its link
// to the one before) and that the chain ends where the head row says.
func (s *State) VerifyChain(ctx context.Context) (uint64, error) {
	v := store.NewChainVerifier()
	r := auditReader{s}
	var pos store.LogPosition
	for {
		if err := ctx.Err(); err != nil {
			return v.Count(), err
		}
		batch, err := r.Read(pos, 1000)
		if err != nil {
			return v.Count(), err
		}
		if len(batch) == 0 {
			break
		}
		for _, e := range batch {
			if _, err := v.Next(e.Raw); err != nil {
				return v.Count(), err
			}
		}
		pos = batch[len(batch)-1].Next
	}
	rctx, cancel := s.bounded(ctx)
	defer cancel()
	head, _, err := s.readHead(rctx, s.pool, false)
	if err != nil {
		return v.Count(), err
	}
	if head.Seq != v.Last() {
		return v.Count(), fmt.Errorf("%w: the state's head is record %d; the chain ends at record %d", store.ErrChainBroken, head.Seq, v.Last())
	}
	if err := v.Finish(); err != nil {
		return v.Count(), err
	}
	return v.Count(), nil
}

type cursors struct{ s *State }

// Cursors keeps the forwarders' cursors in the forward_cursors table and
// leases a destination by a session advisory lock.
func (s *State) Cursors() store.CursorStore { return cursors{s} }

func (c cursors) Load(ctx context.Context, name string) (store.ForwardCursor, bool, error) {
	var cur store.ForwardCursor
	if !validKey(name) {
		return cur, false, fmt.Errorf("forward cursor: %q is not a cursor name", name)
	}
	ctx, cancel := c.s.bounded(ctx)
	defer cancel()
	var raw string
	err := c.s.pool.QueryRow(ctx, `SELECT cursor::text FROM `+c.s.t.cursors+` WHERE name = $1`, name).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return cur, false, nil
	}
	if err != nil {
		return cur, false, c.s.wrap("reading forward cursor "+name, err)
	}
	if err := json.Unmarshal([]byte(raw), &cur); err != nil {
		return cur, false, &store.CursorDamagedError{Where: c.Where(name), Err: err}
	}
	return cur, true, nil
}

// Where names a cursor's row.
func (c cursors) Where(name string) string {
	return fmt.Sprintf("row %q of %s", name, c.s.t.cursors)
}

func (c cursors) Save(ctx context.Context, name string, cur store.ForwardCursor) error {
	if !validKey(name) {
		return fmt.Errorf("forward cursor: %q is not a cursor name", name)
	}
	raw, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	ctx, cancel := c.s.bounded(ctx)
	defer cancel()
	if _, err := c.s.pool.Exec(ctx, `INSERT INTO `+c.s.t.cursors+` (name, cursor) VALUES ($1, $2)
		ON CONFLICT (name) DO UPDATE SET cursor = excluded.cursor`, name, string(raw)); err != nil {
		return c.s.wrap("writing forward cursor "+name, err)
	}
	return nil
}

func (c cursors) Lease(ctx context.Context, name string) (func(), error) {
	return c.s.lease(ctx, "forward "+name)
}

// QuestionTurn waits for the principal's turn to ask a human, across
// every replica.
func (s *State) QuestionTurn(ctx context.Context, principal string) (func(), error) {
	release, err := s.lease(ctx, "question "+principal)
	if err != nil {
		return nil, fmt.Errorf("waiting to ask a human: %w", err)
	}
	return release, nil
}

// lease holds a session advisory lock named by what (in this schema) on
// a connection of its own until release, waiting for it until ctx ends.
// The lock goes with the connection: a replica that dies lets it go.
func (s *State) lease(ctx context.Context, what string) (func(), error) {
	// A connection of its own, not the pool's: a lease can be held for
	// as long as a question is open, and must not starve commits.
	conn, err := s.connect(ctx, "aqlguard "+what)
	if err != nil {
		return nil, s.wrap("connecting for "+what, err)
	}
	key := "aqlguard " + s.schema + " " + what
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, key); err != nil {
		_ = conn.Close(context.Background())
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, s.wrap("waiting for "+what, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = conn.Close(ctx) // the lock ends with the session
	}, nil
}

// connect opens a connection of its own, named app in pg_stat_activity.
func (s *State) connect(ctx context.Context, app string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, errors.New("the connection string does not parse")
	}
	cfg.RuntimeParams["application_name"] = app
	bound(&cfg.Config, s.timeout, false)
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, 10*time.Second))
	defer cancel()
	return pgx.ConnectConfig(ctx, cfg)
}
