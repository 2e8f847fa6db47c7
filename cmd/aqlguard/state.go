package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/pgstate"
)

// openState opens the state the configuration names, for every verb:
// the bbolt database in the state directory (default
// $XDG_STATE_HOME/aqlguard), or with [state] backend = "postgres" the
// PostgreSQL state of [state] dsn (AQLGUARD_STATE_DSN wins) and schema,
// created or migrated on open. o tunes the state directory only.
// Without a state nothing can be decided durably: the caller stops.
func openState(ctx context.Context, cfg *config.Config, o store.Options) (store.State, error) {
	if cfg.State.Backend == config.StatePostgres {
		return openPostgres(ctx, cfg, nil)
	}
	return openStateDir(ctx, cfg, o)
}

// openPostgres opens the configured PostgreSQL state, logging to log
// (slog's default when nil). Its errors never carry the connection
// string's password (pgstate).
func openPostgres(ctx context.Context, cfg *config.Config, log *slog.Logger) (*pgstate.State, error) {
	dsn := pgstate.DSN(cfg.State.DSN)
	if dsn == "" {
		return nil, fmt.Errorf("the state database: [state] backend = %q needs a connection string: set [state] dsn, or %s",
			config.StatePostgres, pgstate.DSNEnv)
	}
	return pgstate.Open(ctx, pgstate.Options{DSN: dsn, Schema: cfg.State.Schema, Timeout: cfg.StateLockTimeout.Duration, Log: log})
}

// Waits between attempts to reach the state database at start.
const (
	stateWaitMin = time.Second
	stateWaitMax = 30 * time.Second
)

// waitForPostgres opens the configured PostgreSQL state, waiting while
// the database cannot be reached (not running yet, starting up, out of
// connections): each failed attempt is a log line, and the waits grow
// from stateWaitMin to stateWaitMax. It gives up only when ctx ends
// (the service is stopped), with the last error. An error that waiting
// cannot cure (a wrong password, a missing database, a schema a newer
// aqlguard wrote, an incomplete copy) ends it at once.
func waitForPostgres(ctx context.Context, cfg *config.Config, log *slog.Logger) (*pgstate.State, error) {
	wait := stateWaitMin
	for attempt := 1; ; attempt++ {
		st, err := openPostgres(ctx, cfg, log)
		if err == nil {
			if attempt > 1 {
				log.Info("the state database (PostgreSQL) answers", "attempts", attempt)
			}
			return st, nil
		}
		if ctx.Err() != nil || !pgstate.Unreachable(err) {
			return nil, stateGaveUp(ctx, attempt, err)
		}
		log.Warn("waiting for the state database (PostgreSQL): it cannot be reached; nothing is served until it can",
			"attempt", attempt, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return nil, stateGaveUp(ctx, attempt, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, stateWaitMax)
	}
}

// stateGaveUp is the error that ends waitForPostgres.
func stateGaveUp(ctx context.Context, attempts int, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("stopped while waiting for the state database (PostgreSQL), after %d attempts: %w", attempts, err)
}

// openStateDir opens the bbolt state in the configured state directory,
// whatever backend the configuration names (state copy moves between
// the two).
func openStateDir(ctx context.Context, cfg *config.Config, o store.Options) (*store.Store, error) {
	dir := cfg.StateDir
	if dir == "" {
		d, err := store.DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	o.Timeout, o.AuditSync = cfg.StateLockTimeout.Duration, store.SyncMode(cfg.Audit.Sync)
	if !o.ReadOnly {
		o.Anchor = systemLogAnchor()
	}
	st, err := store.Open(ctx, dir, o)
	if err != nil {
		return nil, fmt.Errorf("the state database: %w", err)
	}
	return st, nil
}

// stateDirOnly is st as a state directory, or the error that says what
// verb needs one and why a PostgreSQL state has no use for it.
func stateDirOnly(st store.State, verb, why string) (*store.Store, error) {
	if s, ok := st.(*store.Store); ok {
		return s, nil
	}
	return nil, errors.New(verb + " works on a state directory (bbolt) only: " + why)
}

// stateName names a state for people: its directory, or its schema.
func stateName(st store.State) string {
	switch s := st.(type) {
	case *store.Store:
		return "state directory " + filepath.Dir(s.Path())
	case *pgstate.State:
		return "PostgreSQL schema " + s.Schema()
	}
	return "state " + st.StateID()
}
