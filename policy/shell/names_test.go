package shell

import (
	"slices"
	"testing"
)

// hash -p FILE NAME (and zsh's hash NAME=FILE, BASH_CMDS[NAME]=FILE)
// makes NAME run FILE, and an alias makes it its words: a command of
// that name is judged also as what it was made to run, wherever it
// stands (a function defined before the hash and called after it too).
// (Issue 29, item 6.5: on f3570ff `hash -p /bin/rm ls; ls -rf /` was ls.)
func TestNamesMadeToRunOtherPrograms(t *testing.T) {
	p := mustPattern(t, "*rm -rf /")
	for _, src := range []string{
		"hash -p /bin/rm ls; ls -rf /", "f() { ls -rf /; }; hash -p /bin/rm ls; f", "BASH_CMDS[ls]=/bin/rm; ls -rf /",
		"alias ls='rm -rf'\nls /", "BASH_ALIASES[ls]='rm -rf'\nls /", "hash ls=/bin/rm; ls -rf /",
		"sh -c \"alias ls='rm -rf'\nls /\"", "for i in 1 2; do ls -rf /; hash -p /bin/rm ls; done",
		"builtin hash -p /bin/rm ls; ls -rf /", "hash -p /usr/bin/rm ls cat; cat -rf /", "hash -p /bin/rm -- ls; sudo ls -rf /",
		"alias x='sudo rm'\nx -rf /",
	} {
		s := Analyze(src)
		if m := best(p, s); m != Definite {
			t.Errorf("%q: %v (commands %v, unresolved %q)", src, m, s.Commands, s.Unresolved)
		}
	}
	for _, src := range []string{"BASH_CMDS=([ls]=/bin/rm); ls -rf /", `hash -p "$P" ls; ls`, "printf x > e; hash -p ./e ls; ls",
		`BASH_CMDS[ls]=$P; ls`, `hash "$x"`} {
		if s := Analyze(src); len(s.Unresolved) == 0 {
			t.Errorf("%q: resolved: %v", src, s.Commands)
		}
	}
	// A name made to run a file outside the system's directories is that
	// file, which no approval of the name covers.
	s := Analyze("hash -p /tmp/x/ls ls; ls")
	if !slices.ContainsFunc(s.Commands, func(c Command) bool { return c.Path == "/tmp/x/ls" && slices.Contains(c.Via, "hash -p ls") }) {
		t.Errorf("hash -p /tmp/x/ls ls: %v", s.Commands)
	}
	for _, src := range []string{"alias ll='ls -la'; ll", "hash -r", "hash ls", "alias ls='ls --color'\nls -l", "hash -d ls; ls"} {
		if s := Analyze(src); len(s.Unresolved) > 0 || len(s.Code) > 0 {
			t.Errorf("%q: unresolved %q, code %v", src, s.Unresolved, s.Code)
		}
	}
}

// A shell run by its versioned name (bash5, zsh5.9) is read as that
// shell. (On f3570ff the analyser panicked on it, and the recovered
// panic left the line unresolved, the rm unseen; FuzzPlainWords found it.)
func TestVersionedShellNames(t *testing.T) {
	p := mustPattern(t, "*rm -rf /")
	for _, src := range []string{"zsh5.9 -c 'rm -rf /'", "bash5 <<< 'rm -rf /'", "sh0 -c 'rm -rf /'", "ksh93 -c 'rm -rf /'"} {
		if s := Analyze(src); best(p, s) != Definite || slices.Contains(s.Unresolved, "the shell parser failed on this script") {
			t.Errorf("%q: commands %v, unresolved %q", src, s.Commands, s.Unresolved)
		}
	}
}
