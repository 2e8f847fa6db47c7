package secrets

import (
	"bufio"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A sample of gitleaks' own rule tests (testdata/gitleaks/samples.txt,
// written by internal/updaterules).
type gitleaksSample struct{ rule, kind, text string }

func loadGitleaksSamples(t testing.TB) []gitleaksSample {
	t.Helper()
	f, err := os.Open("testdata/gitleaks/samples.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []gitleaksSample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			t.Fatalf("bad sample line %q", line)
		}
		text, err := strconv.Unquote(parts[2])
		if err != nil {
			t.Fatalf("bad sample line %q: %v", line, err)
		}
		out = append(out, gitleaksSample{parts[0], parts[1], text})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// compileDefault compiles the embedded ruleset afresh (tests must not
// share the rules of Default(), whose plans newScanner sets).
func compileDefault(t testing.TB, keep func(id string) bool) *Scanner {
	t.Helper()
	rs, err := parseRuleset(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	if err := tune(rs); err != nil {
		t.Fatal(err)
	}
	if keep != nil {
		rs.specs = slices.DeleteFunc(rs.specs, func(sp ruleSpec) bool { return !keep(sp.id) })
	}
	s, err := newScanner(rs)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// referenceScan finds what gitleaks' Detect finds, its way: each rule
// whose keyword is in the text runs FindAll over the whole text, and
// the groups come from running it again over the trimmed match; what
// follows (entropy, allowlists, checks, the generic rule's dedupe) is
// the Scanner's own. Keywords are folded as
// the Scanner folds them (foldRune), so that the comparison is of how
// the regexes are run.
func referenceScan(s *Scanner, text string) []found {
	var b strings.Builder
	for _, r := range text {
		b.WriteRune(foldRune(r))
	}
	folded := b.String()
	sc := s.getScratch()
	defer s.putScratch(sc)
	for ri, r := range s.compiledRules() {
		gated := false
		for _, k := range r.keywords {
			if strings.Contains(folded, k) {
				gated = true
				break
			}
		}
		if !gated {
			continue
		}
		for _, loc := range r.re().FindAllStringIndex(text, -1) {
			s.judgeAs(sc, ri, text, loc[0], loc[1], nil, true)
		}
	}
	fs := s.dedupeGeneric(text, dropRefuted(sc.found, sc.refuted))
	out := append([]found(nil), fs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].start != out[j].start {
			return out[i].start < out[j].start
		}
		return out[i].rule < out[j].rule
	})
	return out
}

// sameAsReference reports how Scan and referenceScan differ on text.
func sameAsReference(s *Scanner, text string) (got, want []string, ok bool) {
	for _, f := range s.Scan("", text) {
		got = append(got, f.Rule+" "+strconv.Itoa(f.Start)+":"+strconv.Itoa(f.End))
	}
	for _, f := range referenceScan(s, text) {
		want = append(want, s.specs[f.rule].id+" "+strconv.Itoa(f.start)+":"+strconv.Itoa(f.end))
	}
	return got, want, slices.Equal(got, want)
}

// TestPlansAgreeWithGitleaks runs every text of the corpora through
// Scan and through gitleaks' way of running the rules, and wants the
// same findings: the anchored plans (plan.go) change the cost, never
// the result.
func TestPlansAgreeWithGitleaks(t *testing.T) {
	s := compileDefault(t, nil)
	texts := corpusTexts(t)
	for _, smp := range loadGitleaksSamples(t) {
		texts = append(texts, smp.text)
	}
	n := 0
	for i, text := range texts {
		if testing.Short() && (len(text) > 16<<10 || i%3 != 0) {
			continue // -short: a third of the short texts
		}
		got, want, ok := sameAsReference(s, text)
		if !ok {
			t.Errorf("text %.80q:\n scan      %q\n reference %q", text, got, want)
		}
		n += len(want)
	}
	t.Logf("%d texts, %d findings", len(texts), n)
}

// TestGitleaksSamples runs each rule's own samples as gitleaks'
// Validate does (a scanner of that rule alone): each tp is found, no fp
// is. The exceptions are this package's deliberate differences.
func TestGitleaksSamples(t *testing.T) {
	// Samples this package decides otherwise, with the reason.
	exceptions := map[string]string{
		"'Authorization': 'Bearer glsa_pITqMOBIfNH2KL4PkXJqmTyQl0D9QGxF_486f63e1'": "its last 8 hex digits are not the CRC-32 of the rest: made up (check.go)",
		"sourcegraph: 6d2FabeB6ADd229Bc199FabA28fD3efb57dF0bD3":                    "bare 40 hex digits, a git commit name's shape, is no longer a Sourcegraph token (tuning.go)",
	}
	// The JWT samples whose header was edited by hand ("alg":"eee…) no
	// longer decode to JSON, which checkJWT requires.
	for _, smp := range loadGitleaksSamples(t) {
		if smp.rule == "jwt" && strings.Contains(smp.text, "eyJhbGciOieeeiIsInR5cCI6IkpXVCJ9") {
			exceptions[smp.text] = "its header is not JSON (check.go)"
		}
	}
	byRule := map[string][]gitleaksSample{}
	for _, smp := range loadGitleaksSamples(t) {
		byRule[smp.rule] = append(byRule[smp.rule], smp)
	}
	all := compileDefault(t, nil)
	rs, err := parseRuleset(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	if err := tune(rs); err != nil {
		t.Fatal(err)
	}
	alone := func(id string) *Scanner {
		one := &ruleset{global: rs.global, skipped: rs.skipped}
		for _, sp := range rs.specs {
			if sp.id == id {
				one.specs = append(one.specs, sp)
			}
		}
		s, err := newScanner(one)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ids := make([]string, 0, len(byRule))
	for id := range byRule {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tested := 0
	for _, id := range ids {
		if why, ok := all.skipped[id]; ok {
			t.Logf("%s: not applied (%s)", id, why)
			continue
		}
		one := alone(id)
		if len(one.specs) == 0 {
			// gitleaks defines some rules it leaves out of its default
			// configuration (gcp-service-account, square-secret).
			t.Logf("%s: not in the ruleset", id)
			continue
		}
		for _, smp := range byRule[id] {
			fs := one.Scan("", smp.text)
			found := len(fs) > 0
			want := smp.kind == "tp"
			if why, ok := exceptions[smp.text]; ok {
				if found == want {
					t.Errorf("%s %s %q: listed as an exception (%s) but agrees with gitleaks now", id, smp.kind, smp.text, why)
				}
				continue
			}
			tested++
			if found != want {
				t.Errorf("%s %s %q: found %v", id, smp.kind, smp.text, fs)
			}
		}
	}
	t.Logf("%d samples of %d rules", tested, len(ids))
}
