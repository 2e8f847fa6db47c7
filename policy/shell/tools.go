package shell

import (
	"strings"
)

// pwshCommand: PowerShell takes -Command (any prefix: -c, -co, ...), or
// -EncodedCommand (-e, -ec, ...), or -File; options are case-insensitive
// and start with - or /. Without -File it runs code.
func pwshCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.addCode(c, "-Command", "", true)
			return
		}
		t := strings.ToLower(a.text)
		if !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "/") {
			s.addCode(c, "-Command", joinTexts(c.args[i:]), false) // pwsh COMMAND...
			return
		}
		name := strings.TrimLeft(t, "-/")
		name, _, _ = strings.Cut(name, ":")
		switch {
		case name == "":
		case strings.HasPrefix("command", name):
			s.addCode(c, "-Command", joinTexts(c.args[i+1:]), false)
			return
		case strings.HasPrefix("encodedcommand", name) || name == "ec":
			s.addCode(c, "-EncodedCommand", "", true)
			return
		case strings.HasPrefix("file", name):
			return // a script file
		case name == "v" || strings.HasPrefix("version", name) && len(name) > 1 || name == "?" || name == "h" || strings.HasPrefix("help", name):
			return
		}
	}
	s.addCode(c, "stdin", "", true)
}

func joinTexts(fs []field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.text
	}
	return strings.Join(parts, " ")
}

// debugger reads gdb's and lldb's words: options with one or two dashes
// (getopt_long_only, any unique prefix), commands given as code, and the
// program they run.
type debugger struct {
	opts *getopt
	// code are the options whose value is debugger commands (which can
	// run shell commands: gdb's shell and !, lldb's platform shell).
	code []string
	// args is the option after which the rest is the program and its
	// arguments (gdb --args, lldb --).
	args string
	// batch are the options with which no commands are read from stdin.
	batch []string
}

var (
	gdbDebugger = &debugger{opts: opts("args batch batch-silent ex|eval-command: iex|init-eval-command: x|command: " +
		"ix|init-command: p|pid: c|core: e|exec: s|symbols: se: d|directory: cd: data-directory: D: nx n nh q|quiet silent " +
		"tui tty: i|interpreter: b: l: w|write statistics readnow readnever return-child-result configuration version help " +
		"fullname f early-init-eval-command: eiex: early-init-command: eix:"),
		code: []string{"ex", "iex", "eiex", "early-init-eval-command"}, args: "args", batch: []string{"batch", "batch-silent", "version", "help", "configuration"}}
	lldbDebugger = &debugger{opts: opts("o|one-line: O|one-line-before-file: k|one-line-on-crash: K|source-on-crash: " +
		"s|source: S|source-before-file: b|batch x|no-lldbinit X|no-use-colors Q|source-quietly p|attach-pid: n|attach-name: " +
		"w|wait-for a|arch: c|core: f|file: l|script-language: e|editor r|repl:: R|repl-language: v|version h|help " +
		"P|python-path print-script-interpreter-info debug d local-lldbinit"),
		code: []string{"one-line", "one-line-before-file", "one-line-on-crash", "repl"}, args: "--",
		batch: []string{"batch", "version", "help", "python-path", "print-script-interpreter-info"}}
)

func gdbCommand(s *Script, c *invocation)  { gdbDebugger.follow(s, c) }
func lldbCommand(s *Script, c *invocation) { lldbDebugger.follow(s, c) }

func (d *debugger) follow(s *Script, c *invocation) {
	args := c.args
	var all []option
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !mayBeOption(a) {
			continue // the program, a core or a pid
		}
		if a.dynamic {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if a.text == "--" {
			if d.args == "--" {
				s.run(c, args[i+1:], c.name+" --")
			}
			break
		}
		// One dash or two: getopt_long_only.
		t := "--" + strings.TrimPrefix(strings.TrimPrefix(a.text, "-"), "-")
		var next *field
		if i+1 < len(args) {
			next = &args[i+1]
		}
		o, used, problem := d.opts.option(t, a, next)
		if problem != "" {
			s.cannot(c, problem+": "+a.text)
			return
		}
		all = append(all, o...)
		i += used
		if len(o) > 0 && o[0].name == d.args {
			s.run(c, args[i+1:], c.name+" --"+d.args)
			break
		}
	}
	r := readOpts{opts: all}
	for _, o := range r.values(d.code...) {
		s.codeOf(c, "-"+o.name, o.value)
	}
	if !r.has(d.batch...) {
		s.stdinCode(c, nil)
	}
}

