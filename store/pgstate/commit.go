package pgstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/aqlguard/aqlguard/store"
)

// row is a state row as read: its value and its version, the number the
// next write of it compares against.
type row[T any] struct {
	v       T
	version int64
}

// snapshot is what every call reads, as it was at one generation. Each
// kind is read on first use (nil until then); a snapshot's maps are
// never changed once set: the next generation's is a copy.
type snapshot struct {
	gen       uint64
	mu        sync.Mutex
	blocks    map[string]row[store.Block]
	approvals map[string]row[store.Approval]
	pins      map[string]row[store.Pin]
	policy    *string
}

// snapshotAt is the kept snapshot if it is at gen, else a new one (read
// as it is used).
func (s *State) snapshotAt(gen uint64) *snapshot {
	return s.snap.At(gen, func() *snapshot { return &snapshot{gen: gen} })
}

// install keeps sn (the last kept wins: see Kept).
func (s *State) install(sn *snapshot) { s.snap.Keep(sn.gen, sn) }

// view is a store.View over one transaction.
type view struct {
	ctx  context.Context
	q    queryer
	s    *State
	snap *snapshot
	head store.Head
	// read holds the version of every row read (0: read as absent), by
	// table and key: the versions its writes compare against.
	read map[string]int64
}

var _ store.View = (*view)(nil)

func rowID(table, key string) string { return table + "\x00" + key }

// validKey says whether a key can name a row: PostgreSQL's text holds
// no NUL and only UTF-8, so a key that is not is the key of nothing (a
// token a model made up, say), not an error.
func validKey(k string) bool {
	return utf8.ValidString(k) && strings.IndexByte(k, 0) < 0
}

// get reads one row of a kind table.
func get[T any](v *view, table, key string) (*T, error) {
	if !validKey(key) {
		return nil, nil
	}
	var version int64
	var body string
	err := v.q.QueryRow(v.ctx, `SELECT version, body::text FROM `+table+` WHERE key = $1`, key).Scan(&version, &body)
	if errors.Is(err, pgx.ErrNoRows) {
		v.read[rowID(table, key)] = 0
		return nil, nil
	}
	if err != nil {
		return nil, v.s.wrap("reading", err)
	}
	out := new(T)
	if err := json.Unmarshal([]byte(body), out); err != nil {
		return nil, v.s.wrap("reading", fmt.Errorf("%s/%q is damaged: %w", table, key, err))
	}
	v.read[rowID(table, key)] = version
	return out, nil
}

// all reads every row of a kind table matching where (with args).
func all[T any](v *view, table, where string, args ...any) (map[string]row[T], error) {
	rows, err := v.q.Query(v.ctx, `SELECT key, version, body::text FROM `+table+where, args...)
	if err != nil {
		return nil, v.s.wrap("reading", err)
	}
	defer rows.Close()
	out := map[string]row[T]{}
	for rows.Next() {
		var key, body string
		var r row[T]
		if err := rows.Scan(&key, &r.version, &body); err != nil {
			return nil, v.s.wrap("reading", err)
		}
		if err := json.Unmarshal([]byte(body), &r.v); err != nil {
			return nil, v.s.wrap("reading", fmt.Errorf("%s/%q is damaged: %w", table, key, err))
		}
		out[key] = r
	}
	if err := rows.Err(); err != nil {
		return nil, v.s.wrap("reading", err)
	}
	return out, nil
}

// cached returns a kind of the snapshot, reading it on first use.
func cached[T any](v *view, table string, field *map[string]row[T]) (map[string]row[T], error) {
	v.snap.mu.Lock()
	defer v.snap.mu.Unlock()
	if *field == nil {
		m, err := all[T](v, table, "")
		if err != nil {
			return nil, err
		}
		*field = m
	}
	return *field, nil
}

