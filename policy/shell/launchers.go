package shell

import (
	"sort"
	"strings"
)

// A launcher is a program some of whose options run something, found
// among options the analyser does not otherwise read: a command line for
// a shell (certbot --pre-hook, yt-dlp --exec), code of a language (gnuplot
// -e, rpm --eval), a file of commands or configuration that runs some
// (openvpn --config), or an option that makes the program run what the
// line does not show. Programs with many options that change nothing of
// what runs are read this way rather than by a full table, which would
// ask a human for every option it lacked: an option is found by any
// prefix of its long name and by its letter anywhere in a cluster, as
// getopt_long reads them, so a spelling only ever finds more; every other
// option is passed over. A word not known statically where an option
// could be leaves the line unresolved.

// role is what an option's value (or an operand) is to its program.
type role uint8

const (
	roleNone role = iota
	// roleScript: a command line a shell runs; a program's path is one
	// of one word.
	roleScript
	// roleCode: code of the program's own language, which the analyser
	// does not read (interpreter_code decides).
	roleCode
	// roleFile: a file of commands, code or configuration that runs
	// some: not ours to read, unless the line wrote it (a descriptor or
	// a process substitution is code).
	roleFile
	// roleHidden: makes the program run what the line does not show:
	// unresolved.
	roleHidden
	// roleCodeFlag: an option without a value that lets what the
	// program reads run commands (latex --shell-escape): its operands
	// are code.
	roleCodeFlag
	// roleShell: an option without a value that starts an interactive
	// shell, reading stdin (genie -s).
	roleShell
	// roleConsole: an option without a value that makes the program read
	// its own commands from stdin (nmap --interactive), code.
	roleConsole
)

// takesValue reports whether an option of this role has a value.
func (r role) takesValue() bool {
	return r == roleScript || r == roleCode || r == roleFile || r == roleHidden
}

// stdinMode is whether a launcher reads commands or code from stdin.
type stdinMode uint8

const (
	noStdin stdinMode = iota
	// stdinAlways: a console (ftp, smbclient): it reads its commands
	// from stdin unless an option gave them (a code or file option).
	stdinAlways
	// stdinBare: a language's interpreter: it reads its program from
	// stdin when no option gave code and no operand names a file. A
	// here-document or here-string is read whatever the operands (one
	// may be the value of an option the launcher does not know).
	stdinBare
)

type launcher struct {
	long  map[string]role
	short map[byte]role
	// names are long's keys, sorted: a prefix finds the first.
	names []string
	// oneDash: long options are written with one dash as well
	// (-sf FILE, -if EXPR), and are exact: no prefix stands for one.
	oneDash bool
	// sub: the options count only after one of these words, the first
	// that is no option (gem open -e, puppet apply -e).
	sub []string
	// operands is what the operands are (roleNone: data).
	operands role
	stdin    stdinMode
	// runs tells whether a text can run anything (dc's !, m4's
	// syscmd); nil for any.
	runs func(string) bool
}

// launch compiles a launcher from a spec: groups "ROLE: names..."
// separated by ';', each name a long option (two letters or more) or a
// letter. ROLE is script, code, file, hidden, codeflag or shell.
func launch(spec string) *launcher {
	l := &launcher{long: map[string]role{}, short: map[byte]role{}}
	for group := range strings.SplitSeq(spec, ";") {
		if strings.TrimSpace(group) == "" {
			continue
		}
		kind, names, ok := strings.Cut(group, ":")
		if !ok {
			panic("shell: launcher spec without a role: " + group)
		}
		var r role
		switch strings.TrimSpace(kind) {
		case "script":
			r = roleScript
		case "code":
			r = roleCode
		case "file":
			r = roleFile
		case "hidden":
			r = roleHidden
		case "codeflag":
			r = roleCodeFlag
		case "shell":
			r = roleShell
		case "console":
			r = roleConsole
		default:
			panic("shell: unknown launcher role " + kind)
		}
		for n := range strings.FieldsSeq(names) {
			if len(n) == 1 {
				l.short[n[0]] = r
				continue
			}
			l.long[n] = r
			l.names = append(l.names, n)
		}
	}
	sort.Strings(l.names)
	return l
}

