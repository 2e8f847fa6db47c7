package shell

import (
	"path"
	"strings"
)

// GTFOBins (gtfobins.github.io) lists the programs that run a shell or a
// command given to them ("shell" and "command" functions, and those that
// inherit them: vim from vi, man from less). The analyser covers them as
// follows; gtfobins_test.go holds a line per entry and what must come of
// it (a Definite rm -rf / found under the program, code, or unresolved).
//
// A command of their words (wrappers, wrappers.go and below): aa-exec,
// aoss, chroot, chrt, choom, cpulimit, distcc, doas, env, flock, grc,
// ionice, ld.so, logsave, ltrace, msgfilter, multitime, nice, nohup,
// nsenter, openvt, perf, pidstat -e, pkexec, rlwrap, setarch, setlock,
// softlimit, ssh-agent, sshpass, start-stop-daemon, stdbuf, strace, sudo,
// su, sg, taskset, time, timeout, torify, torsocks, unshare, valgrind,
// xargs, xdotool exec, capsh --, ksu -e, ip netns exec, task execute,
// cabal exec, yarn exec, npm exec, uv run, bundle exec, codex sandbox,
// docker/podman run and exec, lxc exec, kubectl exec, mosh HOST CMD,
// rustup run, service ../PATH, gtester, watch, script -c.
//
// A command line given to an option (launchers.go, and the handlers of
// tools.go, build.go, git.go): agetty -l, aria2c --on-*, borg --rsh,
// busctl --address=unixexec:, certbot hooks, check_by_ssh -o/-C,
// check_ssl_cert --*-bin, cpio --rsh-command, csvtool call, dhclient -sf,
// dmsetup --exec, dnsmasq --conf-script, enscript -I, fail2ban-client
// action*, find -exec, forge --use, gcc -wrapper, gem open -e, genie -c,
// git (-c, aliases, hooks the line writes), hg --config alias.x=!, latexmk
// -pdflatex=, logrotate -m, man -P/-H, nano -s, openvpn --up, perlbug -e,
// pip --editor, plymouth --command, restic --password-command, rpm
// --pipe, rsync -e, scp -S/-o, scrot -e, socat exec:/system:, split
// --filter, ssh -o ProxyCommand=/LocalCommand=, sshfs -o ssh_command=,
// sshuttle --ssh-cmd, sysctl kernel.core_pattern=|, tar, tcpdump -z, wget
// --use-askpass, xdg-user-dir, yt-dlp --exec, zathura -x, zic -y, zip -TT;
// variables: AUTOM4TE, CRASHPAGER, RESTIC_PASSWORD_COMMAND, LESSOPEN,
// VISUAL, PAGER, READNULLCMD (environ.go).
//
// Code of a language (interpreter_code decides): R, awk (gawk, mawk),
// bpftrace -e, clisp -x, dc -e with !, dotnet fsi, ed, emacs --eval, ex,
// exiftool -if, fzf --bind/--preview, gdb -ex, ghc -e, ghci, gimp -b,
// gnuplot -e, guile -c, irb, jjs, jrunscript -e, jshell, julia, knife exec
// -E, latex and its kin with --shell-escape, lua, m4 with syscmd, mysql
// \!, nmap --interactive, node, octave --eval, perl, php, pic -U (groff,
// nroff), pry, psql \!, puppet apply -e, pwsh, python, rake -e, ranger
// --cmd, rc, ruby, sash, sed e, slsh -e, sqlite3 .shell, sqlmap --eval,
// tclsh, vim -c (vi, view, rvim, vimdiff), dvips -R0, mail --exec, and the
// consoles that take ! from stdin (ftp, lftp, ncftp, psftp, smbclient,
// telnet, tdbtool, ginsh, debugfs, bconsole, asterisk, scanmem, tasksh,
// hping3, jtag, cpan, msfconsole, volatility).
//
// Shells (read as shells): ash, bash, dash, posh, yash, zsh, ksh; of other
// languages (code): csh, tcsh, fish, elvish, pwsh, rc, sash.
//
// Unresolved (the analyser does not follow them): expect, firejail,
// screen, tmux, tmate, pexec, ctr, arch-nspawn, systemd-nspawn, opencode
// and codex (AI agents that run what they choose), run-parts, ansible-test
// shell, cdist shell, systemd-run -S, apt -c/-o of hooks, zypper NAME (a
// zypper-NAME program), hg aliases and hooks, restic -o, wget -e, gcc -B.
//
// Files that run (not ours to read, unless the line wrote them: then
// unresolved): acr, ansible-playbook, apt -c, bpftrace FILE, cobc, cowsay
// -f, dpkg -i, dnf, easyrsa --vars, fastfetch -c, minicom -S, neofetch
// --config, openvpn --config, opkg, pkg, procmail -m, rsyslogd -f,
// runscript, snap, systemctl link/enable, virsh, wg-quick, yum, and the
// project files a program reads by itself (package.json, Makefile,
// CMakeLists.txt, Gemfile, composer.json, configure.ac, setup.py,
// .git/hooks, ~/.lessfilter, toprc, .rtorrent.rc, Vagrantfile): files.go.
//
// Not covered, and why: what is typed into an interactive program on a
// terminal (less, more, pg, man's pager, ncdu, ranger, nano, joe, iftop,
// top, ispell, loginctl, zathura, minicom, vi and the pagers of apport-cli,
// aptitude, aws, cargo, dmesg, gcloud, journalctl, rustc, systemd-resolve,
// timedatectl, zless): keys a human or another program types later are
// no part of a command line; java Shell, go run FILE, dotnet run, make,
// npm run (a program's own files, as python3 script.py); dstat's plugins,
// yum's and facter's plugin directories and wireshark's Lua (files of a
// configuration the line does not name).

