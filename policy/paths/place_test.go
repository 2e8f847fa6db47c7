package paths

import (
	"strings"
	"testing"
)

const (
	home = "/home/u"
	cwd  = "/home/u/proj"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		raw, clean string
		climbs     bool
		why        string // part of Why when not OK
	}{
		// The examples of the issue.
		{raw: "/proj/../etc/passwd", clean: "/etc/passwd", climbs: true},
		{raw: "~/.ssh/id_rsa", clean: "/home/u/.ssh/id_rsa"},
		{raw: "//etc//shadow", clean: "/etc/shadow"},
		{raw: "./a/../../b", clean: "/home/u/b", climbs: true},
		{raw: "a/../../x", clean: "/home/u/x", climbs: true},
		{raw: "file:///home/u/.ssh/id_rsa", clean: "/home/u/.ssh/id_rsa"},
		// Honest spellings.
		{raw: "/home/u/proj/notes.txt", clean: "/home/u/proj/notes.txt"},
		{raw: "notes.txt", clean: "/home/u/proj/notes.txt"},
		{raw: "./src/./main.go", clean: "/home/u/proj/src/main.go"},
		{raw: "src/", clean: "/home/u/proj/src"},
		{raw: "/home/u/proj/", clean: "/home/u/proj"},
		{raw: ".", clean: "/home/u/proj"},
		{raw: "~", clean: "/home/u"},
		{raw: "~/", clean: "/home/u"},
		{raw: "/", clean: "/"},
		{raw: "...", clean: "/home/u/proj/..."},
		{raw: "a..b/..c", clean: "/home/u/proj/a..b/..c"},
		{raw: "notes:2024.txt", clean: "/home/u/proj/notes:2024.txt"},
		{raw: "c:x", clean: "/home/u/proj/c:x"},
		{raw: "/tmp/a b/ü.txt", clean: "/tmp/a b/ü.txt"},
		{raw: "/home/u/proj/a/../b", clean: "/home/u/proj/b", climbs: true},
		// `..` past the root stays at the root, and still climbs.
		{raw: "/..", clean: "/", climbs: true},
		{raw: "/../../etc/shadow", clean: "/etc/shadow", climbs: true},
		// file: URIs, as policy/canonical reads them.
		{raw: "FILE://localhost/etc/shadow", clean: "/etc/shadow"},
		{raw: "file:///proj/%2E%2E/etc/passwd", clean: "/etc/passwd", climbs: true},
		{raw: "file:////etc//shadow", clean: "/etc/shadow"},
		{raw: "file:///tmp/a%20b", clean: "/tmp/a b"},
		{raw: "file:///%7E/x", clean: "/~/x"}, // a file: URI's ~ is a name
		// Lookalikes are other names, not separators or dot segments:
		// they name other files, and nothing climbs.
		{raw: "..\u2215..\u2215etc\u2215passwd", clean: "/home/u/proj/..\u2215..\u2215etc\u2215passwd"},
		{raw: "\uff0e\uff0e/x", clean: "/home/u/proj/\uff0e\uff0e/x"},
		{raw: "\u2024\u2024/x", clean: "/home/u/proj/\u2024\u2024/x"},
		{raw: "/etc/\u0455hadow", clean: "/etc/\u0455hadow"},
		// What cannot be read as one local path.
		{raw: "", why: "empty"},
		{raw: "a\x00b", why: "NUL"},
		{raw: "/tmp/\xff", why: "UTF-8"},
		{raw: "/tmp/a\nb", why: "control character"},
		{raw: "/tmp/a\x7fb", why: "control character"},
		{raw: "/tmp/\u0085", why: "control character"},
		{raw: "/tmp/\u202etxt.exe", why: "direction mark"},
		{raw: `C:\Windows\System32`, why: "Windows drive"},
		{raw: "C:/Windows", why: "Windows drive"},
		{raw: "c:", why: "Windows drive"},
		{raw: `..\..\etc\passwd`, why: "backslash"},
		{raw: `\\server\share`, why: "backslash"},
		{raw: "https://example.com/x", why: "URL (https://"},
		{raw: "s3://bucket/key", why: "URL (s3://"},
		{raw: "file://server/share/x", why: "another host"},
		{raw: "file:///etc%2fshadow", why: "encoded slash"},
		{raw: "file:///etc/shadow?x", why: "query"},
		{raw: "file:relative", why: "relative"},
		{raw: "file:///tmp/a%0Ab", why: "control character"},
		{raw: "file:///tmp/%00", why: "file: URI"},
		{raw: "~bob/.ssh/id_rsa", why: "another user's home"},
		{raw: "~bob", why: "another user's home"},
	} {
		p := Canonical(tc.raw, home, cwd)
		if p.Raw != tc.raw {
			t.Errorf("Canonical(%q).Raw = %q", tc.raw, p.Raw)
		}
		if tc.why != "" {
			if p.OK || p.Clean != "" || !strings.Contains(p.Why, tc.why) {
				t.Errorf("Canonical(%q) = %+v; want not OK because of %q", tc.raw, p, tc.why)
			}
			continue
		}
		if !p.OK || p.Clean != tc.clean || p.Climbs != tc.climbs || p.Why != "" {
			t.Errorf("Canonical(%q) = %+v; want %q, climbs %v", tc.raw, p, tc.clean, tc.climbs)
		}
	}
}