// vimCommand: vim runs Ex commands given by +CMD, -c CMD, --cmd CMD,
// --remote-send and --remote-expr, and from stdin in Ex mode (-e, -E,
// -es, or as ex): code, since :! runs the shell.
func vimCommand(s *Script, c *invocation) {
	exMode := c.name == "ex"
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && (a.lead == "" || a.lead[0] == '-' || a.lead[0] == '+') {
			s.addCode(c, "+", "", true)
			return
		}
		t := a.text
		switch {
		case t == "--":
			i = len(c.args)
		case strings.HasPrefix(t, "+"):
			if rest := t[1:]; rest != "" && !isNumber(field{text: rest}) && !strings.HasPrefix(rest, "/") {
				s.codeOf(c, "+", field{text: rest, src: rest})
			}
		case t == "-c" || t == "--cmd" || t == "--remote-send" || t == "--remote-expr" || t == "--remote-expr-silent":
			if i+1 < len(c.args) {
				s.codeOf(c, t, c.args[i+1])
				i++
			}
		case t == "-S" || t == "-s" || t == "-u" || t == "-U" || t == "-i" || t == "-T" || t == "-w" || t == "-W" ||
			t == "-t" || t == "-q" || t == "--servername" || t == "--startuptime" || t == "--log" || t == "--cmdline":
			i++
		case t == "-e" || t == "-E" || strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "--") && strings.ContainsAny(t, "eE"):
			exMode = true
		}
	}
	if exMode {
		s.stdinCode(c, nil)
	}
}

// emacsCommand: emacs --eval EXPR (and -eval, --execute) runs Lisp.
func emacsCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.addCode(c, "--eval", "", true)
			return
		}
		name, value, eq := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		if !strings.HasPrefix(a.text, "-") {
			continue
		}
		switch name {
		case "eval", "execute", "e":
			if c.name == "emacs" && name == "e" {
				continue
			}
			switch {
			case eq:
				s.codeOf(c, "--eval", field{text: value, src: value})
			case i+1 < len(c.args):
				s.codeOf(c, "--eval", c.args[i+1])
				i++
			}
		}
	}
}

// denoCommand: deno eval CODE runs code, deno repl reads it from stdin;
// deno run FILE runs a file.
func denoCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		if strings.HasPrefix(a.text, "-") {
			continue
		}
		switch a.text {
		case "eval":
			for _, b := range c.args[i+1:] {
				if !mayBeOption(b) {
					s.codeOf(c, "eval", b)
					return
				}
			}
		case "repl":
			s.stdinCode(c, nil)
		}
		return
	}
}

// sqliteRuns: the sqlite3 shell runs commands through dot-commands
// (.shell, .system, .once '|cmd', .import '|cmd'), and loads code with
// .load and load_extension().
func sqliteRuns(sql string) bool {
	for line := range strings.SplitSeq(sql, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), ".") {
			return true
		}
	}
	return strings.Contains(strings.ToLower(sql), "load_extension")
}

// sqliteCommand: sqlite3 [OPTIONS] [FILE] [SQL]...: SQL and -cmd values
// that hold dot-commands are code, and without SQL it reads stdin.
func sqliteCommand(s *Script, c *invocation) {
	ops := []field{}
	safe := false
	var cmds []field
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if !mayBeOption(a) {
			ops = append(ops, a)
			continue
		}
		name := strings.TrimLeft(a.text, "-")
		takes, ok := sqliteOpts[name]
		switch {
		case a.text == "--":
			ops = append(ops, c.args[i+1:]...)
			i = len(c.args)
			continue
		case !ok:
			s.cannot(c, "an option the analyser does not know: "+a.text)
			return
		case name == "safe":
			safe = true
		case name == "version" || name == "help":
			return
		}
		for k := 0; k < takes && i+1 < len(c.args); k++ {
			i++
			if name == "cmd" {
				cmds = append(cmds, c.args[i])
			}
		}
	}
	if safe {
		return
	}
	sql := cmds
	if len(ops) > 1 {
		sql = append(sql, ops[1:]...)
	}
	for _, f := range sql {
		if f.dynamic || sqliteRuns(f.text) {
			s.codeOf(c, "sql", f)
		}
	}
	if len(ops) <= 1 {
		s.stdinCode(c, sqliteRuns)
	}
}

