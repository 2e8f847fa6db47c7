package shell

import (
	"strings"
)

// handler follows what one known command runs.
type handler func(s *Script, c *invocation)

// handlers are the commands whose words the analyser reads: wrappers that
// run a command of their words, shells, interpreters, and the commands
// whose options run something (find -exec, git -c, tar --to-command).
// Every other command is a command like any other: its words are its
// arguments. Filled by init (the tables refer to handlers).
var handlers = map[string]handler{}

func init() {
	for name, w := range wrappers {
		handlers[name] = w.follow
	}
	for name := range posixShells {
		handlers[name] = shell
	}
	for name, in := range interpreters {
		handlers[name] = in.follow
	}
	for name, why := range unfollowed {
		handlers[name] = unmodelled(why)
	}
	for name, h := range special {
		handlers[name] = h
	}
	for name, w := range wrappers {
		tables[name] = w.opts
	}
	for name, in := range interpreters {
		if in.opts != nil {
			tables[name] = in.opts
		}
	}
	for _, m := range []map[string]*getopt{optionTables, handlerTables} {
		for name, g := range m {
			tables[name] = g
		}
	}
}

// special are the commands with handlers of their own.
var special = map[string]handler{
	"env":       envCommand,
	"sudo":      sudoCommand,
	"xargs":     xargsCommand,
	"find":      findCommand,
	"watch":     watchCommand,
	"flock":     flockCommand,
	"nice":      niceCommand,
	"chrt":      chrtCommand,
	"su":        suCommand,
	"runuser":   suCommand,
	"sg":        sgCommand,
	"script":    scriptCommand,
	"ssh":       sshCommand,
	"scp":       scpCommand,
	"sftp":      scpCommand,
	"eval":      evalCommand,
	"trap":      trapCommand,
	"alias":     aliasCommand,
	"source":    sourceCommand,
	".":         sourceCommand,
	"strace":    straceCommand,
	"at":        atCommand,
	"batch":     atCommand,
	"mapfile":   mapfileCommand,
	"readarray": mapfileCommand,
	"fc":        unmodelled("fc runs a command from the history, which the analyser does not see"),
	"enable":    enableCommand,
	"git":       gitCommand,
	"tar":       tarCommand,
	"make":      makeCommand,
	"gmake":     makeCommand,
	"valgrind":  valgrindCommand,
	"go":        goCommand,
}

// wrapper is a command that runs a command made of its words after its
// options (sudo, timeout, nohup): how it reads them.
type wrapper struct {
	opts *getopt
	// operands is how many operands come before the command: the
	// DURATION of timeout, the NEWROOT of chroot, the mask of taskset.
	operands int
	// none are the options with which the words run no command (command
	// -v looks a name up, ionice -p acts on processes).
	none []string
	// bare: with no command it runs an interactive shell, which reads
	// its commands from stdin (chroot DIR, unshare, pkexec).
	bare bool
	// check looks at the values of options that run something besides
	// the command (strace -o '|CMD', systemd-run -p ExecStartPre=).
	check func(s *Script, c *invocation, r *readOpts)
}

