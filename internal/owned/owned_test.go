//go:build linux

package owned

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// ended waits until pid is a zombie child of this process.
func ended(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for _, c := range Children() {
			if c.Pid == pid && c.Ended {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d did not end", pid)
		}
	}
}

func child(t *testing.T, ownGroup bool) *exec.Cmd {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
	return cmd
}

// TestCollect: Collect takes the status of an ended child nobody
// started through Start in a group of its own (what a server left
// behind), and leaves those of the children this process waits for: one
// started through Start, and one in its own process group.
func TestCollect(t *testing.T) {
	mine := child(t, true)
	if err := Start(mine); err != nil {
		t.Fatal(err)
	}
	inGroup := child(t, false)
	if err := inGroup.Start(); err != nil {
		t.Fatal(err)
	}
	adopted := child(t, true)
	if err := adopted.Start(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{mine, inGroup, adopted} {
		ended(t, c.Process.Pid)
	}
	Collect()
	for _, c := range Children() {
		if c.Pid == adopted.Process.Pid {
			t.Error("the adopted child's status was not collected")
		}
	}
	if err := Wait(mine); err != nil {
		t.Errorf("Wait of the command started through Start: %v", err)
	}
	if err := inGroup.Wait(); err != nil {
		t.Errorf("Wait of the command in this process's group: %v", err)
	}
	if err := adopted.Wait(); err == nil {
		t.Error("the adopted child was still there to wait for")
	}
}
