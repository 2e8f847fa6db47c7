package shell

import (
	"strings"
)

// gitCommand follows what git runs besides itself: configuration given
// with -c (and clone -c, git config KEY VALUE) whose value is a command
// (core.sshCommand, core.pager, alias.x=!cmd, ...), aliases given so, and
// the options of subcommands that run commands (rebase --exec, bisect
// run, submodule foreach, filter-branch filters, difftool --extcmd,
// --upload-pack, --receive-pack, grep -O, send-email --*-cmd). A global
// option, configuration key or subcommand the analyser does not know
// leaves the line unresolved: an unknown subcommand may be an alias or a
// git-NAME program it cannot see.
func gitCommand(s *Script, c *invocation) {
	args := c.args
	var aliases map[string]field // made when -c gives one
	via := c.via
	for range MaxDepth {
		i, ok := gitGlobals(s, c, args, &aliases)
		if !ok {
			return
		}
		for _, a := range args {
			if !a.dynamic && strings.Contains(a.text, "ext::") {
				s.cannot(c, "an ext:: URL, which runs a command: "+s.source(a))
				return
			}
		}
		if i >= len(args) {
			return
		}
		sub := args[i]
		if sub.dynamic {
			s.cannot(c, "a subcommand that is not static: "+s.source(sub))
			return
		}
		rest := args[i+1:]
		// git ignores an alias that would hide one of its commands.
		if v, ok := aliases[strings.ToLower(sub.text)]; ok && !gitSubcommands[sub.text] {
			label := "git alias " + sub.text
			if strings.HasPrefix(v.text, "!") {
				// sh -c 'VALUE "$@"' VALUE ARGS: the arguments follow the
				// script's text.
				words := make([]field, 0, len(rest)+1)
				words = append(words, field{text: strings.TrimPrefix(v.text, "!"), src: v.text})
				words = append(words, quotedWords(rest)...)
				s.eval(words, append(via[:len(via):len(via)], label), c.depth+1)
				return
			}
			// An alias of git's own words, split as git splits them.
			words, ok := splitGitAlias(v.text)
			if !ok {
				s.cannot(c, "an alias git splits its own way: "+v.text)
				return
			}
			args = append(words, rest...)
			delete(aliases, strings.ToLower(sub.text)) // git does not expand an alias twice
			via = append(via[:len(via):len(via)], label)
			continue
		}
		name := sub.text
		if !gitSubcommands[name] {
			s.cannot(c, "a subcommand the analyser does not know (an alias or a git-"+name+" program): "+name)
			return
		}
		if f := gitRuns[name]; f != nil {
			inner := &invocation{name: "git " + name, args: rest, redirs: c.redirs, via: via, depth: c.depth}
			f(s, inner)
		}
		return
	}
	s.unresolved("nesting deeper than 8 shells or wrappers")
}

// quotedWords are words as a script would hold them, each one word
// (static ones quoted; dynamic ones as written, so they stay dynamic).
func quotedWords(ws []field) []field {
	out := make([]field, len(ws))
	for i, w := range ws {
		if w.dynamic {
			out[i] = w
			continue
		}
		q := "'" + strings.ReplaceAll(w.text, "'", `'\''`) + "'"
		out[i] = field{text: q, src: q}
	}
	return out
}

// splitGitAlias splits an alias value into words: plain words, spaces and
// quotes only (git's split_cmdline has escapes of its own).
func splitGitAlias(v string) ([]field, bool) {
	return splitEnvString(field{text: v})
}

