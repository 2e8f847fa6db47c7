//go:build unix

package downstream

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts a stdio server in a process group of its own, so
// that it and everything it starts (npx → node) can be stopped together,
// and, on Linux, has the kernel kill it when aqlguard dies.
func ownProcessGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGKILL)
}

func terminateGroup(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGTERM) }

func killGroup(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGKILL) }

func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	// The group id is the child's pid (Setpgid with Pgid 0).
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