// wrappers of GTFOBins, read as the other wrappers (wrappers.go).
var moreWrappers = map[string]*wrapper{
	"aa-exec":   {opts: opts("+p|profile: n|namespace: i|immediate v|verbose d|debug h|help")},
	"aoss":      {opts: opts("+")},
	"choom":     {opts: opts("+n|adjust: p|pid: h|help V|version"), none: []string{"pid"}},
	"cpulimit":  {opts: opts("+l|limit: p|pid: e|exe: P|path: c|cpu: z|lazy i|include-children v|verbose q|quiet k|kill r|restore s|signal: f|foreground m|monitor-forks b|background h|help"), none: []string{"pid", "exe", "path"}},
	"distcc":    {opts: opts("+j show-hosts scan-avail show-principal help version"), none: []string{"j", "show-hosts", "scan-avail", "show-principal"}},
	"logsave":   {opts: opts("+a s v"), operands: 1},
	"multitime": {opts: opts("+c: f: I: i: l n: o: q r: s:"), check: multitimeChecks},
	"setlock":   {opts: opts("+n N x X"), operands: 1},
	"ssh-agent": {opts: opts("+a: c D d E: k O: P: s t:"), none: []string{"k"}},
	"sshpass":   {opts: opts("+f: d: p: e:: P: v h V")},
	"torify":    {opts: opts("+")},
	"grc":       {opts: opts("+e s c: colour: config: pty stdout stderr h|help")},
	"openvt":    {opts: opts("+c|console: f|force l|login u|user s|switch e|exec w|wait v|verbose h|help V|version"), bare: true},
	"msgfilter": {opts: opts("+i|input: D|directory: o|output-file: P|properties-input stringtable-input color:: style: " +
		"newline no-wrap w|width: s|sort-output F|sort-by-file keep-header E|escape no-escape indent force-po h|help V|version")},
	"linux32": {opts: opts("+v|verbose 3|3gb B|32bit F|fdpic-funcptrs I|short-inode L|addr-compat-layout R|addr-no-randomize " +
		"S|whole-seconds T|sticky-timeouts X|read-implies-exec Z|mmap-page-zero uname-2.6 h|help V|version"), bare: true},
}

// multitimeChecks: multitime -i, -o and -r run commands of their own
// through the shell, and -l reads the commands it times from stdin.
func multitimeChecks(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("i", "o", "r") {
		s.runScript(c, o.value, "multitime -"+o.name)
	}
	if r.has("l") {
		s.stdin(c.redirs, c.under("multitime -l"), c.depth, bashFlavour.lang)
	}
}

// setarchCommand: setarch [ARCH] [options] [PROGRAM [ARG]...]; its
// aliases (linux32, x86_64, ...) take no ARCH. Without a program it runs
// a shell on stdin.
func setarchCommand(s *Script, c *invocation) {
	args := c.args
	if c.name == "setarch" && len(args) > 0 && !mayBeOption(args[0]) {
		args = args[1:]
	}
	moreWrappers["linux32"].follow(s, &invocation{name: c.name, args: args, redirs: c.redirs, via: c.via, depth: c.depth})
}

// isLoader reports whether a name is the dynamic loader's (ld.so,
// ld-linux-x86-64.so.2, ld-musl-x86_64.so.1), which runs the program it
// is given.
func isLoader(name string) bool {
	return name == "ld.so" || strings.HasPrefix(name, "ld-linux") && strings.Contains(name, ".so") ||
		strings.HasPrefix(name, "ld-musl") && strings.Contains(name, ".so")
}

// loaderCommand: ld.so [options] PROGRAM [ARG]...; --preload and --audit
// load libraries (code), --list and --verify run nothing.
func loaderCommand(s *Script, c *invocation) {
	r, ok := s.options(c, loaderOpts)
	if !ok {
		return
	}
	for _, o := range r.values("preload", "audit") {
		s.addCode(c, "--"+o.name, o.value.text, true)
	}
	if r.has("list", "verify", "list-tunables", "list-diagnostics") {
		return
	}
	if i := r.first(len(c.args)); i < len(c.args) {
		s.run(c, c.args[i:], "ld.so")
	}
}

var loaderOpts = opts("+=list verify library-path: inhibit-cache inhibit-rpath: audit: preload: argv0: glibc-hwcaps-prefix: " +
	"glibc-hwcaps-mask: list-tunables list-diagnostics help version")

// capshCommand: capsh [--OPTION=VALUE]... [-- ARGS] runs /bin/bash (or
// --shell=) with ARGS; == runs capsh again with the rest. Its options are
// all --name or --name=value, none taking the next word.
func capshCommand(s *Script, c *invocation) {
	sh := field{text: "/bin/bash", src: "/bin/bash"}
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch {
		case a.text == "--":
			s.run(c, append([]field{sh}, c.args[i+1:]...), "capsh --")
			return
		case a.text == "==":
			s.call(append([]field{{text: "capsh", src: "capsh"}}, c.args[i+1:]...), c.redirs, c.under("capsh =="), c.depth+1)
			return
		case strings.HasPrefix(a.text, "--shell="):
			sh = field{text: a.text[len("--shell="):], src: a.text}
		}
	}
}

// ksuCommand: ksu [USER] [options] [-e COMMAND [ARG]...] [-a ARG...]: -e
// runs COMMAND with the rest; -a gives the rest to the user's shell (sh -c
// among them); neither, an interactive shell.
func ksuCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) > 0 && !mayBeOption(args[0]) {
		args = args[1:] // the user
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch a.text {
		case "-e":
			if i+1 < len(args) {
				s.run(c, args[i+1:], "ksu -e")
			}
			return
		case "-a":
			s.run(c, append([]field{{text: "sh", src: "sh"}}, args[i+1:]...), "ksu -a")
			return
		case "-n", "-c", "-C", "-r", "-l", "-z", "-Z":
			i++ // takes a value
		}
	}
	s.stdin(c.redirs, c.under("ksu"), c.depth, bashFlavour.lang)
}

// startStopDaemon: start-stop-daemon -S -x EXECUTABLE (or -a
// STARTAS) [-- ARG...] runs it.
func startStopDaemon(s *Script, c *invocation) {
	r, ok := s.options(c, startStopOpts)
	if !ok {
		return
	}
	if !r.has("start") {
		return
	}
	prog := r.values("startas")
	if len(prog) == 0 {
		prog = r.values("exec")
	}
	if len(prog) == 0 {
		return
	}
	words := []field{prog[len(prog)-1].value}
	for _, k := range r.operands {
		words = append(words, c.args[k])
	}
	s.run(c, words, "start-stop-daemon")
}

var startStopOpts = opts("S|start K|stop T|status H|help V|version x|exec: p|pidfile: n|name: u|user: a|startas: " +
	"s|signal: R|retry: c|chuid: r|chroot: d|chdir: N|nicelevel: P|procsched: I|iosched: k|umask: b|background " +
	"notify-await notify-timeout: C|no-close O|output: m|make-pidfile remove-pidfile e|env: g|group: o|oknodo q|quiet " +
	"t|test v|verbose ppid:")