// gitGlobals reads git's own options before the subcommand (exact names,
// as git reads them), following -c and --config-env. It returns the index
// of the subcommand, and false when the line is unresolved.
func gitGlobals(s *Script, c *invocation, args []field, aliases *map[string]field) (int, bool) {
	i := 0
	for i < len(args) {
		a := args[i]
		if !mayBeOption(a) {
			return i, true
		}
		if a.dynamic {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return 0, false
		}
		t := a.text
		name, value, eq := strings.Cut(t, "=")
		takes, known := gitGlobalOpts[name]
		switch {
		case t == "--":
			return i + 1, true
		case !known:
			s.cannot(c, "an option the analyser does not know: "+t)
			return 0, false
		case name == "--exec-path" && eq:
			s.cannot(c, "--exec-path, which sets where git finds the programs it runs: "+t)
			return 0, false
		case takes && !eq:
			if i+1 >= len(args) {
				s.cannot(c, "an option missing its value: "+t)
				return 0, false
			}
			i++
			value = args[i].text
			if args[i].dynamic {
				if name == "-c" || name == "--config-env" {
					s.cannot(c, "configuration that is not static: "+s.source(args[i]))
					return 0, false
				}
			}
		case takes && name == "-c":
			s.cannot(c, "an option the analyser does not know: "+t)
			return 0, false
		}
		switch name {
		case "-c":
			key, v, _ := strings.Cut(value, "=")
			if !gitConfig(s, c, key, field{text: v, src: v}, aliases, "git -c", false) {
				return 0, false
			}
		case "--config-env":
			// The value comes from a variable of the environment.
			key, _, _ := strings.Cut(value, "=")
			if !gitConfig(s, c, key, field{dynamic: true, why: "a variable", src: value}, aliases, "git --config-env", false) {
				return 0, false
			}
		}
		i++
	}
	return i, true
}

// gitGlobalOpts are git's options before the subcommand (git 2.50): true
// when the value may be the next word.
var gitGlobalOpts = map[string]bool{"-C": true, "-c": true, "--config-env": true, "--exec-path": false, "--html-path": false,
	"--man-path": false, "--info-path": false, "-p": false, "--paginate": false, "-P": false, "--no-pager": false,
	"--no-replace-objects": false, "--no-lazy-fetch": false, "--no-optional-locks": false, "--no-advice": false,
	"--bare": false, "--git-dir": true, "--work-tree": true, "--namespace": true, "--super-prefix": true,
	"--literal-pathspecs": false, "--glob-pathspecs": false, "--noglob-pathspecs": false, "--icase-pathspecs": false,
	"--list-cmds": true, "--attr-source": true, "--version": false, "-v": false, "--help": false, "-h": false}

// gitConfig follows one configuration key and its value: a command is
// read as a script (label says where it was given), an alias is noted,
// a key that runs programs the analyser cannot see, or one it does not
// know, leaves the line unresolved (false).
func gitConfig(s *Script, c *invocation, key string, value field, aliases *map[string]field, label string, persists bool) bool {
	section, rest, _ := strings.Cut(key, ".")
	section = strings.ToLower(section)
	sub, variable := "", rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		sub, variable = rest[:i], rest[i+1:]
	}
	variable = strings.ToLower(variable)
	lk := section + "." + variable
	if sub != "" {
		lk = section + ".*." + variable
	}
	run := func() bool {
		v := value
		v.text = strings.TrimPrefix(v.text, "!")
		s.scriptField(v, c.under(label+" "+key), c.depth, label+" "+key+" that is not static")
		return true
	}
	switch {
	case section == "alias" && sub == "" && variable != "":
		if value.dynamic {
			s.cannot(c, "an alias that is not static: "+key)
			return false
		}
		if *aliases == nil {
			*aliases = map[string]field{}
		}
		(*aliases)[variable] = value
		if persists && strings.HasPrefix(value.text, "!") {
			// Written for later runs of git: read now. (Given with -c,
			// it runs only where it is used, read there.)
			return run()
		}
		return true
	case section == "pager" && sub == "":
		if isGitBool(value.text) {
			return true
		}
		return run()
	case gitRunKeys[lk]:
		if lk == "core.fsmonitor" && isGitBool(value.text) {
			return true
		}
		if lk == "credential.helper" || lk == "credential.*.helper" || lk == "submodule.*.update" {
			if !strings.HasPrefix(value.text, "!") && !value.dynamic && !strings.Contains(value.text, "/") {
				return true // a helper git runs as git credential-NAME; an update mode
			}
		}
		return run()
	case gitHiddenKeys[lk]:
		if strings.HasSuffix(lk, ".allow") && strings.EqualFold(value.text, "never") {
			return true
		}
		s.cannot(c, "configuration that makes git run what the analyser cannot see: "+key)
		return false
	case gitInert(section, sub, variable):
		return true
	}
	s.cannot(c, "a configuration key the analyser does not know: "+key)
	return false
}

func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off", "1", "0", "":
		return true
	}
	return false
}