// wrappers are read by their tables alone; see special for the others.
// The tables follow coreutils 9, util-linux 2.39+, procps-ng 4, GNU time
// 1.9, OpenDoas and polkit, with the options of newer releases in too (a
// release that lacks one fails on it and runs nothing).
var wrappers = map[string]*wrapper{
	"builtin":   {opts: opts("+")},
	"command":   {opts: opts("+p v V"), none: []string{"v", "V"}},
	"exec":      {opts: opts("+c l a:")},
	"nohup":     {opts: opts("+ help version")},
	"noglob":    {opts: opts("+")}, // zsh precommand modifiers
	"nocorrect": {opts: opts("+")},
	"timeout":   {opts: opts("+f|foreground k|kill-after: p|preserve-status s|signal: v|verbose help version"), operands: 1},
	"stdbuf":    {opts: opts("+i|input: o|output: e|error: help version")},
	"setsid":    {opts: opts("+c|ctty f|fork w|wait h|help V|version")},
	"ionice": {opts: opts("+c|class: n|classdata: p|pid: P|pgid: t|ignore u|uid: h|help V|version"),
		none: []string{"pid", "pgid", "uid"}},
	"taskset": {opts: opts("+a|all-tasks p|pid c|cpu-list h|help V|version"), operands: 1, none: []string{"pid"}},
	"time":    {opts: opts("+a|append f|format: o|output: p|portability q|quiet v|verbose V|version help")},
	"doas":    {opts: opts("+a: C: L n s u:"), none: []string{"C", "L"}, bare: true},
	"pkexec":  {opts: opts("=+u|user: keep-cwd disable-internal-agent version help"), bare: true},
	"chroot":  {opts: opts("+ groups: userspec: skip-chdir help version"), operands: 1, bare: true},
	"nsenter": {opts: opts("+a|all t|target: m|mount:: u|uts:: i|ipc:: n|net:: N|net-socket: p|pid:: C|cgroup:: U|user:: T|time:: " +
		"S|setuid: G|setgid: preserve-credentials keep-caps user-parent r|root:: w|wd:: W|wdns: e|env F|no-fork Z|follow-context " +
		"c|join-cgroup h|help V|version"), bare: true},
	"unshare": {opts: opts("+m mount:: u uts:: i ipc:: n net:: p pid:: U user:: C cgroup:: T time:: f|fork kill-child:: mount-proc:: " +
		"mount-binfmt:: r|map-root-user c|map-current-user map-user: map-group: map-users: map-groups: map-auto " +
		"propagation: setgroups: keep-caps R|root: w|wd: S|setuid: G|setgid: l|load-interp: monotonic: boottime: " +
		"forward-signals h|help V|version"), bare: true},
	"setpriv": {opts: opts("+d|dump nnp|no-new-privs inh-caps: ambient-caps: bounding-set: ruid: euid: rgid: egid: reuid: regid: " +
		"clear-groups keep-groups init-groups groups: securebits: pdeathsig: selinux-label: apparmor-profile: " +
		"landlock-access: landlock-rule: seccomp-filter: reset-env ptracer: h|help V|version"), none: []string{"dump"}},
	"prlimit": {opts: opts("+c|core:: d|data:: e|nice:: f|fsize:: i|sigpending:: l|memlock:: m|rss:: n|nofile:: q|msgqueue:: " +
		"r|rtprio:: s|stack:: t|cpu:: u|nproc:: v|as:: x|locks:: y|rttime:: p|pid: o|output: noheadings raw verbose h|help V|version"),
		none: []string{"pid"}},
	"systemd-run": {opts: opts("+h|help version no-ask-password user system H|host: M|machine: scope u|unit: p|property: " +
		"description: slice: slice-inherit no-block r|remain-after-exit wait send-sighup service-type: uid: gid: nice: " +
		"working-directory: d|same-dir E|setenv: t|pty P|pipe q|quiet G|collect S|shell path-property: socket-property: " +
		"timer-property: on-active: on-boot: on-startup: on-unit-active: on-unit-inactive: on-calendar: on-timezone-change " +
		"on-clock-change ignore-failure background: json: job-mode: expand-environment: C|capsule: v|verbose"),
		check: systemdRunChecks},
	"ltrace": {opts: opts("+a|align: A: b c C|demangle D: e: f F|config: h|help i l|library: L n|indent: o|output: p: r s: S t T u: " +
		"V|version w|where: x:")},
	"nocache":    {opts: opts("+n:")},
	"eatmydata":  {opts: opts("+ help version")},
	"fakeroot":   {opts: opts("+l|lib: f|faked: i: s: u|unknown-is-real b: h|help v|version"), bare: true},
	"dumb-init":  {opts: opts("+c|single-child r|rewrite: v|verbose V|version h|help")},
	"tini":       {opts: opts("+s v w g p: l e: h"), none: []string{"l", "h"}},
	"catchsegv":  {opts: opts("+ help version")},
	"caffeinate": {opts: opts("+d i m s u t: w:")},
	"numactl": {opts: opts("+a|all i|interleave: w|weighted-interleave: p|preferred: P|preferred-many: b|balancing C|physcpubind: " +
		"N|cpunodebind: m|membind: l|localalloc s|show H|hardware t|touch S|strict M|shmmode: d|shmid: f|file: L|length: " +
		"o|offset: y|huge V|version h|help"), none: []string{"show", "hardware"}},
	"cgexec":           {opts: opts("+g: sticky r:")},
	"proxychains":      {opts: opts("+q f:")},
	"proxychains4":     {opts: opts("+q f:")},
	"torsocks":         {opts: opts("+u|user: p|pass: a|address: P|port: i|isolate d|debug q|quiet h|help V|version shell")},
	"unbuffer":         {opts: opts("+p")},
	"entr":             {opts: opts("+a c d n p r s z")},
	"xvfb-run":         {opts: opts("+a|auto-servernum d|auto-display e|error-file: f|auth-file: h|help n|server-num: l|listen-tcp p|xauth-protocol: s|server-args: w|wait:"), none: []string{"help"}},
	"dbus-run-session": {opts: opts("+ config-file: dbus-daemon: help version")},
	"chpst":            {opts: opts("+u: U: b: e: /: C: n: l: L: m: d: o: p: f: c: r: t: v P 0 1 2")},
	"setuidgid":        {opts: opts("+"), operands: 1},
	"envuidgid":        {opts: opts("+"), operands: 1},
	"softlimit":        {opts: opts("+m: a: d: s: l: f: c: o: p: t: r:")},
	"su-exec":          {opts: opts("+"), operands: 1},
	"gosu":             {opts: opts("+"), operands: 1},
	"with-contenv":     {opts: opts("+")},
	"rlwrap":           {opts: opts("+a:: A b: c C: D: e: E: f: F: g: h H: i I l: m:: M: n N o O: p:: P: q: r R s: S: t: U v W w: z:")},
}

// unfollowed run commands the analyser does not follow: with them a command
// line is unresolved.
var unfollowed = map[string]string{
	"parallel":  "GNU parallel builds the commands it runs from its words and its input",
	"sem":       "GNU parallel builds the commands it runs from its words and its input",
	"watchexec": "watchexec runs a command line of its own",
	"bwrap":     "bubblewrap runs a command the analyser does not follow",
	"firejail":  "firejail runs a command the analyser does not follow",
	"screen":    "screen runs commands and types keys into windows",
	"expect":    "expect runs a script of its own",
	"busybox":   "busybox with options runs something the analyser does not follow",
	"newgrp":    "newgrp starts a shell that reads its commands from stdin",
	"sudoedit":  "", // edits files: runs nothing of its words
}

// unmodelled is the handler of what the analyser does not follow: the
// command line is unresolved.
func unmodelled(why string) handler {
	return func(s *Script, c *invocation) {
		if why != "" {
			s.unresolved(why)
		}
	}
}

