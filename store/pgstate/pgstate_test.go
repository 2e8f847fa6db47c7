package pgstate

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// openIn opens the state in the database dsn.
func openIn(t testing.TB, dsn string) *State {
	t.Helper()
	st, err := Open(context.Background(), Options{DSN: dsn, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return st
}

// TestConformance runs the State conformance suite on PostgreSQL: each
// open is another replica on the same database.
func TestConformance(t *testing.T) {
	cluster := pgtest.Shared(t)
	statetest.Run(t, statetest.Backend{
		Fresh: func(t testing.TB) func(t testing.TB) store.State {
			dsn := cluster.Database(t)
			return func(t testing.TB) store.State { return openIn(t, dsn) }
		},
		Disconnect: func(t *testing.T, st store.State) {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, st.(*State).dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
				WHERE application_name = $1 AND datname = current_database()`, WatchApplication).Scan(&n); err != nil || n == 0 {
				t.Fatalf("terminating the watch's connection: %d terminated, %v", n, err)
			}
		},
	})
}

// BenchmarkState: the guard's commits on PostgreSQL through a unix
// socket (statetest.Bench). The test cluster runs with fsync off: the
// figures are the protocol's and the backend's, not a disk's.
func BenchmarkState(b *testing.B) {
	cluster := pgtest.Shared(b)
	statetest.Bench(b, func(t testing.TB) func(t testing.TB) store.State {
		dsn := cluster.Database(t)
		return func(t testing.TB) store.State {
			st, err := Open(context.Background(), Options{DSN: dsn})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}
	})
}
