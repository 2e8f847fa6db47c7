package downstream

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// setParentDeathSignal has the kernel SIGKILL the child when aqlguard's
// thread that started it dies, however aqlguard dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// becomeSubreaper makes this process the parent of its orphaned
// descendants, so the supervisor can end them.
func becomeSubreaper() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// dieWithParent has the kernel send sig when the parent dies.
func dieWithParent(sig syscall.Signal) { _ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(sig), 0, 0, 0) }
