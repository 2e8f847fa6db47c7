//go:build unix

package downstream

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SupervisorVerb is the hidden verb under which the aqlguard binary runs
// as the supervisor of one stdio server (Supervise).
const SupervisorVerb = "__supervise"

// Supervisor is the path of a binary that understands SupervisorVerb
// (aqlguard itself), or "" to start stdio servers directly. With it, a
// server and everything it starts are gone when aqlguard exits, however
// it exits; without it, a grandchild (npx → node) that ignores its
// closed stdin can outlive a SIGKILLed aqlguard.
var Supervisor string

// supervised returns the command that runs cmd under the supervisor.
func supervised(command string, args []string) *exec.Cmd {
	if Supervisor == "" {
		return exec.Command(command, args...)
	}
	return exec.Command(Supervisor, append([]string{SupervisorVerb, "--", command}, args...)...)
}

// Supervise runs `aqlguard __supervise -- CMD ARGS`: it starts CMD in a
// process group of its own with the supervisor's stdin, stdout and
// stderr (the server's MCP stream passes straight through), adopts every
// orphan among CMD's descendants (a subreaper, on Linux), and when CMD
// exits, or aqlguard dies (parent death signal on Linux, polling
// elsewhere), or it is told to stop (SIGTERM, SIGINT), it ends CMD's
// group and every descendant left: SIGTERM, then SIGKILL. It returns the
// exit status to exit with.
func Supervise(args []string) int {
	if len(args) < 2 || args[0] != "--" {
		fmt.Fprintln(os.Stderr, "usage: aqlguard "+SupervisorVerb+" -- COMMAND [ARGS...]")
		return 2
	}
	parent := os.Getppid()
	becomeSubreaper()
	dieWithParent(syscall.SIGTERM)
	if os.Getppid() != parent { // aqlguard died before the signal was armed
		return 1
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(args[1], args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "aqlguard: "+err.Error())
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	orphaned := time.NewTicker(500 * time.Millisecond)
	defer orphaned.Stop()
	for {
		select {
		case err := <-exited:
			cleanUp(cmd.Process.Pid)
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ee.ExitCode()
			}
			return 0
		case <-signals:
		case <-orphaned.C:
			if os.Getppid() == parent {
				continue
			}
		}
		// aqlguard is gone or wants us gone: so is the server.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(terminateAfter):
		}
		cleanUp(cmd.Process.Pid)
		return 1
	}
}

// cleanUp ends the server's process group and every descendant that was
// left to the supervisor, asking first and then killing.
func cleanUp(pgid int) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		_ = syscall.Kill(-pgid, sig)
		for _, pid := range adopted() {
			_ = syscall.Kill(pid, sig)
		}
		deadline := time.Now().Add(terminateAfter)
		for time.Now().Before(deadline) {
			reap()
			if len(adopted()) == 0 && syscall.Kill(-pgid, 0) != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	reap()
}

// reap collects the exit status of every child that has ended, so that
// adopted orphans do not linger as zombies.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}

// adopted lists the live processes whose parent is this one (on Linux,
// orphaned descendants: we are their subreaper).
func adopted() []int {
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []int
	for _, d := range dirs {
		stat, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 2 || f[1] != self || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(d)); err == nil {
			out = append(out, pid)
		}
	}
	return out
}
