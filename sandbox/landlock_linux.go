package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// abi is the Landlock ABI version of the running kernel (0: none), read
// once.
var abi = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil {
		return 0
	}
	return v
})

// Support says what this machine's Landlock enforces of a grant.
func Support() Enforcement {
	return enforcementAt(abi())
}

// enforcementAt is what Landlock enforces at an ABI version.
func enforcementAt(v int) Enforcement {
	e := Enforcement{Mechanism: "Landlock", Version: v}
	if v < 1 {
		e.Mechanism = ""
		e.Missing = append(e.Missing, "everything: this kernel has no Landlock (it is older than 5.13, or Landlock is not enabled at boot: lsm= on the kernel command line); servers run unconfined")
		return e
	}
	e.Enforced = append(e.Enforced, "files: read, write, execute")
	if v >= 2 {
		e.Enforced = append(e.Enforced, "moving and linking files between directories")
	} else {
		e.Missing = append(e.Missing, "moving or linking a file to another directory is refused even within the grant (ABI 1)")
	}
	if v >= 3 {
		e.Enforced = append(e.Enforced, "truncating files")
	} else {
		e.Missing = append(e.Missing, "truncating a file outside the grant (needs ABI 3)")
	}
	if v >= 4 {
		e.Enforced = append(e.Enforced, "TCP connect and listen, by port")
	} else {
		e.Missing = append(e.Missing, "the network: TCP rules need ABI 4 (Linux 6.7)")
	}
	if v >= 5 {
		e.Enforced = append(e.Enforced, "ioctl on devices")
	}
	if v >= 6 {
		e.Enforced = append(e.Enforced, "signals and abstract unix sockets to processes outside the sandbox")
	} else {
		e.Missing = append(e.Missing, "signals and abstract unix sockets to other processes of the user (needs ABI 6)")
	}
	e.Missing = append(e.Missing, "UDP, and connecting to pathname unix sockets (Landlock rules of ABI 9 and 10, not asked for yet)",
		"hosts: TCP rules are by port, so a granted port is open on every host")
	return e
}

// fsAccess are the filesystem rights aqlguard handles: all of Landlock
// ABI 7's, the newest whose rules it asks for (what a newer kernel adds,
// pathname unix sockets in 9 and UDP in 10, is not asked for yet, and
// Support says so), best effort down to what the kernel has.
var fsAccess = landlock.V7.HandledAccessFS

// rules is g as Landlock rules: each place by whether it is a directory
// or a file (a rule with a directory's rights on a file is refused by
// the kernel); places that are not there are left out.
func rules(g Grant, v int) []landlock.Rule {
	var out []landlock.Rule
	for _, set := range []struct {
		places []string
		write  bool
	}{{g.Read, false}, {g.Write, true}} {
		for _, p := range set.places {
			fi, err := os.Stat(p)
			if err != nil {
				continue
			}
			var r landlock.FSRule
			switch {
			case fi.IsDir() && set.write:
				r = landlock.RWDirs(p)
				if v >= 2 {
					r = r.WithRefer() // moving files within the grant
				}
			case fi.IsDir():
				r = landlock.RODirs(p)
			case set.write:
				r = landlock.RWFiles(p)
			default:
				r = landlock.ROFiles(p)
			}
			out = append(out, r)
		}
	}
	if g.Network == NetPorts || g.Network == NetNone {
		for _, port := range g.Connect {
			out = append(out, landlock.ConnectTCP(port))
		}
		for _, port := range g.Bind {
			out = append(out, landlock.BindTCP(port))
		}
	}
	return out
}

// handledRights is the Landlock ruleset's handled rights for g, best effort down
// to what the kernel has.
func handledRights(g Grant) landlock.Config {
	c := landlock.Config{HandledAccessFS: fsAccess, Scoped: landlock.V7.Scoped}
	if g.Network != NetAny {
		c.HandledAccessNet = landlock.V7.HandledAccessNet
	}
	return c.BestEffort()
}

// confineThread confines the calling OS thread, which the caller has
// locked and never unlocks (it must end with its goroutine), to g.
func confineThread(g Grant) error {
	fd, flags, err := handledRights(g).NewRulesetFD(rules(g, abi())...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return nil // no Landlock: Support says so
	}
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// Launch starts a confined process: start (which starts it: cmd.Start)
// runs on an OS thread confined to g first, and then wait (which waits
// for it) on the same thread, which ends with it. A child inherits the
// Landlock domain of the thread that made it, and its parent-death
// signal is tied to that thread: so the thread lives as long as the
// child. Launch returns when start has, with its error or the
// confinement's; a grant that is Off starts unconfined, on the same
// terms.
func Launch(g Grant, cmd *exec.Cmd, start func() error, wait func()) error {
	if g.Off {
		if err := start(); err != nil {
			return err
		}
		go wait()
		return nil
	}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := confineThread(g); err != nil {
			started <- fmt.Errorf("confining the server: %w", err)
			return
		}
		if err := start(); err != nil {
			started <- err
			return
		}
		started <- nil
		wait()
	}()
	return <-started
}
