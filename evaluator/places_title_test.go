package evaluator

import (
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// The reason a write outside the roots asks names the server as the
// person wrote it in their client config (issue 31, item 9).
func TestPlaceReasonNamesTheServersTitle(t *testing.T) {
	p := &policy.Policy{Titles: map[string]string{"notesfs": "notes-fs"}}
	s := &Step{Server: "notesfs", Roots: []string{"/home/u/proj"}, RootsKnown: true}
	why := placeRoots(p, s, "/home/u/proj")
	if !strings.Contains(why, "notes-fs server's roots") {
		t.Errorf("placeRoots: %q", why)
	}
	if why := placeRoots(nil, s, "/home/u/proj"); !strings.Contains(why, "notesfs server's roots") {
		t.Errorf("placeRoots without a policy: %q", why)
	}
}