// gitRunKeys are the configuration keys whose value is a command (or a
// program) git runs; * stands for a subsection.
var gitRunKeys = set2(`core.sshcommand core.pager core.editor core.askpass core.fsmonitor core.gitproxy
	core.alternaterefscommand sequence.editor diff.external diff.*.command diff.*.textconv merge.*.driver
	filter.*.clean filter.*.smudge filter.*.process credential.helper credential.*.helper gpg.program gpg.*.program
	interactive.difffilter uploadpack.packobjectshook sendemail.sendmailcmd sendemail.tocmd sendemail.cccmd
	sendemail.headercmd sendemail.smtpserver sendemail.*.sendmailcmd sendemail.*.tocmd sendemail.*.cccmd
	sendemail.*.smtpserver browser.*.cmd browser.*.path difftool.*.cmd difftool.*.path mergetool.*.cmd mergetool.*.path
	man.*.cmd man.*.path instaweb.httpd remote.*.uploadpack remote.*.receivepack remote.*.vcs
	submodule.*.update trailer.*.command trailer.*.cmd imap.tunnel guitool.*.cmd web.browser man.viewer
	`)

// gitHiddenKeys make git run what the line does not hold: hooks of a
// directory, configuration of another file, transports that run commands.
var gitHiddenKeys = set2(`core.hookspath include.path includeif.*.path protocol.allow protocol.*.allow init.templatedir`)

// gitInert reports whether a key runs nothing and loads no code.
func gitInert(section, sub, variable string) bool {
	switch section {
	case "user", "author", "committer", "color", "advice", "init", "http", "https", "pull", "push", "fetch", "rebase",
		"branch", "status", "log", "format", "pack", "gc", "safe", "transfer", "tag", "commit", "index", "checkout",
		"clone", "column", "grep", "blame", "lfs", "rerere", "stash", "versionsort", "worktree", "am", "apply", "bundle",
		"fsck", "fetchpack", "i18n", "feature", "sparse", "mailinfo", "mailmap", "notes", "url", "branchless",
		"splitindex", "reftable", "repack", "maintenance", "submodule", "receive", "uploadpack", "help", "tar",
		"pretty", "reset", "revert", "showbranch", "trace2", "uploadarchive", "fastimport", "add", "merge", "diff",
		"difftool", "mergetool", "credential", "remote", "protocol", "core", "gpg", "sequence", "interactive", "web",
		"man", "browser", "filter", "trailer", "imap", "sendemail", "gui", "guitool", "pager", "instaweb", "extensions",
		"ssh", "attr", "bitmappseudomerge", "promisor", "repo", "transport":
	default:
		return false
	}
	switch section {
	case "core":
		return sub == "" && gitInertCore[variable]
	case "protocol":
		return variable == "version"
	case "credential":
		return variable == "username" || variable == "usehttppath" || variable == "interactive" || variable == "protectprotocol" || variable == "sanitizeprompt"
	case "merge", "diff":
		return sub == "" // merge.<driver>.*, diff.<driver>.* beyond the listed ones: unknown
	case "gpg":
		return variable == "format" || variable == "mintrustlevel" || sub == "ssh" && variable == "allowedsignersfile"
	case "sequence", "interactive", "web", "man", "browser", "filter", "trailer", "imap", "sendemail", "gui",
		"guitool", "pager", "instaweb", "difftool", "mergetool", "ssh":
		// Only the keys that run nothing; the others are in gitRunKeys.
		return variable == "prompt" || variable == "trustexitcode" || variable == "keepbackup" || variable == "keeptemporaries" ||
			variable == "writetomp" || variable == "hidebackup" || variable == "singlekey" || variable == "required" ||
			variable == "ifexists" || variable == "ifmissing" || variable == "where" || variable == "key" ||
			variable == "separators" || variable == "smtpuser" || variable == "smtpencryption" || variable == "from" ||
			variable == "to" || variable == "cc" || variable == "confirm" || variable == "suppresscc" || variable == "smtpserverport" ||
			variable == "annotate" || variable == "chainreplyto" || variable == "thread" || variable == "folder" || variable == "host" ||
			variable == "user" || variable == "port" || variable == "sslverify" || variable == "authmethod" || variable == "local" ||
			variable == "httpd-port" || variable == "browser" && section == "instaweb" || variable == "tool" ||
			variable == "guitool" || variable == "writecommitgraph" || variable == "ordering" || variable == "difftool" ||
			variable == "ordered" || variable == "showbranch"
	case "remote":
		return sub != "" && gitInertRemote[variable] || sub == "" && (variable == "pushdefault")
	case "submodule":
		return variable != "update"
	case "receive":
		return variable != "procreceiverefs"
	case "uploadpack":
		return variable != "packobjectshook"
	}
	return true
}