// one is a row of a cached kind, its version noted as read.
func one[T any](v *view, table string, field *map[string]row[T], key string) (*T, error) {
	m, err := cached(v, table, field)
	if err != nil {
		return nil, err
	}
	r, ok := m[key]
	v.read[rowID(table, key)] = r.version // 0 when absent
	if !ok {
		return nil, nil
	}
	out := r.v
	return &out, nil
}

// list is every row of a cached kind that keep selects, their versions
// noted as read.
func list[T any](v *view, table string, field *map[string]row[T], keep func(T) bool) ([]T, error) {
	m, err := cached(v, table, field)
	if err != nil {
		return nil, err
	}
	var out []T
	for k, r := range m {
		if keep == nil || keep(r.v) {
			v.read[rowID(table, k)] = r.version
			out = append(out, r.v)
		}
	}
	return out, nil
}

func (v *view) Block(principal string) (*store.Block, error) {
	return one(v, v.s.t.blocks, &v.snap.blocks, principal)
}

func (v *view) Blocks() ([]store.Block, error) {
	out, err := list(v, v.s.t.blocks, &v.snap.blocks, nil)
	sort.Slice(out, func(i, j int) bool { return out[i].Principal < out[j].Principal })
	return out, err
}

func (v *view) Challenge(id string) (*store.Challenge, error) {
	return get[store.Challenge](v, v.s.t.challenges, id)
}

func (v *view) Confirmation(token string) (*store.Confirmation, error) {
	return get[store.Confirmation](v, v.s.t.confirmations, token)
}

func (v *view) Confirmations(principal, status string) ([]store.Confirmation, error) {
	if !validKey(principal) {
		return nil, nil
	}
	m, err := all[store.Confirmation](v, v.s.t.confirmations, ` WHERE principal = $1`, principal)
	if err != nil {
		return nil, err
	}
	var out []store.Confirmation
	for k, r := range m {
		v.read[rowID(v.s.t.confirmations, k)] = r.version
		if status == "" || r.v.Status == status {
			out = append(out, r.v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Token < out[j].Token })
	return out, nil
}

func (v *view) Approval(id string) (*store.Approval, error) {
	return one(v, v.s.t.approvals, &v.snap.approvals, id)
}

func (v *view) Approvals() ([]store.Approval, error) {
	out, err := list(v, v.s.t.approvals, &v.snap.approvals, nil)
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, err
}

func (v *view) Failures(principal string) (store.Failures, bool, error) {
	f, err := get[store.Failures](v, v.s.t.failures, principal)
	if err != nil || f == nil {
		return store.Failures{}, false, err
	}
	return *f, true, nil
}

func (v *view) Execution(id string) (*store.Execution, error) {
	return get[store.Execution](v, v.s.t.executions, id)
}

// pinKey is a pin's row key: the JSON of its server and tool, which no
// two pins share (a separator character could be in a tool's name).
func pinKey(server, tool string) string {
	b, _ := json.Marshal([2]string{server, tool})
	return string(b)
}

func (v *view) Pin(server, tool string) (*store.Pin, error) {
	p, err := one(v, v.s.t.pins, &v.snap.pins, pinKey(server, tool))
	if p != nil {
		*p = p.Clone() // shares nothing with the snapshot
	}
	return p, err
}

func (v *view) Pins(server string) ([]store.Pin, error) {
	out, err := list(v, v.s.t.pins, &v.snap.pins, func(p store.Pin) bool { return server == "" || p.Server == server })
	for i := range out {
		out[i] = out[i].Clone()
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Server != out[j].Server {
			return out[i].Server < out[j].Server
		}
		return out[i].Tool < out[j].Tool
	})
	return out, err
}

// serverNamesKey is a server names row's key: the JSON of its principal
// and server, as pinKey.
func serverNamesKey(principal, server string) string {
	b, _ := json.Marshal([2]string{principal, server})
	return string(b)
}