// pidstatCommand: pidstat -e PROGRAM ARG... runs the rest of its words.
func pidstatCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if !a.dynamic && a.text == "-e" && i+1 < len(c.args) {
			s.run(c, c.args[i+1:], "pidstat -e")
			return
		}
	}
}

// perfCommand: perf stat, record, trace (and the record of sched, lock,
// mem, c2c, kmem, kvm) run a command of their words after their options;
// perf script runs scripts (files).
func perfCommand(s *Script, c *invocation) {
	args := c.args
	for len(args) > 0 && !args[0].dynamic && strings.HasPrefix(args[0].text, "-") {
		args = args[1:] // perf's own options (--no-pager, -v)
	}
	if len(args) == 0 || args[0].dynamic {
		if len(args) > 0 {
			s.cannot(c, "a subcommand that is not static: "+s.source(args[0]))
		}
		return
	}
	sub := args[0].text
	rest := args[1:]
	switch sub {
	case "sched", "lock", "mem", "c2c", "kmem", "kvm", "kwork":
		if len(rest) == 0 || rest[0].text != "record" {
			return
		}
		sub, rest = sub+" record", rest[1:]
	case "stat", "record", "trace":
	default:
		return
	}
	inner := &invocation{name: "perf " + sub, args: rest, redirs: c.redirs, via: c.via, depth: c.depth}
	r, ok := s.options(inner, perfOpts)
	if !ok {
		return
	}
	if i := r.first(len(rest)); i < len(rest) {
		s.run(inner, rest[i:], inner.name)
	}
}

// perfOpts are the options of perf stat, record and trace that take a
// value; perf reads them as git's parse-options does (stopping at the
// command).
var perfOpts = opts("+e|event: p|pid: t|tid: C|cpu: G|cgroup: o|output: r|repeat: x|field-separator: I|interval-print: " +
	"M|metrics: a|all-cpus A|no-aggr i|no-inherit n|null v|verbose d|detailed q|quiet S|sync B|big-num T|transaction " +
	"F|freq: c|count: m|mmap-pages: g call-graph: u|uid: b|branch-any j|branch-filter: z|compression-level:: " +
	"s|stat R|raw-samples D|delay: k|clockid: N|no-buildid-cache per-socket per-core per-thread per-node " +
	"append filter: exclude-perf output-dir: log-fd: pre: post: topdown td-level: metric-only interval-count: " +
	"timeout: summary no-merge user-callchain kernel-callchain duration: expr: max-stack: summary-only " +
	"syscalls no-syscalls f|force P|sample-cpu W|weight l|latency h|help")

// ipCommand: ip netns exec NAME COMMAND and ip vrf exec NAME COMMAND run
// COMMAND; ip -batch FILE (-b) reads ip commands from a file (stdin for
// -). iproute2 takes any prefix of its objects and verbs.
func ipCommand(s *Script, c *invocation) {
	args := c.args
	for len(args) > 0 && mayBeOption(args[0]) {
		a := args[0]
		if a.dynamic {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name := strings.TrimLeft(a.text, "-")
		args = args[1:]
		switch {
		case name != "" && strings.HasPrefix("batch", name):
			if len(args) == 0 {
				return
			}
			if !args[0].dynamic && args[0].text == "-" {
				s.cannot(c, "ip -batch -, which reads ip commands (netns exec among them) from stdin")
				return
			}
			s.launchedFile(c, args[0], nil)
			return
		case name == "n" || name == "netns" || name == "f" || name == "family" || name == "l" || name == "loops" ||
			name == "rc" || name == "rcvbuf" || name == "c" || name == "color" || name == "color=" || name == "Numeric":
			if name != "Numeric" && len(args) > 0 && !strings.Contains(a.text, "=") {
				args = args[1:]
			}
		}
	}
	if len(args) < 3 || args[0].dynamic || args[1].dynamic {
		return
	}
	obj, verb := args[0].text, args[1].text
	if len(obj) < 2 || !strings.HasPrefix("netns", obj) && !strings.HasPrefix("vrf", obj) || verb == "" || !strings.HasPrefix("exec", verb) {
		return
	}
	if len(args) > 3 {
		s.run(c, args[3:], "ip "+obj+" exec")
	}
}

// taskCommand: taskwarrior's task execute COMMAND runs COMMAND through
// the shell (after any filter words).
func taskCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		if a.text == "execute" {
			if i+1 < len(c.args) {
				s.runJoined(c, c.args[i+1:], "task execute")
			}
			return
		}
	}
}

// xdotoolCommand: xdotool exec CMD runs CMD; type and key type keys into
// other programs, and a script file or - runs xdotool commands the line
// does not hold.
func xdotoolCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch a.text {
		case "exec":
			rest := c.args[i+1:]
			for len(rest) > 0 && strings.HasPrefix(rest[0].text, "--") {
				if rest[0].text == "--args" || rest[0].text == "--terminator" {
					rest = rest[min(2, len(rest)):]
					continue
				}
				rest = rest[1:]
			}
			if len(rest) > 0 {
				s.run(c, rest, "xdotool exec")
			}
			return
		case "type", "key", "keydown", "keyup", "-":
			s.cannot(c, "xdotool "+a.text+" types keys into other programs, or reads commands the line does not hold")
			return
		}
	}
}

// codexCommand: codex sandbox (linux|macos|landlock|seatbelt) [options]
// [--] COMMAND runs COMMAND; codex exec, and codex given a prompt, is an
// agent that runs the commands it chooses.
func codexCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) == 0 {
		s.cannot(c, "an AI agent, which runs the commands it chooses")
		return
	}
	if args[0].dynamic {
		s.cannot(c, "a word that is not static: "+s.source(args[0]))
		return
	}
	switch args[0].text {
	case "sandbox", "debug":
		rest := args[1:]
		if len(rest) > 0 && !mayBeOption(rest[0]) {
			rest = rest[1:] // the platform
		}
		for i, a := range rest {
			if a.dynamic {
				s.cannot(c, "a word that is not static: "+s.source(a))
				return
			}
			if a.text == "--" {
				rest = rest[i+1:]
				break
			}
			if !strings.HasPrefix(a.text, "-") {
				rest = rest[i:]
				break
			}
		}
		if len(rest) > 0 {
			s.run(c, rest, "codex sandbox")
		}
	case "login", "logout", "completion", "help", "--help", "-h", "--version", "-V", "mcp", "mcp-server", "app-server", "features":
	default:
		s.cannot(c, "an AI agent, which runs the commands it chooses")
	}
}

