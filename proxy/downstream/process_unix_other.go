//go:build unix && !linux

package downstream

import (
	"os"
	"syscall"
	"time"
)

// setParentDeathSignal: only Linux has a parent death signal.
func setParentDeathSignal(*syscall.SysProcAttr, syscall.Signal) {}

// becomeSubreaper: only Linux has subreapers; orphans go to init.
func becomeSubreaper() bool { return false }

// nonDumpable: no PR_SET_DUMPABLE here; other users' processes are kept
// out by the system.
func nonDumpable() {}

// watchParent stops this process as SIGTERM does once its supervisor
// (parent) is gone: without a parent death signal, it polls.
func watchParent(parent int) {
	go func() {
		for range time.Tick(500 * time.Millisecond) {
			if syscall.Getppid() != parent {
				_ = syscall.Kill(syscall.Getpid(), syscall.SIGTERM)
				return
			}
		}
	}()
}

// isTerminal: a character device, which a terminal is (so is /dev/null,
// which only costs the real aqlguard a process group of its own).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// releaseCleanPages: only done on Linux.
func releaseCleanPages() {}