func (v *view) ServerNames(principal string) ([]store.ServerNames, error) {
	where, args := "", []any(nil)
	if principal != "" {
		if !validKey(principal) {
			return nil, nil
		}
		where, args = ` WHERE principal = $1`, []any{principal}
	}
	m, err := all[store.ServerNames](v, v.s.t.serverNames, where, args...)
	if err != nil {
		return nil, err
	}
	out := make([]store.ServerNames, 0, len(m))
	for k, r := range m {
		v.read[rowID(v.s.t.serverNames, k)] = r.version
		out = append(out, r.v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Principal != out[j].Principal {
			return out[i].Principal < out[j].Principal
		}
		return out[i].Server < out[j].Server
	})
	return out, nil
}

func (v *view) PolicyVersion() (string, error) {
	v.snap.mu.Lock()
	defer v.snap.mu.Unlock()
	if v.snap.policy == nil {
		var pv string
		err := v.q.QueryRow(v.ctx, `SELECT value FROM `+v.s.t.meta+` WHERE key = 'policy_version'`).Scan(&pv)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", v.s.wrap("reading the policy version", err)
		}
		v.snap.policy = &pv
	}
	return *v.snap.policy, nil
}

func (v *view) AuditHead() (store.Head, error) { return v.head, nil }

// begin starts a view on q at the head it read.
func (s *State) begin(ctx context.Context, q queryer, head store.Head, gen uint64) *view {
	return &view{ctx: ctx, q: q, s: s, snap: s.snapshotAt(gen), head: head, read: map[string]int64{}}
}

// Load runs read on one consistent snapshot (REPEATABLE READ, read
// only), taking no lock.
func (s *State) Load(ctx context.Context, read func(store.View) error) error {
	ctx, cancel := s.bounded(ctx)
	defer cancel()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s.wrap("reading", err)
	}
	defer tx.Rollback(context.Background())
	head, gen, err := s.readHead(ctx, tx, false)
	if err != nil {
		return err
	}
	v := s.begin(ctx, tx, head, gen)
	if err := read(v); err != nil {
		return err
	}
	s.install(v.snap)
	return nil
}

// readHead reads the chain's head and the generation, locking the row
// for a commit.
func (s *State) readHead(ctx context.Context, q queryer, lock bool) (store.Head, uint64, error) {
	sql := `SELECT seq, hash, generation FROM ` + s.t.head + ` WHERE id = 1`
	if lock {
		sql += ` FOR UPDATE`
	}
	var seq, gen int64
	var hash string
	if err := q.QueryRow(ctx, sql).Scan(&seq, &hash, &gen); err != nil {
		return store.Head{}, 0, s.wrap("reading the head of the state", err)
	}
	return store.Head{Seq: uint64(seq), Hash: hash}, uint64(gen), nil
}

// writer queues one commit's statements, each with the check of its
// result: they go to PostgreSQL in its group's batches (group.go).
type writer struct {
	v     *view
	stmts []stmt
	// versions are the versions the writes left, by row; a row written
	// twice in one commit is written the second time as decide's last
	// word on it (an upsert, or a plain delete).
	versions map[string]int64
}

func newWriter(v *view) *writer { return &writer{v: v, versions: map[string]int64{}} }

// stmt is one queued statement and the check of its result.
type stmt struct {
	sql   string
	args  []any
	check func(pgx.BatchResults) error
}

func execCheck(br pgx.BatchResults) error {
	_, err := br.Exec()
	return err
}

// readVersion is the version a write of the row compares against, and
// whether there is one.
func (w *writer) readVersion(id string) (int64, bool) {
	if _, again := w.versions[id]; again {
		return 0, false
	}
	v, read := w.v.read[id]
	return v, read
}

func (w *writer) exec(sql string, args ...any) {
	w.stmts = append(w.stmts, stmt{sql, args, execCheck})
}

func (w *writer) query(sql string, args []any, check func(pgx.BatchResults) error) {
	w.stmts = append(w.stmts, stmt{sql, args, check})
}

