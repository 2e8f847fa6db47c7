//go:build !linux

package pgstate

import (
	"syscall"
	"time"
)

// userTimeout: TCP_USER_TIMEOUT is Linux's; elsewhere keepalive alone
// bounds a silent server, and the server's own settings the rest.
func userTimeout(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
