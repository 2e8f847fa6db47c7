package downstream

import "os/exec"

func ownProcessGroup(*exec.Cmd) {}

func terminateGroup(cmd *exec.Cmd) { killGroup(cmd) }

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// SupervisorVerb is unused on Windows: servers are started directly.
const SupervisorVerb = "__supervise"

// Supervisor is ignored on Windows.
var Supervisor string

func supervised(command string, args []string) *exec.Cmd { return exec.Command(command, args...) }

// Supervise is not available on Windows.
func Supervise([]string) int { return 2 }
