package shell

import (
	"strings"
)

// addCode records code handed to c's interpreter, in the form form.
func (s *Script) addCode(c *invocation, form, text string, dynamic bool) {
	if dynamic {
		text = ""
	}
	if len(s.Code) >= maxReasons {
		return
	}
	s.Code = append(s.Code, Code{Interpreter: c.name, Form: form, Text: text, Dynamic: dynamic, Via: c.via})
}

// codeOf records the value of an option (or an operand) as code in form.
func (s *Script) codeOf(c *invocation, form string, f field) {
	s.addCode(c, form, f.text, f.dynamic && f.why != whyGlob)
}

// stdinCode records the code an interpreter reads from stdin: a
// here-document or here-string, else code not known statically (a pipe,
// the caller). A file redirected in is a program file, not ours to read
// (unless the line wrote it).
func (s *Script) stdinCode(c *invocation, runs func(string) bool) {
	s.codeFrom(c, s.inputOf(c.redirs, 0), "stdin", runs)
}

// interpreter reads the words of a language's interpreter: where its
// code is, or that it runs a file (not ours to read).
type interpreter struct {
	opts *getopt
	// cluster reads the options instead of opts, for interpreters with
	// parsers of their own (perl -lne, ruby -pi.bak).
	cluster *cluster
	// code are the options whose value is code (-c, -e, --eval).
	code []string
	// codeFlag are options without a value that make the first operand
	// code (elvish -c).
	codeFlag []string
	// exits are the options with which no code runs (--version, -h).
	exits []string
	// files are options naming a program file (awk -f): with one the
	// first operand is no program.
	files []string
	// program: the first operand is the program's text (awk, sed), else
	// it is a script file.
	program bool
	// stdin: without code and a script file, the program is read from
	// stdin (python, perl, node; not bun, which prints its usage).
	stdin bool
	// nostdin are options with which no program is read from stdin
	// (python -m, node --test).
	nostdin []string
	// interactive are options that read code from stdin after the rest
	// (python -i).
	interactive []string
	// runs tells whether a program text can run anything (awk, sed); nil
	// for the languages where any text can.
	runs func(text string) bool
	// safe are options with which the program cannot run anything (awk
	// and sed --sandbox, sqlite3 -safe).
	safe []string
	// also reads the text as a POSIX shell script, best effort, so that a
	// deny pattern sees the commands of a shell of another language (fish,
	// csh): what it finds is added, what it cannot read is not (the code
	// asks anyway).
	also bool
	// more follows options that run something else (node --import of a
	// data: URL, perl -M of code, gawk -l).
	more func(s *Script, c *invocation, r *readOpts)
}

func (in *interpreter) follow(s *Script, c *invocation) {
	var r readOpts
	if in.cluster != nil {
		r = in.cluster.read(c.args)
	} else {
		r = in.opts.read(c.args)
	}
	if r.problem != "" {
		s.badOptions(c, r)
		return
	}
	if r.has(in.exits...) {
		return
	}
	if in.more != nil {
		in.more(s, c, &r)
	}
	safe := r.has(in.safe...)
	runs := in.runs
	if safe {
		runs = func(string) bool { return false }
	}
	given := false
	for _, o := range r.opts {
		if !contains(in.code, o.name) {
			continue
		}
		given = true
		if runs != nil && !o.value.dynamic && !runs(o.value.text) {
			continue
		}
		s.codeOf(c, optionForm(o.name), o.value)
		if in.also && !o.value.dynamic {
			s.bestEffort(o.value.text, c.under(c.name+" "+optionForm(o.name)), c.depth)
		}
	}
	for _, o := range r.values(in.files...) {
		// awk -f FILE: a program file, or a descriptor's.
		if !s.programOperand(c, o.value, runs) {
			s.runs(o.value)
		}
	}
	ops := r.operands
	if r.has(in.codeFlag...) && len(ops) > 0 {
		given = true
		f := c.args[ops[0]]
		s.codeOf(c, optionForm(in.codeFlag[0]), f)
		if in.also && !f.dynamic {
			s.bestEffort(f.text, c.under(c.name+" "+optionForm(in.codeFlag[0])), c.depth)
		}
		ops = ops[1:]
	}
	switch {
	case in.program && !given && !r.has(in.files...):
		if len(ops) == 0 {
			return // no program: a usage error
		}
		p := c.args[ops[0]]
		if runs != nil && !p.dynamic && !runs(p.text) {
			return
		}
		s.codeOf(c, "program", p)
	case in.program:
	case r.has(in.interactive...):
		s.stdinCode(c, runs)
	case given || r.has(in.nostdin...):
	case len(ops) > 0 && s.programOperand(c, c.args[ops[0]], runs):
	case !in.stdin:
	case len(ops) == 0, !c.args[ops[0]].dynamic && c.args[ops[0]].text == "-":
		s.stdinCode(c, runs)
	default:
		s.runs(c.args[ops[0]]) // a script file: not ours to read, unless the line wrote it
	}
}

