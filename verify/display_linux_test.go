package verify

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeSession is a /proc and socket directories of a test's own: the
// processes that started aqlguard, and the sockets of sessions.
type fakeSession struct {
	t                     *testing.T
	proc, x11Dir, runUser string
	owners                map[string]int // by base name; files not listed are this user's
	listeners             []net.Listener
	uid                   int
}

func newFakeSession(t *testing.T) *fakeSession {
	root := t.TempDir()
	s := &fakeSession{t: t, proc: filepath.Join(root, "proc"), x11Dir: filepath.Join(root, "x11"), runUser: filepath.Join(root, "ru"),
		owners: map[string]int{}, uid: 1000}
	for _, d := range []string{s.proc, s.x11Dir, s.runUser} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, l := range s.listeners {
			_ = l.Close()
		}
	})
	return s
}

// process adds a process: its parent, user and environment.
func (s *fakeSession) process(pid, ppid, uid int, comm string, env ...string) {
	dir := filepath.Join(s.proc, strconv.Itoa(pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	u := strconv.Itoa(uid)
	files := map[string]string{
		"stat":    strconv.Itoa(pid) + " (" + comm + ") S " + strconv.Itoa(ppid) + " " + strconv.Itoa(pid) + " 0 0",
		"status":  "Name:\t" + comm + "\nUid:\t" + u + "\t" + u + "\t" + u + "\t" + u + "\n",
		"comm":    comm + "\n",
		"environ": strings.Join(env, "\x00") + "\x00",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
}

// socket listens on a unix socket at path (so that it answers).
func (s *fakeSession) socket(path string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		s.t.Fatal(err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		s.t.Fatal(err)
	}
	s.listeners = append(s.listeners, l)
}

func (s *fakeSession) finder(start int) displayFinder {
	return displayFinder{proc: s.proc, x11Dir: s.x11Dir, runUser: s.runUser, uid: s.uid, start: start,
		owner: func(fi os.FileInfo) (int, bool) {
			if uid, ok := s.owners[fi.Name()]; ok {
				return uid, true
			}
			return s.uid, true
		}}
}

func TestFindDisplayOfTheClient(t *testing.T) {
	s := newFakeSession(t)
	s.socket(filepath.Join(s.x11Dir, "X5"))
	// aqlguard (100) ← its supervisor (90) ← the client, with the
	// minimal environment of the TypeScript SDK (80) ← the desktop's
	// terminal (70), whose environment names the display.
	s.process(100, 90, 1000, "aqlguard", "HOME=/home/u", "PATH=/usr/bin")
	s.process(90, 80, 1000, "aqlguard", "HOME=/home/u", "PATH=/usr/bin")
	s.process(80, 70, 1000, "node", "HOME=/home/u", "LOGNAME=u", "PATH=/usr/bin", "SHELL=/bin/bash", "TERM=xterm", "USER=u")
	s.process(70, 1, 1000, "gnome-terminal-", "DISPLAY=:5", "XAUTHORITY=/run/user/1000/gdm/Xauthority",
		"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus", "AWS_SECRET_ACCESS_KEY=not-taken", "LD_PRELOAD=/tmp/x.so")
	d, err := s.finder(100).find()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"DISPLAY": ":5", "XAUTHORITY": "/run/user/1000/gdm/Xauthority",
		"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus"}
	if len(d.Vars) != len(want) {
		t.Errorf("vars %v, want %v", d.Vars, want)
	}
	for k, v := range want {
		if d.Vars[k] != v {
			t.Errorf("%s = %q, want %q", k, d.Vars[k], v)
		}
	}
	if d.From != "the environment of gnome-terminal- (pid 70), which started aqlguard" {
		t.Errorf("from %q", d.From)
	}
	env := d.env([]string{"PATH=/usr/bin", "DISPLAY=", "HOME=/home/u"})
	if strings.Join(env, " ") != "PATH=/usr/bin HOME=/home/u DISPLAY=:5 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus XAUTHORITY=/run/user/1000/gdm/Xauthority" {
		t.Errorf("env %q", env)
	}
}

func TestFindDisplayNeverTakesAnotherUsers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(s *fakeSession)
		want  string // the display found ("" none)
		why   string // in the error when none
	}{
		{name: "a process of another user is not read, nor its parents",
			setup: func(s *fakeSession) {
				s.socket(filepath.Join(s.x11Dir, "X5"))
				s.owners["X5"] = 0 // a system X server's
				s.process(100, 90, 1000, "aqlguard")
				s.process(90, 80, 2000, "sudo", "DISPLAY=:5")
				s.process(80, 1, 1000, "bash", "DISPLAY=:5")
			},
			why: "names none (pid 90, which started it, runs as another user: not read)"},
		{name: "a display that is gone is passed over for the next",
			setup: func(s *fakeSession) {
				s.socket(filepath.Join(s.x11Dir, "X6"))
				s.process(100, 90, 1000, "aqlguard")
				s.process(90, 80, 1000, "old-session", "DISPLAY=:5")
				s.process(80, 1, 1000, "bash", "DISPLAY=:6")
			},
			want: "DISPLAY=:6"},
		{name: "a display on another host is taken as it is (ssh -X)",
			setup: func(s *fakeSession) {
				s.process(100, 90, 1000, "aqlguard")
				s.process(90, 1, 1000, "sshd-shell", "DISPLAY=localhost:10.0")
			},
			want: "DISPLAY=localhost:10.0"},
		{name: "this user's one Wayland session, and its bus",
			setup: func(s *fakeSession) {
				s.process(100, 1, 1000, "aqlguard")
				if err := os.Mkdir(filepath.Join(s.runUser, "1000"), 0o700); err != nil {
					t.Fatal(err)
				}
				s.socket(filepath.Join(s.runUser, "1000", "wayland-0"))
				s.socket(filepath.Join(s.runUser, "1000", "bus"))
				s.socket(filepath.Join(s.x11Dir, "X0")) // XWayland
				if err := os.WriteFile(filepath.Join(s.runUser, "1000", "wayland-0.lock"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: "WAYLAND_DISPLAY=wayland-0, DISPLAY=:0"},
		{name: "a runtime directory others may enter is not the user's session",
			setup: func(s *fakeSession) {
				s.process(100, 1, 1000, "aqlguard")
				if err := os.Mkdir(filepath.Join(s.runUser, "1000"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(s.runUser, "1000"), 0o755); err != nil {
					t.Fatal(err)
				}
				s.socket(filepath.Join(s.runUser, "1000", "wayland-0"))
			},
			why: "no Wayland socket"},
		{name: "another user's X socket is not taken",
			setup: func(s *fakeSession) {
				s.process(100, 1, 1000, "aqlguard")
				s.socket(filepath.Join(s.x11Dir, "X3"))
				s.owners["X3"] = 2000
			},
			why: "no X socket of this user's"},
		{name: "this user's one X display",
			setup: func(s *fakeSession) {
				s.process(100, 1, 1000, "aqlguard")
				s.socket(filepath.Join(s.x11Dir, "X3"))
				s.socket(filepath.Join(s.x11Dir, "X4"))
				s.owners["X4"] = 0
			},
			want: "DISPLAY=:3"},
		{name: "several displays of this user: none is guessed",
			setup: func(s *fakeSession) {
				s.process(100, 1, 1000, "aqlguard")
				s.socket(filepath.Join(s.x11Dir, "X3"))
				s.socket(filepath.Join(s.x11Dir, "X4"))
			},
			why: "several X displays (:3, :4)"},
		{name: "root's sockets are a system X server's: not scanned",
			setup: func(s *fakeSession) {
				s.uid = 0
				s.process(100, 1, 0, "aqlguard")
				s.socket(filepath.Join(s.x11Dir, "X0"))
			},
			why: "no X socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newFakeSession(t)
			tc.setup(s)
			d, err := s.finder(100).find()
			switch {
			case tc.want != "" && err != nil:
				t.Fatalf("none found: %v", err)
			case tc.want != "" && d.Where() != tc.want:
				t.Errorf("found %s (from %s), want %s", d.Where(), d.From, tc.want)
			case tc.want == "" && err == nil:
				t.Errorf("found %s (from %s), want none", d.Where(), d.From)
			case tc.want == "" && (!errors.Is(err, ErrNoDisplay) || !strings.Contains(err.Error(), tc.why)):
				t.Errorf("error %v, want ErrNoDisplay saying %q", err, tc.why)
			}
		})
	}
}

// A display set to "" in aqlguard's environment says there is none:
// nothing is looked for.
func TestOwnDisplay(t *testing.T) {
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	if d, ok, err := ownDisplay(env(map[string]string{"DISPLAY": ":1", "XAUTHORITY": "/x", "HOME": "/h"})); !ok || err != nil ||
		len(d.Vars) != 2 || d.Vars["DISPLAY"] != ":1" {
		t.Errorf("set: %+v %v %v", d, ok, err)
	}
	if _, ok, err := ownDisplay(env(map[string]string{"DISPLAY": ""})); ok || !errors.Is(err, ErrNoDisplay) {
		t.Errorf("set empty: %v %v", ok, err)
	}
	if _, ok, err := ownDisplay(env(map[string]string{"HOME": "/h"})); ok || err != nil {
		t.Errorf("unset: %v %v", ok, err)
	}
}