// follow reads a wrapper's words and follows the command they run.
func (w *wrapper) follow(s *Script, c *invocation) {
	r, ok := s.options(c, w.opts)
	if !ok {
		return
	}
	if w.check != nil {
		w.check(s, c, &r)
	}
	if r.has(w.none...) {
		return
	}
	i := r.first(len(c.args)) + w.operands
	switch {
	case i < len(c.args):
		s.run(c, c.args[i:], c.name)
	case w.bare || c.name == "doas" && r.has("s"):
		// No command: an interactive shell on stdin.
		s.stdin(c.redirs, c.under(c.name), c.depth, bashFlavour.lang)
	}
}

// niceCommand: nice -N and --N are nice -n N (coreutils reads them before
// getopt).
func niceCommand(s *Script, c *invocation) {
	args := c.args
	for len(args) > 0 && isNiceNumber(args[0]) {
		args = args[1:]
	}
	r := niceOpts.read(args)
	if r.problem != "" {
		s.badOptions(&invocation{name: c.name, args: args}, r)
		return
	}
	if i := r.first(len(args)); i < len(args) {
		s.call(args[i:], c.redirs, c.under("nice"), c.depth+1)
	}
}

var niceOpts = opts("+n|adjustment: help version")

func isNiceNumber(f field) bool {
	t := f.text
	if f.dynamic || len(t) < 2 || t[0] != '-' {
		return false
	}
	t = t[1:]
	if t[0] == '-' || t[0] == '+' {
		t = t[1:]
	}
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return false
		}
	}
	return true
}

// chrtCommand: chrt [options] PRIORITY COMMAND, or -p (a process) or -m
// (limits): no command. Newer chrt takes no priority for the policies
// without one: a first operand that is no number is the command.
func chrtCommand(s *Script, c *invocation) {
	r, ok := s.options(c, chrtOpts)
	if !ok {
		return
	}
	if r.has("pid", "max") {
		return
	}
	i := r.first(len(c.args))
	if i < len(c.args) && isNumber(c.args[i]) {
		i++
	}
	if i < len(c.args) {
		s.run(c, c.args[i:], "chrt")
	}
}

var chrtOpts = opts("+a|all-tasks b|batch d|deadline e|ext f|fifo i|idle o|other r|rr R|reset-on-fork T|sched-runtime: " +
	"P|sched-period: D|sched-deadline: m|max p|pid v|verbose h|help V|version")

func isNumber(f field) bool {
	if f.dynamic || f.text == "" {
		return false
	}
	for i := 0; i < len(f.text); i++ {
		if f.text[i] < '0' || f.text[i] > '9' {
			return false
		}
	}
	return true
}

// envCommand: env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...].
// -S splits its string into words that env puts in its place and reads
// again, options too.
func envCommand(s *Script, c *invocation) {
	args, label, depth := c.args, "env", c.depth
	for depth <= MaxDepth {
		r := envOpts.read(args)
		if r.problem != "" {
			s.badOptions(&invocation{name: "env", args: args}, r)
			return
		}
		split := r.values("split-string")
		if len(split) == 0 {
			i := r.first(len(args))
			if i < len(args) && !args[i].dynamic && args[i].text == "-" {
				i++ // a lone - is -i
			}
			for i < len(args) && isAssignment(args[i]) {
				name, value := splitAssignment(args[i])
				s.assigned(name, value, c.via, depth)
				i++
			}
			if i < len(args) {
				s.call(args[i:], c.redirs, c.under(label), depth+1)
			}
			return
		}
		o := split[0]
		words, ok := splitEnvString(o.value)
		if !ok {
			s.unresolved("env -S of a string with escapes, variables or comments, which env reads its own way: " + s.source(o.value))
			return
		}
		rest := args[o.at+1:]
		if o.sep {
			rest = args[o.at+2:]
		}
		args = append(words, rest...)
		label, depth = "env -S", depth+1
	}
	s.unresolved("nesting deeper than 8 shells or wrappers")
}

var envOpts = opts("+i|ignore-environment 0|null u|unset: C|chdir: S|split-string: a|argv0: default-signal:: ignore-signal:: " +
	"block-signal:: list-signal-handling v|debug help version")

