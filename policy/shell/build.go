package shell

import (
	"strings"
)

// tarCommand: GNU tar runs commands given to --to-command,
// --use-compress-program (-I), --info-script and --new-volume-script
// (-F), --checkpoint-action=exec=, --rsh-command and --rmt-command. Its
// options may follow operands (a file named --to-command=… that a glob
// expands to is one: a glob that could start with - is unresolved), and
// its first word may be old-style letters (tar cvzf out.tgz dir).
func tarCommand(s *Script, c *invocation) {
	args := c.args
	if len(args) > 0 && !args[0].dynamic && args[0].text != "" && args[0].text[0] != '-' {
		args = tarOldStyle(args)
	}
	r := tarOpts.read(args)
	if r.problem != "" {
		s.badOptions(&invocation{name: c.name, args: args}, r)
		return
	}
	for _, o := range r.opts {
		switch o.name {
		case "to-command", "use-compress-program", "info-script", "new-volume-script", "rsh-command", "rmt-command":
			s.runScript(c, o.value, "tar --"+o.name)
		case "checkpoint-action":
			v := o.value
			if v.dynamic {
				s.cannot(c, "a checkpoint action that is not static: "+s.source(v))
				continue
			}
			if cmd, ok := strings.CutPrefix(v.text, "exec="); ok {
				s.runScript(c, field{text: cmd, src: cmd}, "tar --checkpoint-action=exec")
			}
		}
	}
}

// tarOldStyle spells tar's old-style first word as options: each letter
// is one, those that take a value take the next words in order.
func tarOldStyle(args []field) []field {
	out := make([]field, 0, len(args)+4)
	next := 1
	for i := 0; i < len(args[0].text); i++ {
		l := args[0].text[i]
		out = append(out, field{text: "-" + string(l), src: "-" + string(l)})
		if l < 128 && tarOpts.short[l] == required && next < len(args) {
			out = append(out, args[next])
			next++
		}
	}
	return append(out, args[next:]...)
}

var tarOpts = opts("A|catenate concatenate c|create delete d|diff compare r|append test-label t|list u|update x|extract get " +
	"check-device g|listed-incremental: G|incremental hole-detection: ignore-failed-read level: no-check-device no-seek " +
	"n|seek occurrence:: sparse-version: S|sparse add-file: C|directory: exclude: exclude-backups exclude-caches " +
	"exclude-caches-all exclude-caches-under exclude-ignore: exclude-ignore-recursive: exclude-tag: exclude-tag-all: " +
	"exclude-tag-under: exclude-vcs exclude-vcs-ignores no-null no-recursion no-unquote no-verbatim-files-from null " +
	"verbatim-files-from recursion T|files-from: unquote X|exclude-from: anchored ignore-case no-anchored " +
	"no-ignore-case no-wildcards no-wildcards-match-slash wildcards wildcards-match-slash keep-directory-symlink " +
	"keep-newer-files k|keep-old-files no-overwrite-dir one-top-level:: overwrite overwrite-dir recursive-unlink " +
	"remove-files skip-old-files U|unlink-first W|verify ignore-command-error no-ignore-command-error O|to-stdout " +
	"to-command: atime-preserve:: clamp-mtime delay-directory-restore group: group-map: mode: mtime: m|touch " +
	"no-delay-directory-restore no-same-owner no-same-permissions numeric-owner owner: owner-map: p|preserve-permissions " +
	"same-permissions preserve same-owner sort: s|preserve-order same-order acls no-acls no-selinux no-xattrs selinux " +
	"xattrs xattrs-exclude: xattrs-include: force-local f|file: F|info-script: new-volume-script: L|tape-length: " +
	"M|multi-volume rmt-command: rsh-command: volno-file: b|blocking-factor: B|read-full-records i|ignore-zeros " +
	"record-size: H|format: old-archive portability o pax-option: posix V|label: a|auto-compress I|use-compress-program: " +
	"j|bzip2 J|xz lzip lzma lzop no-auto-compress zstd z|gzip gunzip ungzip Z|compress uncompress backup:: " +
	"hard-dereference h|dereference K|starting-file: newer-mtime: N|newer: after-date: one-file-system P|absolute-names " +
	"suffix: strip-components: strip: transform: xform: checkpoint:: checkpoint-action: full-time index-file: " +
	"l|check-links no-quote-chars: quote-chars: quoting-style: R|block-number show-defaults show-omitted-dirs " +
	"show-snapshot-field-ranges show-transformed-names show-stored-names totals:: utc v|verbose warning: w|interactive " +
	"confirmation restrict ?|help usage version")

// makeCommand: make runs its makefile's recipes (a file, not ours to
// read), but --eval (-E) text, a makefile read from stdin (-f -) and a
// SHELL given on the line are code.
func makeCommand(s *Script, c *invocation) {
	r, ok := s.options(c, makeOpts)
	if !ok {
		return
	}
	for _, o := range r.values("eval") {
		s.codeOf(c, "--eval", o.value)
	}
	for _, o := range r.values("file", "makefile") {
		switch {
		case !o.value.dynamic && o.value.text == "-":
			s.stdinCode(c, nil)
		case s.programOperand(c, o.value, nil):
		default:
			s.runs(o.value)
		}
	}
	for _, k := range r.operands {
		a := c.args[k]
		name, _, ok := strings.Cut(a.text, "=")
		if !ok {
			continue
		}
		switch strings.TrimRight(name, ":+?! ") {
		case "SHELL", ".SHELLFLAGS", "MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKESHELL":
			s.codeOf(c, name+"=", a)
		}
	}
}

var makeOpts = opts("b m B|always-make C|directory: d debug:: e|environment-overrides E|eval: f|file: makefile: h|help " +
	"i|ignore-errors I|include-dir: j|jobs:: k|keep-going l|load-average:: max-load:: L|check-symlink-times n|just-print " +
	"dry-run recon o|old-file: assume-old: O|output-sync:: p|print-data-base q|question r|no-builtin-rules " +
	"R|no-builtin-variables s|silent quiet no-silent S|no-keep-going stop t|touch trace:: v|version w|print-directory " +
	"no-print-directory W|what-if: new-file: assume-new: warn-undefined-variables shuffle:: jobserver-auth: " +
	"jobserver-style: jobserver-fds:")

// goCommand: go run and go test -exec PROG, go build (and others)
// -toolexec CMD, go vet -vettool PROG run commands besides Go's own.
func goCommand(s *Script, c *invocation) {
	if len(c.args) == 0 || c.args[0].dynamic {
		return
	}
	run := c.args[0].text == "run"
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where a flag could be: "+s.source(a))
			return
		}
		t := a.text
		if !strings.HasPrefix(t, "-") {
			if run {
				if strings.HasSuffix(t, ".go") {
					s.runs(a) // a file, not ours to read, unless the line wrote it
				}
				return // the program; the rest are its arguments
			}
			continue
		}
		if t == "-args" || t == "--args" || t == "--" {
			return
		}
		name, value, eq := strings.Cut(strings.TrimLeft(t, "-"), "=")
		switch name {
		case "exec", "toolexec", "vettool":
			v := field{text: value, src: value}
			if !eq {
				if i+1 >= len(c.args) {
					return
				}
				i++
				v = c.args[i]
			}
			s.runScript(c, v, "go -"+name)
		}
	}
}