// put writes a row: a compare-and-set on the version read (an insert
// that must not find one, for a row read as absent), or an upsert for a
// row decide never read.
func (w *writer) put(table string, r out) error {
	key, body := r.key, r.body
	raw, err := json.Marshal(body)
	if err != nil {
		return w.v.s.wrap("encoding", fmt.Errorf("%s/%q: %w", table, key, err))
	}
	id := rowID(table, key)
	version, read := w.readVersion(id)
	w.versions[id] = -1 // queued: known once the batch ran
	var sql string
	var principal *string // a name PostgreSQL text cannot hold is no name to look up by
	if r.principal != "" && validKey(r.principal) {
		principal = &r.principal
	}
	args := []any{key, string(raw), table + " " + key, principal, r.expires}
	switch {
	case !read:
		sql = `INSERT INTO ` + table + ` AS t (key, version, body, principal, expires) VALUES ($1, 1, $2, $4, $5)
			ON CONFLICT (key) DO UPDATE SET body = excluded.body, principal = excluded.principal, expires = excluded.expires,
			version = t.version + 1 RETURNING version`
	case version == 0:
		sql = `INSERT INTO ` + table + ` (key, version, body, principal, expires) VALUES ($1, 1, $2, $4, $5)
			ON CONFLICT DO NOTHING RETURNING version`
	default:
		sql = `UPDATE ` + table + ` SET body = $2, principal = $4, expires = $5, version = version + 1
			WHERE key = $1 AND version = $6 RETURNING version`
		args = append(args, version)
	}
	// No row back is a conflict, raised in the statement so that the
	// transaction aborts with it.
	sql = `WITH w AS (` + sql + `) SELECT coalesce((SELECT version FROM w), ` + w.v.s.t.conflict + `($3::text))`
	w.query(sql, args, func(br pgx.BatchResults) error {
		var v int64
		if err := br.QueryRow().Scan(&v); err != nil {
			return conflictOr(err)
		}
		w.versions[id] = v
		return nil
	})
	return nil
}

// conflictOr is ErrConflict for the error conflict raises, else err.
func conflictOr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == conflictCode && strings.HasPrefix(pe.Message, "aqlguard: ") {
		return fmt.Errorf("%w (%s)", ErrConflict, strings.TrimPrefix(pe.Message, "aqlguard: "))
	}
	return err
}

// del deletes a row: only at the version read, when it was read.
func (w *writer) del(table, key string) {
	id := rowID(table, key)
	version, read := w.readVersion(id)
	w.versions[id] = -1
	if read && version == 0 {
		return // read as absent: nothing to delete
	}
	if !read {
		w.exec(`DELETE FROM `+table+` WHERE key = $1`, key)
		return
	}
	w.query(`WITH d AS (DELETE FROM `+table+` WHERE key = $1 AND version = $2 RETURNING version)
		SELECT coalesce((SELECT version FROM d), `+w.v.s.t.conflict+`($3::text))`, []any{key, version, table + " " + key}, func(br pgx.BatchResults) error {
		var v int64
		if err := br.QueryRow().Scan(&v); err != nil {
			return conflictOr(err)
		}
		return nil
	})
}

// out is one row to write: its key and body, and the columns the
// backend looks rows up or prunes them by (never a JSON operator on a
// body: PostgreSQL's json functions refuse the \u0000 a model can put
// in an argument, and one such row would fail every query over them).
type out struct {
	key       string
	body      any
	principal string
	// expires is when the row can be pruned (nil: never).
	expires *time.Time
}

func at(t time.Time) *time.Time { return &t }