// optionForm is how an option is written: -c, --eval.
func optionForm(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// bestEffort reads text as a POSIX shell script and keeps the commands it
// finds, for deny patterns, leaving what it cannot read aside: the text
// is code of another language, reported as such.
func (s *Script) bestEffort(text string, via []string, depth int) {
	sub := &Script{printer: s.printer, calls: s.calls}
	sub.script(text, via, depth+1)
	s.Commands = append(s.Commands, sub.Commands...)
	s.Code = append(s.Code, sub.Code[:min(len(sub.Code), max(0, maxReasons-len(s.Code)))]...)
	s.calls = sub.calls
}

// cluster is how perl, ruby and python read their options: letters in
// clusters (-lne), some taking the rest of the cluster or the next word
// (-e CODE), some the rest of the cluster only (-i.bak), some digits
// (-l0, -0777); then the first operand is the script.
type cluster struct {
	// letters maps each option letter to how it reads: 'f' a flag, 'v' a
	// value (the rest of the cluster or the next word), 'r' the rest of
	// the cluster, possibly empty, 'd' digits (and, for -C, letters)
	// following it, 'o' the rest when it starts with ':' or 't' (perl -d).
	letters map[byte]byte
	digits  map[byte]string // for 'd' letters: the characters they take
	// long are the long options: true when they take a value (after '='
	// or the next word).
	long map[string]bool
	// ends are the options after which the rest are the program's
	// arguments (python -c, -m).
	ends []string
}

func (cl *cluster) read(args []field) readOpts {
	var r readOpts
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !mayBeOption(a) {
			for j := i; j < len(args); j++ {
				r.operands = append(r.operands, j)
			}
			return r
		}
		if a.dynamic {
			r.problem, r.problemAt = "a word that is not static where an option could be", i
			return r
		}
		t := a.text
		if t == "--" {
			for j := i + 1; j < len(args); j++ {
				r.operands = append(r.operands, j)
			}
			return r
		}
		if strings.HasPrefix(t, "--") {
			name, value, eq := strings.Cut(t[2:], "=")
			takes, ok := cl.long[name]
			switch {
			case !ok:
				r.problem, r.problemAt = "an option the analyser does not know", i
				return r
			case takes && eq:
				r.opts = append(r.opts, option{name: name, value: field{text: value, src: value}, has: true, at: i})
			case takes:
				if i+1 >= len(args) {
					r.problem, r.problemAt = "an option missing its value", i
					return r
				}
				r.opts = append(r.opts, option{name: name, value: args[i+1], has: true, sep: true, at: i})
				i++
			default:
				r.opts = append(r.opts, option{name: name, at: i})
			}
			if contains(cl.ends, name) {
				for j := i + 1; j < len(args); j++ {
					r.operands = append(r.operands, j)
				}
				return r
			}
			continue
		}
		end := false
	letters:
		for j := 1; j < len(t); j++ {
			l := t[j]
			kind := cl.letters[l]
			name := string(l)
			rest := t[j+1:]
			switch kind {
			case 'f':
				r.opts = append(r.opts, option{name: name, at: i})
			case 'v':
				if rest != "" {
					r.opts = append(r.opts, option{name: name, value: field{text: rest, src: rest}, has: true, at: i})
				} else if i+1 < len(args) {
					r.opts = append(r.opts, option{name: name, value: args[i+1], has: true, sep: true, at: i})
					i++
				} else {
					r.problem, r.problemAt = "an option missing its value", i
					return r
				}
				end = contains(cl.ends, name)
				break letters
			case 'r':
				r.opts = append(r.opts, option{name: name, value: field{text: rest, src: rest}, has: rest != "", at: i})
				break letters
			case 'o':
				if rest != "" && (rest[0] == ':' || rest[0] == 't') {
					r.opts = append(r.opts, option{name: name, value: field{text: rest, src: rest}, has: true, at: i})
					break letters
				}
				r.opts = append(r.opts, option{name: name, at: i})
			case 'd':
				k := 0
				for k < len(rest) && strings.IndexByte(cl.digits[l], rest[k]) >= 0 {
					k++
				}
				r.opts = append(r.opts, option{name: name, value: field{text: rest[:k], src: rest[:k]}, has: k > 0, at: i})
				j += k
			default:
				r.problem, r.problemAt = "an option the analyser does not know: -"+string(l), i
				return r
			}
		}
		if end {
			for j := i + 1; j < len(args); j++ {
				r.operands = append(r.operands, j)
			}
			return r
		}
	}
	return r
}

