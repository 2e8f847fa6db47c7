package verify

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/internal/procfs"
)

// displayFinder looks for the user's graphical session beyond
// aqlguard's own environment. Its fields are the places it reads, so a
// test can give it a /proc and socket directories of its own.
type displayFinder struct {
	proc    string // /proc
	x11Dir  string // /tmp/.X11-unix
	runUser string // /run/user
	uid     int    // this user
	// start is the process whose ancestors are read (its parent first).
	start int
	// owner is a file's owner (nil: its Stat_t's uid).
	owner func(os.FileInfo) (int, bool)
	// answers reports whether a socket accepts a connection (nil: dial
	// it, bounded).
	answers func(path string) bool
}

func findOtherDisplay() (Display, error) {
	return displayFinder{proc: "/proc", x11Dir: "/tmp/.X11-unix", runUser: "/run/user", uid: os.Getuid(),
		start: os.Getpid()}.find()
}

// maxAncestors bounds the walk up the processes that started aqlguard.
const maxAncestors = 32

// dialWithin bounds the check that a display's socket answers.
const dialWithin = 500 * time.Millisecond

func (f displayFinder) find() (Display, error) {
	d, looked, ok := f.fromAncestors()
	if ok {
		return d, nil
	}
	d, why, ok := f.fromSockets()
	if ok {
		return d, nil
	}
	return Display{}, noDisplay(looked + "; " + why)
}

// fromAncestors is the display named by the nearest process that
// started aqlguard (its parent, its parent's parent, ...) and runs as
// this user, when its display answers. looked says what was read.
func (f displayFinder) fromAncestors() (d Display, looked string, ok bool) {
	pid := f.start
	var names []string
	stopped := ""
	for range maxAncestors {
		ppid, err := f.parent(pid)
		if err != nil || ppid <= 1 {
			break
		}
		pid = ppid
		if uid, err := f.procUID(pid); err != nil || uid != f.uid {
			// Another user's process is not read, nor what started it.
			stopped = fmt.Sprintf(" (pid %d, which started it, runs as another user: not read)", pid)
			break
		}
		name := f.comm(pid)
		names = append(names, fmt.Sprintf("%s (pid %d)", name, pid))
		vars, err := f.environ(pid)
		if err != nil || vars["DISPLAY"] == "" && vars["WAYLAND_DISPLAY"] == "" {
			continue
		}
		if !f.reachable(vars) {
			continue // a display that is gone (a session since closed)
		}
		return Display{Vars: vars, From: fmt.Sprintf("the environment of %s (pid %d), which started aqlguard", name, pid)}, "", true
	}
	if len(names) == 0 {
		return Display{}, "aqlguard's environment names none" + stopped, false
	}
	return Display{}, "neither aqlguard's environment nor the processes that started it (" + strings.Join(names, ", ") +
		") name a display that answers" + stopped, false
}

// reachable reports whether a display the variables name answers: its
// Wayland socket, or its local X socket. A display on another host
// (ssh -X's localhost:10.0) is taken as it is.
func (f displayFinder) reachable(vars map[string]string) bool {
	if w := vars["WAYLAND_DISPLAY"]; w != "" {
		sock := w
		if !filepath.IsAbs(sock) {
			sock = filepath.Join(vars["XDG_RUNTIME_DIR"], w)
		}
		if vars["XDG_RUNTIME_DIR"] != "" || filepath.IsAbs(w) {
			if f.answer(sock) {
				return true
			}
		}
	}
	x := vars["DISPLAY"]
	if x == "" {
		return false
	}
	n, local := localDisplay(x)
	if !local {
		return true
	}
	return n != "" && f.answer(filepath.Join(f.x11Dir, "X"+n))
}

// localDisplay is the number of a display on this machine's X socket
// (":0", ":1.0", "unix:2"); local is false for one on another host.
func localDisplay(d string) (n string, local bool) {
	host, rest, ok := strings.Cut(d, ":")
	if !ok || host != "" && host != "unix" {
		return "", false
	}
	n, _, _ = strings.Cut(rest, ".")
	if _, err := strconv.Atoi(n); err != nil {
		return "", true
	}
	return n, true
}