// splitEnvString splits the string of env -S as env does, for strings of
// plain words, spaces and quotes; with a backslash, a $ or a # env has
// rules of its own (\_ is a space, ${X} a variable, # a comment), and ok
// is false.
func splitEnvString(f field) (words []field, ok bool) {
	if f.dynamic || strings.ContainsAny(f.text, "\\$#") {
		return nil, false
	}
	var cur strings.Builder
	in := false // a word has started
	var quote byte
	for i := 0; i < len(f.text); i++ {
		ch := f.text[i]
		switch {
		case quote != 0:
			if ch == quote {
				quote = 0
				continue
			}
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case strings.IndexByte(" \t\n\v\f\r", ch) >= 0:
			if in {
				words = append(words, field{text: cur.String(), src: cur.String()})
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		words = append(words, field{text: cur.String(), src: cur.String()})
	}
	return words, true
}

// isAssignment reports whether a word is NAME=VALUE (a name of letters,
// digits and _, not starting with a digit), as env and sudo read one.
func isAssignment(f field) bool {
	t := f.text
	if f.dynamic {
		t = f.lead
	}
	name, _, ok := strings.Cut(t, "=")
	return ok && name != "" && !strings.HasPrefix(t, "-")
}

func splitAssignment(f field) (string, field) {
	name, value, _ := strings.Cut(f.text, "=")
	v := field{text: value, src: value, quoted: f.quoted}
	if f.dynamic {
		v.dynamic, v.why = true, f.why
		if len(f.lead) > len(name)+1 {
			v.lead = f.lead[len(name)+1:]
		}
	}
	return name, v
}

// sudoCommand: sudo [options] [NAME=VALUE]... COMMAND. sudo reads
// options again after NAME=VALUE words; -e, -l, -v, -V, -K and a bare -h
// run nothing of the words; -s and -i run the user's shell, given the
// words (escaped, but not $) or, with none, reading stdin.
func sudoCommand(s *Script, c *invocation) {
	args := c.args
	var all []option
	i := 0
	for {
		r := sudoOpts.read(args[i:])
		if r.problem != "" {
			r.problemAt += i
			s.badOptions(c, r)
			return
		}
		all = append(all, r.opts...)
		j := i + r.first(len(args)-i)
		if j < len(args) && isAssignment(args[j]) && !(j > 0 && !args[j-1].dynamic && args[j-1].text == "--") {
			name, value := splitAssignment(args[j])
			s.assigned(name, value, c.via, c.depth)
			i = j + 1
			continue
		}
		i = j
		break
	}
	got := readOpts{opts: all}
	if got.has("edit", "list", "validate", "version", "remove-timestamp", "help") {
		return
	}
	if i >= len(args) {
		if got.has("shell", "login") {
			s.stdin(c.redirs, c.under("sudo"), c.depth, bashFlavour.lang)
		}
		return
	}
	words := args[i:]
	if got.has("shell", "login") {
		// The shell gets the words escaped, $ aside: $NAME expands.
		words = append([]field(nil), words...)
		for k := range words {
			if !words[k].dynamic && strings.Contains(words[k].text, "$") {
				words[k].dynamic, words[k].why, words[k].lead = true, "a variable the shell of sudo -s expands", ""
			}
		}
	}
	s.run(c, words, "sudo")
}

// sudo's -h takes the next word for a host (or, when that word starts
// with - or holds =, asks for help): that word is no command either way.
var sudoOpts = opts("+A|askpass a|auth-type: B|bell b|background C|close-from: c|login-class: D|chdir: E|preserve-env:: " +
	"e|edit g|group: H|set-home h: help host: i|login K|remove-timestamp k|reset-timestamp l|list N|no-update " +
	"n|non-interactive P|preserve-groups p|prompt: R|chroot: r|role: S|stdin s|shell T|command-timeout: t|type: " +
	"U|other-user: u|user: V|version v|validate")

// xargsCommand: xargs [options] [COMMAND [ARG]...] runs COMMAND (echo by
// default) with words it reads: appended, or in place of the replace
// string of -I.
func xargsCommand(s *Script, c *invocation) {
	r, ok := s.options(c, xargsOpts)
	if !ok {
		return
	}
	if r.has("show-limits") {
		return
	}
	i := r.first(len(c.args))
	words := append([]field(nil), c.args[i:]...)
	if len(words) == 0 {
		words = []field{{text: "echo", src: "echo"}}
	}
	replace := ""
	for _, o := range r.opts {
		switch o.name {
		case "I", "J", "R":
			if o.name != "R" {
				replace = o.value.text
			}
		case "replace":
			replace = "{}"
			if o.has {
				replace = o.value.text
			}
		}
	}
	if replace != "" && !r.hasDynamicValue("I", "J", "replace") {
		for k := range words {
			if strings.Contains(words[k].text, replace) {
				words[k] = field{text: words[k].text, dynamic: true, why: "xargs input", src: words[k].text,
					lead: words[k].text[:strings.Index(words[k].text, replace)]}
			}
		}
	} else {
		// xargs appends what it reads: words we cannot know.
		words = append(words, field{dynamic: true, why: "xargs input", src: "<stdin>"})
	}
	s.call(words, nil, c.under("xargs"), c.depth+1)
}

func (r *readOpts) hasDynamicValue(names ...string) bool {
	for _, o := range r.values(names...) {
		if o.value.dynamic {
			return true
		}
	}
	return false
}

var xargsOpts = opts("+0|null a|arg-file: E: e|eof:: i|replace:: I: J: l|max-lines:: L: n|max-args: o|open-tty p|interactive " +
	"r|no-run-if-empty R: s|max-chars: S: t|verbose x|exit P|max-procs: d|delimiter: process-slot-var: show-limits help version")

// watchCommand: watch [options] COMMAND: the words joined with spaces
// for sh -c, or with -x run as they are.
func watchCommand(s *Script, c *invocation) {
	r, ok := s.options(c, watchOpts)
	if !ok {
		return
	}
	i := r.first(len(c.args))
	if i >= len(c.args) {
		return
	}
	if r.has("exec") {
		s.run(c, c.args[i:], "watch")
		return
	}
	s.runJoined(c, c.args[i:], "watch")
}

var watchOpts = opts("+b|beep c|color C|no-color d|differences:: e|errexit g|chgexit q|equexit: n|interval: p|precise " +
	"r|no-rerun s|shotsdir: t|no-title w|no-wrap x|exec h|help v|version")

// flockCommand: flock [options] FILE COMMAND [ARG]..., flock [options]
// FILE -c COMMAND (through sh -c), or flock [options] FD: no command.
func flockCommand(s *Script, c *invocation) {
	r, ok := s.options(c, flockOpts)
	if !ok {
		return
	}
	i := r.first(len(c.args)) + 1 // the file
	if i >= len(c.args) {
		return
	}
	if a := c.args[i]; !a.dynamic && (a.text == "-c" || a.text == "--command") {
		if i+1 >= len(c.args) {
			s.cannot(c, "-c without a command")
			return
		}
		s.runScript(c, c.args[i+1], "flock -c")
		return
	}
	if a := c.args[i]; mayBeOption(a) && a.dynamic {
		s.cannot(c, "a word that is not static where -c could be: "+s.source(a))
		return
	}
	s.run(c, c.args[i:], "flock")
}

var flockOpts = opts("+s|shared x|exclusive e n|nonblock nb o|close F|no-fork u|unlock w|timeout: wait: E|conflict-exit-code: " +
	"verbose h|help V|version ?")

// evalCommand: eval joins its words and reads them as a script.
func evalCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) > 0 && !args[0].dynamic && args[0].text == "--" {
		args = args[1:]
	}
	s.runJoined(c, args, "eval")
}

