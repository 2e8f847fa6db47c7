//go:build unix && !linux

package downstream

import "syscall"

// setParentDeathSignal: only Linux has a parent death signal.
func setParentDeathSignal(*syscall.SysProcAttr) {}