// sqliteOpts are sqlite3's options (one dash or two) and how many words
// follow each.
var sqliteOpts = map[string]int{"A": 1, "append": 0, "ascii": 0, "bail": 0, "batch": 0, "box": 0, "column": 0, "cmd": 1,
	"csv": 0, "deserialize": 0, "echo": 0, "escape": 1, "init": 1, "header": 0, "noheader": 0, "html": 0, "interactive": 0,
	"json": 0, "line": 0, "list": 0, "lookaside": 2, "markdown": 0, "maxsize": 1, "memtrace": 0, "mmap": 1, "newline": 1,
	"nofollow": 0, "nonce": 1, "no-rowid-in-view": 0, "nullvalue": 1, "pagecache": 2, "pcachetrace": 0, "quote": 0,
	"readonly": 0, "safe": 0, "separator": 1, "sorterref": 1, "stats": 0, "table": 0, "tabs": 0, "unsafe-testing": 0,
	"version": 0, "vfs": 1, "zip": 0, "help": 0, "utf8": 0, "heap": 2}

// psqlRuns: psql's \! runs a shell command, \o, \g and \w pipe to one
// with |, \copy and COPY ... PROGRAM run one.
func psqlRuns(text string) bool {
	return strings.Contains(text, `\!`) || strings.Contains(text, "|") || strings.Contains(strings.ToLower(text), "program")
}

func psqlCommand(s *Script, c *invocation) {
	r, ok := s.options(c, psqlOpts)
	if !ok {
		return
	}
	if r.has("version", "help", "list") {
		return
	}
	cmds := r.values("command")
	for _, o := range cmds {
		if o.value.dynamic || psqlRuns(o.value.text) {
			s.codeOf(c, "-c", o.value)
		}
	}
	if len(cmds) == 0 && !r.has("file") {
		s.stdinCode(c, psqlRuns)
	}
}

var psqlOpts = opts("c|command: d|dbname: f|file: l|list v|set: variable: V|version X|no-psqlrc 1|single-transaction ?|help:: " +
	"a|echo-all b|echo-errors e|echo-queries E|echo-hidden L|log-file: n|no-readline o|output: q|quiet s|single-step " +
	"S|single-line A|no-align csv F|field-separator: H|html P|pset: R|record-separator: t|tuples-only T|table-attr: " +
	"x|expanded z|field-separator-zero 0|record-separator-zero h|host: p|port: U|username: w|no-password W|password")

// mysqlRuns: the mysql client's system (\!) runs a shell command.
func mysqlRuns(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, `\!`) || strings.Contains(l, "system")
}

func mysqlCommand(s *Script, c *invocation) {
	r, ok := s.options(c, mysqlOpts)
	if !ok {
		return
	}
	if r.has("version", "help") {
		return
	}
	cmds := r.values("execute")
	for _, o := range cmds {
		if o.value.dynamic || mysqlRuns(o.value.text) {
			s.codeOf(c, "-e", o.value)
		}
	}
	if len(cmds) == 0 {
		s.stdinCode(c, mysqlRuns)
	}
}

