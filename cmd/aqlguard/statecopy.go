package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/pgstate"
)

const stateCopyUsage = `usage: aqlguard state copy --to postgres|bbolt [--resume] [--state-dir DIR]

Moves a state between its two backends: every block, challenge,
confirmation, approval, execution, failure budget and pin, and the audit
chain byte for byte, each record compared with its source; one admin
record in the target says where its history came from and who moved it,
and both chains are verified. The target must be empty (a new state).
Stop the aqlguard processes on the source first: what it records after
the copy began is not copied.

Until the last record and the final checks are in, the target is marked
as an incomplete copy: run, serve, the admin commands (audit verify
among them) and doctor refuse it, saying "incomplete copy". A copy that
was stopped (killed, failed) is finished by running it again with
--resume; without it the rerun says what happened and changes nothing.

  --to postgres   this state directory's state into the PostgreSQL state
                  of [state] dsn and schema (or AQLGUARD_STATE_DSN)
  --to bbolt      that PostgreSQL state into this state directory
  --resume        finish an incomplete copy into the target: the same
                  source, stopped, at the audit record it was at when the
                  copy began; the rows are written again and the chain
                  goes on after the last record the target holds (it
                  continues, it does not start over)

The connection string is never a flag (a flag is visible to every user of
the machine): [state] dsn, or AQLGUARD_STATE_DSN.
`

// cmdStateCopy is `aqlguard state copy`: store.Copy between the state
// directory and the configured PostgreSQL state.
func cmdStateCopy(args []string, stdout, stderr io.Writer) int {
	fs, g := newFlags("state copy", stderr)
	to := fs.String("to", "", `"postgres" or "bbolt": the backend the state moves to`)
	resume := fs.Bool("resume", false, "finish an incomplete copy into the target (it continues where it stopped)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	if len(rest) > 0 || (*to != config.StatePostgres && *to != config.StateBolt) {
		fmt.Fprint(stderr, stateCopyUsage)
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	if pgstate.DSN(cfg.State.DSN) == "" {
		fmt.Fprintf(stderr, "aqlguard state copy: no PostgreSQL state: set [state] dsn, or %s\n", pgstate.DSNEnv)
		return 1
	}
	ctx := context.Background()
	// The target is opened as the copy, which may find it incomplete;
	// the source must be whole.
	pg, err := pgstate.Open(ctx, pgstate.Options{DSN: pgstate.DSN(cfg.State.DSN), Schema: cfg.State.Schema,
		Timeout: cfg.StateLockTimeout.Duration, IncompleteCopy: *to == config.StatePostgres})
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard state copy: %v\n", err)
		return 1
	}
	defer pg.Close()
	// The state directory's side, whatever backend the config runs on.
	local := *cfg
	local.Audit.Sync = string(store.SyncAlways) // a command's records are durable before it exits
	bolt, err := app.OpenStateDir(ctx, &local, store.Options{ReadOnly: *to == config.StatePostgres, IncompleteCopy: *to == config.StateBolt})
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard state copy: %v\n", err)
		return 1
	}
	defer bolt.Close()
	var from, into store.State = bolt, pg
	fromName, intoName := app.StateName(bolt), app.StateName(pg)
	if *to == config.StateBolt {
		from, into = pg, bolt
		fromName, intoName = intoName, fromName
	}
	sum, err := store.Copy(ctx, from, into, osUser(), time.Now(), store.CopyOptions{Resume: *resume})
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard state copy: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "copied state %s (%s) into state %s (%s): %d rows and audit records 1 to %d, byte for byte; "+
		"both chains verify, and record %d of the target says so\n",
		from.StateID(), fromName, into.StateID(), intoName, sum.Rows, sum.Head.Seq, sum.Head.Seq+1)
	return 0
}
