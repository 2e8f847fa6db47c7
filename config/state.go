package config

// State is the [state] table: which backend keeps blocks, challenges,
// approvals, pins and the audit chain (docs/state.md).
type State struct {
	// Backend is "bbolt" (the default: a database in state_dir, shared
	// by the aqlguard processes of one machine) or "postgres" (one
	// database shared by replicas of `aqlguard serve`).
	Backend string `toml:"backend"`
	// DSN is the PostgreSQL connection string (libpq form or URL). The
	// environment variable AQLGUARD_STATE_DSN, when set, is used
	// instead, so that a password need not be in the file.
	DSN string `toml:"dsn"`
	// Schema holds aqlguard's tables (default "aqlguard"): one database
	// can hold several states.
	Schema string `toml:"schema"`
}

// The state backends.
const (
	StateBolt     = "bbolt"
	StatePostgres = "postgres"
)