// letters builds a cluster's letter table from "f:abc v:eE r:i d:l0".
func letters(spec string) map[byte]byte {
	m := map[byte]byte{}
	for part := range strings.FieldsSeq(spec) {
		kind, ls, _ := strings.Cut(part, ":")
		for i := 0; i < len(ls); i++ {
			m[ls[i]] = kind[0]
		}
	}
	return m
}

func set(names string) map[string]bool {
	m := map[string]bool{}
	for n := range strings.FieldsSeq(names) {
		takes := strings.HasSuffix(n, ":")
		m[strings.TrimSuffix(n, ":")] = takes
	}
	return m
}

var (
	pythonCluster = &cluster{letters: letters("f:bBdEhiIOPqsSuvVx? v:cmWX"),
		long: set("help version help-env help-xoptions help-all check-hash-based-pycs:"), ends: []string{"c", "m"}}
	perlCluster = &cluster{letters: letters("f:acfhnpsStTuUvwWX v:eEIMm r:iFxDV d:0lC o:d"),
		digits: map[byte]string{'0': "0123456789abcdefABCDEFx", 'l': "01234567", 'C': "0123456789IOEioSDAL"},
		long:   set("help version")}
	rubyCluster = &cluster{letters: letters("f:acdhlnpsSvwyU v:eEIrC r:ixFKTW d:0"),
		digits: map[byte]string{'0': "01234567"},
		long: set("help version copyright verbose debug yydebug jit yjit rjit enable: disable: encoding: external-encoding: " +
			"internal-encoding: dump: backtrace-limit: crash-report: parser: disable-gems disable-did_you_mean " +
			"disable-error_highlight disable-syntax_suggest enable-frozen-string-literal disable-frozen-string-literal")}
)

// interpreters are the languages whose code the analyser does not read:
// code given to them on their command line or stdin is reported as Code.
var interpreters = map[string]*interpreter{}

