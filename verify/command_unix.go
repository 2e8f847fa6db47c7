//go:build unix

package verify

import (
	"os/exec"
	"syscall"
)

// killGroup makes the command its own process group and, when its context
// ends, kills the group: a shell script's children (a sleep, a pager)
// must not outlive the question.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