// cdistCommand: cdist shell [-s SHELL] runs SHELL (or the user's)
// interactively.
func cdistCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "shell" {
		return
	}
	for i, a := range c.args[1:] {
		if !a.dynamic && (a.text == "-s" || a.text == "--shell") && i+2 < len(c.args) {
			s.run(c, []field{c.args[i+2]}, "cdist shell")
			return
		}
	}
	s.stdin(c.redirs, c.under("cdist shell"), c.depth, bashFlavour.lang)
}

// ansibleTestCommand: ansible-test shell is an interactive shell.
func ansibleTestCommand(s *Script, c *invocation) {
	if len(c.args) > 0 && !c.args[0].dynamic && c.args[0].text == "shell" {
		s.stdin(c.redirs, c.under("ansible-test shell"), c.depth, bashFlavour.lang)
	}
}

// ansibleCommand: ansible HOSTS -m MODULE -a ARGS runs a module (command
// by default): command, shell and raw run their arguments as a command
// line; another module's arguments are code of ansible's.
func ansibleCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"module-name": "m", "args": "a"}, map[byte]string{'m': "m", 'a': "a"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	module := "command"
	var margs []field
	for _, o := range found {
		switch {
		case o.name == "m" && o.has:
			module = strings.TrimPrefix(strings.TrimPrefix(o.value.text, "ansible.builtin."), "ansible.legacy.")
		case o.name == "a" && o.has:
			margs = append(margs, o.value)
		}
	}
	for _, a := range margs {
		switch module {
		case "command", "shell", "raw", "win_shell", "win_command", "script":
			s.runScript(c, a, "ansible -m "+module)
		case "ping", "setup", "gather_facts":
		default:
			s.codeOf(c, "-m "+module, a)
		}
	}
}

// busctlCommand: busctl --address=unixexec:path=P,argv1=A,... starts P
// with those words.
func busctlCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"address": "address"}, nil)
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		if !o.has {
			continue
		}
		v := o.value
		if v.dynamic {
			s.cannot(c, "an address that is not static: "+s.source(v))
			return
		}
		for addr := range strings.SplitSeq(v.text, ";") {
			rest, ok := strings.CutPrefix(addr, "unixexec:")
			if !ok {
				continue
			}
			if strings.ContainsAny(rest, `%\`) {
				s.cannot(c, "a unixexec: address with escapes: "+addr)
				return
			}
			var words []field
			for kv := range strings.SplitSeq(rest, ",") {
				k, val, _ := strings.Cut(kv, "=")
				switch {
				case k == "path":
					words = append([]field{{text: val, src: val}}, words...)
				case strings.HasPrefix(k, "argv") && k != "argv0":
					words = append(words, field{text: val, src: val})
				}
			}
			if len(words) > 0 {
				s.run(c, words, "busctl --address=unixexec")
			}
		}
	}
}

// socatCommand: socat's addresses EXEC:CMD (words, run by socat) and
// SYSTEM:CMD and SHELL:CMD (through sh -c) run commands; ncat and nc run
// -e PROG, -c/--sh-exec CMD through the shell, and --lua-exec FILE.
func socatCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic {
			if mayBeOption(a) || strings.Contains(strings.ToLower(a.lead), "exec") || strings.Contains(strings.ToLower(a.lead), "system") || a.lead == "" {
				s.cannot(c, "an address that is not static: "+s.source(a))
				return
			}
			continue
		}
		if strings.HasPrefix(a.text, "-") {
			continue
		}
		kind, cmd, ok := strings.Cut(a.text, ":")
		if !ok {
			continue
		}
		switch strings.ToLower(kind) {
		case "exec", "system", "shell":
		default:
			continue
		}
		// Address options follow a comma; a command with a quote, an
		// escape or a comma of its own is socat's to split.
		if i := strings.IndexByte(cmd, ','); i >= 0 {
			cmd = cmd[:i]
		}
		if strings.ContainsAny(a.text, `"'\[{`) {
			s.cannot(c, "an address socat splits its own way: "+a.text)
			return
		}
		label := "socat " + strings.ToLower(kind) + ":"
		if strings.EqualFold(kind, "exec") {
			var words []field
			for w := range strings.FieldsSeq(cmd) {
				words = append(words, field{text: w, src: w})
			}
			if len(words) > 0 {
				s.run(c, words, label)
			}
			continue
		}
		s.runScript(c, field{text: cmd, src: cmd}, label)
	}
}

// netcatCommand: nc -e PROG and ncat --exec PROG run PROG; -c and
// --sh-exec run a command line; --lua-exec runs Lua.
func netcatCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"exec": "e", "sh-exec": "c", "lua-exec": "lua-exec"},
		map[byte]string{'e': "e", 'c': "c"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		if !o.has {
			continue
		}
		switch o.name {
		case "lua-exec":
			s.launchedFile(c, o.value, nil)
			s.addCode(c, "--lua-exec", o.value.text, o.value.dynamic)
		default:
			s.runScript(c, o.value, c.name+" -"+o.name)
		}
	}
}

// sshfsCommand: sshfs -o OPT[,OPT]...: ssh_command= runs a command
// instead of ssh, and ssh's own options pass through (ProxyCommand=).
func sshfsCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"ssh_command": "ssh_command"}, map[byte]string{'o': "o"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		if !o.has {
			continue
		}
		if o.value.dynamic {
			s.cannot(c, "an option that is not static: "+s.source(o.value))
			return
		}
		if o.name == "ssh_command" {
			s.runScript(c, o.value, "sshfs -o ssh_command")
			continue
		}
		for opt := range strings.SplitSeq(o.value.text, ",") {
			key, value := cutSSHOption(opt)
			switch k := strings.ToLower(key); {
			case k == "ssh_command" || k == "ssh_cmd":
				s.runScript(c, field{text: value, src: value}, "sshfs -o ssh_command")
			case sshRunKeys[k]:
				s.runScript(c, field{text: value, src: value}, "sshfs -o "+key)
			case k == "include" || k == "pkcs11provider" || k == "securitykeyprovider" || k == "xauthlocation" || k == "match":
				s.cannot(c, "an ssh option that loads code or configuration: "+key)
				return
			}
		}
	}
}

