package secrets

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"testing"
	"unicode/utf8"
)

// existsCase is one regex the scanner answers with position sets: an
// anchored branch X of a rule, or an allowlist's joined regexes.
type existsCase struct {
	name     string
	ex       *existsProg
	any      *anySearch
	anchored *regexp.Regexp // ^(?s:.)(?:X) for a branch; nil for an allowlist
	re       *regexp.Regexp // the allowlist's regex
}

func existsCases(s *Scanner) []existsCase {
	var out []existsCase
	for _, r := range s.compiledRules() {
		for i, b := range r.plan.branches {
			out = append(out, existsCase{name: r.id + " branch " + string(rune('0'+i)), ex: b.exists, anchored: b.at1()})
		}
		for _, a := range r.allow {
			if a.any != nil {
				out = append(out, existsCase{name: r.id + " allowlist", any: a.any, re: a.re()})
			}
		}
	}
	for _, a := range s.global {
		if a.any != nil {
			out = append(out, existsCase{name: "global allowlist", any: a.any, re: a.re()})
		}
	}
	return out
}

// checkExists compares an existsProg with Go's regexp on text: at every
// position for a branch (exists never says no where the regex matches,
// and says yes only where it matches or reads past the limit), and as
// an unanchored search for an allowlist (the same answer).
func checkExists(t *testing.T, c existsCase, text string, run *existsRun) {
	t.Helper()
	if c.anchored == nil {
		loc := c.re.FindStringIndex(text)
		want := loc != nil && loc[1] > loc[0]
		if got := c.any.match(run, text); got != want {
			t.Errorf("%s: anywhere(%.60q) = %v, regexp says %v", c.name, text, got, want)
		}
		return
	}
	step := 1
	if testing.Short() {
		step = 7 // -short: every seventh position
	}
	for q := 1; q < len(text); q += step {
		if !utf8.RuneStart(text[q]) {
			continue
		}
		_, k := utf8.DecodeLastRuneInString(text[:q])
		want := c.anchored.MatchString(text[q-k:])
		got := c.ex.exists(run, text, q, len(text))
		if got != want {
			t.Errorf("%s: exists(%.60q at %d) = %v, regexp says %v", c.name, text[q:], q, got, want)
			return
		}
	}
}

// TestExistsAgreesWithRegexp runs every existsProg of the ruleset
// against Go's regexp over the samples and the fakes.
func TestExistsAgreesWithRegexp(t *testing.T) {
	s := Default()
	cases := existsCases(s)
	var texts []string
	for i, smp := range loadGitleaksSamples(t) {
		if testing.Short() && i%8 != 0 {
			continue // -short: an eighth of the samples
		}
		texts = append(texts, smp.text)
	}
	f := newFakes(3)
	for _, fam := range families {
		texts = append(texts, "key: "+fam.make(f, t)+"\n")
	}
	texts = append(texts, "cache_key: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "\xe2\x84 api_key=\xff\xfeabc", "")
	var run existsRun
	for _, c := range cases {
		for _, text := range texts {
			if c.anchored != nil && len(text) > 400 {
				text = text[:400]
			}
			checkExists(t, c, text, &run)
		}
	}
}

// TestExistsShapes checks the position sets on regexes of every shape
// it handles, against Go's regexp, as unanchored searches.
func TestExistsShapes(t *testing.T) {
	exprs := []string{
		`abc`, `(?i)abc`, `a|b|cd`, `a*`, `a+b`, `a{2,4}b`, `(?:ab){2,3}c`, `(?:ab)*c`, `(?:a|ab)(?:c|bcd)`,
		`\bfoo\b`, `\Bfoo`, `^foo`, `foo$`, `(?m)^foo$`, `[^a-z]{3}`, `.x`, `(?s).x`, `x?y??z`, `(?:a?){3}b`,
		`k`, `(?i)k`, `(?i)ſ`, `[\x{100}-\x{10FFFF}]+`, `\x{FFFD}`, `(?:)`,
	}
	texts := []string{"", "abc", "xxabcdx", "aab aaab ab", "ababc abababc", "foo bar foo", "a\nfoo\nb", "ABC abc",
		"K k ſ s", "héllo wörld", "\xff\xfe x", "bcd abcd acd", "aaaab", "xyz xz yz"}
	var run existsRun
	for _, e := range exprs {
		tree, err := syntax.Parse(e, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		ex := compileExists(tree)
		re := regexp.MustCompile(e)
		for _, text := range texts {
			got := ex.anywhere(&run, text)
			want := re.MatchString(text)
			if got != want {
				t.Errorf("%s on %q: anywhere %v, regexp %v", e, text, got, want)
			}
			// anchored at each position, against ^(?s:.)(?:e)
			at := regexp.MustCompile(`^(?s:.)(?:` + e + `)`)
			for q := 1; q <= len(text); q++ {
				if q < len(text) && !utf8.RuneStart(text[q]) {
					continue
				}
				_, k := utf8.DecodeLastRuneInString(text[:q])
				w := at.MatchString(text[q-k:])
				if g := ex.exists(&run, text, q, len(text)); g != w {
					t.Errorf("%s on %q at %d: exists %v, regexp %v", e, text, q, g, w)
				}
			}
		}
	}
}

// TestExistsLimit: a path that reads past the limit makes the answer
// "maybe" (cut), so that a shorter input is used only when it decides.
func TestExistsLimit(t *testing.T) {
	tree, _ := syntax.Parse(`a(?:b*c|b)`, syntax.Perl)
	ex := compileExists(tree)
	var run existsRun
	text := "x" + "a" + strings.Repeat("b", 20) + "c"
	if !ex.exists(&run, text, 1, 10) || !run.cut {
		t.Errorf("a path read past the limit: want yes and cut, got cut %v", run.cut)
	}
	if !ex.exists(&run, text, 1, len(text)) || run.cut {
		t.Errorf("the whole text: want yes without cut")
	}
}