var gitInertCore = set2(`quotepath autocrlf filemode ignorecase safecrlf eol longpaths symlinks whitespace abbrev compression
	loosecompression precomposeunicode bare logallrefupdates sparsecheckout sparsecheckoutcone untrackedcache commentchar
	commentstring excludesfile attributesfile preloadindex fscache checkstat trustctime splitindex multipackindex
	bigfilethreshold deltabasecachelimit packedgitlimit packedgitwindowsize repositoryformatversion fsync fsyncmethod
	fsyncobjectfiles filesreflocktimeout packedrefstimeout notesref warnambiguousrefs protecthfs protectntfs
	restrictinheritedhandles createobject checkroundtripencoding autorefreshindex sharedrepository hidedotfiles
	unsetenvvars useReplaceRefs usereplacerefs maxtreedepth`)

var gitInertRemote = set2(`url pushurl fetch push mirror skipdefaultupdate skipfetchall tagopt prune prunetags promisor
	partialclonefilter serveroption followremotehead`)

func set2(names string) map[string]bool {
	m := map[string]bool{}
	for n := range strings.FieldsSeq(names) {
		m[n] = true
	}
	return m
}

// gitSubcommands are git's commands (git 2.50 and its contrib and scripts
// that ship with it).
var gitSubcommands = set2(`add am annotate apply archimport archive backfill bisect blame branch bugreport bundle cat-file
	check-attr check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick citool clean clone
	column commit commit-graph commit-tree config count-objects credential credential-cache credential-store
	cvsexportcommit cvsimport cvsserver daemon describe diagnose diff diff-files diff-index diff-pairs diff-tree difftool
	fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref for-each-repo format-patch fsck
	fsck-objects fsmonitor--daemon gc get-tar-commit-id gitk grep gui hash-object help hook http-backend http-fetch
	http-push imap-send index-pack init init-db instaweb interpret-trailers last-modified log ls-files ls-remote ls-tree
	mailinfo mailsplit maintenance merge merge-base merge-file merge-index merge-octopus merge-one-file merge-ours
	merge-recursive merge-resolve merge-subtree merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes p4
	pack-objects pack-redundant pack-refs patch-id prune prune-packed pull push quiltimport range-diff read-tree rebase
	receive-pack reflog refs remote repack replace replay repo request-pull rerere reset restore rev-list rev-parse revert
	rm send-email send-pack shortlog show show-branch show-index show-ref sparse-checkout stage stash status stripspace
	submodule subtree svn switch symbolic-ref tag unpack-file unpack-objects update-index update-ref update-server-info
	upload-archive upload-pack var verify-commit verify-pack verify-tag version whatchanged worktree write-tree lfs`)

// gitRuns are the subcommands with options or words that run commands.
var gitRuns = map[string]handler{
	"rebase":        gitRebase,
	"bisect":        gitBisect,
	"submodule":     gitSubmodule,
	"filter-branch": gitFilterBranch,
	"difftool":      gitDifftool,
	"clone":         gitTransport,
	"fetch":         gitTransport,
	"pull":          gitTransport,
	"ls-remote":     gitTransport,
	"archive":       gitTransport,
	"push":          gitTransport,
	"grep":          gitGrep,
	"send-email":    gitSendEmail,
	"config":        gitConfigCommand,
}

func gitRebase(s *Script, c *invocation) {
	s.watchedScripts(c, map[string]string{"exec": "exec"}, map[byte]string{'x': "exec"})
}

func gitDifftool(s *Script, c *invocation) {
	s.watchedScripts(c, map[string]string{"extcmd": "extcmd"}, map[byte]string{'x': "extcmd"})
}

func gitGrep(s *Script, c *invocation) {
	found, ok := s.given(c, map[string]string{"open-files-in-pager": "open-files-in-pager"}, map[byte]string{'O': "open-files-in-pager"})
	if !ok {
		return
	}
	for _, o := range found {
		// The pager is attached to -O or after = only.
		if !o.sep {
			s.runScript(c, o.value, "git grep -O")
		}
	}
}

