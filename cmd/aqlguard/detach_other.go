//go:build !unix

package main

import "os/exec"

// detach does nothing here: a child process outlives its parent on
// Windows by default.
func detach(*exec.Cmd) {}
