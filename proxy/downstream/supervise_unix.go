//go:build unix

package downstream

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/internal/owned"
	"github.com/aqlguard/aqlguard/proxy/link"
)

// An aqlguard that starts stdio servers runs as two processes: the one
// its client started, which only supervises, and its child, the real
// aqlguard, which serves and starts the servers as its own children.
// Both are subreapers (on Linux), so a process a server leaves behind,
// even in a session of its own, is adopted by one of them rather than by
// init:
//   - the real aqlguard collects the exit status of what it adopted as
//     each ends (internal/owned), and ends the rest when it exits;
//   - when it dies without that chance (SIGKILL, a crash), its servers
//     get SIGKILL (parent death signal) and the supervisor, which adopts
//     everything left, ends it all and exits with the real one's status;
//   - when the supervisor dies, the real aqlguard gets SIGTERM (parent
//     death signal; elsewhere it polls its parent) and stops as on
//     SIGTERM, servers and adopted processes included.
//
// One supervisor per aqlguard, however many servers: each stdio server
// used to have a supervisor process of its own (~11 MB RSS each, most of
// it the pages of this binary).

// underSupervisor says this process is the real aqlguard, its parent the
// supervisor Supervise made.
var underSupervisor bool

// UnderSupervisor reports whether this process's parent is its
// supervisor (Supervise), whose own parent is then who started aqlguard.
func UnderSupervisor() bool { return underSupervisor }

// supervisedEnv tells the real aqlguard its supervisor's pid.
const supervisedEnv = "AQLGUARD_SUPERVISOR_PID"

// Supervise makes this process the supervisor of a real aqlguard run
// with the same arguments, and returns the exit code to exit with once
// that one has ended (ok true). It returns ok false in the real aqlguard
// (which then goes on serving) and where no binary to run can be found.
func Supervise() (code int, ok bool) {
	if pid := os.Getenv(supervisedEnv); pid != "" {
		// Servers must not inherit it: an aqlguard behind this one needs
		// a supervisor of its own.
		_ = os.Unsetenv(supervisedEnv)
		if pid == strconv.Itoa(os.Getppid()) {
			underSupervisor = true
			if becomeSubreaper() {
				owned.CollectAsTheyEnd()
			}
			watchParent(os.Getppid())
			syscall.CloseOnExec(groupsFD) // the servers' business it is not
			reported.to = os.NewFile(groupsFD, "supervisor")
			// Written through the poller, never by a thread blocked in
			// write(2) (see link.Pollable).
			if p, _, err := link.Pollable(reported.to); err == nil {
				reported.to = p
			}
			return 0, false
		}
	}
	exe, err := selfExecutable()
	if err != nil {
		return 0, false
	}
	becomeSubreaper()
	nonDumpable()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), supervisedEnv+"="+strconv.Itoa(os.Getpid()))
	// A group of its own, so a signal to the client's group (its kill of
	// what it started) reaches the supervisor, not both at once; but not
	// on a terminal, where a background group may not read it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !onTerminal()}
	setParentDeathSignal(cmd.SysProcAttr, syscall.SIGTERM)
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "aqlguard: starting the guarded process: "+err.Error())
		return 1, true
	}
	cmd.ExtraFiles = []*os.File{w} // groupsFD
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "aqlguard: starting the guarded process: "+err.Error())
		return 1, true
	}
	_ = w.Close()
	groups := newServerGroups(r)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	releaseCleanPages()
	for {
		select {
		case sig := <-signals:
			_ = cmd.Process.Signal(sig) // SIGHUP reloads, the others stop it
		case err := <-exited:
			groups.end()
			EndAdopted()
			return exitCode(err), true
		}
	}
}

// groupsFD is the descriptor on which the serving aqlguard tells its
// supervisor which process groups its stdio servers run in ("+PGID"
// when one starts, "-PGID" once it was ended), so that the supervisor
// ends those left when the serving aqlguard dies without ending them.
// On Linux the servers die with it anyway (parent death signal) and
// what they started is adopted; elsewhere this is all there is.
const groupsFD = 3

// reported is the serving aqlguard's end of groupsFD (nil elsewhere).
var reported struct {
	mu sync.Mutex
	to *os.File
}