// with sets what a launcher's operands are and whether it reads stdin.
func (l *launcher) with(operands role, stdin stdinMode) *launcher {
	l.operands, l.stdin = operands, stdin
	return l
}

// oneDashed makes a launcher's long options written with one dash, and
// exact.
func (l *launcher) oneDashed() *launcher {
	l.oneDash = true
	return l
}

// lookup finds a long option by its name or a prefix of it.
func (l *launcher) lookup(name string) (string, role) {
	if r, ok := l.long[name]; ok {
		return name, r
	}
	if name == "" || l.oneDash {
		return "", roleNone
	}
	i := sort.SearchStrings(l.names, name)
	if i < len(l.names) && strings.HasPrefix(l.names[i], name) {
		return l.names[i], l.long[l.names[i]]
	}
	return "", roleNone
}

// launched is one option a launcher found, with its value.
type launched struct {
	form  string // how to name it: --pre-hook, -e
	role  role
	value field
}

// follow reads a launcher's words and follows what its options run.
func (l *launcher) follow(s *Script, c *invocation) {
	args := c.args
	if len(l.sub) > 0 {
		i := 0
		for i < len(args) && mayBeOption(args[i]) && !args[i].dynamic {
			i++
		}
		if i >= len(args) || args[i].dynamic || !contains(l.sub, args[i].text) {
			return
		}
		c = &invocation{name: c.name, args: args[i+1:], redirs: c.redirs, via: c.via, depth: c.depth}
		args = c.args
	}
	var found []launched
	var operands []field
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !mayBeOption(a) {
			operands = append(operands, a)
			continue
		}
		if a.dynamic {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		t := a.text
		if t == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		var next *field
		if i+1 < len(args) {
			next = &args[i+1]
		}
		o, used := l.option(t, next)
		found = append(found, o...)
		i += used
	}
	given := false
	var flagged *launched
	for k := range found {
		o := found[k]
		label := c.name + " " + o.form
		switch o.role {
		case roleScript:
			s.runScript(c, o.value, c.name+" "+o.form)
		case roleCode:
			given = true
			if l.runs == nil || o.value.dynamic || l.runs(o.value.text) {
				s.codeOf(c, o.form, o.value)
			}
		case roleFile:
			given = true
			s.launchedFile(c, o.value, l.runs)
		case roleHidden:
			s.cannot(c, o.form+", which makes it run what the command line does not show: "+s.source(o.value))
		case roleCodeFlag:
			flagged = &found[k]
		case roleShell:
			s.stdin(c.redirs, c.under(label), c.depth, bashFlavour.lang)
		case roleConsole:
			given = true
			s.stdinCode(c, l.runs)
		}
	}
	switch {
	case flagged != nil && len(operands) > 0:
		s.addCode(c, flagged.form, joinTexts(operands), anyDynamic(operands))
	case flagged != nil:
		s.stdinCode(c, nil) // the document it reads from stdin
	}
	switch l.operands {
	case roleFile:
		// An operand not known statically may be data (a package's
		// name): only what it is known to be counts.
		for _, f := range operands {
			if !f.dynamic || f.procSubst {
				s.launchedFile(c, f, l.runs)
			}
		}
	case roleCode:
		for _, f := range operands {
			if l.runs == nil || f.dynamic || l.runs(f.text) {
				s.codeOf(c, "operand", f)
			}
		}
	}
	switch {
	case given || l.stdin == noStdin:
	case l.stdin == stdinAlways, len(operands) == 0:
		s.stdinCode(c, l.runs)
	case s.inputOf(c.redirs, 0).kind != fromCaller:
		s.stdinCode(c, l.runs)
	}
}