func init() {
	python := &interpreter{cluster: pythonCluster, code: []string{"c"}, exits: []string{"h", "?", "V", "help", "version", "help-env",
		"help-xoptions", "help-all"}, nostdin: []string{"m"}, interactive: []string{"i"}, more: pythonModules, stdin: true}
	for _, n := range []string{"python", "python2", "python3", "pypy", "pypy3", "jython", "micropython"} {
		interpreters[n] = python
	}
	interpreters["perl"] = &interpreter{cluster: perlCluster, code: []string{"e", "E"}, exits: []string{"v", "V", "h", "help", "version"},
		more: perlModules, stdin: true}
	interpreters["ruby"] = &interpreter{cluster: rubyCluster, code: []string{"e"}, exits: []string{"h", "help", "version", "copyright"}, stdin: true}
	node := &interpreter{opts: opts("=+e|eval: p|print: r|require: import: loader: experimental-loader: c|check i|interactive " +
		"v|version h|help v8-options C|conditions: input-type: env-file: env-file-if-exists: test run: watch watch-path: " +
		"test-name-pattern: test-reporter: test-reporter-destination: test-shard: test-concurrency: test-timeout: " +
		"inspect-port: debug-port: title: icu-data-dir: openssl-config: redirect-warnings: report-dir: report-directory: " +
		"report-filename: report-signal: diagnostic-dir: heapsnapshot-signal: secure-heap: secure-heap-min: " +
		"snapshot-blob: experimental-sea-config: experimental-policy: policy-integrity: dns-result-order: " +
		"disable-proto: disable-warning: unhandled-rejections: use-largepages: stack-trace-limit: max-http-header-size: " +
		"allow-fs-read: allow-fs-write: trace-event-categories: trace-event-file-pattern: cpu-prof-dir: cpu-prof-name: " +
		"cpu-prof-interval: heap-prof-dir: heap-prof-name: heap-prof-interval: heapsnapshot-near-heap-limit: " +
		"tls-cipher-list: tls-keylog: build-snapshot-config: experimental-default-type: trace-require-module: " +
		"network-family-autoselection-attempt-timeout: v8-pool-size: localstorage-file: experimental-config-file:"),
		code: []string{"eval", "print"}, exits: []string{"check", "version", "help", "v8-options"},
		nostdin: []string{"test", "run"}, interactive: []string{"interactive"}, more: nodeImports, stdin: true}
	// Options node does not know are V8's: flags, or --name=value.
	node.opts.anyLong = true
	interpreters["node"], interpreters["nodejs"] = node, node
	interpreters["bun"] = &interpreter{opts: node.opts, code: []string{"eval", "print"}, exits: []string{"version", "help"},
		nostdin: []string{"test", "run"}, more: nodeImports}
	interpreters["php"] = &interpreter{opts: opts("=+a|interactive b|bindpath: B|process-begin: c|php-ini: C|no-chdir d|define: " +
		"e|profile-info E|process-end: f|file: F|process-file: h|help H|hide-args i|info l|syntax-check m|modules n|no-php-ini " +
		"q|no-header r|run: R|process-code: s|syntax-highlight S|server: t|docroot: v|version w|strip z|zend-extension: " +
		"ini:: rf|rfunction: rc|rclass: re|rextension: rz|rzendextension: ri|rextinfo:"),
		code: []string{"run", "process-begin", "process-code", "process-end", "zend-extension"},
		exits: []string{"help", "info", "syntax-check", "modules", "version", "syntax-highlight", "strip", "ini", "rfunction",
			"rclass", "rextension", "rzendextension", "rextinfo"},
		nostdin: []string{"file", "process-file", "server"}, interactive: []string{"interactive"}, stdin: true}
	awk := &interpreter{opts: opts("+F|field-separator: f|file: v|assign: W: b|characters-as-bytes c|traditional C|copyright " +
		"d|dump-variables:: D|debug:: e|source: E|exec: g|gen-pot h|help i|include: I|trace k|csv l|load: L|lint:: " +
		"M|bignum n|non-decimal-data N|use-lc-numeric o|pretty-print:: O|optimize p|profile:: P|posix r|re-interval " +
		"s|no-optimize S|sandbox t|lint-old V|version Y|parsedebug no-persist"),
		code: []string{"source"}, files: []string{"file", "exec", "W"}, program: true, runs: awkRuns,
		exits: []string{"help", "version", "copyright", "gen-pot"}, safe: []string{"sandbox"}, more: awkLoads}
	for _, n := range []string{"awk", "gawk", "mawk", "nawk", "original-awk", "bawk", "goawk", "onetrue-awk", "busybox-awk"} {
		interpreters[n] = awk
	}
	interpreters["sed"] = &interpreter{opts: opts("n|quiet silent e|expression: f|file: E|regexp-extended r s|separate " +
		"i|in-place:: l|line-length: u|unbuffered z|null-data zero-terminated posix sandbox debug follow-symlinks " +
		"b|binary help version"),
		code: []string{"expression"}, files: []string{"file"}, program: true, runs: sedRuns,
		exits: []string{"help", "version"}, safe: []string{"sandbox"}}
	interpreters["gsed"] = interpreters["sed"]
	// Shells of other languages: their scripts are code the analyser
	// does not read, also read as sh for deny patterns.
	interpreters["fish"] = &interpreter{opts: opts("+c|command: C|init-command: d|debug: o|debug-output: f|features: i|interactive " +
		"l|login N|no-config n|no-execute p|profile: profile-startup: P|private print-rusage-self print-debug-categories " +
		"v|version h|help"), code: []string{"command", "init-command"}, exits: []string{"version", "help", "no-execute"},
		interactive: []string{"interactive"}, also: true, stdin: true}
	csh := &interpreter{opts: opts("+b c: d D: e f F i l m n q s t v V x X"), code: []string{"c"}, exits: []string{"n"}, also: true, stdin: true}
	interpreters["csh"], interpreters["tcsh"] = csh, csh
	interpreters["nu"] = &interpreter{opts: opts("+c|commands: e|execute: i|interactive l|login n|no-config-file no-std-lib " +
		"config: env-config: plugin-config: log-level: log-target: t|threads: stdin testbin: ide-goto-def: ide-hover: " +
		"ide-complete: ide-check: ide-ast: lsp m|table-mode: error-style: plugins: no-history experimental-options: h|help v|version"),
		code: []string{"commands", "execute"}, exits: []string{"help", "version"}, interactive: []string{"interactive"}, also: true, stdin: true}
	interpreters["xonsh"] = &interpreter{opts: opts("+c: i|interactive l|login no-rc no-env D: st|shell-type: timings V|version h|help"),
		code: []string{"c"}, exits: []string{"help", "version"}, interactive: []string{"interactive"}, also: true, stdin: true}
	interpreters["elvish"] = &interpreter{opts: opts("=+c norc i compileonly deprecation-level: help version buildinfo json log: rc: sock: db: daemon"),
		codeFlag: []string{"c"}, exits: []string{"help", "version", "buildinfo", "compileonly"}, also: true, stdin: true}
	lua := &interpreter{opts: opts("+e: l: i v E W j: O:: b"), code: []string{"e", "j"}, exits: []string{"v"},
		nostdin: []string{"b"}, interactive: []string{"i"}, stdin: true}
	for _, n := range []string{"lua", "luajit", "lua5.1", "lua5.2", "lua5.3", "lua5.4"} {
		interpreters[n] = lua
	}
	interpreters["rscript"] = &interpreter{opts: opts("=+e: default-packages: verbose version help no-environ no-site-file " +
		"no-init-file no-echo no-restore vanilla save no-save"), code: []string{"e"}, exits: []string{"version", "help"}, stdin: true}
	interpreters["r"] = &interpreter{opts: opts("=+e: f|file: version h|help save no-save no-environ no-site-file no-init-file " +
		"restore no-restore no-restore-data no-restore-history vanilla q|quiet silent no-echo verbose interactive args " +
		"min-vsize: max-vsize: max-ppsize: min-nsize: max-connections: encoding: g|gui: arch: d|debugger: debugger-args: slave"),
		code: []string{"e"}, files: []string{"file"}, exits: []string{"version", "help"}, nostdin: []string{"file"}, stdin: true}
	interpreters["julia"] = &interpreter{opts: opts("+v|version h|help help-hidden project:: J|sysimage: H|home: startup-file: " +
		"handle-signals: sysimage-native-code: compiled-modules: pkgimages: e|eval: E|print: m|module: L|load: t|threads: " +
		"gcthreads: p|procs: machine-file: i q|quiet banner: color: history-file: depwarn: warn-overwrite: warn-scope: " +
		"C|cpu-target: O|optimize:: min-optlevel: g:: inline: check-bounds: math-mode: code-coverage:: track-allocation:: " +
		"bug-report: heap-size-hint: interactive:: image-codegen trace-compile: trace-compile-timing task-metrics: " +
		"trace-dispatch: worker:: bind-to: hard-heap-limit: heap-target-increment:"),
		code: []string{"eval", "print"}, exits: []string{"version", "help", "help-hidden"}, nostdin: []string{"module", "load"},
		interactive: []string{"i"}, stdin: true}
	interpreters["osascript"] = &interpreter{opts: opts("+e: l: i s:"), code: []string{"e"}, stdin: true}
	tcl := &interpreter{opts: opts("=+encoding:"), stdin: true}
	for _, n := range []string{"tclsh", "wish", "jimsh", "tclsh8.6", "tclsh9.0"} {
		interpreters[n] = tcl
	}
	interpreters["ed"] = &interpreter{opts: opts("G|traditional l|loose-exit-status p|prompt: r|restricted s|quiet silent " +
		"v|verbose E|extended-regexp h|help V|version"),
		exits: []string{"help", "version"}, runs: func(t string) bool { return strings.Contains(t, "!") }, safe: []string{"restricted"},
		stdin: true}
	for name, h := range map[string]handler{
		"pwsh": pwshCommand, "powershell": pwshCommand, "gdb": gdbCommand, "lldb": lldbCommand,
		"vim": vimCommand, "vi": vimCommand, "nvim": vimCommand, "view": vimCommand, "vimdiff": vimCommand, "gvim": vimCommand,
		"ex": vimCommand, "rvim": vimCommand, "emacs": emacsCommand, "emacsclient": emacsCommand, "deno": denoCommand,
		"sqlite3": sqliteCommand, "psql": psqlCommand, "mysql": mysqlCommand, "mariadb": mysqlCommand,
	} {
		special[name] = h
	}
}