// trapCommand: trap [-lp] [[ACTION] SIGNAL...]: the action is a script.
func trapCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) > 0 && !args[0].dynamic && args[0].text == "--" {
		args = args[1:]
	} else if len(args) > 0 && mayBeOption(args[0]) {
		if args[0].dynamic {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(args[0]))
		}
		return // -l, -p: lists
	}
	if len(args) > 1 || len(args) == 1 && args[0].dynamic {
		s.runScript(c, args[0], "trap")
	}
}

// aliasCommand: alias NAME=VALUE: VALUE runs where NAME is used.
func aliasCommand(s *Script, c *invocation) {
	for _, f := range c.args {
		if f.dynamic && !strings.Contains(f.lead, "=") {
			s.cannot(c, "a word that is not static: "+s.source(f))
			continue
		}
		if name, v, ok := strings.Cut(f.text, "="); ok {
			value := field{text: v, dynamic: f.dynamic, why: f.why, word: f.word}
			s.scriptField(value, c.under("alias"), c.depth, "an alias that is not static")
			if !f.dynamic && name != "" {
				s.define(name, definition{alias: v})
			}
		}
	}
}

// sourceCommand: source FILE runs a file (not ours to see), but
// /dev/stdin, a process substitution or a name made at run time is code
// we cannot read.
func sourceCommand(s *Script, c *invocation) {
	if len(c.args) == 0 {
		return
	}
	f := c.args[0]
	if !f.dynamic && f.text == "-" {
		s.stdin(c.redirs, c.under(c.name), c.depth, bashFlavour.lang)
		return
	}
	s.scriptOperand(f, c.redirs, c.under(c.name), c.depth, bashFlavour.lang)
}

// mapfileCommand: mapfile -C CALLBACK runs CALLBACK as a script.
func mapfileCommand(s *Script, c *invocation) {
	r, ok := s.options(c, mapfileOpts)
	if !ok {
		return
	}
	for _, o := range r.values("C") {
		s.runScript(c, o.value, c.name+" -C")
	}
}

var mapfileOpts = opts("d: n: O: s: t u: C: c:")

// enableCommand: enable -f FILE loads a builtin from a shared object:
// code the analyser cannot read.
func enableCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic || strings.HasPrefix(a.text, "-") && strings.ContainsRune(a.text, 'f') {
			s.addCode(c, "-f", "", true)
			return
		}
	}
}

// atCommand: at and batch read the commands they schedule from stdin, or
// from a file with -f.
func atCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if !a.dynamic && strings.HasPrefix(a.text, "-") && strings.ContainsAny(a.text, "flrcdV") {
			return // a file, or a query of the queue
		}
	}
	s.stdin(c.redirs, c.under(c.name), c.depth, bashFlavour.lang)
}

// straceCommand: strace [options] COMMAND, or -p PID: no command. -o
// '|CMD' (or '!CMD') pipes the trace to a command through the shell.
func straceCommand(s *Script, c *invocation) {
	r, ok := s.options(c, straceOpts)
	if !ok {
		return
	}
	for _, o := range r.values("output") {
		if v := o.value; v.dynamic || strings.HasPrefix(v.text, "|") || strings.HasPrefix(v.text, "!") {
			s.runScript(c, field{text: strings.TrimLeft(v.text, "|!"), dynamic: v.dynamic, why: v.why, src: v.text}, "strace -o")
		}
	}
	if i := r.first(len(c.args)); i < len(c.args) {
		s.run(c, c.args[i:], "strace")
	}
}

var straceOpts = opts("+a|columns: A|output-append-mode b|detach-on: c|summary-only C|summary d|debug D daemonize:: e: E|env: " +
	"f|follow-forks F h|help i|instruction-pointer I|interruptible: k|stack-traces n|syscall-number o|output: " +
	"O|summary-syscall-overhead: p|attach: P|trace-path: q quiet: r relative-timestamps:: s|string-limit: S|summary-sort-by: " +
	"t absolute-timestamps:: timestamps:: T syscall-times:: u|user: U|summary-columns: v no-abbrev V|version " +
	"w|summary-wall-clock x strings-in-hex:: X|const-print-style: y decode-fds:: Y decode-pids: z|successful-only " +
	"Z|failed-only abbrev: fault: inject: kvm: output-separately raw: read: seccomp-bpf signal: status: trace: " +
	"verbose: write: tips:: follow-forks-separately secontext:: argv0: always-show-pid")