func gitSendEmail(s *Script, c *invocation) {
	s.watchedScripts(c, map[string]string{"to-cmd": "to-cmd", "cc-cmd": "cc-cmd", "header-cmd": "header-cmd",
		"sendmail-cmd": "sendmail-cmd", "smtp-server": "smtp-server"}, nil)
}

// gitTransport: --upload-pack, --receive-pack and --exec name the program
// run at the other end, through a shell here for local and ssh
// transports; clone -c and --config set configuration.
func gitTransport(s *Script, c *invocation) {
	long := map[string]string{"upload-pack": "upload-pack", "receive-pack": "receive-pack", "exec": "exec"}
	short := map[byte]string{}
	switch c.name {
	case "git clone", "git ls-remote":
		short['u'] = "upload-pack"
	}
	if c.name == "git clone" {
		long["config"] = "config"
		long["template"] = "template"
		short['c'] = "config"
	}
	found, ok := s.given(c, long, short)
	if !ok {
		return
	}
	for _, o := range found {
		switch o.name {
		case "config":
			if o.value.dynamic {
				s.cannot(c, "configuration that is not static: "+s.source(o.value))
				return
			}
			key, v, _ := strings.Cut(o.value.text, "=")
			if !gitConfig(s, c, key, field{text: v, src: v}, new(map[string]field), c.name+" -c", true) {
				return
			}
		case "template":
			s.cannot(c, "--template, whose hooks git installs and runs: "+s.source(o.value))
			return
		default:
			s.runScript(c, o.value, c.name+" --"+o.name)
		}
	}
}

// gitBisect: git bisect run CMD [ARG]... runs CMD.
func gitBisect(s *Script, c *invocation) {
	if len(c.args) > 1 && !c.args[0].dynamic && c.args[0].text == "run" {
		s.run(c, c.args[1:], "git bisect run")
	}
}

// gitSubmodule: git submodule [--quiet] foreach [--recursive] CMD...: the
// words joined for the shell.
func gitSubmodule(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic {
			s.cannot(c, "a word that is not static: "+s.source(a))
			return
		}
		if a.text != "foreach" {
			continue
		}
		rest := c.args[i+1:]
		for len(rest) > 0 && (rest[0].text == "--recursive" || rest[0].text == "-q" || rest[0].text == "--quiet") {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			s.runJoined(c, rest, "git submodule foreach")
		}
		return
	}
}

// gitFilterBranch: its filters are scripts run by the shell.
func gitFilterBranch(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		switch a.text {
		case "--setup", "--env-filter", "--tree-filter", "--index-filter", "--parent-filter", "--msg-filter",
			"--commit-filter", "--tag-name-filter":
			if i+1 < len(c.args) {
				s.runScript(c, c.args[i+1], "git filter-branch "+a.text)
				i++
			}
		case "--":
			return
		}
	}
}

// gitConfigCommand: git config [options] KEY VALUE (and git config set,
// --add, --replace-all) writes configuration that later runs of git
// follow: a command in it is read now.
func gitConfigCommand(s *Script, c *invocation) {
	var ops []field
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		t := a.text
		switch {
		case t == "--":
			ops = append(ops, c.args[i+1:]...)
			i = len(c.args)
		case strings.HasPrefix(t, "-"):
			name, _, eq := strings.Cut(t, "=")
			switch name {
			case "--get", "--get-all", "--get-regexp", "--get-urlmatch", "--unset", "--unset-all", "-l", "--list",
				"--rename-section", "--remove-section", "-e", "--edit", "--get-color", "--get-colorbool":
				return // reads, removes or edits
			case "-f", "--file", "--blob", "--type", "--default", "--comment", "--value", "--url":
				if !eq {
					i++
				}
			}
		default:
			ops = append(ops, a)
		}
	}
	if len(ops) > 0 && !ops[0].dynamic {
		switch ops[0].text {
		case "set":
			ops = ops[1:]
		case "get", "list", "unset", "rename-section", "remove-section", "edit":
			return
		}
	}
	if len(ops) < 2 {
		return
	}
	if ops[0].dynamic {
		s.cannot(c, "a configuration key that is not static: "+s.source(ops[0]))
		return
	}
	gitConfig(s, c, ops[0].text, ops[1], new(map[string]field), "git config", true)
}