// option reads one option word t, taking a value from next when the
// option found needs one; it returns what it found and how many
// following words it used.
func (l *launcher) option(t string, next *field) ([]launched, int) {
	long := strings.HasPrefix(t, "--")
	body := strings.TrimLeft(t, "-")
	if !long && l.oneDash && len(body) > 1 {
		name, _, _ := strings.Cut(body, "=")
		if full, _ := l.lookup(name); full != "" {
			long = true
		}
	}
	if long {
		name, value, eq := strings.Cut(body, "=")
		full, r := l.lookup(name)
		switch {
		case r == roleNone:
			return nil, 0
		case !r.takesValue():
			return []launched{{form: "--" + full, role: r}}, 0
		case eq:
			return []launched{{form: "--" + full, role: r, value: field{text: value, src: value}}}, 0
		case next != nil:
			return []launched{{form: "--" + full, role: r, value: *next}}, 1
		}
		return nil, 0
	}
	var out []launched
	for j := 1; j < len(t); j++ {
		r, ok := l.short[t[j]]
		if !ok {
			continue
		}
		form := "-" + string(t[j])
		switch {
		case !r.takesValue():
			out = append(out, launched{form: form, role: r})
			continue
		case j+1 < len(t):
			v := t[j+1:]
			return append(out, launched{form: form, role: r, value: field{text: v, src: v}}), 0
		case next != nil:
			return append(out, launched{form: form, role: r, value: *next}), 1
		}
		break
	}
	return out, 0
}

// launchedFile notes a file of commands or code a program runs: a
// descriptor's or a process substitution's is code; one not known
// statically is unresolved.
func (s *Script) launchedFile(c *invocation, f field, runs func(string) bool) {
	switch {
	case s.programOperand(c, f, runs):
	case f.dynamic:
		s.cannot(c, "a file of commands or code that is not static: "+s.source(f))
	default:
		s.runs(f)
	}
}

func anyDynamic(fs []field) bool {
	for _, f := range fs {
		if f.dynamic && f.why != whyGlob {
			return true
		}
	}
	return false
}

// consoleRuns: a console's command that runs a shell command (ftp's,
// smbclient's, tdbtool's !).
func consoleRuns(text string) bool { return strings.Contains(text, "!") }

