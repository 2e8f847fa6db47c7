package shell

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealTools runs command lines through the real programs, with a
// probe standing for the command they run, and holds the analysis to
// them: every run of the probe is a command the analysis reports with
// those arguments (a dynamic argument stands for any), unless the line is
// unresolved or holds code (both ask). A program missing here is skipped,
// and said so.
func TestRealTools(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real programs")
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	script := "#!/bin/sh\n{ printf probe; for a; do printf '\\037%s' \"$a\"; done; printf '\\n'; } >> \"$PROBE_LOG\"\n"
	if err := os.WriteFile(probe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := os.Geteuid() == 0
	var skipped []string
	for _, tt := range []struct {
		line  string
		needs string // programs that must be installed, space-separated
		root  bool   // needs to run as root
		// appends: the program adds arguments of its own after the
		// command's (git's ssh command, mapfile's callback).
		appends bool
	}{
		{line: "timeout -s KILL -k 1 5 probe a -b", needs: "timeout"},
		{line: "timeout --signal=TERM 5s probe x", needs: "timeout"},
		{line: "timeout --sig TERM 5 probe x", needs: "timeout"},
		{line: "nice -n 5 probe x", needs: "nice"},
		{line: "nice -5 probe x", needs: "nice"},
		{line: "nice --adjustment=3 probe", needs: "nice"},
		{line: "nohup probe x 2>/dev/null", needs: "nohup"},
		{line: "env -u HOME probe x", needs: "env"},
		{line: "env A=1 B=2 probe y", needs: "env"},
		{line: "env -S 'probe a b'", needs: "env"},
		{line: "env -S'-u HOME probe a' b", needs: "env"},
		{line: `env --split-string='probe "a b" c'`, needs: "env"},
		{line: "env -C / probe x", needs: "env"},
		{line: "stdbuf -oL -e0 probe x", needs: "stdbuf"},
		{line: "setsid -w probe x", needs: "setsid"},
		{line: "ionice -c3 probe x", needs: "ionice"},
		{line: "ionice -c 2 -n 7 probe x", needs: "ionice"},
		{line: "chrt -o 0 probe x", needs: "chrt"},
		{line: "taskset -c 0 probe x", needs: "taskset"},
		{line: "/usr/bin/time -f %e -o /dev/null probe x", needs: "/usr/bin/time"},
		{line: "time -p probe x 2>/dev/null", needs: "bash"},
		{line: "printf 'x\\0y\\0' | xargs -0 probe a", needs: "xargs"},
		{line: "echo x | xargs -I{} probe a {} b", needs: "xargs"},
		{line: "echo x | xargs -n 1 -P 2 probe", needs: "xargs"},
		{line: `find . -maxdepth 0 -exec probe {} \;`, needs: "find"},
		{line: "find . -maxdepth 0 -exec probe a {} +", needs: "find"},
		{line: `find file -execdir probe {} \;`, needs: "find"},
		{line: "flock lock probe x", needs: "flock"},
		{line: "flock lock -c 'probe y'", needs: "flock"},
		{line: "flock -w 5 lock probe z", needs: "flock"},
		{line: "bash --norc -O extglob -c 'probe x'", needs: "bash"},
		{line: "bash --rcfile /dev/null -c 'probe x'", needs: "bash"},
		{line: "bash -o pipefail -xc 'probe x' 2>/dev/null", needs: "bash"},
		{line: "sh -ec 'probe x'", needs: "sh"},
		{line: "dash -c 'probe x' arg0", needs: "dash"},
		{line: "bash -s <<< 'probe x'", needs: "bash"},
		{line: "sh /dev/stdin <<< 'probe x'", needs: "sh"},
		{line: "script -qec 'probe x' /dev/null > /dev/null", needs: "script"},
		{line: "su -c 'probe x' root", needs: "su", root: true},
		{line: "su root -c 'probe x'", needs: "su", root: true},
		{line: "runuser -u root -- probe x", needs: "runuser", root: true},
		{line: "sg root -c 'probe x'", needs: "sg", root: true},
		{line: "chroot / probe x", needs: "chroot", root: true},
		{line: "setpriv --reuid=0 probe x", needs: "setpriv", root: true},
		{line: "prlimit --nofile=100 probe x", needs: "prlimit"},
		{line: "unshare -r probe x", needs: "unshare"},
		{line: "strace -f -o /dev/null probe x", needs: "strace"},
		{line: "git -c alias.x='!probe y' x z", needs: "git"},
		{line: "git -c alias.x='!probe' -c alias.w=x w z", needs: "git"},
		{line: "git -c core.sshCommand='probe s' ls-remote ssh://h/r 2>/dev/null", needs: "git", appends: true},
		{line: "GIT_SSH_COMMAND='probe s' git ls-remote ssh://h/r 2>/dev/null", needs: "git", appends: true},
		{line: "tar -cf t.tar file && tar -xf t.tar --to-command='probe t'", needs: "tar"},
		{line: "tar -cf t.tar file && tar xf t.tar --to-com='probe t'", needs: "tar"},
		{line: "tar cf t.tar file && tar -xf t.tar --checkpoint=1 --checkpoint-action=exec='probe c'", needs: "tar"},
		{line: "sed 'e probe x' file", needs: "sed"},
		{line: "awk 'BEGIN { system(\"probe a\") }'", needs: "awk"},
		{line: "python3 -c 'import os; os.system(\"probe a\")'", needs: "python3"},
		{line: "perl -e 'system(\"probe\", \"a\")'", needs: "perl"},
		{line: "node -e 'require(\"child_process\").execFileSync(\"probe\", [\"a\"])'", needs: "node"},
		{line: "make -f - <<< $'all:\\n\\tprobe m'", needs: "make"},
		{line: "gdb -batch -ex 'shell probe g' 2>/dev/null", needs: "gdb"},
		{line: "command probe x", needs: "bash"},
		{line: "builtin eval 'probe x'", needs: "bash"},
		{line: "exec probe x", needs: "bash"},
		{line: "trap 'probe t' EXIT", needs: "bash"},
		{line: ". /dev/stdin <<< 'probe s'", needs: "bash"},
		{line: "mapfile -C 'probe m' -c 1 < file", needs: "bash", appends: true},
		{line: "command -v probe > /dev/null", needs: "bash"},
		{line: "nsenter -t 1 -m probe x", needs: "nsenter", root: true},
	} {
		missing := ""
		for p := range strings.FieldsSeq(tt.needs) {
			if _, err := exec.LookPath(p); err != nil {
				missing = p
			}
		}
		if missing != "" || tt.root && !root {
			skipped = append(skipped, tt.line)
			continue
		}
		log := filepath.Join(dir, "probe.log")
		_ = os.Remove(log)
		_ = os.Remove(filepath.Join(dir, "t.tar"))
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "--norc", "--noprofile", "-c", tt.line)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + dir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "PROBE_LOG=" + log,
			"HOME=" + dir, "LANG=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0"}
		_ = cmd.Run() // the probe's log says what ran; a program that fails ran nothing
		cancel()
		data, _ := os.ReadFile(log)
		s := Analyze(tt.line)
		asks := len(s.Unresolved) > 0 || len(s.Code) > 0
		var reported []Command
		for _, c := range s.Commands {
			if c.Name == "probe" {
				reported = append(reported, c)
			}
		}
		for run := range strings.SplitSeq(strings.TrimSuffix(string(data), "\n"), "\n") {
			if run == "" {
				continue
			}
			words := strings.Split(run, "\x1f")
			fs := make([]field, 0, len(words)-1)
			for _, w := range words[1:] {
				fs = append(fs, field{text: w, src: w})
			}
			args := normalise("probe", fs, nil)
			if !asks && !slices.ContainsFunc(reported, func(c Command) bool { return argsMatch(c.Args, args, tt.appends) }) {
				t.Errorf("%q ran probe %q, which the analysis does not report (reported %v, unresolved %q)", tt.line, words[1:], reported, s.Unresolved)
			}
		}
		if len(data) == 0 && len(reported) > 0 {
			t.Logf("%q: the analysis reports %v, which did not run here", tt.line, reported)
		}
	}
	if len(skipped) > 0 {
		t.Logf("skipped (program missing, or not root): %q", skipped)
	}
}

// argsMatch reports whether reported arguments stand for real ones: a
// dynamic one for any number of words (xargs appends several), static
// ones equal; with appends, real may go on after reported ends.
func argsMatch(reported, real []Arg, appends bool) bool {
	if len(reported) == 0 {
		return len(real) == 0 || appends
	}
	r := reported[0]
	if r.Dynamic {
		for k := 0; k <= len(real); k++ {
			if argsMatch(reported[1:], real[k:], appends) {
				return true
			}
		}
		return false
	}
	return len(real) > 0 && real[0].Text == r.Text && real[0].Kind == r.Kind && argsMatch(reported[1:], real[1:], appends)
}
