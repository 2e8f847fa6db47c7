//go:build !unix

package verify

import "os/exec"

// killGroup is a no-op where process groups are not available; the
// context still kills the command itself.
func killGroup(*exec.Cmd) {}

// endGroup: see killGroup.
func endGroup(*exec.Cmd) {}
