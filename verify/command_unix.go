//go:build unix

package verify

import (
	"os/exec"
	"syscall"
)

// killGroup makes the command its own process group and, when its context
// ends, asks the group to stop (SIGTERM): a program whose question ended
// may clean up (the spool example removes its question file). What is
// still running stopGrace later is killed (endGroup): a shell script's
// children (a sleep, a pager) must not outlive the question.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	}
}

// endGroup kills what is left of the command's process group once the
// command has been waited for.
func endGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