// pythonModules: python -m timeit and -m pdb -c run code given as words.
func pythonModules(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("m") {
		switch o.value.text {
		case "timeit", "pdb", "cProfile", "profile", "trace":
			var b []string
			for _, k := range r.operands {
				b = append(b, c.args[k].text)
			}
			s.addCode(c, "-m "+o.value.text, strings.Join(b, " "), false)
		}
		if o.value.dynamic {
			s.cannot(c, "a module that is not static: "+s.source(o.value))
		}
	}
}

// perlModules: perl -M and -m run `use MODULE LIST;`, code when it holds
// more than a module's name and its list.
func perlModules(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("M", "m") {
		v := o.value
		if v.dynamic || strings.ContainsFunc(v.text, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_:=,.-", r))
		}) {
			s.codeOf(c, "-"+o.name, v)
		}
	}
}

// nodeImports: --import and --require of a data: URL are code.
func nodeImports(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("require", "import", "loader", "experimental-loader") {
		if v := o.value; v.dynamic || strings.HasPrefix(strings.ToLower(strings.TrimSpace(v.text)), "data:") {
			s.codeOf(c, "--"+o.name, v)
		}
	}
}

// awkLoads: gawk -l loads a shared library: code the analyser cannot read.
func awkLoads(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("load") {
		s.addCode(c, "--load", o.value.text, true)
	}
}