var mysqlOpts = opts("e|execute: D|database: h|host: u|user: p|password:: P|port: S|socket: B|batch N|skip-column-names " +
	"column-names r|raw s|silent t|table v|verbose V|version ?|help I X|xml H|html E|vertical f|force n|unbuffered " +
	"q|quick A|no-auto-rehash auto-rehash c|comments skip-comments C|compress U|safe-updates i-am-a-dummy " +
	"protocol: ssl ssl-ca: ssl-cert: ssl-key: ssl-mode: ssl-verify-server-cert skip-ssl default-character-set: " +
	"defaults-file: defaults-extra-file: no-defaults print-defaults connect-timeout: max-allowed-packet: " +
	"init-command: local-infile:: L|skip-line-numbers line-numbers o|one-database pager:: no-pager tee: no-tee " +
	"prompt: W|pipe reconnect skip-reconnect binary-mode show-warnings sigint-ignore plugin-dir: default-auth: " +
	"enable-cleartext-plugin get-server-public-key server-public-key-path: login-path: binary-as-hex skip-binary-as-hex " +
	"character-sets-dir: delimiter: histignore: j|syslog net-buffer-length: select-limit: max-join-size: " +
	"T|debug-info #|debug:: debug-check zstd-compression-level: compression-algorithms:")

// zipCommand: zip -TT CMD (--unzip-command CMD) tests the archive with a
// command of its own.
func zipCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name, value, eq := strings.Cut(a.text, "=")
		if name == "-TT" || strings.HasPrefix("--unzip-command", name) && len(name) > 4 {
			switch {
			case eq:
				s.runScript(c, field{text: value, src: value}, "zip --unzip-command")
			case i+1 < len(c.args):
				s.runScript(c, c.args[i+1], "zip --unzip-command")
			}
		}
	}
}

// tcpdumpCommand: tcpdump -z CMD runs CMD on each file it rotates.
func tcpdumpCommand(s *Script, c *invocation) {
	s.watchedScripts(c, nil, map[byte]string{'z': "postrotate-command"})
}

// rsyncCommand: rsync -e CMD (--rsh) runs CMD to reach the other end,
// --rsync-path runs there.
func rsyncCommand(s *Script, c *invocation) {
	s.watchedScripts(c, map[string]string{"rsh": "rsh", "rsync-path": "rsync-path"}, map[byte]string{'e': "rsh"})
}

// manCommand: man -P PAGER (--pager) and -HBROWSER (--html=BROWSER) run
// commands.
func manCommand(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"pager": "pager", "html": "html"}, map[byte]string{'P': "pager", 'H': "html"})
	if !ok {
		return
	}
	for _, o := range found {
		// --html takes its browser after = only.
		if o.name == "pager" || !o.sep {
			s.runScript(c, o.value, "man --"+o.name)
		}
	}
}

// kubectlCommand: kubectl exec POD [--] COMMAND runs COMMAND in the pod
// (without --, a deprecated form kubectl still runs); --kubeconfig names
// a file whose users can run commands (exec credential plugins). Its
// flags (pflag) may come anywhere and are never abbreviated.
func kubectlCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		// Anywhere among the words, as pflag reads it.
		if v, ok := strings.CutPrefix(a.text, "--kubeconfig="); ok && !a.dynamic {
			s.launchedFile(c, field{text: v, src: v}, nil)
		} else if a.text == "--kubeconfig" && i+1 < len(c.args) {
			s.launchedFile(c, c.args[i+1], nil)
		}
	}
	r, ok := s.options(c, kubectlOpts)
	if !ok {
		return
	}
	if len(r.operands) == 0 {
		return
	}
	sub := c.args[r.operands[0]]
	if sub.dynamic {
		s.cannot(c, "a subcommand that is not static: "+s.source(sub))
		return
	}
	if sub.text != "exec" {
		return
	}
	rest := c.args[r.operands[0]+1:]
	inner := &invocation{name: "kubectl exec", args: rest, redirs: c.redirs, via: c.via, depth: c.depth}
	r, ok = s.options(inner, kubectlExecOpts)
	if !ok || len(r.operands) < 2 && !r.has("filename") {
		return
	}
	ops := r.operands[1:] // after the pod
	if r.has("filename") {
		ops = r.operands
	}
	words := make([]field, 0, len(ops))
	for _, k := range ops {
		words = append(words, rest[k])
	}
	if len(words) > 0 {
		s.run(inner, words, "kubectl exec")
	}
}

