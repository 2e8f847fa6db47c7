package pgstate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
)

// pgstate is the state backend "postgres" ([state] backend): imported
// where the process is assembled, it registers itself.
func init() {
	store.RegisterBackend(config.StatePostgres, store.Backend{Open: func(ctx context.Context, cfg *config.Config, o store.BackendOptions) (store.State, error) {
		var st *State
		var err error
		if o.Wait {
			st, err = WaitConfigured(ctx, cfg, o.Log)
		} else {
			st, err = OpenConfigured(ctx, cfg, o.Log)
		}
		if err != nil {
			return nil, err // a nil *State would be a non-nil store.State
		}
		return st, nil
	}})
}

// OpenConfigured opens the PostgreSQL state cfg's [state] names ([state]
// dsn, or AQLGUARD_STATE_DSN, which wins; schema), logging to log
// (slog's default when nil). Its errors never carry the connection
// string's password.
func OpenConfigured(ctx context.Context, cfg *config.Config, log *slog.Logger) (*State, error) {
	dsn := DSN(cfg.State.DSN)
	if dsn == "" {
		return nil, fmt.Errorf("the state database: [state] backend = %q needs a connection string: set [state] dsn, or %s",
			config.StatePostgres, DSNEnv)
	}
	return Open(ctx, Options{DSN: dsn, Schema: cfg.State.Schema, Timeout: cfg.StateLockTimeout.Duration, Log: log})
}

// Waits between attempts to reach the state database at start.
const (
	stateWaitMin = time.Second
	stateWaitMax = 30 * time.Second
)

// WaitConfigured opens the configured PostgreSQL state, waiting while
// the database cannot be reached (not running yet, starting up, out of
// connections): each failed attempt is a log line, and the waits grow
// from stateWaitMin to stateWaitMax. It gives up only when ctx ends
// (the service is stopped), with the last error. An error that waiting
// cannot cure (a wrong password, a missing database, a schema a newer
// aqlguard wrote, an incomplete copy) ends it at once.
func WaitConfigured(ctx context.Context, cfg *config.Config, log *slog.Logger) (*State, error) {
	if log == nil {
		log = slog.Default()
	}
	wait := stateWaitMin
	for attempt := 1; ; attempt++ {
		st, err := OpenConfigured(ctx, cfg, log)
		if err == nil {
			if attempt > 1 {
				log.Info("the state database (PostgreSQL) answers", "attempts", attempt)
			}
			return st, nil
		}
		if ctx.Err() != nil || !Unreachable(err) {
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

// stateGaveUp is the error that ends WaitConfigured.
func stateGaveUp(ctx context.Context, attempts int, err error) error {
	if ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("stopped while waiting for the state database (PostgreSQL), after %d attempts: %w", attempts, err)
}
