//go:build unix && !linux

package downstream

import "syscall"

// setParentDeathSignal: only Linux has a parent death signal.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// becomeSubreaper: only Linux has subreapers; orphans go to init.
func becomeSubreaper() {}

// dieWithParent: only Linux has a parent death signal; the supervisor
// polls its parent instead.
func dieWithParent(syscall.Signal) {}