// reportGroup tells the supervisor that a server's process group began
// (true) or was ended (false).
func reportGroup(pgid int, began bool) {
	reported.mu.Lock()
	defer reported.mu.Unlock()
	if reported.to == nil {
		return
	}
	sign := "-"
	if began {
		sign = "+"
	}
	if _, err := fmt.Fprintf(reported.to, "%s%d\n", sign, pgid); err != nil {
		reported.to = nil // the supervisor is gone; the parent death signal stops us
	}
}

// serverGroups are the process groups the serving aqlguard reported.
type serverGroups struct {
	mu   sync.Mutex
	live map[int]bool
	done chan struct{} // the report ended: every line is in live
}

func newServerGroups(r *os.File) *serverGroups {
	g := &serverGroups{live: map[int]bool{}, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			pgid, err := strconv.Atoi(strings.TrimLeft(line, "+-"))
			if err != nil || pgid <= 1 { // never -1 (every process) nor 0 (our own group)
				continue
			}
			g.mu.Lock()
			if line[0] == '+' {
				g.live[pgid] = true
			} else {
				delete(g.live, pgid)
			}
			g.mu.Unlock()
		}
	}()
	return g
}

// end ends the groups still live once the serving aqlguard is gone:
// SIGTERM, then SIGKILL to whatever is left after terminateAfter.
func (g *serverGroups) end() {
	select {
	case <-g.done: // its end of the pipe closed when it exited
	case <-time.After(time.Second):
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		alive := false
		for pgid := range g.live {
			alive = syscall.Kill(-pgid, sig) == nil || alive
		}
		if !alive {
			return
		}
		for deadline := time.Now().Add(terminateAfter); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			owned.Reap(adopted())
			if !g.anyAlive() {
				return
			}
		}
	}
}

func (g *serverGroups) anyAlive() bool {
	for pgid := range g.live {
		if syscall.Kill(-pgid, 0) == nil {
			return true
		}
	}
	return false
}

// selfExecutable is this binary, by its own path while that is still
// this binary, so that the serving process is named after it (ps, top,
// pkill and /proc/PID/comm show "aqlguard", where a process started
// through /proc/self/exe is named "exe"); /proc/self/exe if the file was
// replaced (go install) since this one started, which still is.
func selfExecutable() (string, error) {
	named, err := os.Executable()
	if _, serr := os.Stat("/proc/self/exe"); serr != nil {
		return named, err
	}
	if err != nil {
		return "/proc/self/exe", nil
	}
	return executableFor(named, "/proc/self/exe"), nil
}

// executableFor is named if it is the file running is, else running.
func executableFor(named, running string) string {
	a, err := os.Stat(named)
	if err != nil {
		return running
	}
	b, err := os.Stat(running)
	if err != nil || !os.SameFile(a, b) {
		return running
	}
	return named
}

func onTerminal() bool {
	for _, f := range []*os.File{os.Stdin, os.Stdout, os.Stderr} {
		if isTerminal(f) {
			return true
		}
	}
	return false
}

// exitCode is the code to exit with for a child that ended with err: its
// own, or 128 plus the signal that killed it, as a shell reports it.
func exitCode(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// EndAdopted ends every process this one adopted as a subreaper (what
// servers left behind), asking first and then killing, and collects
// their exit statuses. It looks again until none is left, since ending
// one orphans its children in turn, who come to this process too. The
// real aqlguard calls it as it exits, after its servers stopped: only
// adopted processes are its children then.
func EndAdopted() {
	sent := map[int]syscall.Signal{}
	sig, deadline := syscall.SIGTERM, time.Now().Add(terminateAfter)
	settled := false
	for {
		left := adopted()
		if len(left) == 0 {
			// Once more after a moment: a server that was still exiting
			// hands this process its orphans only as it goes, and one
			// left to init outlives everything.
			if settled {
				return
			}
			settled = true
			time.Sleep(100 * time.Millisecond)
			continue
		}
		settled = false
		if time.Now().After(deadline) {
			if sig == syscall.SIGKILL {
				return
			}
			sig, deadline = syscall.SIGKILL, time.Now().Add(terminateAfter)
		}
		for _, pid := range left {
			if sent[pid] != sig {
				_ = syscall.Kill(pid, sig)
				sent[pid] = sig
			}
		}
		if owned.Reap(left) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// adopted lists the processes whose parent is this one, ended ones
// included (their status is still to collect). Called once this
// process's own children are gone, they are what it adopted.
func adopted() []int {
	var out []int
	for _, c := range owned.Children() {
		out = append(out, c.Pid)
	}
	return out
}
