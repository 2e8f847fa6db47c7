package shell

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Spellings of the parts of `rm -rf /` that a shell runs the same.
var (
	rmNames          = []string{"rm", "'rm'", `"rm"`, `r\m`, "/bin/rm", "/usr/bin/rm", `\rm`, "$'rm'", `$'\x72m'`, "r''m", `"r"m`, "RM", "./../../bin/rm"}
	rmFlags          = []string{"-rf", "-fr", "-r -f", "-f -r", "-Rf", "-r --force", "--recursive -f", "-rfv", "-v -r -f", "--force --recursive", "-f -R", "-r -i -f"}
	rmTargets        = []string{"/", "//", "/./", "'/'", `"/"`, "/bin/..", `\/`, "/.", "///", "-- /"}
	wrapperSpellings = []string{"sudo ", "sudo -u root ", "env ", "env A=1 ", "nice -n 5 ", "timeout 5 ", "command ", "nohup ", "time ", "doas ", "busybox ", "stdbuf -o0 ", "setsid "}
	prefixes         = []string{"", "true; ", "x=1 && ", "echo hi | ", "cd /tmp && ", "false || ", "{ ", "( "}
	trailers         = []string{"", " --no-preserve-root", " /tmp", " &", " 2>/dev/null"}
)

// variant builds a meaning-preserving spelling of `rm -rf /` from the
// fuzzer's choices.
func variant(choices []byte) string {
	next := func(n int) int {
		if len(choices) == 0 {
			return 0
		}
		c := int(choices[0])
		choices = choices[1:]
		return c % n
	}
	cmd := rmNames[next(len(rmNames))] + " " + rmFlags[next(len(rmFlags))] + " " + rmTargets[next(len(rmTargets))] + trailers[next(len(trailers))]
	for range next(4) {
		cmd = wrapperSpellings[next(len(wrapperSpellings))] + cmd
	}
	switch next(5) {
	case 1:
		cmd = "bash -c '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
	case 2:
		cmd = "sh -c \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(cmd) + "\""
	case 3:
		cmd = "eval '" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
	case 4:
		cmd = "echo $(" + cmd + ")"
	}
	prefix := prefixes[next(len(prefixes))]
	cmd = prefix + cmd
	switch prefix {
	case "{ ":
		cmd += "; }"
	case "( ":
		cmd += ")"
	}
	if next(2) == 1 {
		cmd = strings.ReplaceAll(cmd, " ", "\t")
	}
	return cmd
}

// FuzzShellRule: a command that normalises to a denied one is denied
// (matched Definitely, or the script is unresolved, which asks a human;
// never a plain miss).
func FuzzShellRule(f *testing.F) {
	for _, seed := range [][]byte{{}, {1, 2, 3}, {5, 7, 2, 1, 3, 0, 1}, {12, 11, 9, 4, 3, 2, 1, 4, 1, 1}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3}} {
		f.Add(seed)
	}
	p, _, _ := CompilePattern("*rm -rf /")
	f.Fuzz(func(t *testing.T, choices []byte) {
		src := variant(choices)
		s := Analyze(src)
		if best(p, s) == Definite || len(s.Unresolved) > 0 {
			return
		}
		if best(p, s) == Possible {
			return // asks too
		}
		t.Fatalf("%q evades *rm -rf /: commands %v", src, s.Commands)
	})
}

// FuzzAnalyze: any input, no panic; every command has a name, or the
// script says what it could not resolve.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"rm -rf /", "a | b && c; d &", "$(x) y", "bash -c 'eval \"$x\"'", "{a,b}{c,d}", "f() { g; }",
		"cat <<EOF\n$(rm -rf /)\nEOF", "x=$((1+2)) y", "find . -exec rm {} +", "'", "\x00", "${a[@]:1:2}", "[[ -f x ]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		s := Analyze(src)
		for _, c := range s.Commands {
			if c.Name == "" && len(s.Unresolved) == 0 {
				t.Fatalf("%q: a command without a name and nothing unresolved", src)
			}
			if !utf8.ValidString(c.String()) {
				t.Fatalf("%q: invalid UTF-8 in %q", src, c.String())
			}
		}
	})
}

// FuzzPlainWords: a command line the plain-words path takes is analysed
// exactly as the parser analyses it.
func FuzzPlainWords(f *testing.F) {
	for _, s := range []string{"go test ./...", "ls -la /srv", "rm -rf /", "sudo rm -rf /", "sh -c ls", "bash -c rm",
		"env A=1 rm -rf /", "a=b ls", "export a=b", "time ls", "xargs rm", "find . -exec rm", "%1", "ls @x :y ,z +w",
		"busybox rm -rf /", "eval ls", "then", "  ls   -l  ", "timeout 5 nice -n 5 rm -f /x", "watch -n 1 rm"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		// The input as it is, and as a line of words that mean something
		// to the analyser (wrappers, shells, reserved words), which
		// random bytes seldom spell.
		for _, line := range []string{src, plainVocabularyLine(src)} {
			if _, ok := plainWords(line); !ok {
				continue
			}
			got := Analyze(line)
			want := &Script{}
			want.parse(line, nil, 0)
			if !slices.EqualFunc(got.Commands, want.Commands, equalCommand) || !slices.Equal(got.Unresolved, want.Unresolved) {
				t.Fatalf("%q:\nplain  %+v %q\nparsed %+v %q", line, got.Commands, got.Unresolved, want.Commands, want.Unresolved)
			}
		}
	})
}

var plainVocabulary = strings.Fields("sudo doas env A=1 bash sh zsh -c -x -o eval xargs -I find -exec -execdir ; busybox timeout 5 nice -n nohup " +
	"stdbuf -o0 command exec builtin rm -rf -r -f --force --recursive / // /bin/.. -- time export declare let if then in " +
	"watch trap alias x=ls git push origin main . .. ./... %1 @x :y ,z +w")

// plainVocabularyLine makes a line of plainVocabulary words from b, one
// byte a word; a byte past the vocabulary doubles the space before its
// word.
func plainVocabularyLine(b string) string {
	var line strings.Builder
	for i := 0; i < len(b); i++ {
		if i > 0 {
			line.WriteByte(' ')
		}
		if int(b[i]) >= 2*len(plainVocabulary) {
			line.WriteByte(' ')
		}
		line.WriteString(plainVocabulary[int(b[i])%len(plainVocabulary)])
	}
	return line.String()
}

func equalCommand(a, b Command) bool {
	return a.Name == b.Name && slices.Equal(a.Args, b.Args) && slices.Equal(a.Via, b.Via)
}