// awkRuns reports whether an awk program can run commands: through
// system(), a pipe to or from a command (| and |&), or gawk's @ (@load,
// @include, indirect calls); a program without them cannot. Commands given
// to system("...") as a string are also read, for deny patterns.
func awkRuns(p string) bool {
	return strings.Contains(p, "system") || strings.ContainsAny(p, "|@")
}

// sedRuns reports whether a sed script can run a command: GNU sed's e
// command and the e flag of s. It reads the script command by command and
// answers true when it cannot.
func sedRuns(script string) bool {
	p := sedScript{s: script}
	return p.runs()
}

type sedScript struct {
	s string
	i int
}

func (p *sedScript) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *sedScript) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

// runs walks the script; true when it has e, or when it cannot tell.
func (p *sedScript) runs() bool {
	for p.i < len(p.s) {
		p.skipSpace()
		switch c := p.peek(); c {
		case 0:
			return false
		case '\n', ';', '}', '{', '!':
			p.i++
			continue
		case '#':
			p.toLineEnd()
			continue
		}
		if !p.address() {
			return true
		}
		p.skipSpace()
		if p.peek() == ',' {
			p.i++
			p.skipSpace()
			if !p.address() {
				return true
			}
		}
		p.skipSpace()
		for p.peek() == '!' {
			p.i++
			p.skipSpace()
		}
		c := p.peek()
		p.i++
		switch c {
		case '{', '}':
		case '=', 'd', 'D', 'g', 'G', 'h', 'H', 'l', 'n', 'N', 'p', 'P', 'x', 'z', 'F':
			// l takes an optional number
			for p.peek() >= '0' && p.peek() <= '9' {
				p.i++
			}
		case 'q', 'Q', 'L':
			for p.peek() >= '0' && p.peek() <= '9' || p.peek() == ' ' {
				p.i++
			}
		case ':', 'b', 't', 'T', 'v':
			// A label: GNU sed ends it at ; (sed ':a;N;$!ba'), and a
			// label read short only makes more of the script read.
			for p.i < len(p.s) && p.s[p.i] != '\n' && p.s[p.i] != ';' {
				p.i++
			}
		case 'a', 'i', 'c':
			p.text()
		case 'r', 'R', 'w', 'W':
			p.toLineEnd() // a file name, to the end of the line
		case 'e':
			return true
		case 's':
			if !p.delimited(2) {
				return true
			}
			for {
				f := p.peek()
				switch {
				case f == 'e':
					return true
				case f == 'g' || f == 'p' || f == 'i' || f == 'I' || f == 'm' || f == 'M' || f >= '0' && f <= '9':
					p.i++
					continue
				case f == 'w':
					p.toLineEnd()
				}
				break
			}
		case 'y':
			if !p.delimited(2) {
				return true
			}
		default:
			return true
		}
	}
	return false
}

