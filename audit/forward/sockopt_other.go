//go:build !linux

package forward

import (
	"syscall"
	"time"
)

// userTimeout is Linux's TCP_USER_TIMEOUT; elsewhere a frozen collector
// is noticed when TCP gives up on it.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
