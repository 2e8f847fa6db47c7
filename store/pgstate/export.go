package pgstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/store"
)

// Export calls fn with every row of the state, read in one REPEATABLE
// READ snapshot, and returns the audit head of that snapshot. A batch
// is handed over between tables (no query open), once it holds at
// least store.ExportBatch rows.
func (s *State) Export(ctx context.Context, fn func(store.Changes) error) (store.Head, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return store.Head{}, s.wrap("exporting", err)
	}
	defer tx.Rollback(context.Background())
	// The snapshot is held while fn writes each batch elsewhere (a copy's
	// target), for as long as that takes: the bounds of a commit
	// (bounds.go) are not this read's. It holds no lock a commit waits
	// for, and keepalive still ends it if this process goes silent.
	if _, err := tx.Exec(ctx, `SET LOCAL idle_in_transaction_session_timeout = 0; SET LOCAL statement_timeout = 0`); err != nil {
		return store.Head{}, s.wrap("exporting", err)
	}
	head, _, err := s.readHead(ctx, tx, false)
	if err != nil {
		return head, err
	}
	var c store.Changes
	n := 0
	flush := func() error {
		if n == 0 && c.PolicyVersion == "" {
			return nil
		}
		out := c
		c, n = store.Changes{}, 0
		return fn(out)
	}
	each := func(table string, put func(key string, body []byte) error) error {
		rows, err := tx.Query(ctx, `SELECT key, body::text FROM `+table+` ORDER BY key`)
		if err != nil {
			return s.wrap("exporting", err)
		}
		defer rows.Close()
		for rows.Next() {
			var key, body string
			if err := rows.Scan(&key, &body); err != nil {
				return s.wrap("exporting", err)
			}
			if err := put(key, []byte(body)); err != nil {
				return s.wrap("exporting", fmt.Errorf("%s/%q is damaged: %w", table, key, err))
			}
			n++
		}
		return rows.Err()
	}
	kinds := []struct {
		table string
		put   func(key string, body []byte) error
	}{
		{s.t.blocks, func(_ string, b []byte) error { return appendJSON(b, &c.Blocks) }},
		{s.t.challenges, func(_ string, b []byte) error { return appendJSON(b, &c.Challenges) }},
		{s.t.confirmations, func(_ string, b []byte) error { return appendJSON(b, &c.Confirmations) }},
		{s.t.approvals, func(_ string, b []byte) error { return appendJSON(b, &c.Approvals) }},
		{s.t.executions, func(_ string, b []byte) error { return appendJSON(b, &c.Executions) }},
		{s.t.pins, func(_ string, b []byte) error { return appendJSON(b, &c.Pins) }},
		{s.t.serverNames, func(_ string, b []byte) error { return appendJSON(b, &c.ServerNames) }},
		{s.t.failures, func(k string, b []byte) error {
			var f store.Failures
			if err := json.Unmarshal(b, &f); err != nil {
				return err
			}
			if c.Failures == nil {
				c.Failures = map[string]store.Failures{}
			}
			c.Failures[k] = f
			return nil
		}},
	}
	for _, k := range kinds {
		if err := each(k.table, k.put); err != nil {
			return head, err
		}
		if n >= store.ExportBatch {
			if err := flush(); err != nil {
				return head, err
			}
		}
	}
	err = tx.QueryRow(ctx, `SELECT value FROM `+s.t.meta+` WHERE key = 'policy_version'`).Scan(&c.PolicyVersion)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return head, s.wrap("exporting", err)
	}
	return head, flush()
}

func appendJSON[T any](raw []byte, list *[]T) error {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}
