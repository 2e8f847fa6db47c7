//go:build unix

package downstream

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestServerGroupsEndsWhatWasLeft: the supervisor ends the process
// groups the serving aqlguard reported as begun and did not report as
// ended, and no other.
func TestServerGroupsEndsWhatWasLeft(t *testing.T) {
	start := func() *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })
		return cmd
	}
	left, ended := start(), start()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	groups := newServerGroups(r)
	fmt.Fprintf(w, "+%d\n+%d\n-%d\n+1\nnonsense\n", left.Process.Pid, ended.Process.Pid, ended.Process.Pid)
	_ = w.Close() // as when the serving aqlguard dies
	groups.end()
	if err := left.Wait(); err == nil {
		t.Error("the group left behind was not ended")
	}
	if err := syscall.Kill(ended.Process.Pid, 0); err != nil {
		t.Errorf("a group reported as ended was signalled: %v", err)
	}
}
