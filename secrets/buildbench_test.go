package secrets

import "testing"

// BenchmarkBuildDefault: what compiling every rule of the embedded
// ruleset costs (newScanner; a Scanner made from the generated index
// pays it rule by rule, as texts need them).
func BenchmarkBuildDefault(b *testing.B) {
	for b.Loop() {
		rs, err := parseRuleset(gitleaksTOML)
		if err == nil {
			err = tune(rs)
		}
		if err == nil {
			_, err = newScanner(rs)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDefaultFirstScan: what a process pays for Default() and its
// first scan of a tool call's arguments (a client's hook pays it at
// every tool call): the ruleset read, the index's words, and the rules
// the text wakes.
func BenchmarkDefaultFirstScan(b *testing.B) {
	const args = `{"command":"npm test","description":"run the tests"}`
	for b.Loop() {
		s, err := newDefault()
		if err != nil {
			b.Fatal(err)
		}
		s.Scan("arguments", args)
	}
}