// systemdRunChecks: a property of the unit can run commands of its own
// (ExecStartPre=, ExecStopPost=, ...), and systemd-run expands $NAME in
// the command's words.
func systemdRunChecks(s *Script, c *invocation, r *readOpts) {
	for _, o := range r.values("property", "path-property", "socket-property", "timer-property") {
		name, value, _ := strings.Cut(o.value.text, "=")
		if o.value.dynamic || strings.HasPrefix(strings.ToLower(strings.TrimSpace(name)), "exec") {
			// Exec*= values start with prefixes (@, -, :, +, !) and are
			// command lines of systemd's own syntax.
			s.runScript(c, field{text: strings.TrimLeft(value, "@-:+!|"), dynamic: o.value.dynamic, why: o.value.why, src: o.value.text}, "systemd-run -p")
		}
	}
	if r.has("shell") {
		// -S: the user's shell, interactive, on the caller's terminal.
		s.stdin(c.redirs, c.under("systemd-run -S"), c.depth, bashFlavour.lang)
		return
	}
	i := r.first(len(c.args))
	for k := i; k < len(c.args); k++ {
		if a := c.args[k]; !a.dynamic && (strings.Contains(a.text, "$") || strings.Contains(a.text, "%")) {
			s.unresolved("systemd-run expands $NAME and %-specifiers in the command: " + s.source(a))
			return
		}
	}
}

// valgrindCommand: every option of valgrind holds its value (--tool=x):
// the command is the first word that is no option.
func valgrindCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		switch {
		case a.dynamic && mayBeOption(a):
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		case !a.dynamic && a.text == "--":
			s.run(c, c.args[i+1:], "valgrind")
			return
		case !mayBeOption(a):
			s.run(c, c.args[i:], "valgrind")
			return
		}
		if strings.HasPrefix(a.text, "--log-fd") || a.text == "--help" || a.text == "--version" {
			continue
		}
	}
}

// findCommand follows find's expression: -exec, -execdir, -ok and -okdir
// run a command for each file, with {} the file's path (dynamic; and, when
// nothing before it filters, the starting point itself, which find passes
// first); -delete deletes what the expression selects, an act of reach
// the line does not tell (Code). A primary the analyser does not know,
// and a word of the expression not known statically, leave the line
// unresolved.
func findCommand(s *Script, c *invocation) {
	args := c.args
	i := 0
global:
	for i < len(args) {
		a := args[i]
		if a.dynamic {
			if mayBeOption(a) {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			break
		}
		switch t := a.text; {
		case t == "-H" || t == "-L" || t == "-P":
			i++
		case t == "-D":
			i += 2
		case strings.HasPrefix(t, "-O") && isNumber(field{text: t[2:]}):
			i++
		case t == "--":
			i++
			break global
		default:
			break global
		}
	}
	var starts []field
	for ; i < len(args) && !startsExpression(args[i]); i++ {
		starts = append(starts, args[i])
	}
	if i < len(args) && args[i].dynamic {
		s.cannot(c, "a word of the expression that is not static: "+s.source(args[i]))
		return
	}
	if len(starts) == 0 {
		starts = []field{{text: ".", src: "."}}
	}
	// unconditional: every file the walk meets reaches this primary,
	// the starting points first.
	unconditional := true
	for i < len(args) {
		a := args[i]
		if a.dynamic {
			s.cannot(c, "a word of the expression that is not static: "+s.source(a))
			return
		}
		t := a.text
		p, ok := findPrimaries[t]
		if !ok && strings.HasPrefix(t, "-newer") && len(t) == 8 {
			p, ok = findPrimary{values: 1, filters: true}, true // -newerXY
		}
		switch {
		case !ok:
			s.cannot(c, "a primary the analyser does not know: "+t)
			return
		case p.exec:
			j := i + 1
			for j < len(args) && !(!args[j].dynamic && (args[j].text == ";" || args[j].text == "+" && j > i+1 && args[j-1].text == "{}")) {
				j++
			}
			if j >= len(args) || j == i+1 {
				s.cannot(c, t+" without its command and terminator")
				return
			}
			label := "find " + t
			s.run(c, findWords(args[i+1:j], nil), label)
			if unconditional && !c.hasFilesFrom(args) {
				for k, start := range starts {
					if k == 8 || start.dynamic {
						break
					}
					s.run(c, findWords(args[i+1:j], &start), label)
				}
			}
			unconditional = false
			i = j + 1
			continue
		case t == "-delete":
			var where []string
			for _, st := range starts {
				where = append(where, st.text)
			}
			s.addCode(c, "-delete", strings.Join(where, " "), false)
		case t == "-mindepth":
			if i+1 < len(args) && args[i+1].text != "0" {
				unconditional = false
			}
		}
		if p.filters {
			unconditional = false
		}
		if i+p.values >= len(args) {
			s.cannot(c, t+" without its value")
			return
		}
		i += 1 + p.values
	}
}

// hasFilesFrom: find -files0-from reads its starting points from a file.
func (c *invocation) hasFilesFrom(args []field) bool {
	for _, a := range args {
		if a.text == "-files0-from" {
			return true
		}
	}
	return false
}

// startsExpression: a word that is no starting point of find: an option,
// a test or action ("-name"), "(" or "!".
func startsExpression(f field) bool {
	if f.dynamic {
		return mayBeOption(f) || f.lead == "(" || f.lead == "!"
	}
	return strings.HasPrefix(f.text, "-") && len(f.text) > 1 || f.text == "(" || f.text == "!" || f.text == ","
}

// findWords are the words of find -exec's command with {} the path of a
// file: start's, or one not known statically.
func findWords(ws []field, start *field) []field {
	out := make([]field, len(ws))
	for k, w := range ws {
		out[k] = w
		if w.dynamic || !strings.Contains(w.text, "{}") {
			continue
		}
		if start != nil {
			t := strings.ReplaceAll(w.text, "{}", start.text)
			out[k] = field{text: t, src: t}
			continue
		}
		out[k] = field{text: w.text, src: w.text, dynamic: true, why: "the path find passes", lead: w.text[:strings.Index(w.text, "{}")]}
	}
	return out
}

// findPrimary is one word of find's expression: how many values follow
// it, whether it selects among the files (a test, an operator), and
// whether it runs a command.
type findPrimary struct {
	values  int
	filters bool
	exec    bool
}

// findPrimaries are GNU findutils 4.10's options, tests, actions and
// operators, and BSD find's.
var findPrimaries = func() map[string]findPrimary {
	m := map[string]findPrimary{}
	add := func(p findPrimary, names string) {
		for n := range strings.FieldsSeq(names) {
			m[n] = p
		}
	}
	// Options: they select nothing.
	add(findPrimary{}, "-d -depth -follow -help --help -ignore_readdir_race -mount -noignore_readdir_race -noleaf "+
		"-version --version -warn -nowarn -xdev -daystart -x -E -s -X -print -print0 -ls -true")
	add(findPrimary{values: 1}, "-maxdepth -mindepth -regextype -files0-from -fls -fprint -fprint0 -printf")
	add(findPrimary{values: 2}, "-fprintf")
	// Tests and operators: what follows them sees some files only.
	add(findPrimary{filters: true}, "-empty -executable -false -nogroup -nouser -readable -writable -sparse -prune -quit "+
		"( ) ! -not -a -and -o -or , -acl -xattr -nowarn")
	add(findPrimary{values: 1, filters: true}, "-amin -anewer -atime -cmin -cnewer -context -ctime -fstype -gid -group "+
		"-ilname -iname -inum -ipath -iregex -iwholename -links -lname -mmin -mtime -name -newer -path -perm -regex "+
		"-samefile -size -type -uid -used -user -wholename -xtype -Bmin -Bnewer -Btime -flags -mnewer -newerct -xattrname")
	add(findPrimary{exec: true}, "-exec -execdir -ok -okdir")
	add(findPrimary{}, "-delete")
	return m
}()

// suCommand: su [options] [-] [USER [ARG]...]: the user's shell (-s
// SHELL, else sh) runs -c COMMAND, or gets ARGs (-c among them), or reads
// its commands from stdin. runuser -u USER COMMAND runs COMMAND itself.
func suCommand(s *Script, c *invocation) {
	r, ok := s.options(c, suOpts)
	if !ok {
		return
	}
	ops := r.operands
	if c.name == "runuser" && r.has("user") {
		words := make([]field, 0, len(ops))
		for _, k := range ops {
			words = append(words, c.args[k])
		}
		if len(words) > 0 {
			s.run(c, words, "runuser")
		} else {
			s.stdin(c.redirs, c.under("runuser"), c.depth, bashFlavour.lang)
		}
		return
	}
	if len(ops) > 0 && !c.args[ops[0]].dynamic && c.args[ops[0]].text == "-" {
		ops = ops[1:]
	}
	if len(ops) > 0 {
		ops = ops[1:] // the user
	}
	sh := field{text: "sh", src: "sh"}
	if shells := r.values("shell"); len(shells) > 0 {
		sh = shells[len(shells)-1].value
	}
	argv := []field{sh}
	if cmds := r.values("command", "session-command"); len(cmds) > 0 {
		argv = append(argv, field{text: "-c", src: "-c"}, cmds[len(cmds)-1].value)
	}
	for _, k := range ops {
		argv = append(argv, c.args[k])
	}
	s.run(c, argv, c.name)
}

var suOpts = opts("c|command: session-command: f|fast g|group: G|supp-group: l|login m|preserve-environment p P|pty " +
	"s|shell: w|whitelist-environment: u|user: h|help V|version")

// sgCommand: sg [-] [GROUP [-c] COMMAND]: COMMAND through sh -c; without
// one, a shell on stdin.
func sgCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) > 0 && !args[0].dynamic && args[0].text == "-" {
		args = args[1:]
	}
	if len(args) > 0 {
		args = args[1:] // the group
	}
	if len(args) > 0 && !args[0].dynamic && args[0].text == "-c" {
		args = args[1:]
	}
	if len(args) == 0 {
		s.stdin(c.redirs, c.under("sg"), c.depth, bashFlavour.lang)
		return
	}
	s.runScript(c, args[0], "sg")
}

