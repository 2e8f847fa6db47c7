package sandbox

import (
	"strconv"
	"strings"
)

// Enforcement is what this machine's mechanism enforces of a grant, and
// what it does not: said when a server starts, and by doctor.
type Enforcement struct {
	// Mechanism is "Landlock", "sandbox-exec", or "" for none.
	Mechanism string
	// Version is the mechanism's version (Landlock's ABI), 0 if none.
	Version int
	// Enforced and Missing are what is and is not enforced, in words.
	Enforced []string
	Missing  []string
}

// Confines reports whether servers are confined at all.
func (e Enforcement) Confines() bool { return e.Mechanism != "" }

// String is the enforcement in one line.
func (e Enforcement) String() string {
	if !e.Confines() {
		return "not confined: " + strings.Join(e.Missing, "; ")
	}
	s := e.Mechanism
	if e.Mechanism == "Landlock" {
		s += " ABI " + strconv.Itoa(e.Version)
	}
	s += " enforces " + strings.Join(e.Enforced, ", ")
	if len(e.Missing) > 0 {
		s += "; not enforced: " + strings.Join(e.Missing, "; ")
	}
	return s
}
