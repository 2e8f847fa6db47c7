// Package pgstate keeps aqlguard's state in PostgreSQL (through pgx), so
// that several `aqlguard serve` replicas share one state: the same
// store.State as the bbolt backend, passing the same conformance suite
// (store/statetest). docs/state.md is the design; in short:
//
//   - every Commit starts by locking the one row of state_head, which
//     holds the audit chain's head and the generation: commits are one
//     total order across replicas, the chain stays one linear chain, and
//     the generation a commit reads is exact;
//   - every row decide read is written as a compare-and-set on its
//     version, so a single-use answer or an attempt can never be spent or
//     counted twice, whatever else happens;
//   - what every call reads (blocks, pins, approvals, the policy version)
//     is cached keyed by the generation it was read at;
//   - a commit that changes state notifies the others (LISTEN/NOTIFY),
//     and Watch re-reads the generation after a lost connection.
package pgstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/aqlguard/aqlguard/store"
)

// DefaultSchema is where aqlguard's tables live when Options.Schema is
// empty.
const DefaultSchema = "aqlguard"

// DSNEnv names the environment variable whose connection string wins
// over the config's (so that a password need not be in the file).
const DSNEnv = "AQLGUARD_STATE_DSN"

// Options say which database and how long to wait for it.
type Options struct {
	// DSN is a libpq connection string or URL.
	DSN string
	// Schema holds aqlguard's tables (DefaultSchema when empty): one
	// database can hold several states, one per schema.
	Schema string
	// Timeout bounds one commit or read, waits included; zero means
	// store.DefaultTimeout. A call that cannot be decided in time is
	// refused (fail closed).
	Timeout time.Duration
	// MaxConns bounds the pool (pgxpool's default when zero).
	MaxConns int32
	// Log receives what happens beside the calls (a lost LISTEN
	// connection); slog.Default() when nil.
	Log *slog.Logger
	// IncompleteCopy opens the target of an unfinished copy
	// (store.CopyMark), which is otherwise refused: for `state copy`
	// alone.
	IncompleteCopy bool
}

// ErrConflict means a row a commit read was changed by a writer that
// did not take the head lock: the commit wrote nothing.
var ErrConflict = errors.New("state database (PostgreSQL): a row changed under the commit that read it; nothing was written")

// State is a state kept in PostgreSQL. It is safe for concurrent use.
type State struct {
	pool     *pgxpool.Pool
	dsn      string
	schema   string
	channel  string
	timeout  time.Duration
	log      *slog.Logger
	auditKey []byte
	stateID  string
	t        tables

	// gmu guards the commits waiting for a group (group.go) and
	// whether one runs; the group's leader runs it.
	gmu     sync.Mutex
	waiting []*pending
	leading bool
	// guess is where the last group left the head; the leader alone
	// reads and sets it.
	guess guess
	// stats count the groups (BenchmarkReplicas reads them).
	stats groupStats
	// snap is the newest snapshot read or written.
	snap store.Kept[snapshot]
	// locked, when set (tests), runs in a group once it holds the
	// head's lock, before anything is written.
	locked func()
}

var _ store.State = (*State)(nil)

