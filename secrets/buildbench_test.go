package secrets

import "testing"

// BenchmarkBuildDefault: what a process pays for the embedded ruleset
// the first time it scans (a hook pays it at every tool call).
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
