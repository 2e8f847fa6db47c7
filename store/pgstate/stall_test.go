//go:build linux

package pgstate

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"golang.org/x/sys/unix"

	"github.com/aqlguard/aqlguard/internal/fixture/faultinject"
	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
	"github.com/aqlguard/aqlguard/store"
)

// relayTo is a faultinject.Relay to the test cluster's unix socket, and
// the connection string that goes through it (TCP, loopback).
func relayTo(t testing.TB, dsn string) (*faultinject.Relay, string) {
	t.Helper()
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(cfg.Host, ".s.PGSQL."+strconv.Itoa(int(cfg.Port)))
	r := faultinject.NewRelay(t, func() (net.Conn, error) { return net.Dial("unix", socket) })
	return r, "host=127.0.0.1 port=" + strconv.Itoa(r.Addr().Port) + " user=" + cfg.User + " dbname=" + cfg.Database + " sslmode=disable"
}

// recordOnly is a commit that appends one record.
func recordOnly(result string) func(store.View) (store.Changes, error) {
	return func(store.View) (store.Changes, error) {
		return store.Changes{Records: []store.Record{{Time: groupT0, Kind: "decision", Principal: "claude", Result: result}}}, nil
	}
}

// silentHolder runs one stall: replica a (through relay) takes the
// head's lock, and the relay goes silent before a's writes and COMMIT
// reach the server. It returns how long after the stall replica b
// committed again (b commits the whole time, as calls keep coming), or
// fails the test once within has passed.
func silentHolder(t testing.TB, a, b *State, relay *faultinject.Relay, within time.Duration) time.Duration {
	t.Helper()
	ctx := context.Background()
	stalled := make(chan time.Time, 1)
	var once sync.Once
	a.locked = func() {
		once.Do(func() {
			relay.Stall()
			stalled <- time.Now()
		})
	}
	defer func() { a.locked = nil }()
	held := make(chan error, 1)
	go func() {
		_, err := a.Commit(ctx, recordOnly("a, silent"))
		held <- err
	}()
	var at time.Time
	select {
	case at = <-stalled:
	case err := <-held:
		t.Fatalf("replica a committed without taking the head's lock through the relay: %v", err)
	}
	for {
		_, err := b.Commit(ctx, recordOnly("b"))
		if err == nil {
			took := time.Since(at)
			if aerr := <-held; aerr == nil {
				t.Error("replica a's commit, whose COMMIT never reached the server, succeeded")
			}
			return took
		}
		if time.Since(at) > within {
			t.Fatalf("replica b could not commit for %s after replica a went silent holding the head's lock: %v", within, err)
		}
	}
}

