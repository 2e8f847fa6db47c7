package guard

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestGuardSpeaksItsOwnLanguage: the guard decides; the fronts speak the
// protocols. Neither the guard nor anything it builds on (its own
// tests included) may import the MCP-AQL wire (proxy/aql), the relay or
// the downstream side: a refusal leaves the guard as a Refusal, and each
// front renders it (proxy/refusal.go).
func TestGuardSpeaksItsOwnLanguage(t *testing.T) {
	const module = "github.com/aqlguard/aqlguard"
	forbidden := []string{module + "/proxy/aql", module + "/proxy/relay", module + "/proxy/downstream"}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{} // package → the path by which the guard reaches it
	var walk func(path string, via []string, tests bool)
	walk = func(path string, via []string, tests bool) {
		if _, done := seen[path]; done {
			return
		}
		via = append(via[:len(via):len(via)], path)
		seen[path] = via
		for _, f := range forbidden {
			if path == f {
				t.Errorf("the guard imports %s: %s", f, strings.Join(via, " → "))
			}
		}
		pkg, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(path, module)), 0)
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		imports := pkg.Imports
		if tests {
			imports = append(append(imports[:len(imports):len(imports)], pkg.TestImports...), pkg.XTestImports...)
		}
		for _, imp := range imports {
			if strings.HasPrefix(imp, module+"/") {
				walk(imp, via, false)
			}
		}
	}
	walk(module+"/proxy/guard", nil, true)
	if len(seen) < 3 {
		t.Fatalf("the walk found only %d packages: is the root right?", len(seen))
	}
}

// TestRoomsBesideTheGuardDoNotRunBackUp: what the guard builds on (the
// desk, the rulings, redaction, refusals, watching, confirmations,
// challenges, parking, the unwritten block) never imports the
// guard, the pins or the fronts: each is a room of its own below them.
func TestRoomsBesideTheGuardDoNotRunBackUp(t *testing.T) {
	const module = "github.com/aqlguard/aqlguard"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	above := map[string]bool{module + "/proxy": true, module + "/proxy/guard": true, module + "/proxy/pins": true}
	for _, room := range []string{"proxy/desk", "proxy/ruling", "proxy/redact", "proxy/refusal", "proxy/watch",
		"proxy/confirm", "proxy/challenge", "proxy/parking", "proxy/unwritten"} {
		seen := map[string]bool{}
		var walk func(path string, via []string)
		walk = func(path string, via []string) {
			if seen[path] {
				return
			}
			seen[path] = true
			via = append(via[:len(via):len(via)], path)
			if above[path] {
				t.Errorf("%s runs back up: %s", room, strings.Join(via, " → "))
				return
			}
			pkg, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(path, module)), 0)
			if err != nil {
				t.Fatalf("reading %s: %v", path, err)
			}
			for _, imp := range pkg.Imports {
				if strings.HasPrefix(imp, module+"/") {
					walk(imp, via)
				}
			}
		}
		walk(module+"/"+room, nil)
	}
}