// hgCommand: Mercurial's --config KEY=VALUE: an alias of ! runs a
// command line (and any alias is a command the analyser cannot see),
// hooks, the editor, ssh and merge tools run commands, and extensions are
// Python; --ssh and --remotecmd run commands too. Any other key it does
// not know leaves the line unresolved, as git's do.
func hgCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"config": "config", "ssh": "ssh", "remotecmd": "remotecmd"},
		map[byte]string{'e': "ssh"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		if !o.has {
			continue
		}
		if o.name != "config" {
			s.runScript(c, o.value, "hg --"+o.name)
			continue
		}
		if o.value.dynamic {
			s.cannot(c, "configuration that is not static: "+s.source(o.value))
			return
		}
		key, value, _ := strings.Cut(o.value.text, "=")
		section, name, _ := strings.Cut(strings.ToLower(key), ".")
		switch {
		case section == "alias" && strings.HasPrefix(value, "!"):
			s.runScript(c, field{text: value[1:], src: value}, "hg --config "+key)
			s.cannot(c, "an alias, which runs under a name the analyser cannot see: "+key)
		case section == "alias":
			s.cannot(c, "an alias, which runs under a name the analyser cannot see: "+key)
		case section == "hooks", section == "ui" && (name == "editor" || name == "ssh" || name == "remotecmd" || name == "merge"),
			section == "pager" && name == "pager", section == "merge-tools", section == "diff-tools", section == "extdiff":
			s.runScript(c, field{text: strings.TrimPrefix(value, "!"), src: value}, "hg --config "+key)
		case section == "ui" && (name == "username" || name == "verbose" || name == "quiet" || name == "color" ||
			name == "paginate" || name == "interactive"), section == "color", section == "phases", section == "diff" ||
			section == "format" || section == "progress" || section == "experimental" && !strings.Contains(name, "cmd"):
		default:
			s.cannot(c, "a configuration key the analyser does not know: "+key)
			return
		}
	}
}

// gccCommand: gcc -wrapper PROG,ARGS runs its tools under PROG; -B
// changes where it finds them, -specs= may run anything, a plugin is
// code, @FILE reads more options from a file.
func gccCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		t := a.text
		switch {
		case t == "-wrapper" && i+1 < len(c.args):
			v := c.args[i+1]
			i++
			if v.dynamic {
				s.cannot(c, "-wrapper of a program that is not static: "+s.source(v))
				return
			}
			var words []field
			for w := range strings.SplitSeq(v.text, ",") {
				words = append(words, field{text: w, src: w})
			}
			s.run(c, words, c.name+" -wrapper")
		case strings.HasPrefix(t, "-fplugin="):
			s.addCode(c, "-fplugin", t[len("-fplugin="):], true)
		case strings.HasPrefix(t, "-B"), strings.HasPrefix(t, "-specs"), strings.HasPrefix(t, "--specs"), strings.HasPrefix(t, "@"):
			s.cannot(c, "an option that changes the programs it runs, or reads more options from a file: "+t)
			return
		}
	}
}

// cmakeCommand: cmake -E env|chdir|time ... runs a command, cmake -P
// FILE runs a script file.
func cmakeCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		switch a.text {
		case "-P":
			if i+1 < len(c.args) {
				s.launchedFile(c, c.args[i+1], nil)
			}
			return
		case "-E":
			rest := c.args[i+1:]
			if len(rest) == 0 || rest[0].dynamic {
				return
			}
			switch rest[0].text {
			case "time":
				s.run(c, rest[1:], "cmake -E time")
			case "chdir":
				if len(rest) > 2 {
					s.run(c, rest[2:], "cmake -E chdir")
				}
			case "env":
				k := 1
				for k < len(rest) && (strings.HasPrefix(rest[k].text, "-") || isAssignment(rest[k])) {
					if rest[k].text == "--" {
						k++
						break
					}
					k++
				}
				if k < len(rest) {
					s.run(c, rest[k:], "cmake -E env")
				}
			}
			return
		}
	}
}

// dotnetCommand: dotnet fsi reads F# from stdin or a script file.
func dotnetCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "fsi" {
		return
	}
	for _, a := range c.args[1:] {
		if !mayBeOption(a) {
			s.launchedFile(c, a, nil)
			return
		}
	}
	s.stdinCode(c, nil)
}

// csvtoolCommand: csvtool call COMMAND runs COMMAND through the shell for
// each row.
func csvtoolCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if !a.dynamic && a.text == "call" && i+1 < len(c.args) {
			s.runScript(c, c.args[i+1], "csvtool call")
			return
		}
		if a.dynamic && i+1 < len(c.args) {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
	}
}

// fail2banCommand: fail2ban-client set JAIL action ACT actionban CMD (and
// the other action* commands) sets a command fail2ban runs.
func fail2banCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		switch a.text {
		case "-c", "--conf":
			// A directory of configuration whose actions run commands.
			if i+1 < len(c.args) {
				s.runsDir(c.args[i+1])
			}
		case "actionban", "actionunban", "actionstart", "actionstop", "actioncheck", "actionflush", "actionrepair",
			"actionreload", "actionrepair_on_unban":
			if i+1 < len(c.args) {
				s.runJoined(c, c.args[i+1:], "fail2ban-client "+a.text)
			}
			return
		}
	}
}

// xdgUserDirCommand: xdg-user-dir NAME is sh's eval of echo
// ${XDG_NAME_DIR:-$HOME}: the name is read as part of a script.
func xdgUserDirCommand(s *Script, c *invocation) {
	if len(c.args) == 0 {
		return
	}
	if c.args[0].dynamic {
		s.cannot(c, "a name that is not static, which it evaluates as a script: "+s.source(c.args[0]))
		return
	}
	s.script("echo ${XDG_"+c.args[0].text+"_DIR:-$HOME}", c.under("xdg-user-dir"), c.depth+1)
}

// serviceCommand: service NAME ... runs /etc/init.d/NAME: a name with a
// slash is a path of its own (service ../../bin/sh).
func serviceCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || mayBeOption(c.args[0]) {
		return
	}
	a := c.args[0]
	if a.dynamic {
		s.cannot(c, "a service that is not static: "+s.source(a))
		return
	}
	if strings.Contains(a.text, "/") {
		p := path.Join("/etc/init.d", a.text)
		s.run(c, append([]field{{text: p, src: p}}, c.args[1:]...), "service")
	}
}