// Without the home directory or the working directory, a path that
// needs one is not OK; nor is one that would be anchored to a relative
// or unreadable directory.
func TestCanonicalNeedsItsAnchors(t *testing.T) {
	for _, tc := range []struct{ raw, home, cwd, why string }{
		{"~/x", "", cwd, "home directory is not known"},
		{"~", "relative", cwd, "home directory is not known"},
		{"x", home, "", "relative"},
		{"x", home, "proj", "relative"},
		{"x", home, "/tmp/\n", "relative"},
	} {
		if p := Canonical(tc.raw, tc.home, tc.cwd); p.OK || !strings.Contains(p.Why, tc.why) {
			t.Errorf("Canonical(%q, %q, %q) = %+v; want not OK because %q", tc.raw, tc.home, tc.cwd, p, tc.why)
		}
	}
	// An absolute path needs neither.
	if p := Canonical("/etc/hosts", "", ""); !p.OK || p.Clean != "/etc/hosts" {
		t.Errorf("Canonical(/etc/hosts) without anchors = %+v", p)
	}
}

func TestWritten(t *testing.T) {
	for raw, want := range map[string]string{
		"a/../b":             "/home/u/proj/a/../b",
		"~/x/..":             "/home/u//x/..",
		"/a//b/./c":          "/a//b/./c",
		"file:///a/%2E%2E/b": "/a/../b",
	} {
		if p := Canonical(raw, home, cwd); p.Written != want {
			t.Errorf("Canonical(%q).Written = %q, want %q", raw, p.Written, want)
		}
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		clean string
		roots []string
		want  bool
	}{
		{"/proj", []string{"/proj"}, true},
		{"/proj/a/b", []string{"/proj"}, true},
		{"/project", []string{"/proj"}, false},
		{"/project/x", []string{"/proj"}, false},
		{"/pro", []string{"/proj"}, false},
		{"/etc/shadow", []string{"/"}, true},
		{"/", []string{"/"}, true},
		{"/", []string{"/proj"}, false},
		{"/proj/a", []string{"/proj/"}, true},
		{"/proj/a", []string{"/x/../proj"}, true},
		{"/proj2/x", []string{"/proj", "/proj2"}, true},
		{"/x", []string{"x", ""}, false},
		{"/x", nil, false},
		{"", []string{"/"}, false},
		{"x", []string{"/"}, false},
		// Exact, also where a file system ignores case: outside asks.
		{"/PROJ/a", []string{"/proj"}, false},
	} {
		if got := Within(tc.clean, tc.roots); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.clean, tc.roots, got, tc.want)
		}
	}
}

// BenchmarkCanonical: what reading a path argument costs a call.
func BenchmarkCanonical(b *testing.B) {
	for _, raw := range []string{"src/main.go", "/home/u/proj/docs/../README.md", "file:///home/u/proj/a%20b.txt"} {
		b.Run(raw, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Canonical(raw, home, cwd)
			}
		})
	}
}