// launchers are the programs read by launch specs. What each covers of
// GTFOBins is listed in gtfobins.go.
var launchers = map[string]*launcher{
	// Commands given to options, run through a shell (or a program's
	// path, a command of one word).
	"agetty":           launch("script: l login-program; file: issue-file"),
	"aria2c":           launch("script: on-download-start on-download-pause on-download-stop on-download-complete on-download-error on-bt-download-complete; file: conf-path"),
	"borg":             launch("script: rsh"),
	"certbot":          launch("script: pre-hook post-hook deploy-hook renew-hook manual-auth-hook manual-cleanup-hook; file: c config"),
	"cpio":             launch("script: rsh-command"),
	"dhclient":         launch("script: sf; file: cf").oneDashed(),
	"dmsetup":          launch("script: exec"),
	"dnsmasq":          launch("script: conf-script dhcp-script; code: dhcp-luascript; file: C conf-file conf-dir"),
	"enscript":         launch("script: I filter"),
	"forge":            launch("script: use"),
	"genie":            launch("script: c command; shell: s shell"),
	"logrotate":        launch("script: m mail").with(roleFile, noStdin),
	"mail":             launch("code: E exec"),
	"nano":             launch("script: s speller; file: rcfile"),
	"openvpn":          launch("script: up down ipchange route-up route-pre-down tls-verify client-connect client-disconnect learn-address auth-user-pass-verify; file: config"),
	"perlbug":          launch("script: e editor"),
	"plymouth":         launch("script: command"),
	"scrot":            launch("script: e exec"),
	"split":            launch("script: filter"),
	"sshuttle":         launch("script: e ssh-cmd"),
	"yt-dlp":           launch("script: exec exec-before-download netrc-cmd; file: config-locations"),
	"youtube-dl":       launch("script: exec; file: config-location"),
	"zic":              launch("script: y"),
	"zathura":          launch("script: x synctex-editor-command"),
	"fastfetch":        launch("script: command-shell command-text; file: c config"),
	"neofetch":         launch("file: config"),
	"easyrsa":          launch("file: vars"),
	"minicom":          launch("file: S script"),
	"rsyslogd":         launch("file: f"),
	"procmail":         launch("file: m").with(roleFile, noStdin),
	"check_ssl_cert":   launch("script: grep-bin curl-bin file-bin nmap-bin openssl python-bin dig-bin nslookup-bin host-bin"),
	"bat":              launch("script: pager"),
	"batcat":           launch("script: pager"),
	"gem":              launch("script: e editor").with(roleFile, noStdin),
	"pip":              launch("script: editor"),
	"pip3":             launch("script: editor"),
	"cobc":             launch("").with(roleFile, noStdin),
	"acr":              launch("file: r").with(roleFile, noStdin),
	"ansible-playbook": launch("file: i inventory e extra-vars vault-password-file").with(roleFile, noStdin),
	"runscript":        launch("").with(roleFile, noStdin),
	"wg-quick":         launch("").with(roleFile, noStdin),
	"virsh":            launch("file: f file").with(roleFile, noStdin),
	"needrestart":      launch("file: c"),
	"pandoc":           launch("file: L lua-filter F filter"),
	"tshark":           launch("hidden: X"),
	"cowsay":           launch("file: f"),
	"cowthink":         launch("file: f"),
	"gimp":             launch("code: b batch batch-interpreter"),
	"sqlmap":           launch("code: eval; file: c"),
	"facter":           launch("file: custom-dir"),
	"byebug":           launch("").with(roleFile, noStdin),
	"pdb":              launch("code: c command").with(roleFile, noStdin),
	"pipx":             &launcher{long: map[string]role{}, short: map[byte]role{}, sub: []string{"run"}, operands: roleFile},
	"nmap":             launch("file: script; console: interactive"),
	// Package files whose scripts run when they are installed: files,
	// not ours to read (as python3 script.py), unless the line made them.
	"dpkg": launch("").with(roleFile, noStdin),
	"snap": launch("").with(roleFile, noStdin),
	"dnf":  launch("").with(roleFile, noStdin),
	"yum":  launch("").with(roleFile, noStdin),
	"pkg":  launch("").with(roleFile, noStdin),
	"opkg": launch("").with(roleFile, noStdin),
	"rpm":  launch("code: E eval D define; script: pipe; hidden: macros rcfile load; file: i install U upgrade F freshen").with(roleFile, noStdin),
	// Code of a language given to an option, or read from stdin.
	"gnuplot":    &launcher{long: map[string]role{}, short: map[byte]role{'e': roleCode}, operands: roleFile, stdin: stdinBare, runs: gnuplotRuns},
	"octave":     launch("code: eval").with(roleFile, stdinBare),
	"octave-cli": launch("code: eval").with(roleFile, stdinBare),
	"guile":      launch("code: c e; file: s l").with(roleFile, stdinBare),
	"clisp":      launch("code: x; file: i init-file").with(roleFile, stdinBare),
	"ghc":        launch("code: e"),
	"ghci":       launch("code: e").with(roleFile, stdinBare),
	"jrunscript": launch("code: e; file: f").with(roleFile, stdinBare),
	"jshell":     launch("file: startup").with(roleFile, stdinBare),
	"jjs":        launch("").with(roleFile, stdinBare),
	"slsh":       launch("code: e").with(roleFile, stdinBare),
	"irb":        launch("code: r").with(roleFile, stdinBare),
	"pry":        launch("code: e exec; file: r require").with(roleFile, stdinBare),
	"rake":       launch("code: e execute p execute-print E execute-continue; file: f rakefile r require R rakelibdir"),
	"knife":      launch("code: E exec"),
	"exiftool":   launch("code: if if2 if3 if4 if5 api; file: config").oneDashed(),
	"bpftrace":   launch("script: c; code: e").with(roleFile, noStdin),
	"m4":         &launcher{long: map[string]role{"define": roleCode}, names: []string{"define"}, short: map[byte]role{'D': roleCode}, operands: roleFile, stdin: stdinBare, runs: m4Runs},
	"dc":         &launcher{long: map[string]role{"expression": roleCode, "file": roleFile}, names: []string{"expression", "file"}, short: map[byte]role{'e': roleCode, 'f': roleFile}, operands: roleFile, stdin: stdinBare, runs: consoleRuns},
	"fzf":        launch("code: bind preview listen listen-unsafe with-shell become execute"),
	"ranger":     launch("code: cmd"),
	"puppet":     &launcher{long: map[string]role{"execute": roleCode}, names: []string{"execute"}, short: map[byte]role{'e': roleCode}, sub: []string{"apply"}, operands: roleFile},
	"bee":        &launcher{long: map[string]role{}, short: map[byte]role{}, sub: []string{"eval", "ev"}, operands: roleCode},
	"hping3":     launch("").with(roleNone, stdinBare),
	"jtag":       launch("").with(roleFile, stdinBare),
	"pic":        launch("codeflag: U"),
	"groff":      launch("codeflag: U"),
	"nroff":      launch("codeflag: U"),
	"troff":      launch("codeflag: U"),
	// Consoles: commands from stdin (or an option), where ! or a
	// command of their own runs a shell.
	"ftp":        launch("").with(roleNone, stdinAlways),
	"tnftp":      launch("").with(roleNone, stdinAlways),
	"ncftp":      launch("").with(roleNone, stdinAlways),
	"telnet":     launch("").with(roleNone, stdinAlways),
	"psftp":      launch("file: b").with(roleNone, stdinAlways),
	"lftp":       launch("code: c e; file: f").with(roleNone, stdinAlways),
	"smbclient":  launch("code: c command").with(roleNone, stdinAlways),
	"tdbtool":    launch("").with(roleNone, stdinAlways),
	"ginsh":      launch("").with(roleNone, stdinAlways),
	"scanmem":    launch("code: c command").with(roleNone, stdinAlways),
	"tasksh":     launch("").with(roleNone, stdinAlways),
	"bconsole":   launch("").with(roleNone, stdinAlways),
	"debugfs":    launch("code: R; file: f").with(roleNone, stdinAlways),
	"asterisk":   launch("code: x").with(roleNone, stdinAlways),
	"cpan":       launch("").with(roleNone, stdinAlways),
	"msfconsole": launch("code: x execute-command; file: r resource").with(roleNone, stdinAlways),
	"volatility": launch("").with(roleNone, stdinAlways),
}

// gnuplotRuns: gnuplot runs a command through system(), !, a
// backquote, and a file name that starts with < or | (plot '< cmd', set
// output '| cmd').
func gnuplotRuns(text string) bool {
	return strings.Contains(text, "system") || strings.ContainsAny(text, "!`<|")
}

// m4Runs: m4's syscmd and esyscmd run a shell command.
func m4Runs(text string) bool { return strings.Contains(text, "syscmd") }

func init() {
	for _, n := range []string{"rpmdb", "rpmquery", "rpmverify", "rpmbuild", "rpmspec", "rpmkeys", "rpmsign"} {
		launchers[n] = launchers["rpm"]
	}
	// The consoles' ! runs a shell command.
	for _, n := range []string{"ftp", "tnftp", "ncftp", "psftp", "lftp", "smbclient", "tdbtool", "ginsh"} {
		launchers[n].runs = consoleRuns
	}
	for name, l := range launchers {
		handlers[name] = l.follow
	}
}
