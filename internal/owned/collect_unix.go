//go:build unix

package owned

import (
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/aqlguard/aqlguard/internal/procfs"
)

// CollectAsTheyEnd collects the exit status of each adopted process as
// it ends (on SIGCHLD), for as long as this process runs.
func CollectAsTheyEnd() {
	ended := make(chan os.Signal, 1)
	signal.Notify(ended, syscall.SIGCHLD)
	go func() {
		for range ended {
			Collect()
		}
	}()
}

// Collect collects the exit status of every ended child that this
// process did not start: not in its own process group, not started
// through Start. What a server leaves behind is in the server's group,
// or in one of its own.
func Collect() {
	own := syscall.Getpgrp()
	var ended []int
	for _, c := range Children() {
		if c.Ended && c.Pgrp != own {
			ended = append(ended, c.Pid)
		}
	}
	if len(ended) == 0 {
		return
	}
	// Whether one is ours is asked under the lock Start records under: a
	// process started meanwhile is recorded by now. (Reading /proc does
	// not hold up a server's start.)
	started.Lock()
	defer started.Unlock()
	ended = slices.DeleteFunc(ended, func(pid int) bool { return started.pids[pid] })
	Reap(ended)
}

// Reap collects the exit statuses of those of pids that have ended and
// reports how many are left. It waits for these pids only: a wait for
// any child would take the status of one os/exec is waiting for.
func Reap(pids []int) (left int) {
	for _, pid := range pids {
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); got == 0 && err == nil {
			left++
		}
	}
	return left
}

// Child is a child process whose exit status has not been collected.
type Child struct {
	Pid, Pgrp int
	Ended     bool // a zombie: it exited, its status is waiting
}

// Children lists this process's children (Linux; none elsewhere, where
// there is no /proc to read them from).
func Children() []Child {
	self := os.Getpid()
	var out []Child
	for _, p := range procfs.All() {
		if p.Ppid == self && p.State != 'X' {
			out = append(out, Child{Pid: p.Pid, Pgrp: p.Pgrp, Ended: p.State == 'Z'})
		}
	}
	return out
}
