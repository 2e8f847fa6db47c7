package app

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/pgstate"
)

// OpenState opens the state the configuration names, for every verb:
// the bbolt database in the state directory (default
// $XDG_STATE_HOME/aqlguard), or with [state] backend = "postgres" the
// PostgreSQL state of [state] dsn (AQLGUARD_STATE_DSN wins) and schema,
// created or migrated on open; each backend registered itself with
// store (store.RegisterBackend). o tunes the state directory only.
// Without a state nothing can be decided durably: the caller stops.
func OpenState(ctx context.Context, cfg *config.Config, o store.Options) (store.State, error) {
	return store.OpenBackend(ctx, cfg, store.BackendOptions{Options: o, NewAnchor: systemLogAnchor})
}

// OpenPostgres opens the configured PostgreSQL state, logging to log
// (slog's default when nil). Its errors never carry the connection
// string's password (pgstate).
func OpenPostgres(ctx context.Context, cfg *config.Config, log *slog.Logger) (*pgstate.State, error) {
	return pgstate.OpenConfigured(ctx, cfg, log)
}

// OpenStateDir opens the bbolt state in the configured state directory,
// whatever backend the configuration names (state copy moves between
// the two).
func OpenStateDir(ctx context.Context, cfg *config.Config, o store.Options) (*store.Store, error) {
	return store.OpenDir(ctx, cfg, Anchored(o))
}

// Anchored is o with the system log's anchor, unless it writes nothing.
func Anchored(o store.Options) store.Options {
	if !o.ReadOnly {
		o.Anchor = systemLogAnchor()
	}
	return o
}

// StateDirOnly is st as a state directory, or the error that says what
// verb needs one and why a PostgreSQL state has no use for it.
func StateDirOnly(st store.State, verb, why string) (*store.Store, error) {
	if s, ok := st.(*store.Store); ok {
		return s, nil
	}
	return nil, errors.New(verb + " works on a state directory (bbolt) only: " + why)
}

// StateName names a state for people: its directory, or its schema.
func StateName(st store.State) string {
	switch s := st.(type) {
	case *store.Store:
		return "state directory " + filepath.Dir(s.Path())
	case *pgstate.State:
		return "PostgreSQL schema " + s.Schema()
	}
	return "state " + st.StateID()
}

// systemLogAnchor is SystemLogAnchor's anchor: nil, without a system
// log, where nothing says why (Start's line does, for run and serve).
func systemLogAnchor() func(string) error {
	a, _ := SystemLogAnchor()
	return a
}
