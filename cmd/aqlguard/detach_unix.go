//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach starts cmd in a session of its own: it outlives the process
// that started it, and a signal to that one's group does not reach it.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
