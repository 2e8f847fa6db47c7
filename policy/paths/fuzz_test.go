package paths

import (
	"path"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy/textfold"
)

// root is the root the fuzz targets put paths under.
const root = "/home/u/proj"

var fuzzSeeds = []string{
	"", ".", "..", "...", "/", "//", "a", "a/b", "a/../b", "a/../../x", "./a/../../b", "../x", "/proj/../etc/passwd",
	"~", "~/", "~/.ssh/id_rsa", "~bob/x", "//etc//shadow", "src/", "a//b/./c/", "%2e%2e/x", "%2E%2E%2F", "a%2fb",
	"file:///home/u/.ssh/id_rsa", "file:///proj/%2E%2E/etc", "file://host/x", "file:rel", "file:///a?b", "file:///%00",
	"https://x/y", "C:\\x", "c:/x", "c:x", "a\\b", "a\x00b", "a\nb", "\xff", "\u202e", "..\u2215..", "\uff0e\uff0e/x",
	"notes:2024.txt", "/..", "/../..", "a/./../..", strings.Repeat("../", 20) + "etc/shadow",
}

// FuzzCanonical: Canonical never panics; an OK place is absolute and
// clean, and reads as itself again; a place that is not OK says why; a
// path written under a root that comes out outside it climbed with `..`
// (as a path and as a file: URI), and one without `..` stays inside.
func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p := Canonical(raw, home, cwd)
		if p.Raw != raw {
			t.Fatalf("Canonical(%q).Raw = %q", raw, p.Raw)
		}
		if !p.OK {
			if p.Why == "" || p.Clean != "" || p.Written != "" || p.Climbs {
				t.Fatalf("Canonical(%q) = %+v: not OK, but says no reason or names a path", raw, p)
			}
			return
		}
		if p.Why != "" || !strings.HasPrefix(p.Clean, "/") || path.Clean(p.Clean) != p.Clean || path.Clean(p.Written) != p.Clean {
			t.Fatalf("Canonical(%q) = %+v: not absolute and clean", raw, p)
		}
		again := Canonical(p.Clean, home, cwd)
		if want := (Place{Raw: p.Clean, Clean: p.Clean, Written: p.Clean, OK: true}); again != want {
			t.Fatalf("Canonical(%q) = %q, but Canonical(%q) = %+v: not idempotent", raw, p.Clean, p.Clean, again)
		}
		if _, bad := Match(Shipped, p.Clean, home); bad != shippedMatchesSlow(p.Clean, home) {
			t.Fatalf("Match(%q) = %v, but the patterns matched one by one say otherwise", p.Clean, bad)
		}

		for _, under := range []string{root + "/" + raw, "file://" + root + "/" + raw} {
			q := Canonical(under, home, cwd)
			if !q.OK {
				continue
			}
			inside := Within(q.Clean, []string{root})
			if !inside && !q.Climbs {
				t.Fatalf("Canonical(%q) = %q: outside %s without climbing", under, q.Clean, root)
			}
		}
	})
}

// FuzzMatch: Match never panics, agrees with the patterns matched one
// by one (the index and the shortcuts drop nothing), ignores ASCII case,
// and finds everything below ~/.ssh and every .env file.
func FuzzMatch(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, home)
	}
	f.Add("/home/u/.ssh/id_rsa", "")
	f.Add("/home/u/proj/.env.local", "/")
	f.Add("/proc/1/task/2/environ", "/home/u/")
	f.Fuzz(func(t *testing.T, clean, h string) {
		got, ok := Match(Shipped, clean, h)
		if ok != shippedMatchesSlow(clean, h) {
			t.Fatalf("Match(%q, %q) = %+v, %v; the patterns matched one by one say otherwise", clean, h, got, ok)
		}
		if ok && got.Reason == "" {
			t.Fatalf("Match(%q) has no reason", clean)
		}
		if _, up := Match(Shipped, asciiUpper(clean), h); up != ok {
			t.Fatalf("Match(%q) = %v, but Match(%q) = %v", clean, ok, asciiUpper(clean), up)
		}
		p := Canonical(clean, home, cwd)
		if !p.OK {
			return
		}
		for _, c := range []string{"/home/u/.ssh/" + strings.TrimPrefix(p.Clean, "/")} {
			if _, ok := Match(Shipped, c, home); !ok {
				t.Fatalf("Match(%q) found nothing below ~/.ssh", c)
			}
		}
		if _, ok := Match(Shipped, path.Join(p.Clean, ".env"), home); !ok {
			t.Fatalf("Match(%q) found no .env file", path.Join(p.Clean, ".env"))
		}
	})
}

// shippedMatchesSlow is Match over the shipped list without the index,
// the literals or the windows: every form's glob on the whole subject.
func shippedMatchesSlow(clean, h string) bool {
	s := subject{folded: textfold.Fold(clean)}
	if usable(h) {
		s.homeKnown = true
		fh := textfold.Fold(path.Clean(h))
		switch {
		case fh == "/":
			s.rel, s.under = strings.TrimPrefix(s.folded, "/"), true
		case s.folded == fh:
			s.rel, s.under = "", true
		case strings.HasPrefix(s.folded, fh+"/"):
			s.rel, s.under = s.folded[len(fh)+1:], true
		}
	}
	slow := func(m matcher) bool {
		globs := func(forms []form, subj string) bool {
			for _, f := range forms {
				g, err := compiler.Compile(f.src)
				if err != nil {
					panic(err)
				}
				if g.Match(subj) {
					return true
				}
			}
			return false
		}
		switch {
		case !m.home:
			return globs(m.forms, s.folded)
		case s.homeKnown:
			return s.under && globs(m.forms, s.rel)
		default:
			return globs(m.anywhere, s.folded)
		}
	}
	for _, e := range shipped.entries {
		if !slow(e.match[0]) {
			continue
		}
		excepted := false
		for _, x := range e.except {
			excepted = excepted || slow(x)
		}
		if !excepted {
			return true
		}
	}
	return false
}

func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
