package downstream

import "syscall"

// setParentDeathSignal has the kernel SIGKILL the child when aqlguard's
// thread that started it dies, however aqlguard dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