// fromSockets is this user's one graphical session, found by its
// sockets: a Wayland socket in the user's runtime directory, an X socket
// the user owns; and the session bus. why says why none was taken.
func (f displayFinder) fromSockets() (d Display, why string, ok bool) {
	vars := map[string]string{}
	var waylands, xs []string
	runtime := filepath.Join(f.runUser, strconv.Itoa(f.uid))
	if f.private(runtime) {
		matches, _ := filepath.Glob(filepath.Join(runtime, "wayland-*"))
		for _, m := range matches {
			if !strings.HasSuffix(m, ".lock") && f.ownSocket(m) && f.answer(m) {
				waylands = append(waylands, filepath.Base(m))
			}
		}
		if bus := filepath.Join(runtime, "bus"); f.ownSocket(bus) {
			vars["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=" + bus
		}
		vars["XDG_RUNTIME_DIR"] = runtime
	}
	if f.uid != 0 {
		// A socket root owns is a system X server's, whoever sits at it.
		matches, _ := filepath.Glob(filepath.Join(f.x11Dir, "X*"))
		for _, m := range matches {
			if n := strings.TrimPrefix(filepath.Base(m), "X"); isDigits(n) && f.ownSocket(m) && f.answer(m) {
				xs = append(xs, ":"+n)
			}
		}
	}
	sort.Strings(waylands)
	sort.Strings(xs)
	switch {
	case len(waylands) > 1:
		return Display{}, "this user has several Wayland sessions (" + strings.Join(waylands, ", ") + "), and aqlguard does not guess which one you look at", false
	case len(waylands) == 0 && len(xs) > 1:
		return Display{}, "this user has several X displays (" + strings.Join(xs, ", ") + "), and aqlguard does not guess which one you look at", false
	case len(waylands) == 0 && len(xs) == 0:
		return Display{}, "no Wayland socket in " + runtime + " and no X socket of this user's in " + f.x11Dir, false
	}
	if len(waylands) == 1 {
		vars["WAYLAND_DISPLAY"] = waylands[0]
	}
	if len(xs) == 1 {
		vars["DISPLAY"] = xs[0]
	}
	return Display{Vars: vars, From: "this user's session sockets"}, "", true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// private reports whether dir is a directory this user owns that no
// one else may enter or write (a runtime directory as logind makes it).
func (f displayFinder) private(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return false
	}
	uid, ok := f.ownerOf(fi)
	return ok && uid == f.uid
}

// ownSocket reports whether p is a socket this user owns.
func (f displayFinder) ownSocket(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&os.ModeSocket == 0 {
		return false
	}
	uid, ok := f.ownerOf(fi)
	return ok && uid == f.uid
}

func (f displayFinder) ownerOf(fi os.FileInfo) (int, bool) {
	if f.owner != nil {
		return f.owner(fi)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func (f displayFinder) answer(path string) bool {
	if f.answers != nil {
		return f.answers(path)
	}
	c, err := net.DialTimeout("unix", path, dialWithin)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// parent is a process's parent, from /proc/PID/stat.
func (f displayFinder) parent(pid int) (int, error) {
	st, err := procfs.ReadIn(f.proc, pid)
	return st.Ppid, err
}

// procUID is a process's real user id, from /proc/PID/status.
func (f displayFinder) procUID(pid int) (int, error) {
	raw, err := os.ReadFile(filepath.Join(f.proc, strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				return strconv.Atoi(fields[0])
			}
		}
	}
	return 0, errors.New("no Uid line in status")
}

// comm is a process's command name ("?" when it cannot be read).
func (f displayFinder) comm(pid int) string {
	raw, err := os.ReadFile(filepath.Join(f.proc, strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return visible(strings.TrimSpace(string(raw)), false)
}

// environ is the displayVars of a process's environment as it was
// started (/proc/PID/environ); nothing else of it is kept.
func (f displayFinder) environ(pid int) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(f.proc, strconv.Itoa(pid), "environ"))
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for _, kv := range bytes.Split(raw, []byte{0}) {
		name, value, ok := bytes.Cut(kv, []byte{'='})
		if !ok || len(value) == 0 {
			continue
		}
		for _, want := range displayVars {
			if string(name) == want {
				vars[want] = string(value)
			}
		}
	}
	return vars, nil
}