// A replica whose link goes silent (no FIN, no RST) while it holds the
// audit head's row lock holds the others only for about
// state_lock_timeout: the server ends its transaction
// (idle_in_transaction_session_timeout), and the other replica commits
// again by itself; the silent one serves again when its link comes
// back; the chain is whole, without the silent commit. (Before the
// bounds, the server waited for the silent session for ever, and every
// other replica refused every call.)
func TestSilentHolderIsEnded(t *testing.T) {
	dsn := pgtest.Shared(t).Database(t)
	relay, through := relayTo(t, dsn)
	const timeout = time.Second
	ctx := context.Background()
	a, err := Open(ctx, Options{DSN: through, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, Options{DSN: dsn, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, st := range []*State{a, b} {
		if _, err := st.Commit(ctx, recordOnly("before")); err != nil {
			t.Fatal(err)
		}
	}
	took := silentHolder(t, a, b, relay, silentFor(timeout)+10*time.Second)
	t.Logf("replica b committed again %s after replica a went silent holding the head's lock (state_lock_timeout %s)", took, timeout)
	relay.Resume()
	var aerr error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, aerr = a.Commit(ctx, recordOnly("a, back")); aerr == nil {
			break
		}
	}
	if aerr != nil {
		t.Fatalf("replica a did not commit again once its link was back: %v", aerr)
	}
	n, err := b.VerifyChain(ctx)
	if err != nil {
		t.Fatalf("the chain: %v", err)
	}
	var silent int
	if err := b.pool.QueryRow(ctx, `SELECT count(*) FROM `+b.t.records+` WHERE raw LIKE '%a, silent%'`).Scan(&silent); err != nil || silent != 0 {
		t.Errorf("records of the silent commit in the chain: %d (%v)", silent, err)
	}
	t.Logf("%d records, one chain", n)
}

// BenchmarkSilentHolder measures, at the default state_lock_timeout,
// the time from a replica's link going silent while it holds the head's
// lock to another replica committing again (figures in docs/deploy.md,
// section 9; run with -benchtime=5x for five stalls).
func BenchmarkSilentHolder(b *testing.B) {
	dsn := pgtest.Shared(b).Database(b)
	relay, through := relayTo(b, dsn)
	ctx := context.Background()
	timeout := store.DefaultTimeout
	other, err := Open(ctx, Options{DSN: dsn, Timeout: timeout})
	if err != nil {
		b.Fatal(err)
	}
	defer other.Close()
	var total, worst time.Duration
	for i := range b.N {
		silent, err := Open(ctx, Options{DSN: through, Timeout: timeout})
		if err != nil {
			b.Fatal(err)
		}
		took := silentHolder(b, silent, other, relay, silentFor(timeout)+30*time.Second)
		relay.Resume()
		silent.Close()
		b.Logf("stall %d: another replica committed again after %s", i+1, took.Round(time.Millisecond))
		total += took
		worst = max(worst, took)
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-serve/stall")
	b.ReportMetric(float64(worst.Milliseconds()), "worst-ms")
}

// Every connection the state opens carries the bounds: the server's
// session settings (the pool's, and a lease's without the lock and
// statement timeouts, which would end a wait for a question's turn),
// and on TCP the client's keepalive and TCP_USER_TIMEOUT; a setting the
// connection string gives wins.
func TestConnectionsAreBounded(t *testing.T) {
	dsn := pgtest.Shared(t).Database(t)
	_, through := relayTo(t, dsn)
	ctx := context.Background()
	const timeout = 3 * time.Second
	st, err := Open(ctx, Options{DSN: through + " statement_timeout=7000", Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	show := func(q queryer, name string) string {
		var v string
		if err := q.QueryRow(ctx, `SELECT current_setting($1)`, name).Scan(&v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	// The server's end of the relay is its unix socket, where it shows
	// the TCP settings as 0: that they came from the client is what can
	// be seen of them.
	sent := func(q queryer, name string) bool {
		var source string
		if err := q.QueryRow(ctx, `SELECT source FROM pg_settings WHERE name = $1`, name).Scan(&source); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return source == "client"
	}
	for name, want := range map[string]string{
		"idle_in_transaction_session_timeout": "3s",
		"lock_timeout":                        "3s",
		"statement_timeout":                   "7s", // the connection string's
	} {
		if got := show(st.pool, name); got != want {
			t.Errorf("the pool's %s = %s, want %s", name, got, want)
		}
	}
	for _, name := range []string{"tcp_keepalives_idle", "tcp_keepalives_interval", "tcp_keepalives_count", "tcp_user_timeout"} {
		if !sent(st.pool, name) {
			t.Errorf("the pool's connections do not set %s", name)
		}
	}
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkSocket(t, conn.Conn().PgConn().Conn(), 3, 6000)
	conn.Release()

	lease, err := st.connect(ctx, "aqlguard test lease")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close(ctx)
	for name, want := range map[string]string{"idle_in_transaction_session_timeout": "3s", "lock_timeout": "0", "statement_timeout": "7s"} {
		if got := show(lease, name); got != want {
			t.Errorf("a lease connection's %s = %s, want %s", name, got, want)
		}
	}
	if !sent(lease, "tcp_user_timeout") {
		t.Error("a lease connection does not set tcp_user_timeout")
	}
	checkSocket(t, lease.PgConn().Conn(), 3, 6000)
}

// checkSocket checks a client socket's keepalive and TCP_USER_TIMEOUT.
func checkSocket(t *testing.T, c any, idle, userMS int) {
	t.Helper()
	sc, ok := c.(syscall.Conn)
	if !ok {
		t.Fatalf("the connection is a %T, not a socket", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	var errs []error
	_ = raw.Control(func(fd uintptr) {
		for name, opt := range map[string][2]int{
			"SO_KEEPALIVE":     {unix.SOL_SOCKET, unix.SO_KEEPALIVE},
			"TCP_KEEPIDLE":     {unix.IPPROTO_TCP, unix.TCP_KEEPIDLE},
			"TCP_KEEPINTVL":    {unix.IPPROTO_TCP, unix.TCP_KEEPINTVL},
			"TCP_KEEPCNT":      {unix.IPPROTO_TCP, unix.TCP_KEEPCNT},
			"TCP_USER_TIMEOUT": {unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT},
		} {
			v, err := unix.GetsockoptInt(int(fd), opt[0], opt[1])
			errs = append(errs, err)
			got[name] = v
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"SO_KEEPALIVE": 1, "TCP_KEEPIDLE": idle, "TCP_KEEPINTVL": 1, "TCP_KEEPCNT": 3, "TCP_USER_TIMEOUT": userMS}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("the client socket's %s = %d, want %d", k, got[k], w)
		}
	}
}