// sysctlCommand: sysctl kernel.core_pattern=|CMD makes the kernel run
// CMD on a crash (kernel.poweroff_cmd on a poweroff); kernel.modprobe
// and kernel.hotplug name programs it runs; -p FILE reads settings from a
// file.
func sysctlCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			s.cannot(c, "a setting that is not static: "+s.source(a))
			return
		}
		if a.text == "-p" || a.text == "--load" || strings.HasPrefix(a.text, "--load=") || a.text == "-f" {
			if v, ok := strings.CutPrefix(a.text, "--load="); ok {
				s.launchedFile(c, field{text: v, src: v}, nil)
			} else if i+1 < len(c.args) && !mayBeOption(c.args[i+1]) {
				s.launchedFile(c, c.args[i+1], nil)
				i++
			}
			continue
		}
		key, value, ok := strings.Cut(a.text, "=")
		if !ok {
			continue
		}
		switch strings.ReplaceAll(strings.TrimSpace(key), "/", ".") {
		case "kernel.core_pattern":
			if v := strings.TrimSpace(value); strings.HasPrefix(v, "|") {
				s.runScript(c, field{text: v[1:], src: v}, "sysctl kernel.core_pattern")
			}
		case "kernel.poweroff_cmd":
			s.runScript(c, field{text: value, src: value}, "sysctl kernel.poweroff_cmd")
		case "kernel.modprobe", "kernel.hotplug":
			s.run(c, []field{{text: value, src: value}}, "sysctl "+key)
		}
	}
}

// crontabCommand: crontab FILE (or - and stdin) installs a table whose
// commands cron runs later: a table read from a here-document is read,
// each entry's command a script; a file is not ours to read (unless the
// line wrote it); -e edits it in $EDITOR.
func crontabCommand(s *Script, c *invocation) {
	var file *field
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			file = &c.args[i]
			continue
		}
		switch {
		case a.text == "-u" || a.text == "-s":
			i++
		case a.text == "-l" || a.text == "-r" || a.text == "-e" || a.text == "-T" || a.text == "-V" || a.text == "-h":
			return
		case a.text == "-":
			file = nil
		case !strings.HasPrefix(a.text, "-"):
			file = &c.args[i]
		}
	}
	if file != nil {
		s.launchedFile(c, *file, nil)
		return
	}
	in := s.inputOf(c.redirs, 0)
	switch {
	case in.literal():
		s.cronTable(c, in.text.text)
	case in.kind == fromFile && !in.file.dynamic:
		s.runs(in.file)
	default:
		s.cannot(c, "a table of commands from "+in.described(0))
	}
}

// cronTable reads a crontab's entries: five time fields (or an @word)
// and a command, which cron runs through the shell. An entry with % (a
// newline and stdin for the command, in cron's own way) is unresolved.
func (s *Script) cronTable(c *invocation, table string) {
	for line := range strings.SplitSeq(table, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		n := 5
		if strings.HasPrefix(fields[0], "@") {
			n = 1
		} else if name, _, ok := strings.Cut(fields[0], "="); ok && isName(strings.TrimSpace(name)) {
			continue // a variable of the table
		}
		if len(fields) <= n {
			continue
		}
		cmd := line
		for range n {
			cmd = strings.TrimLeft(cmd, " \t")
			cmd = cmd[strings.IndexAny(cmd+" ", " \t"):]
		}
		if strings.Contains(cmd, "%") {
			s.cannot(c, "a cron entry with %, which cron reads its own way: "+line)
			continue
		}
		s.script(strings.TrimSpace(cmd), c.under("crontab"), c.depth+1)
	}
}

// systemctlCommand: systemctl link and enable of a unit file install
// commands systemd runs (not ours to read, unless the line wrote it).
func systemctlCommand(s *Script, c *invocation) {
	verb := ""
	for _, a := range c.args {
		if a.dynamic {
			if verb == "link" || verb == "enable" || verb == "reenable" {
				s.cannot(c, "a unit that is not static: "+s.source(a))
				return
			}
			continue
		}
		if strings.HasPrefix(a.text, "-") {
			continue
		}
		if verb == "" {
			verb = a.text
			continue
		}
		if (verb == "link" || verb == "enable" || verb == "reenable") && strings.Contains(a.text, "/") {
			s.runs(a)
		}
	}
}

// runPartsCommand: run-parts DIR runs every program of a directory, which
// the line does not show; --test and --list only print their names.
func runPartsCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if !a.dynamic && (a.text == "--test" || a.text == "--list" || a.text == "-h" || a.text == "--help" || a.text == "-V" || a.text == "--version") {
			return
		}
	}
	s.cannot(c, "it runs every program of a directory, which the command line does not show")
}

// gtesterCommand: gtester runs each of its operands as a test program.
func gtesterCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if mayBeOption(a) {
			if a.dynamic {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		s.run(c, []field{a}, "gtester")
	}
}

// rustupCommand: rustup run TOOLCHAIN COMMAND runs COMMAND; rustup
// toolchain link NAME DIR makes DIR's programs the toolchain's.
func rustupCommand(s *Script, c *invocation) {
	var words []field
	for _, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if !mayBeOption(a) {
			words = append(words, a)
		}
	}
	switch {
	case len(words) >= 3 && words[0].text == "run":
		i := 0
		for i < len(c.args) && c.args[i].text != words[1].text {
			i++
		}
		if i+1 < len(c.args) {
			s.run(c, c.args[i+1:], "rustup run")
		}
	case len(words) >= 4 && words[0].text == "toolchain" && words[1].text == "link":
		s.runsDir(words[3])
	}
}

// moshCommand: mosh [options] HOST [--] [COMMAND...] runs COMMAND there;
// --ssh and --server run commands (launchers).
func moshCommand(s *Script, c *invocation) {
	moshLauncher.follow(s, c)
	r := moshOpts.read(c.args)
	if r.problem != "" {
		return // what it found is enough: the options run nothing more
	}
	ops := r.operands
	if len(ops) > 1 {
		s.run(c, c.args[ops[1]:], "mosh")
	}
}

var moshLauncher = launch("script: ssh server")

var moshOpts = opts("+client: server: predict: o|predict-overwrite a n family: 4 6 p|port: bind-server: ssh: no-ssh-pty " +
	"no-init local experimental-remote-ip: help version")

// wgetCommand: wget --use-askpass=CMD runs CMD; -e (--execute) takes a
// .wgetrc command, of which use_askpass runs one too; --config reads a
// file of them.
func wgetCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"use-askpass": "use-askpass", "execute": "e", "config": "config"},
		map[byte]string{'e': "e"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		if !o.has {
			continue
		}
		switch o.name {
		case "use-askpass":
			s.runScript(c, o.value, "wget --use-askpass")
		case "config":
			s.launchedFile(c, o.value, nil)
		case "e":
			if o.value.dynamic {
				s.cannot(c, "a .wgetrc command that is not static: "+s.source(o.value))
				return
			}
			name, value, _ := strings.Cut(o.value.text, "=")
			if strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(name)) == "useaskpass" {
				s.runScript(c, field{text: strings.TrimSpace(value), src: value}, "wget -e use_askpass")
			}
		}
	}
}

