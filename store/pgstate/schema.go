package pgstate

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/store"
)

// tables are the schema-qualified, quoted names of the state's tables.
type tables struct {
	version, meta, head, records, cursors string
	// conflict is the function a compare-and-set calls when it finds
	// its row changed.
	conflict string
	// kinds are the tables of state rows (key, version, body), by kind.
	blocks, challenges, failures, confirmations, approvals, executions, pins string
	// serverNames (schema version 2) are the names servers offered.
	serverNames string
}

func tablesIn(schema string) tables {
	q := func(name string) string { return pgx.Identifier{schema, name}.Sanitize() }
	return tables{version: q("schema_version"), meta: q("meta"), head: q("state_head"), records: q("audit_records"),
		cursors: q("forward_cursors"), conflict: q("conflict"), blocks: q("blocks"), challenges: q("challenges"), failures: q("failures"),
		confirmations: q("confirmations"), approvals: q("approvals"), executions: q("executions"), pins: q("pins"),
		serverNames: q("server_names")}
}

// conflictCode is the SQLSTATE conflict raises: serialization_failure.
const conflictCode = "40001"

// kindTables lists the tables of state rows version 1 made (a later
// version's are made by its migration).
func (t tables) kindTables() []string {
	return []string{t.blocks, t.challenges, t.failures, t.confirmations, t.approvals, t.executions, t.pins}
}

// migrations are the schema's versions, in order: migration i makes
// version i+1. A released migration is never edited; a change is a new
// one.
func (t tables) migrations() [][]string {
	v1 := []string{
		// Bodies are json, not jsonb: jsonb refuses the \u0000 escape a
		// model can put in an argument, and the body is read back whole.
		`CREATE TABLE ` + t.meta + ` (key text PRIMARY KEY, value text NOT NULL)`,
		`CREATE TABLE ` + t.head + ` (id int PRIMARY KEY CHECK (id = 1), seq bigint NOT NULL, hash text NOT NULL, generation bigint NOT NULL)`,
		`INSERT INTO ` + t.head + ` (id, seq, hash, generation) VALUES (1, 0, '` + store.GenesisHash + `', 0)`,
		// raw is the record's line exactly as its hash covers it.
		`CREATE TABLE ` + t.records + ` (seq bigint PRIMARY KEY, prev text NOT NULL, hash text NOT NULL, time timestamptz NOT NULL, raw text NOT NULL)`,
		`CREATE TABLE ` + t.cursors + ` (name text PRIMARY KEY, cursor json NOT NULL)`,
	}
	for _, k := range t.kindTables() {
		// principal and expires are what rows are looked up and pruned
		// by, in columns of their own: no JSON operator ever runs on a
		// body (the json functions refuse \u0000, which a model can put
		// in an argument).
		v1 = append(v1, `CREATE TABLE `+k+` (key text PRIMARY KEY, version bigint NOT NULL, body json NOT NULL, `+
			`principal text, expires timestamptz)`)
	}
	// A principal's confirmations are looked up by principal; what
	// expired is pruned by expires.
	v1 = append(v1, `CREATE INDEX ON `+t.confirmations+` (principal)`)
	for _, k := range []string{t.challenges, t.confirmations, t.approvals, t.executions} {
		v1 = append(v1, `CREATE INDEX ON `+k+` (expires)`)
	}
	// conflict fails the statement that calls it, and so the commit: a
	// compare-and-set that found its row changed must abort what the
	// batch queued after it (a write of no rows is no error by itself).
	v1 = append(v1, `CREATE FUNCTION `+t.conflict+`(what text) RETURNS bigint LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'aqlguard: % changed under the commit that read it', what USING ERRCODE = '`+conflictCode+`'; END $$`)
	// Version 2: the names of the tools and prompts each server offered
	// a principal's client (store.ServerNames), looked up by principal.
	v2 := []string{
		`CREATE TABLE ` + t.serverNames + ` (key text PRIMARY KEY, version bigint NOT NULL, body json NOT NULL, ` +
			`principal text, expires timestamptz)`,
		`CREATE INDEX ON ` + t.serverNames + ` (principal)`,
	}
	return [][]string{v1, v2}
}

// SchemaVersion is the schema version this aqlguard writes.
func SchemaVersion() int { return len(tablesIn(DefaultSchema).migrations()) }

// migrate creates the schema or brings it to this version, once however
// many replicas start together (a transaction-level advisory lock), and
// refuses a schema a newer aqlguard wrote.
func (s *State) migrate(ctx context.Context) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.wrap("connecting", err)
	}
	defer tx.Rollback(ctx)
	// Replicas starting together wait here for the one migrating, and a
	// migration takes what it takes: bounded by ctx, not by a commit's
	// bounds (bounds.go).
	if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = 0; SET LOCAL statement_timeout = 0`); err != nil {
		return s.wrap("connecting", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "aqlguard schema "+s.schema); err != nil {
		return s.wrap("locking the schema", err)
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
		return s.wrap("creating the schema", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.t.version+` (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return s.wrap("creating the schema", err)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+s.t.version).Scan(&have); err != nil {
		return s.wrap("reading the schema version", err)
	}
	all := s.t.migrations()
	if have > len(all) {
		return s.wrap("opening", fmt.Errorf("the schema is at version %d, and this aqlguard knows versions up to %d: "+
			"a newer aqlguard wrote it; upgrade this one", have, len(all)))
	}
	for v := have + 1; v <= len(all); v++ {
		for _, stmt := range all[v-1] {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return s.wrap(fmt.Sprintf("migrating the schema to version %d", v), err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+s.t.version+` (version) VALUES ($1)`, v); err != nil {
			return s.wrap("recording the schema version", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return s.wrap("migrating the schema", err)
	}
	return nil
}