// changes queues c's state changes.
func (w *writer) changes(c *store.Changes) error {
	t := w.v.s.t
	var rows []struct {
		table string
		r     out
	}
	add := func(table string, r out) {
		rows = append(rows, struct {
			table string
			r     out
		}{table, r})
	}
	for _, b := range c.Blocks {
		add(t.blocks, out{key: b.Principal, body: b, principal: b.Principal})
	}
	for _, ch := range c.Challenges {
		add(t.challenges, out{key: ch.ID, body: ch, principal: ch.Principal, expires: at(ch.ExpiresAt)})
	}
	for _, cf := range c.Confirmations {
		add(t.confirmations, out{key: cf.Token, body: cf, principal: cf.Principal, expires: at(cf.ExpiresAt)})
	}
	for _, a := range c.Approvals {
		add(t.approvals, out{key: a.ID, body: a, principal: a.Principal, expires: at(a.ExpiresAt)})
	}
	for _, e := range c.Executions {
		r := out{key: e.ID, body: e, principal: e.Principal}
		if !e.FinishedAt.IsZero() {
			r.expires = at(e.FinishedAt)
		}
		add(t.executions, r)
	}
	principals := make([]string, 0, len(c.Failures))
	for p := range c.Failures {
		principals = append(principals, p)
	}
	sort.Strings(principals) // one order of statements for one Changes
	for _, p := range principals {
		add(t.failures, out{key: p, body: c.Failures[p], principal: p})
	}
	for _, p := range c.Pins {
		add(t.pins, out{key: pinKey(p.Server, p.Tool), body: p})
	}
	for _, n := range c.ServerNames {
		add(t.serverNames, out{key: serverNamesKey(n.Principal, n.Server), body: n, principal: n.Principal})
	}
	for _, r := range rows {
		if !validKey(r.r.key) {
			return w.v.s.wrap("committing", fmt.Errorf("%s: the key %q cannot be stored (NUL, or not UTF-8)", r.table, r.r.key))
		}
		if err := w.put(r.table, r.r); err != nil {
			return err
		}
	}
	for _, p := range c.Unblock {
		w.del(t.blocks, p)
	}
	for _, k := range c.Unpin {
		w.del(t.pins, pinKey(k.Server, k.Tool))
	}
	if c.PolicyVersion != "" {
		w.exec(`INSERT INTO `+t.meta+` (key, value) VALUES ('policy_version', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, c.PolicyVersion)
	}
	if !c.PruneBefore.IsZero() {
		// As the bbolt backend's Tx.Prune: what can no longer be used or
		// replayed.
		for _, table := range []string{t.challenges, t.confirmations, t.approvals, t.executions} {
			w.exec(`DELETE FROM `+table+` WHERE expires < $1`, c.PruneBefore)
		}
	}
	return nil
}

// send runs stmts in one batch (one round trip) and checks every
// result; the first failure is the batch's.
func (s *State) send(ctx context.Context, conn *pgx.Conn, stmts []stmt) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	br := conn.SendBatch(ctx, b)
	var first error
	for _, st := range stmts {
		if err := st.check(br); err != nil && first == nil {
			first = err
		}
	}
	if err := br.Close(); err != nil && first == nil {
		first = err
	}
	if first == nil {
		return nil
	}
	if errors.Is(first, ErrConflict) {
		return first
	}
	return s.wrap("committing", first)
}

// next is the snapshot at gen: this one with c applied, the rows at the
// versions the commit left. Kinds not read yet stay unread; a prune
// leaves approvals to be read again.
func (sn *snapshot) next(gen uint64, c *store.Changes, versions map[string]int64, t tables) *snapshot {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	n := &snapshot{gen: gen, policy: sn.policy}
	if sn.blocks != nil {
		n.blocks = maps.Clone(sn.blocks)
		for _, b := range c.Blocks {
			n.blocks[b.Principal] = row[store.Block]{b, versions[rowID(t.blocks, b.Principal)]}
		}
		for _, p := range c.Unblock {
			delete(n.blocks, p)
		}
	}
	if sn.approvals != nil && c.PruneBefore.IsZero() {
		n.approvals = maps.Clone(sn.approvals)
		for _, a := range c.Approvals {
			n.approvals[a.ID] = row[store.Approval]{a, versions[rowID(t.approvals, a.ID)]}
		}
	}
	if sn.pins != nil {
		n.pins = maps.Clone(sn.pins)
		for _, p := range c.Pins {
			k := pinKey(p.Server, p.Tool)
			n.pins[k] = row[store.Pin]{p, versions[rowID(t.pins, k)]}
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