// resticCommand: restic --password-command CMD runs CMD (so does
// RESTIC_PASSWORD_COMMAND), and -o rclone.program, rclone.args,
// sftp.command and sftp.args set the commands of its backends.
func resticCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"password-command": "password-command", "option": "o"},
		map[byte]string{'o': "o"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		switch {
		case !o.has:
		case o.name == "password-command":
			s.runScript(c, o.value, "restic --password-command")
		case o.value.dynamic:
			s.cannot(c, "an option that is not static: "+s.source(o.value))
			return
		default:
			key, value, _ := strings.Cut(o.value.text, "=")
			switch strings.ToLower(key) {
			case "rclone.program", "sftp.command":
				s.runScript(c, field{text: value, src: value}, "restic -o "+key)
			case "rclone.args", "sftp.args":
				s.cannot(c, "arguments of a backend's command, which restic adds to it: "+key)
				return
			}
		}
	}
}

// checkBySSHCommand: the Nagios plugin check_by_ssh runs -C COMMAND
// remotely, through ssh with -o options.
func checkBySSHCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"command": "C", "ssh-option": "o"}, map[byte]string{'C': "C", 'o': "o"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	var o []option
	for _, f := range found {
		switch {
		case !f.has:
		case f.name == "C":
			s.runScript(c, f.value, "check_by_ssh -C")
		default:
			o = append(o, f)
		}
	}
	sshConfig(s, c, o)
}

// aptCommand: apt and apt-get take configuration with -o KEY=VALUE (and
// -c FILE): the Pre-Invoke and Post-Invoke hooks (APT::Update::,
// DPkg::), DPkg::Pre-Install-Pkgs and the proxy detector run commands
// through the shell; Dir:: and DPkg::Tools:: change what programs run.
func aptCommand(s *Script, c *invocation) {
	found, problem, at := watched(c.args, map[string]string{"option": "o", "config-file": "c"}, map[byte]string{'o': "o", 'c': "c"})
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return
	}
	for _, o := range found {
		switch {
		case !o.has:
		case o.name == "c":
			s.launchedFile(c, o.value, nil)
		case o.value.dynamic:
			s.cannot(c, "configuration that is not static: "+s.source(o.value))
			return
		default:
			key, value, _ := strings.Cut(o.value.text, "=")
			k := strings.ToLower(key)
			switch {
			case strings.Contains(k, "invoke") || strings.Contains(k, "pre-install-pkgs") || strings.Contains(k, "proxyautodetect"):
				s.runScript(c, field{text: value, src: value}, c.name+" -o "+key)
			case strings.HasPrefix(k, "dir") || strings.Contains(k, "::tools::") || strings.Contains(k, "::path") ||
				strings.Contains(k, "extracttemplates") || strings.Contains(k, "::bin::"):
				s.cannot(c, "configuration that changes the programs it runs: "+key)
				return
			}
		}
	}
}

// lxcCommand: lxc exec [REMOTE:]INSTANCE [--] COMMAND runs COMMAND in the
// instance.
func lxcCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic || c.args[0].text != "exec" {
		return
	}
	inner := &invocation{name: "lxc exec", args: c.args[1:], redirs: c.redirs, via: c.via, depth: c.depth}
	r, ok := s.options(inner, lxcExecOpts)
	if !ok {
		return
	}
	if i := r.first(len(inner.args)) + 1; i < len(inner.args) {
		rest := inner.args[i:]
		if !rest[0].dynamic && rest[0].text == "--" {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			s.run(inner, rest, "lxc exec")
		}
	}
}

var lxcExecOpts = opts("cwd: env: force-interactive force-noninteractive group: mode: n t T user: project: q|quiet debug " +
	"verbose force-local h|help")

// zypperCommand: zypper NAME runs zypper-NAME when NAME is none of its
// commands (a program the line does not show); install and its kin take
// package files, whose scripts run.
func zypperCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		if strings.HasPrefix(a.text, "-") {
			continue
		}
		if !zypperCommands[a.text] {
			s.cannot(c, "a subcommand the analyser does not know (a zypper-"+a.text+" program): "+a.text)
		}
		return
	}
}

var zypperCommands = set2(`help shell sh repos lr addrepo ar removerepo rr renamerepo nr modifyrepo mr refresh ref clean cc
	services ls addservice as modifyservice ms removeservice rs refresh-services refs install in remove rm verify ve
	source-install si install-new-recommends inr update up list-updates lu patch list-patches lp dist-upgrade dup
	patch-check pchk search se info if patch-info pattern-info product-info patches pch packages pa patterns pt products pd
	what-provides wp addlock al removelock rl locks ll cleanlocks cl versioncmp vcmp targetos tos licenses download
	source-download needs-rebooting ps purge-kernels moo system-architecture`)

// dvipsCommand: dvips -R0 lets the DVI file run commands (\special with
// a backquote).
func dvipsCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if a.text == "-R0" || a.text == "-R" && i+1 < len(c.args) && c.args[i+1].text == "0" {
			var ops []field
			for _, b := range c.args {
				if !mayBeOption(b) {
					ops = append(ops, b)
				}
			}
			s.addCode(c, "-R0", joinTexts(ops), anyDynamic(ops))
			return
		}
	}
}

// lessCommand: less +CMD runs a command of less's at the start: !, | and v
// run commands (s and o write files), so any but a line number, a search
// or a move is code; a lesskey file binds keys and sets LESSOPEN.
func lessCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic {
			if a.lead == "" || a.lead[0] == '+' || a.lead[0] == '-' {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		t := a.text
		switch {
		case t == "--":
			return
		case strings.HasPrefix(t, "++"):
			t = t[1:]
			fallthrough
		case strings.HasPrefix(t, "+"):
			if !lessInertCommand(t[1:]) {
				s.codeOf(c, "+", field{text: t[1:], src: t})
			}
		case strings.HasPrefix(t, "--lesskey") || t == "-k" || strings.HasPrefix(t, "-k") && !strings.HasPrefix(t, "--"):
			s.cannot(c, "a lesskey file, which can bind keys to commands and set LESSOPEN: "+t)
			return
		}
	}
}