var schemaName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,47}$`)

// Open connects, creates or migrates the schema, and reads the state's
// id and audit key (made at the first open).
func Open(ctx context.Context, o Options) (*State, error) {
	if o.DSN == "" {
		return nil, fmt.Errorf("state database (PostgreSQL): no connection string (set [state] dsn, or %s)", DSNEnv)
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if !schemaName.MatchString(o.Schema) {
		return nil, fmt.Errorf("state database (PostgreSQL): schema %q: use lower-case letters, digits and _ (at most 48)", o.Schema)
	}
	if o.Timeout <= 0 {
		o.Timeout = store.DefaultTimeout
	}
	cfg, err := pgxpool.ParseConfig(o.DSN)
	if err != nil {
		// pgx's message may quote the string, password and all.
		return nil, errors.New("state database (PostgreSQL): the connection string does not parse")
	}
	if o.MaxConns > 0 {
		cfg.MaxConns = o.MaxConns
	}
	bound(&cfg.ConnConfig.Config, o.Timeout, true)
	s := &State{dsn: o.DSN, schema: o.Schema, channel: o.Schema + "_state", timeout: o.Timeout, log: o.Log, t: tablesIn(o.Schema)}
	if s.log == nil {
		s.log = slog.Default()
	}
	octx, cancel := context.WithTimeout(ctx, max(o.Timeout, 30*time.Second))
	defer cancel()
	if s.pool, err = pgxpool.NewWithConfig(octx, cfg); err != nil {
		return nil, s.wrap("connecting", err)
	}
	if err := s.migrate(octx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if err := s.readMeta(octx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if !o.IncompleteCopy {
		m, err := s.CopyMark(octx)
		if err == nil && m != nil {
			err = &store.IncompleteCopyError{Where: "PostgreSQL schema " + s.schema, Mark: *m}
		}
		if err != nil {
			s.pool.Close()
			return nil, err
		}
	}
	return s, nil
}

// wrap names the backend and what it was doing in an error.
func (s *State) wrap(what string, err error) error {
	return fmt.Errorf("state database (PostgreSQL, schema %s): %s: %w", s.schema, what, err)
}

// readMeta makes the state id and the audit key the first time (the
// first replica's win), then reads them.
func (s *State) readMeta(ctx context.Context) error {
	id, key := make([]byte, 8), make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.t.meta+` (key, value) VALUES ('state_id', $1), ('audit_key', $2) ON CONFLICT DO NOTHING`,
		hex.EncodeToString(id), hex.EncodeToString(key)); err != nil {
		return s.wrap("making the state id", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM `+s.t.meta+` WHERE key IN ('state_id', 'audit_key')`)
	if err != nil {
		return s.wrap("reading the state id", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s.wrap("reading the state id", err)
		}
		switch k {
		case "state_id":
			s.stateID = v
		case "audit_key":
			if s.auditKey, err = hex.DecodeString(v); err != nil || len(s.auditKey) != 32 {
				return s.wrap("reading the audit key", errors.New("it is damaged"))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return s.wrap("reading the state id", err)
	}
	if s.stateID == "" || s.auditKey == nil {
		return s.wrap("reading the state id", errors.New("it is missing"))
	}
	return nil
}

// copyMarkKey is the meta row of an unfinished copy's mark.
const copyMarkKey = "copy_incomplete"

// CopyMark is the mark of an unfinished copy into this state (a row of
// meta): nil when there is none.
func (s *State) CopyMark(ctx context.Context) (*store.CopyMark, error) {
	var raw string
	err := s.pool.QueryRow(ctx, `SELECT value FROM `+s.t.meta+` WHERE key = $1`, copyMarkKey).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, s.wrap("reading the copy mark", err)
	}
	var m store.CopyMark
	if json.Unmarshal([]byte(raw), &m) != nil {
		return &store.CopyMark{Source: "(unreadable mark)"}, nil
	}
	return &m, nil
}

// SetCopyMark sets the mark of an unfinished copy into this state, or
// with nil clears it (one statement, committed).
func (s *State) SetCopyMark(ctx context.Context, m *store.CopyMark) error {
	if m == nil {
		if _, err := s.pool.Exec(ctx, `DELETE FROM `+s.t.meta+` WHERE key = $1`, copyMarkKey); err != nil {
			return s.wrap("clearing the copy mark", err)
		}
		return nil
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return s.wrap("writing the copy mark", err)
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.t.meta+` (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
		copyMarkKey, string(raw)); err != nil {
		return s.wrap("writing the copy mark", err)
	}
	return nil
}

// AuditKey keys the digests that stand for secrets in records.
func (s *State) AuditKey() []byte { return s.auditKey }

// StateID is the state's random id.
func (s *State) StateID() string { return s.stateID }

// Schema is the schema the state lives in.
func (s *State) Schema() string { return s.schema }

// Close lets the pool's connections go.
func (s *State) Close() error {
	if s != nil && s.pool != nil {
		s.pool.Close()
	}
	return nil
}

// bounded is ctx bounded by the state's timeout.
func (s *State) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// Generation is the state's generation, as committed.
func (s *State) Generation(ctx context.Context) (uint64, error) {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	var g int64
	if err := s.pool.QueryRow(ctx, `SELECT generation FROM `+s.t.head+` WHERE id = 1`).Scan(&g); err != nil {
		return 0, s.wrap("reading the generation", err)
	}
	return uint64(g), nil
}

// queryer is what a view reads through: a transaction.
type queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DSN is the connection string to use: AQLGUARD_STATE_DSN when it is
// set, else the config's.
func DSN(config string) string {
	if env := os.Getenv(DSNEnv); env != "" {
		return env
	}
	return config
}

// Unreachable says err is the database not answering (not running, not
// reachable, starting up or shutting down, out of connections): what
// waiting can cure, unlike a wrong password, a missing database or a
// schema a newer aqlguard wrote.
func Unreachable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:min(2, len(pe.Code))] {
		case "08", "53", "57": // connection exception, insufficient resources, operator intervention
			return true
		}
		return false
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	return errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded)
}
