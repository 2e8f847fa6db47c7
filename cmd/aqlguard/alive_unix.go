//go:build unix

package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processGone reports whether p ("host/pid", as audit records name
// processes) names a process of this machine that is no longer running.
// It says false when it cannot tell (another host, another user's
// process, a malformed name).
func processGone(p string) bool {
	host, pidText, ok := strings.Cut(p, "/")
	if !ok {
		return false
	}
	if h, err := os.Hostname(); err != nil || h != host {
		return false
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil || pid <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
