package evaluator

import "testing"

// A read is judged by its URI's canonical form: every spelling of
// /etc/shadow meets the deny written for /etc, and an approval written
// for /tmp does not reach out of it.
func TestReadByCanonicalURI(t *testing.T) {
	p := compile(t, `
[safety]
deny = ["*.resource:file:///etc/*"]
auto_approve = ["*.resource:file:///tmp/*"]
`, "")
	for _, tc := range []struct{ uri, want string }{
		{"file:///etc/shadow", "blocks"},
		{"file:///tmp/../etc/shadow", "blocks"},
		{"file://localhost/etc/shadow", "blocks"},
		{"FILE://LOCALHOST/etc/shadow", "blocks"},
		{"file:///%65tc/shadow", "blocks"},
		{"file:////etc//shadow", "blocks"},
		{"file:///tmp/./x/../../etc/shadow", "blocks"},
		{"file:///tmp/notes.txt", "allowed"},
		{"file:///tmp//notes.txt", "allowed"},
		// No single path: asked, never approved by the /tmp pattern.
		{"file:///tmp/..%2Fetc/shadow", "asks"},
		{"file://otherhost/tmp/x", "asks"},
		{"file:///tmp/x%00", "asks"},
		{"file:///tmp/x?y", "asks"},
	} {
		s := Read("fs", tc.uri)
		s.Principal, s.StepNumber = "default", 1
		if got := Evaluate(p, s).Outcome(); got != tc.want {
			t.Errorf("read %s: %s, want %s (%v)", tc.uri, got, tc.want, Evaluate(p, s).Factors)
		}
	}
}
