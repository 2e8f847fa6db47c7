package forward

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeout makes the kernel end a connection whose sent data stays
// unacknowledged for d (TCP_USER_TIMEOUT): a collector that froze
// without closing its connection (a hung machine: no FIN, no RST) is
// then a lost connection within d, not after the ~15 minutes of TCP's
// retransmissions.
func userTimeout(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return serr
	}
}
