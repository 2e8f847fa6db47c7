package shell

// Programs of the system that run commands given to them: the dynamic
// loader, capability and scheduling wrappers, the kernel's and init's
// hooks (sysctl, service, crontab, systemctl), package managers' hooks.

import (
	"path"
	"strings"
)

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

// aptCommand: apt and apt-get take configuration with -o KEY=VALUE (and
// -c FILE): the Pre-Invoke and Post-Invoke hooks (APT::Update::,
// DPkg::), DPkg::Pre-Install-Pkgs and the proxy detector run commands
// through the shell; Dir:: and DPkg::Tools:: change what programs run.
func aptCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"option": "o", "config-file": "c"}, map[byte]string{'o': "o", 'c': "c"})
	if !ok {
		return
	}
	for _, o := range found {
		switch {
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
