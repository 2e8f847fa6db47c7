package pgstate

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// WatchApplication is the application_name of Watch's connections (in
// pg_stat_activity).
const WatchApplication = "aqlguard watch"

// Watch backoff after a lost connection.
const (
	watchRetryMin = 50 * time.Millisecond
	watchRetryMax = 2 * time.Second
)

// Watch calls changed with the generation once it listens, then each
// time it moves, from the notifications commits send, on a connection of
// its own, until ctx ends. When that connection is lost it reconnects (with backoff), and
// reads the generation again once listening: a change committed while
// nothing listened is reported then, not missed.
func (s *State) Watch(ctx context.Context, changed func(gen uint64)) error {
	var last uint64
	first := true
	report := func(gen uint64) {
		if first || gen > last {
			first, last = false, gen
			changed(gen)
		}
	}
	wait := watchRetryMin
	for {
		err := s.listen(ctx, report)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("state database (PostgreSQL): listening for changes failed; reconnecting", "schema", s.schema, "err", err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, watchRetryMax)
	}
}

// listen connects, listens, re-reads the generation, and reports
// notifications until the connection fails.
func (s *State) listen(ctx context.Context, report func(uint64)) error {
	conn, err := s.connect(ctx, WatchApplication)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return err
	}
	// Listening: whatever committed from here on is notified; what
	// committed before is in the generation.
	var g int64
	if err := conn.QueryRow(ctx, `SELECT generation FROM `+s.t.head+` WHERE id = 1`).Scan(&g); err != nil {
		return err
	}
	report(uint64(g))
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		gen, err := strconv.ParseUint(n.Payload, 10, 64)
		if err != nil {
			continue // not ours
		}
		report(gen)
	}
}
