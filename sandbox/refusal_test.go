package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var testGrant = Grant{Server: "fs", Read: []string{"/usr", "/bin", "/srv/app"}, Write: []string{"/home/a/notes", "/dev/null"},
	Network: NetPorts, Connect: []uint16{443}}

// TestRefused: the runtimes' ways of saying EACCES, and which of the
// places they name the grant leaves out.
func TestRefused(t *testing.T) {
	tests := []struct {
		name, text string
		want       []string // Refusal.String()
	}{
		{"node read", "Error: EACCES: permission denied, open '/home/a/.ssh/id_rsa'", []string{"/home/a/.ssh/id_rsa"}},
		{"node mkdir", `Error: EACCES: permission denied, mkdir "/home/a/.cache/x"`, []string{"/home/a/.cache/x"}},
		{"node connect", "Error: connect EACCES 127.0.0.1:5432", []string{"a connection to 127.0.0.1:5432 (TCP port 5432)"}},
		{"python", "PermissionError: [Errno 13] Permission denied: '/etc/shadow'", []string{"/etc/shadow"}},
		{"go", "open /home/a/secret.txt: permission denied", []string{"/home/a/secret.txt"}},
		{"go dial", "dial tcp [::1]:6379: connect: permission denied", []string{"a connection to [::1]:6379 (TCP port 6379)"}},
		{"shell names itself first", "/bin/sh: 1: cannot create /home/a/x.txt: Permission denied", []string{"/home/a/x.txt"}},
		{"a write to a readable place", "EACCES: permission denied, open '/srv/app/config.json'", []string{"writing /srv/app/config.json"}},
		{"granted: someone else's refusal", "EACCES: permission denied, open '/home/a/notes/locked.txt'", nil},
		{"a granted port", "connect EACCES 10.0.0.1:443", nil},
		{"no denial word", "reading /home/a/.ssh/id_rsa", nil},
		{"two lines", "open /a/b: permission denied\nok\nconnect EACCES 127.0.0.1:22", []string{"/a/b", "a connection to 127.0.0.1:22 (TCP port 22)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range Refused(tc.text, testGrant) {
				got = append(got, r.String())
				if (r.Sensitive == "") != strings.Contains(r.Sentence(), r.Fix()) || !strings.HasPrefix(r.Fix(), "aqlguard sandbox grant fs ") {
					t.Errorf("sentence %q, fix %q", r.Sentence(), r.Fix())
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if rs := Refused("open /x: permission denied", Grant{Off: true}); rs != nil {
		t.Errorf("an unconfined server is refused nothing by its sandbox: %v", rs)
	}
}

// TestRefusalFix: the place a grant can name (it must be there), quoted
// for a shell; never the home or above it for a file it was making.
func TestRefusalFix(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "it's here")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ path, want string }{
		{dir, "aqlguard sandbox grant fs '" + strings.ReplaceAll(dir, "'", `'\''`) + "' --read"},
		{filepath.Join(dir, "new.tmp"), "aqlguard sandbox grant fs '" + strings.ReplaceAll(dir, "'", `'\''`) + "'"},
		{filepath.Join(home, "memory.jsonl.123.tmp"), "aqlguard sandbox grant fs " + filepath.Join(home, "memory.jsonl.123.tmp")},
	}
	for _, tc := range tests {
		if got := (Refusal{Server: "fs", Path: tc.path, home: home}).Fix(); got != tc.want {
			t.Errorf("%s: fix %s, want %s", tc.path, got, tc.want)
		}
	}
}

func TestWatch(t *testing.T) {
	w := NewWatch(testGrant)
	before := time.Now()
	all, fresh := w.Read("open /a/b: permission denied")
	if len(all) != 1 || len(fresh) != 1 {
		t.Fatalf("first: %v %v", all, fresh)
	}
	all, fresh = w.Read("open /a/b: permission denied")
	if len(all) != 1 || len(fresh) != 0 {
		t.Errorf("again: %v %v", all, fresh)
	}
	if got := w.Since(before); len(got) != 1 {
		t.Errorf("since: %v", got)
	}
	if got := w.Since(time.Now().Add(time.Second)); len(got) != 0 {
		t.Errorf("since later: %v", got)
	}
}

// FuzzRefused: a server's stderr is anyone's text: reading it never
// panics, and every refusal it finds is one the grant does not cover.
func FuzzRefused(f *testing.F) {
	f.Add("Error: EACCES: permission denied, open '/home/a/.ssh/id_rsa'")
	f.Add("connect EACCES 127.0.0.1:5432")
	f.Add("/bin/sh: 1: cannot create /x: Permission denied")
	f.Add("dial tcp [::1]:99999: connect: permission denied")
	f.Fuzz(func(t *testing.T, text string) {
		for _, r := range Refused(text, testGrant) {
			if r.Path != "" && testGrant.CanWrite(r.Path) {
				t.Errorf("%q: refused %s, which the grant lets it write", text, r.Path)
			}
			if r.Path == "" && testGrant.CanConnect(r.Port) {
				t.Errorf("%q: refused port %d, which the grant lets it connect to", text, r.Port)
			}
		}
	})
}

// TestRefusalOfASensitivePlace: a server's text can name any path; for
// ~/.ssh the client is told it was refused, never how to grant it.
func TestRefusalOfASensitivePlace(t *testing.T) {
	g := testGrant
	g.Home = "/home/a"
	rs := Refused("Error: EACCES: permission denied, open '/home/a/.ssh/id_rsa'", g)
	if len(rs) != 1 || rs[0].Sensitive == "" {
		t.Fatalf("refusals %+v", rs)
	}
	if s := rs[0].Sentence(); strings.Contains(s, "sandbox grant") || !strings.Contains(s, "does not suggest granting it") {
		t.Errorf("sentence %q", s)
	}
	rs = Refused("Error: EACCES: permission denied, open '/home/a/data/x.db'", g)
	if len(rs) != 1 || rs[0].Sensitive != "" || !strings.Contains(rs[0].Sentence(), "aqlguard sandbox grant fs ") {
		t.Errorf("an ordinary place: %+v", rs)
	}
}

// TestMentionsDenial: the quick scan lets through every text Refused
// would read a refusal in (the runtimes' spellings).
func TestMentionsDenial(t *testing.T) {
	for _, s := range []string{"EACCES: permission denied, open '/x'", "Permission denied", "connect EPERM 1.2.3.4:5", "Operation not permitted", "[Errno 13] Permission denied", "[Errno 1] Operation not permitted"} {
		if !MentionsDenial([]byte(s)) {
			t.Errorf("%q not seen", s)
		}
	}
	if MentionsDenial([]byte(`{"content":[{"type":"text","text":"hello"}]}`)) {
		t.Error("a plain result seen as a denial")
	}
}

// TestWatchIsBounded: a server that names a new path on every line of
// its stderr gets maxRefusals logged and recorded, and one notice.
func TestWatchIsBounded(t *testing.T) {
	w := NewWatch(testGrant)
	n := 0
	for i := range 1000 {
		_, fresh := w.Read("open /x/" + strconv.Itoa(i) + ": permission denied")
		n += len(fresh)
	}
	if n != maxRefusals {
		t.Errorf("%d recorded, want %d", n, maxRefusals)
	}
	if !w.Full() || w.Full() {
		t.Error("Full is not told exactly once")
	}
}