// kubectlGlobal are kubectl's global flags (1.33).
const kubectlGlobal = "n|namespace: as: as-group: as-uid: cache-dir: certificate-authority: client-certificate: client-key: " +
	"cluster: context: kubeconfig: match-server-version password: profile: profile-output: request-timeout: s|server: " +
	"tls-server-name: token: user: username: v: vmodule: insecure-skip-tls-verify disable-compression warnings-as-errors " +
	"log-flush-frequency: log-backtrace-at: log-dir: log-file: log-file-max-size: logtostderr alsologtostderr one-output " +
	"skip-headers skip-log-headers stderrthreshold: add-dir-header h|help "

var (
	// kubectlOpts reads up to the subcommand: flags of subcommands may
	// come before it too, but those with values are among the globals
	// or after it.
	kubectlOpts     = opts("=+" + kubectlGlobal + "version")
	kubectlExecOpts = opts("=" + kubectlGlobal + "c|container: f|filename: i|stdin t|tty q|quiet pod-running-timeout:")
)

// containerCommand: docker, podman and nerdctl exec CONTAINER COMMAND
// and run (or create) IMAGE COMMAND run COMMAND in the container
// (--entrypoint's program first, --health-cmd besides). Their global
// options come first; podman's --runtime, --conmon and the like name
// programs it runs.
func containerCommand(s *Script, c *invocation) {
	global := dockerGlobalOpts
	if c.name == "podman" {
		global = podmanGlobalOpts
	}
	r, ok := s.options(c, global)
	if !ok {
		return
	}
	for _, o := range r.values("runtime", "conmon", "network-cmd-path", "hooks-dir", "module", "config", "runtime-flag") {
		s.cannot(c, "--"+o.name+", which names programs or configuration it runs: "+s.source(o.value))
		return
	}
	i := r.first(len(c.args))
	if i >= len(c.args) || c.args[i].dynamic {
		if i < len(c.args) {
			s.cannot(c, "a subcommand that is not static: "+s.source(c.args[i]))
		}
		return
	}
	sub := c.args[i].text
	rest := c.args[i+1:]
	if sub == "container" && len(rest) > 0 && !rest[0].dynamic {
		sub, rest = rest[0].text, rest[1:] // docker container run
	}
	inner := &invocation{name: c.name + " " + sub, args: rest, redirs: c.redirs, via: c.via, depth: c.depth}
	switch sub {
	case "exec":
		r, ok := s.options(inner, containerExecOpts)
		if !ok {
			return
		}
		if i := r.first(len(rest)) + 1; i < len(rest) {
			s.run(inner, rest[i:], inner.name)
		}
	case "run", "create":
		r, ok := s.options(inner, containerRunOpts)
		if !ok {
			return
		}
		for _, o := range r.values("health-cmd", "health-startup-cmd") {
			s.runScript(inner, o.value, inner.name+" --"+o.name)
		}
		var words []field
		for _, o := range r.values("entrypoint") {
			words = []field{o.value}
		}
		if i := r.first(len(rest)) + 1; i < len(rest) {
			words = append(words, rest[i:]...)
		}
		if len(words) > 0 {
			s.run(inner, words, inner.name)
		}
	}
}