// address skips an address: a number, $, first~step, /re/ or \cREc, and
// its I and M flags. An empty address is one too.
func (p *sedScript) address() bool {
	switch c := p.peek(); {
	case c >= '0' && c <= '9':
		for p.peek() >= '0' && p.peek() <= '9' || p.peek() == '~' {
			p.i++
		}
	case c == '$':
		p.i++
	case c == '/':
		if !p.delimited(1) {
			return false
		}
		p.addressFlags()
	case c == '\\':
		p.i++
		if p.i >= len(p.s) {
			return false
		}
		if !p.delimited(1) {
			return false
		}
		p.addressFlags()
	case c == '+' || c == '~':
		p.i++
		for p.peek() >= '0' && p.peek() <= '9' {
			p.i++
		}
	}
	return true
}

func (p *sedScript) addressFlags() {
	for p.peek() == 'I' || p.peek() == 'M' {
		p.i++
	}
}

// delimited skips n parts delimited by the character at p.i (s/re/repl/
// has 2 after the first delimiter), escapes included.
func (p *sedScript) delimited(n int) bool {
	if p.i >= len(p.s) {
		return false
	}
	d := p.s[p.i]
	if d == '\n' || d == '\\' {
		return false
	}
	p.i++
	for k := 0; k < n; k++ {
		for {
			if p.i >= len(p.s) {
				return false
			}
			c := p.s[p.i]
			p.i++
			if c == '\\' {
				p.i++
				continue
			}
			if c == d {
				break
			}
		}
	}
	return true
}

func (p *sedScript) toLineEnd() {
	for p.i < len(p.s) && p.s[p.i] != '\n' {
		p.i++
	}
}

// text skips the text of a, i and c: to the end of the line, lines ended
// by a backslash continuing it.
func (p *sedScript) text() {
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c == '\\' {
			p.i++
			continue
		}
		if c == '\n' {
			return
		}
	}
}
