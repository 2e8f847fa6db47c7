package e2e

import (
	"os/exec"
	"syscall"
)

// diesWithTest has the kernel kill cmd when the test binary dies: a test
// run killed by its -timeout runs no Cleanup, and an aqlguard it started
// would serve on as an orphan, loading the machine for the next run.
func diesWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