var (
	dockerGlobalOpts = opts("=+config: c|context: D|debug H|host: l|log-level: tls tlscacert: tlscert: tlskey: tlsverify " +
		"v|version help address: namespace: n snapshotter: cgroup-manager: cni-path: cni-netconfpath: data-root: " +
		"debug-full experimental host-gateway-ip: hosts-dir: insecure-registry: storage-driver: kube-hide-dupe")
	podmanGlobalOpts = opts("=+cdi-spec-dir: cgroup-manager: config: conmon: connection: c|context: db-backend: events-backend: " +
		"help h hooks-dir: identity: imagestore: log-level: module: network-cmd-path: network-config-dir: out: r|remote " +
		"root: runroot: runtime: runtime-flag: ssh: storage-driver: storage-opt: syslog tmpdir: transient-store url: " +
		"volumepath: v|version")
	containerRunOpts = opts("=+a|attach: add-host: annotation: blkio-weight: blkio-weight-device: cap-add: cap-drop: " +
		"cgroup-parent: cgroupns: cidfile: cpu-period: cpu-quota: cpu-rt-period: cpu-rt-runtime: c|cpu-shares: cpus: " +
		"cpuset-cpus: cpuset-mems: device: device-cgroup-rule: device-read-bps: device-read-iops: device-write-bps: " +
		"device-write-iops: dns: dns-option: dns-opt: dns-search: domainname: entrypoint: e|env: env-file: expose: gpus: " +
		"group-add: health-cmd: health-interval: health-retries: health-start-interval: health-start-period: " +
		"health-timeout: h|hostname: ip: ip6: ipc: isolation: kernel-memory: l|label: label-file: link: link-local-ip: " +
		"log-driver: log-opt: mac-address: m|memory: memory-reservation: memory-swap: memory-swappiness: mount: name: " +
		"network: net: network-alias: net-alias: oom-score-adj: pid: pids-limit: platform: p|publish: pull: restart: " +
		"runtime: security-opt: shm-size: stop-signal: stop-timeout: storage-opt: sysctl: tmpfs: ulimit: u|user: userns: " +
		"uts: v|volume: volume-driver: volumes-from: w|workdir: detach-keys: d|detach disable-content-trust init " +
		"i|interactive no-healthcheck oom-kill-disable P|publish-all privileged q|quiet read-only rm sig-proxy t|tty help " +
		"arch: authfile: cgroup-conf: cgroups: chrootdirs: conmon-pidfile: decryption-key: env-host env-merge: gidmap: " +
		"group-entry: hostuser: http-proxy image-volume: init-path: passwd-entry: personality: pod: pod-id-file: " +
		"preserve-fds: preserve-fd: requires: rootfs rdt-class: sdnotify: seccomp-policy: secret: subgidname: subuidname: " +
		"systemd: timeout: tls-verify uidmap: umask: unsetenv: unsetenv-all variant: os: no-hosts hosts-file: " +
		"health-on-failure: health-log-destination: health-max-log-count: health-max-log-size: health-startup-cmd: " +
		"health-startup-interval: health-startup-retries: health-startup-success: health-startup-timeout: replace " +
		"read-only-tmpfs passwd retry: retry-delay: cpu-count: cpu-percent: io-maxbandwidth: io-maxiops: " +
		"use-api-socket")
)

var containerExecOpts = opts("+d|detach detach-keys: e|env: env-file: i|interactive privileged t|tty u|user: w|workdir: " +
	"l|latest preserve-fds: preserve-fd: cidfile: help")

func init() {
	for name, h := range map[string]handler{"zip": zipCommand, "tcpdump": tcpdumpCommand, "rsync": rsyncCommand,
		"man": manCommand, "kubectl": kubectlCommand, "docker": containerCommand, "podman": containerCommand,
		"nerdctl": containerCommand} {
		special[name] = h
	}
}

// runner is a package manager's command that runs a command of its words
// in a project's environment (uv run, poetry run, npx): its own options
// before the subcommand, the subcommand's, then the command.
type runner struct {
	global *getopt  // options before the subcommand; nil: none allowed
	subs   []string // the subcommands that run a command ("run", "exec"); none: the program itself does (npx)
	opts   *getopt  // the subcommand's options, up to the command
	script []string // options whose value is a script for a shell (npx -c, npm exec -c)
}

