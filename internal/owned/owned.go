// Package owned keeps apart the processes aqlguard starts and the ones
// it adopts.
//
// The serving aqlguard is a subreaper (Linux): what its servers leave
// behind is adopted by it, and it must collect their exit statuses as
// they end, or a long session fills up with zombies. But a wait for any
// child would take the status of a process os/exec is waiting for (a
// server, a verification command), whose Wait would then fail. So the
// collector waits by pid, for ended children only, and leaves alone
// those in this process's own process group (every command aqlguard runs
// in it) and those started through Start, which records them under the
// lock the collector takes. A command aqlguard runs in a process group
// of its own must be started with Start and waited for with Wait.
package owned

import (
	"os/exec"
	"sync"
)

var started struct {
	sync.Mutex
	pids map[int]bool
}

// Start starts cmd and records it as this process's own until Wait.
func Start(cmd *exec.Cmd) error {
	started.Lock()
	defer started.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if started.pids == nil {
		started.pids = map[int]bool{}
	}
	started.pids[cmd.Process.Pid] = true
	return nil
}

// Wait waits for a command Start started.
func Wait(cmd *exec.Cmd) error {
	err := cmd.Wait()
	started.Lock()
	delete(started.pids, cmd.Process.Pid)
	started.Unlock()
	return err
}