// scriptCommand: script [options] [FILE]: -c COMMAND through the user's
// shell, else an interactive shell on stdin.
func scriptCommand(s *Script, c *invocation) {
	r, ok := s.options(c, scriptOpts)
	if !ok {
		return
	}
	if cmds := r.values("command"); len(cmds) > 0 {
		s.runScript(c, cmds[len(cmds)-1].value, "script -c")
		return
	}
	s.stdin(c.redirs, c.under("script"), c.depth, bashFlavour.lang)
}

var scriptOpts = opts("a|append B|log-io: c|command: e|return E|echo: f|flush I|log-in: O|log-out: o|output-limit: " +
	"q|quiet m|logging-format: T|log-timing: t|timing:: V|version h|help")

// sshCommand: ssh [options] DESTINATION [options] [COMMAND [ARG]...]: the
// words of the command joined with spaces for the remote shell; with
// none, that shell reads stdin. The options ProxyCommand, LocalCommand
// and KnownHostsCommand run local commands.
func sshCommand(s *Script, c *invocation) {
	r := sshOpts.read(c.args)
	if r.problem != "" {
		s.badOptions(c, r)
		return
	}
	i := r.first(len(c.args))
	var all []option
	all = append(all, r.opts...)
	if i < len(c.args) && !(i > 0 && c.args[i-1].text == "--") {
		// ssh reads options again after the destination.
		r2 := sshOpts.read(c.args[i+1:])
		if r2.problem != "" {
			r2.problemAt += i + 1
			s.badOptions(c, r2)
			return
		}
		all = append(all, r2.opts...)
		i = i + 1 + r2.first(len(c.args)-i-1)
	} else if i < len(c.args) {
		i++
	}
	got := readOpts{opts: all}
	if !sshConfig(s, c, got.values("o")) {
		return
	}
	if got.has("N", "W", "O", "Q", "G", "V", "s") || r.first(len(c.args)) >= len(c.args) {
		return // no remote command, or no connection
	}
	if i < len(c.args) {
		s.runJoined(c, c.args[i:], "ssh")
		return
	}
	s.stdin(c.redirs, c.under("ssh"), c.depth, bashFlavour.lang)
}