var runners = map[string]*runner{
	"uv": {global: opts("+q|quiet v|verbose color: native-tls offline no-progress no-cache n cache-dir: python-preference: " +
		"no-python-downloads allow-insecure-host: directory: project: config-file: no-config h|help V|version"),
		subs: []string{"run"},
		opts: opts("+extra: all-extras no-extra: no-dev group: no-group only-group all-groups m|module script with: with-editable: " +
			"with-requirements: isolated active no-sync locked frozen s|no-project package: no-editable env-file: no-env-file " +
			"p|python: python-preference: index: default-index: i|index-url: extra-index-url: find-links: index-strategy: " +
			"prerelease: resolution: upgrade U upgrade-package: reinstall reinstall-package: exact gui-script no-build " +
			"no-binary: only-binary: q|quiet v|verbose directory: project: offline no-cache compile-bytecode link-mode: " +
			"refresh refresh-package: max-recursion-depth: all-packages h|help")},
	"uvx": {opts: opts("+from: with: with-editable: with-requirements: python: p: index: default-index: extra-index-url: " +
		"find-links: isolated q|quiet v|verbose offline no-cache prerelease: reinstall refresh upgrade U h|help V|version")},
	"poetry": {global: opts("+q|quiet v|verbose n|no-interaction ansi no-ansi no-plugins no-cache C|directory: P|project: h|help V|version"),
		subs: []string{"run"}, opts: opts("+")},
	"pipenv": {global: opts("+python: v|verbose q|quiet clear site-packages h|help version"), subs: []string{"run"}, opts: opts("+")},
	"bundle": {global: opts("+V|verbose no-color r|retry: h|help version"), subs: []string{"exec"},
		opts: opts("+keep-file-descriptors gemfile:")},
	"conda": {subs: []string{"run"}, opts: opts("+n|name: p|prefix: cwd: live-stream no-capture-output v|verbose q|quiet dev debug-wrapper-scripts h|help")},
	"npx":   {opts: opts("+y|yes no p|package: c|call: q|quiet ignore-existing no-install shell: h|help"), script: []string{"call"}},
	"npm":   {global: opts("+"), subs: []string{"exec", "x"}, opts: opts("+y|yes no package: c|call: w|workspace: ws|workspaces include-workspace-root q|quiet"), script: []string{"call"}},
	"pnpm": {global: opts("+C|dir: w|workspace-root r|recursive filter: parallel s|silent reporter:"), subs: []string{"exec", "dlx"},
		opts: opts("+c|shell-mode package: r|recursive parallel no-reporter-hide-prefix report-summary resume-from: filter:")},
	"bunx": {opts: opts("+bun p|package:")},
	"yarn": {global: opts("+cwd: verbose offline prefer-offline s|silent no-progress no-default-rc use-yarnrc: " +
		"frozen-lockfile pure-lockfile ignore-scripts ignore-engines mutex: network-timeout: registry: h|help v|version"),
		subs: []string{"exec", "dlx"}, opts: opts("+p|package: q|quiet")},
	"cabal": {global: opts("+v|verbose:: config-file: ignore-expiry http-transport: nix store-dir: active-repositories: " +
		"h|help V|version numeric-version"),
		subs: []string{"exec", "v2-exec", "new-exec"}, opts: opts("+project-file: project-dir: builddir: distdir: v|verbose:: " +
			"with-compiler: w: with-hc-pkg: ignore-project z offline enable-profiling disable-profiling O|enable-optimization:: " +
			"disable-optimization j|jobs:: keep-going h|help")},
}

// follow reads a runner's words and follows the command they run.
func (rn *runner) follow(s *Script, c *invocation) {
	args := c.args
	if len(rn.subs) > 0 {
		g := rn.global
		if g == nil {
			g = opts("+")
		}
		r, ok := s.options(c, g)
		if !ok {
			return
		}
		i := r.first(len(args))
		if i >= len(args) || args[i].dynamic || !contains(rn.subs, args[i].text) {
			return // another subcommand: the project's own files run, not ours to read
		}
		args = args[i+1:]
	}
	inner := &invocation{name: c.name, args: args, redirs: c.redirs, via: c.via, depth: c.depth}
	r, ok := s.options(inner, rn.opts)
	if !ok {
		return
	}
	label := c.name
	if len(rn.subs) > 0 {
		label += " " + c.args[len(c.args)-len(args)-1].text
	}
	given := false
	for _, o := range r.values(rn.script...) {
		given = true
		s.runScript(inner, o.value, label+" --"+o.name)
	}
	if r.has("shell-mode") {
		// pnpm exec -c runs its words through a shell.
		if i := r.first(len(args)); i < len(args) {
			s.runJoined(inner, args[i:], label+" -c")
		}
		return
	}
	if i := r.first(len(args)); i < len(args) && !given {
		s.run(inner, args[i:], label)
	}
}

func init() {
	for name, rn := range runners {
		special[name] = rn.follow
	}
}
