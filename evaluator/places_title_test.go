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

// A client's own tool (a hook) has no server: its roots are named as
// the caller says whose they are (Step.RootsOf), never "the claudecode
// server's roots".
func TestPlaceReasonNamesWhoseRootsTheyAre(t *testing.T) {
	p := &policy.Policy{}
	pl := Place{Arg: "file_path"}
	pl.Lexical.OK, pl.Lexical.Clean, pl.Lexical.Raw = true, "/etc/cron.d/x", "/etc/cron.d/x"
	pl.Resolved = pl.Lexical
	s := &Step{Server: "claudecode", Roots: []string{"/home/u/proj"}, RootsKnown: true, RootsOf: "the project"}
	if why, _ := placeQuestion(p, s, pl, true, "writes"); why != "it writes /etc/cron.d/x, outside the project (/home/u/proj)" {
		t.Errorf("a write outside: %q", why)
	}
	s.Roots, s.RootsKnown = nil, false
	if why, _ := placeQuestion(p, s, pl, true, "writes"); why != "it writes /etc/cron.d/x, and the project is not known to judge that by" {
		t.Errorf("a write with no project known: %q", why)
	}
}
