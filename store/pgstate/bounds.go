package pgstate

import (
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Bounds on a silent peer. Every commit of every replica queues on the
// one row of state_head (group.go), so a replica whose link goes silent
// (no FIN, no RST: a cable, a firewall's dropped state, a frozen VM)
// while it holds that row's lock would hold every other replica: its
// session sits "idle in transaction" on the server, which by default
// waits for it for ever (and the kernel's keepalive, about two hours).
// Every connection the state opens is therefore bounded at both ends,
// from the one knob an operator already sets, state_lock_timeout (T,
// Options.Timeout), the time a call may wait for the state at all:
//
//   - idle_in_transaction_session_timeout = T, on the server: a
//     transaction of aqlguard's is never idle for longer, since the
//     client bounds the whole transaction by T; a holder that went
//     silent between two statements is ended there, its lock released,
//     and the others commit again. This is what frees the fleet.
//   - lock_timeout = T and statement_timeout = T, on the pool's
//     connections: a wait for the head row, or a statement, that its
//     client already gave up on ends on the server too, even when the
//     client's cancel request cannot get there. (Not on the connections
//     that hold a lease, whose pg_advisory_lock waits as long as a
//     question is open.)
//   - TCP keepalive after T idle, every keepaliveInterval, keepaliveCount
//     probes, and TCP_USER_TIMEOUT = T + keepaliveCount ×
//     keepaliveInterval, on both ends (the server's tcp_keepalives_* and
//     tcp_user_timeout; the client's dialer): a peer that stopped
//     answering is dropped within seconds, not hours, whether the
//     session is idle (a LISTEN, a lease) or has data in flight (a
//     server blocked writing to a client that is gone, which no timeout
//     above interrupts).
//
// A setting the connection string already gives (as a libpq parameter,
// e.g. `idle_in_transaction_session_timeout=0`) wins: it is the
// operator's word. The server settings need PostgreSQL 12 or later.
const (
	keepaliveInterval = time.Second
	keepaliveCount    = 3
)

// silentFor is how long a peer may stay silent, with data unanswered,
// before its connection is dropped at either end.
func silentFor(timeout time.Duration) time.Duration {
	return timeout + keepaliveCount*keepaliveInterval
}

// bound puts the bounds on a connection's configuration; pool says it
// is one of the pool's (commits, reads), which never wait for a lock
// longer than the state's timeout.
func bound(cfg *pgconn.Config, timeout time.Duration, pool bool) {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	set := func(name, value string) {
		if _, given := cfg.RuntimeParams[name]; !given {
			cfg.RuntimeParams[name] = value
		}
	}
	set("idle_in_transaction_session_timeout", ms(timeout))
	if pool {
		set("lock_timeout", ms(timeout))
		set("statement_timeout", ms(timeout))
	}
	idle := max(time.Second, timeout.Round(time.Second)) // the server counts whole seconds
	set("tcp_keepalives_idle", strconv.Itoa(int(idle/time.Second)))
	set("tcp_keepalives_interval", strconv.Itoa(int(keepaliveInterval/time.Second)))
	set("tcp_keepalives_count", strconv.Itoa(keepaliveCount))
	set("tcp_user_timeout", ms(silentFor(timeout)))
	d := &net.Dialer{
		Timeout: cfg.ConnectTimeout, // connect_timeout in the string; 0: none but the context's
		KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: max(time.Second, timeout),
			Interval: keepaliveInterval, Count: keepaliveCount},
		Control: userTimeout(silentFor(timeout)),
	}
	cfg.DialFunc = d.DialContext
}
