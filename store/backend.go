package store

import (
	"context"
	"fmt"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/registry"
)

// A Backend opens the state a configuration's [state] table names.
// Backends register themselves by name ([state] backend): this package
// registers "bbolt", package pgstate "postgres"; a new backend is a
// package that calls RegisterBackend from an init function, imported
// (blank) where the process is assembled (package app), with the
// name's settings in package config.
type Backend struct {
	// Open opens the state of cfg. o carries what the caller asks of
	// any state (Log, ReadOnly, Wait); the settings come from cfg.
	Open func(ctx context.Context, cfg *config.Config, o BackendOptions) (State, error)
}

// BackendOptions are what a caller asks of whichever state the
// configuration names.
type BackendOptions struct {
	// Options are the state directory's (bbolt); a backend that keeps
	// its state elsewhere reads Log and Timeout at most.
	Options
	// Wait keeps trying while the state cannot be reached (a database
	// server not running yet), until ctx ends: `serve` under a service
	// manager starts before its database. Each failed attempt is a line
	// in Log.
	Wait bool
	// NewAnchor, when set, makes the state directory's Anchor
	// (Options.Anchor) when one is opened to write: the system log is
	// reached only for a backend that sends it anchors.
	NewAnchor func() func(line string) error
}

var backends = registry.Of[Backend]{Kind: "[state] backend"}

// RegisterBackend makes a backend available under name. Registering a
// name twice is a mistake of the build, reported by OpenBackend when
// the name is asked for.
func RegisterBackend(name string, b Backend) { backends.Register(name, b) }

// Backends are the registered backends' names, sorted.
func Backends() []string { return backends.Names() }

// OpenBackend opens the state cfg's [state] backend names (bbolt when
// it names none). Without a state nothing can be decided durably: the
// caller stops.
func OpenBackend(ctx context.Context, cfg *config.Config, o BackendOptions) (State, error) {
	name := cfg.State.Backend
	if name == "" {
		name = config.StateBolt
	}
	b, err := backends.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("the state: %w", err)
	}
	return b.Open(ctx, cfg, o)
}

func init() {
	RegisterBackend(config.StateBolt, Backend{Open: func(ctx context.Context, cfg *config.Config, o BackendOptions) (State, error) {
		opts := o.Options
		if opts.Anchor == nil && o.NewAnchor != nil && !opts.ReadOnly {
			opts.Anchor = o.NewAnchor()
		}
		st, err := OpenDir(ctx, cfg, opts)
		if err != nil {
			return nil, err // a nil *Store would be a non-nil State
		}
		return st, nil
	}})
}

// OpenDir opens the bbolt state in the configured state directory
// (default DefaultDir), whatever backend the configuration names:
// `state copy` moves between the two, and doctor looks at both.
func OpenDir(ctx context.Context, cfg *config.Config, o Options) (*Store, error) {
	dir := cfg.StateDir
	if dir == "" {
		d, err := DefaultDir()
		if err != nil {
			return nil, err
		}
		dir = d
	}
	o.Timeout, o.AuditSync = cfg.StateLockTimeout.Duration, SyncMode(cfg.Audit.Sync)
	st, err := Open(ctx, dir, o)
	if err != nil {
		return nil, fmt.Errorf("the state database: %w", err)
	}
	return st, nil
}
