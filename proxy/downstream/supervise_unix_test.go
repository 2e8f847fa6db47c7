//go:build unix

package downstream

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/owned"
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

// TestEndAdoptedCollectsTheEnded: what ended before EndAdopted looked is
// collected too, not left a zombie.
func TestEndAdoptedCollectsTheEnded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("children are read from /proc")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); !ended(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d did not end", pid)
		}
	}
	EndAdopted()
	for _, c := range owned.Children() {
		if c.Pid == pid {
			t.Fatalf("%d is still there to collect (ended %v)", pid, c.Ended)
		}
	}
}

func ended(pid int) bool {
	for _, c := range owned.Children() {
		if c.Pid == pid {
			return c.Ended
		}
	}
	return false
}

// TestSelfExecutable: the serving aqlguard is started by the binary's own
// path (so it is named after it), unless that path now holds another
// file (a go install since), when /proc/self/exe still runs this one.
func TestSelfExecutable(t *testing.T) {
	named, err := os.Executable()
	if err != nil {
		t.Skip("no executable path here:", err)
	}
	if got, err := selfExecutable(); err != nil || got != named {
		t.Fatalf("selfExecutable() = %q, %v; want %q", got, err, named)
	}
	dir := t.TempDir()
	running, replaced := filepath.Join(dir, "running"), filepath.Join(dir, "aqlguard")
	if err := os.WriteFile(running, []byte("old"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(running, replaced); err != nil {
		t.Fatal(err)
	}
	if got := executableFor(replaced, running); got != replaced {
		t.Fatalf("the same file: %q, want %q", got, replaced)
	}
	if err := os.Remove(replaced); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replaced, []byte("new"), 0o700); err != nil {
		t.Fatal(err)
	}
	if got := executableFor(replaced, running); got != running {
		t.Fatalf("a replaced file: %q, want %q", got, running)
	}
}
