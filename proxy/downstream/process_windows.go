package downstream

import "os/exec"

func ownProcessGroup(*exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { killGroup(cmd) }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// Supervise is not available on Windows: servers are started directly.
func Supervise() (code int, ok bool) { return 0, false }

// EndAdopted: Windows has no adoption of orphans.
func EndAdopted() {}

// reportGroup: Windows has no supervisor to tell.
func reportGroup(int, bool) {}

// UnderSupervisor: Windows has no supervisor.
func UnderSupervisor() bool { return false }
