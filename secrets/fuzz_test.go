package secrets

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzScan: Scan never panics, its findings lie in the text on rune
// boundaries, ordered, and are what gitleaks' way of running the rules
// finds (referenceScan).
func FuzzScan(f *testing.F) {
	fk := newFakes(31)
	for _, fam := range families {
		f.Add("token: " + fam.make(fk, f) + "\n")
	}
	for _, smp := range loadGitleaksSamples(f)[:60] {
		f.Add(smp.text)
	}
	f.Add("api_key = \"K\u212aLaZ7rNqQ2wXv9mB3cD8eF1\"")
	f.Add("\xff\xfeapi=\xe2\x84\xaa")
	// Anchors with and without a byte that may follow them (follow.go).
	f.Add("The Go Authors. All rights reserved. They said: \"key\": {\"Value\"} s.Abcdefghijklmnopqrstuvwx ey")
	f.Add("vault S.ABCDEFGHIJKLMNOPQRSTUVWX\njwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.x_y")
	// An operator at the last place a semi-generic rule allows, one past it.
	f.Add("api_key_of_the_main_service_x '= abcdefghijkl12\napi_key_of_the_main_service_xy '= abcdefghijkl12\n")
	s := Default()
	f.Fuzz(func(t *testing.T, text string) {
		fs := s.Scan("fuzz", text)
		last := -1
		for _, fd := range fs {
			if fd.Start < 0 || fd.End > len(text) || fd.Start >= fd.End || fd.Start < last {
				t.Fatalf("finding %+v in a text of %d bytes", fd, len(text))
			}
			last = fd.Start
			if utf8.ValidString(text) && (!utf8.RuneStart(text[fd.Start]) || (fd.End < len(text) && !utf8.RuneStart(text[fd.End]))) {
				t.Fatalf("finding %+v cuts a rune", fd)
			}
		}
		// The reference runs Go's regexp over the whole text for every
		// gated rule, slow on long texts: compared up to 4 KiB.
		if len(text) <= 4<<10 {
			if got, want, ok := sameAsReference(s, text); !ok {
				t.Fatalf("scan %q, reference %q", got, want)
			}
		}
	})
}

// FuzzRedact: Redact never panics, whatever findings it is given, and
// the secrets of a Scan are gone from what it returns.
func FuzzRedact(f *testing.F) {
	fk := newFakes(32)
	for _, fam := range families {
		f.Add("x "+fam.make(fk, f)+" y", 0, 5)
	}
	f.Add("short", -3, 99)
	s := Default()
	f.Fuzz(func(t *testing.T, text string, start, end int) {
		fs := s.Scan("", text)
		out := Redact(text, fs)
		at := 0
		for _, fd := range fs { // ordered by Start
			if fd.Start >= at && !strings.Contains(out, "[secret redacted: "+fd.Rule+" "+fd.Digest+"]") {
				t.Fatalf("no placeholder for %+v in %q", fd, out)
			}
			at = max(at, fd.End)
		}
		if len(fs) > 0 && strings.Count(text, text[fs[0].Start:fs[0].End]) == 1 && strings.Contains(out, text[fs[0].Start:fs[0].End]) {
			t.Fatalf("the secret is still in %q", out)
		}
		// Any findings at all, even outside the text.
		Redact(text, []Finding{{Rule: "r", Start: start, End: end}, {Rule: "r", Start: end, End: start}})
	})
}

// FuzzCarried: a secret Seen has remembered is seen in every form
// carriedForms makes of it, with anything around it, and the answer
// never holds it.
func FuzzCarried(f *testing.F) {
	fk := newFakes(33)
	for i, fam := range families {
		f.Add(fam.make(fk, f), "before ", " after", uint8(i))
	}
	f.Add("0123456789", "", "", uint8(3))
	f.Add("p@ss w%rd+/=\n\x00é", "%%", "+", uint8(12))
	f.Fuzz(func(t *testing.T, secret, prefix, suffix string, form uint8) {
		if len(secret) < MinSeenLen || len(secret) > 4096 {
			return
		}
		var s Seen
		s.Add(secret, Finding{Rule: "fuzz", Start: 0, End: len(secret)})
		cf := carriedForms[int(form)%len(carriedForms)]
		out := prefix + cf.form(secret) + suffix
		c, ok := s.Carried(out)
		if !ok {
			t.Fatalf("%s of %q not seen in %q", cf.name, secret, out)
		}
		if c.Rule != "fuzz" || c.Digest != Digest(secret) || strings.Contains(c.Encoding, secret) {
			t.Fatalf("%+v", c)
		}
	})
}