// lessInertCommand: a number, a search (/ ?), G, g, F and empty move or
// follow, and run nothing.
func lessInertCommand(cmd string) bool {
	switch {
	case cmd == "" || isNumber(field{text: cmd}):
		return true
	case strings.HasPrefix(cmd, "/") || strings.HasPrefix(cmd, "?"):
		return !strings.ContainsAny(cmd, "!|")
	}
	return strings.Trim(cmd, "0123456789GgFpP%") == ""
}

// texCommand: TeX engines run what the document says through \write18
// when --shell-escape (-shell-escape, -enable-write18) is given, and
// read that document from their operands (TeX code or a file).
func texCommand(s *Script, c *invocation) {
	escape := false
	var ops []field
	for _, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name, value, _ := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		switch {
		case !mayBeOption(a):
			ops = append(ops, a)
		case name == "shell-escape" || name == "enable-write18":
			escape = true
		case name == "cnf-line" && strings.Contains(value, "shell_escape"):
			escape = true
		}
	}
	if escape {
		s.addCode(c, "--shell-escape", joinTexts(ops), anyDynamic(ops))
	}
}

// latexmkCommand: latexmk -pdflatex=CMD (and its other programs) runs CMD
// through the shell; -e CODE is Perl, -r FILE a Perl file.
func latexmkCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name, value, eq := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		if !strings.HasPrefix(a.text, "-") {
			continue
		}
		switch {
		case eq && latexmkPrograms[name]:
			s.runScript(c, field{text: value, src: value}, "latexmk -"+name)
		case (name == "e" || name == "r") && i+1 < len(c.args):
			i++
			if name == "e" {
				s.codeOf(c, "-e", c.args[i])
			} else {
				s.launchedFile(c, c.args[i], nil)
			}
		}
	}
}

var latexmkPrograms = set2(`latex pdflatex lualatex xelatex dvilualatex hilatex dvipdf ps2pdf dvips makeindex bibtex biber
	pdf_previewer ps_previewer ps_previewer_landscape dvi_previewer dvi_previewer_landscape print_type lpr lpr_dvi lpr_pdf
	pdf_update_command ps_filter ps_filter_landscape`)

// runsDir notes a directory whose programs the line runs: a file the
// line writes in it makes the line unresolved (files.go).
func (s *Script) runsDir(f field) { s.runs(f) }

func init() {
	// Shells of other languages: their scripts are code, also read as sh
	// for deny patterns (code.go).
	interpreters["rc"] = &interpreter{opts: opts("+c: d e i I l n o p s v x V"), code: []string{"c"}, exits: []string{"V"},
		interactive: []string{"i"}, also: true, stdin: true}
	interpreters["sash"] = &interpreter{opts: opts("+c: f: p: q a"), code: []string{"c"}, files: []string{"f"}, also: true, stdin: true}
	for _, name := range []string{"rc", "sash"} {
		handlers[name] = interpreters[name].follow
		tables[name] = interpreters[name].opts
	}
	for name, w := range moreWrappers {
		handlers[name] = w.follow
		tables[name] = w.opts
	}
	for _, name := range []string{"linux64", "i386", "x86_64", "i686", "ppc", "ppc32", "ppc64", "sparc", "sparc32",
		"sparc64", "s390", "s390x", "arm", "aarch64", "uname26", "setarch"} {
		handlers[name] = setarchCommand
	}
	handlers["linux32"] = setarchCommand
	for name, h := range map[string]handler{
		"capsh": capshCommand, "ksu": ksuCommand, "start-stop-daemon": startStopDaemon, "pidstat": pidstatCommand,
		"perf": perfCommand, "ip": ipCommand, "task": taskCommand, "xdotool": xdotoolCommand, "codex": codexCommand,
		"cdist": cdistCommand, "ansible-test": ansibleTestCommand, "ansible": ansibleCommand, "busctl": busctlCommand,
		"socat": socatCommand, "nc": netcatCommand, "ncat": netcatCommand, "netcat": netcatCommand, "sshfs": sshfsCommand,
		"hg": hgCommand, "gcc": gccCommand, "cc": gccCommand, "c89": gccCommand, "c99": gccCommand, "g++": gccCommand,
		"c++": gccCommand, "clang": gccCommand, "clang++": gccCommand, "cmake": cmakeCommand, "dotnet": dotnetCommand,
		"csvtool": csvtoolCommand, "fail2ban-client": fail2banCommand, "xdg-user-dir": xdgUserDirCommand,
		"service": serviceCommand, "sysctl": sysctlCommand, "crontab": crontabCommand, "systemctl": systemctlCommand,
		"run-parts": runPartsCommand, "gtester": gtesterCommand, "rustup": rustupCommand, "mosh": moshCommand,
		"lxc": lxcCommand, "zypper": zypperCommand, "dvips": dvipsCommand, "less": lessCommand, "zless": lessCommand,
		"latexmk": latexmkCommand, "apt": aptCommand, "apt-get": aptCommand, "wget": wgetCommand, "restic": resticCommand, "check_by_ssh": checkBySSHCommand,
		"tex": texCommand, "latex": texCommand, "pdflatex": texCommand, "pdftex": texCommand, "xelatex": texCommand,
		"xetex": texCommand, "lualatex": texCommand, "luatex": texCommand, "etex": texCommand, "context": texCommand,
		"dvilualatex": texCommand, "luahbtex": texCommand, "lualatex-dev": texCommand, "pdflatex-dev": texCommand,
	} {
		handlers[name] = h
	}
	// Programs that run what the analyser does not follow.
	for name, why := range map[string]string{
		"tmux":           "tmux runs commands and types keys into windows",
		"tmate":          "tmate runs commands and types keys into windows",
		"pexec":          "pexec builds the commands it runs from its words",
		"ctr":            "containerd's ctr runs a container's command the analyser does not follow",
		"arch-nspawn":    "arch-nspawn runs what a chroot's configuration says",
		"systemd-nspawn": "systemd-nspawn runs a container the analyser does not follow",
		"machinectl":     "machinectl runs shells and commands in machines the analyser does not follow",
		"opencode":       "opencode is an AI agent, which runs the commands it chooses",
		"aider":          "aider is an AI agent, which runs the commands it chooses",
		"claude":         "claude is an AI agent, which runs the commands it chooses",
		"gemini":         "gemini is an AI agent, which runs the commands it chooses",
	} {
		handlers[name] = unmodelled(why)
	}
}