var sshOpts = opts("+1 2 4 6 A a B: b: C c: D: E: e: F: f G g I: i: J: K k L: l: M m: N n O: o: P: p: Q: q R: S: s T t V v W: w: X x Y y")

// sshConfig follows the -o options of ssh, scp and sftp: those that run a
// command (as scripts), those that load code or read more configuration
// (unresolved). It reports false when the line is unresolved.
func sshConfig(s *Script, c *invocation, os []option) bool {
	for _, o := range os {
		v := o.value
		if v.dynamic {
			s.cannot(c, "an -o option that is not static: "+s.source(v))
			return false
		}
		key, value := cutSSHOption(v.text)
		switch k := strings.ToLower(key); {
		case sshRunKeys[k]:
			s.runScript(c, field{text: value, src: value}, c.name+" -o "+key)
		case sshInertKeys[k]:
		default:
			s.cannot(c, "an -o option the analyser does not know, or one that loads code: "+key)
			return false
		}
	}
	return true
}

// cutSSHOption splits "Key=Value" or "Key Value" as ssh reads -o.
func cutSSHOption(t string) (key, value string) {
	t = strings.TrimLeft(t, " \t")
	i := strings.IndexAny(t, " \t=")
	if i < 0 {
		return t, ""
	}
	key, value = t[:i], strings.TrimLeft(t[i:], " \t")
	value = strings.TrimPrefix(value, "=")
	return key, strings.TrimLeft(value, " \t")
}

// sshRunKeys run their value as a command; RemoteCommand runs on the
// other machine, the others here.
var sshRunKeys = map[string]bool{"proxycommand": true, "localcommand": true, "knownhostscommand": true, "remotecommand": true}

// sshInertKeys are the ssh_config keywords (OpenSSH 9.9) that run nothing
// and load no code. Match, Include, PKCS11Provider, SecurityKeyProvider
// and XAuthLocation are not among them.
var sshInertKeys = func() map[string]bool {
	m := map[string]bool{}
	for k := range strings.FieldsSeq(`addkeystoagent addressfamily batchmode bindaddress bindinterface canonicaldomains
		canonicalizefallbacklocal canonicalizehostname canonicalizemaxdots canonicalizepermittedcnames casignaturealgorithms
		certificatefile channeltimeout checkhostip ciphers clearallforwardings compression connectionattempts connecttimeout
		controlmaster controlpath controlpersist dynamicforward enableescapecommandline enablesshkeysign escapechar
		exitonforwardfailure fingerprinthash forkafterauthentication forwardagent forwardx11 forwardx11timeout
		forwardx11trusted gatewayports globalknownhostsfile gssapiauthentication gssapidelegatecredentials hashknownhosts
		host hostbasedacceptedalgorithms hostbasedauthentication hostkeyalgorithms hostkeyalias hostname identitiesonly
		identityagent identityfile ignoreunknown ipqos kbdinteractiveauthentication kbdinteractivedevices kexalgorithms
		localforward loglevel logverbose macs nohostauthenticationforlocalhost numberofpasswordprompts obscurekeystroketiming
		passwordauthentication permitlocalcommand permitremoteopen port preferredauthentications proxyjump proxyusefdpass
		pubkeyacceptedalgorithms pubkeyauthentication rekeylimit remoteforward requesttty requiredrsasize revokedhostkeys
		sendenv serveralivecountmax serveraliveinterval sessiontype setenv stdinnull streamlocalbindmask
		streamlocalbindunlink stricthostkeychecking syslogfacility tag tcpkeepalive tunnel tunneldevice updatehostkeys user
		userknownhostsfile verifyhostkeydns visualhostkey pubkeyacceptedkeytypes hostkeyalgorithms`) {
		m[k] = true
	}
	return m
}()

// scpCommand: scp and sftp copy files; -o takes ssh's options, -S names
// the program used instead of ssh, sftp -D a local sftp server, and sftp
// without -b FILE reads commands (!COMMAND runs a local shell) from stdin.
func scpCommand(s *Script, c *invocation) {
	g := scpOpts
	if c.name == "sftp" {
		g = sftpOpts
	}
	r, ok := s.options(c, g)
	if !ok {
		return
	}
	if !sshConfig(s, c, r.values("o")) {
		return
	}
	for _, o := range r.values("S", "D") {
		s.run(c, []field{o.value}, c.name+" -"+o.name)
	}
	if c.name == "sftp" {
		batch := r.values("b")
		if len(batch) == 0 || batch[0].value.dynamic || batch[0].value.text == "-" {
			s.unresolved("sftp reads its commands from stdin, where !COMMAND runs a local shell")
		}
	}
}

var (
	scpOpts  = opts("+3 4 6 A B C D: F: J: O R T c: i: l: o: P: p q r S: s v X:")
	sftpOpts = opts("+4 6 A a B: b: C c: D: F: f i: J: l: N o: P: p q R: r S: s: v X:")
)
