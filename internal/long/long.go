// Package long marks the tests that take long (a conformance suite, real
// dialogs on a private display, a browser): `go test -short`, the
// README's quick test command (.ci/test), skips them, and .ci/test --all
// (what .ci/run runs) runs them on their own. .ci/test finds them by the
// call to Test, which must be the test function's first statement.
package long

import "testing"

// Test skips t under -short, saying where it runs.
func Test(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("a long test: .ci/test --all (what .ci/run runs) runs it")
	}
}
