//go:build !linux && !darwin

package sandbox

import (
	"os/exec"
	"runtime"
)

// Support: no mechanism of this system is used yet.
func Support() Enforcement {
	why := "everything: aqlguard has no sandbox for " + runtime.GOOS + " yet; servers run with all their user may touch"
	if runtime.GOOS == "windows" {
		why = "everything: on Windows aqlguard does not confine servers yet (an AppContainer or a restricted token would be the way); servers run with all their user may touch"
	}
	return Enforcement{Missing: []string{why}}
}

// Launch starts the process unconfined (Support says so).
func Launch(_ Grant, _ *exec.Cmd, start func() error, wait func()) error {
	if err := start(); err != nil {
		return err
	}
	go wait()
	return nil
}
