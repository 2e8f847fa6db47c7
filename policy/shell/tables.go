package shell

import (
	"strings"
)

// A command's long options are read as its program reads them before a
// pattern sees them: getopt_long takes any unambiguous prefix of a long
// option for the option (rm --rec --for / is rm --recursive --force /,
// which is rm -r -f /), --opt=value is the option with its value, and an
// ambiguous prefix is an error of the program, which the analyser leaves
// unresolved rather than guess which it would have been. Every program
// the analyser has a getopt table for is read so: the wrappers, the
// interpreters, the programs of special handlers with a table, and the
// programs below, whose options decide what a deny pattern sees.

// optionTables are the tables of programs that have no handler, and of
// handlers whose table is a variable of their own.
var optionTables = map[string]*getopt{
	// coreutils 9.
	"rm": opts("d|dir f|force i I interactive:: one-file-system no-preserve-root preserve-root:: r|R|recursive v|verbose " +
		"help version"),
	"cp": opts("a|archive attributes-only backup:: b copy-contents d debug f|force i|interactive H l|link L|dereference " +
		"n|no-clobber P|no-dereference p preserve:: no-preserve: parents R|r|recursive reflink:: remove-destination sparse: " +
		"strip-trailing-slashes s|symbolic-link S|suffix: t|target-directory: T|no-target-directory u update:: v|verbose " +
		"keep-directory-symlink x|one-file-system Z context:: help version"),
	"mv": opts("backup:: b debug exchange f|force i|interactive n|no-clobber no-copy strip-trailing-slashes S|suffix: " +
		"t|target-directory: T|no-target-directory u update:: v|verbose Z|context help version"),
	"ln": opts("backup:: b d|F|directory f|force i|interactive L|logical n|no-dereference P|physical r|relative " +
		"s|symbolic S|suffix: t|target-directory: T|no-target-directory v|verbose help version"),
	"chmod": opts("c|changes f|silent|quiet v|verbose no-preserve-root preserve-root reference: R|recursive " +
		"h|no-dereference dereference L H P help version"),
	"chown": opts("c|changes f|silent|quiet v|verbose dereference h|no-dereference from: no-preserve-root preserve-root " +
		"reference: R|recursive H L P help version"),
	"chgrp": opts("c|changes f|silent|quiet v|verbose dereference h|no-dereference no-preserve-root preserve-root " +
		"reference: R|recursive H L P help version"),
	"shred":    opts("f|force n|iterations: random-source: s|size: u remove:: v|verbose x|exact z|zero help version"),
	"rmdir":    opts("ignore-fail-on-non-empty p|parents v|verbose help version"),
	"mkdir":    opts("m|mode: p|parents v|verbose Z context:: help version"),
	"truncate": opts("c|no-create o|io-blocks r|reference: s|size: help version"),
	"unlink":   opts("help version"),
}

// handlerTables are the tables the special handlers read their
// programs' options with, by the programs' names.
var handlerTables = map[string]*getopt{
	"env": envOpts, "sudo": sudoOpts, "xargs": xargsOpts, "watch": watchOpts, "flock": flockOpts, "nice": niceOpts,
	"chrt": chrtOpts, "su": suOpts, "runuser": suOpts, "script": scriptOpts, "strace": straceOpts, "tar": tarOpts,
	"make": makeOpts, "gmake": makeOpts, "psql": psqlOpts, "mysql": mysqlOpts, "mariadb": mysqlOpts,
}

// tables are every getopt table by its program's name: optionTables,
// handlerTables, the wrappers' and the interpreters'. Filled by the init
// that registers the handlers (wrappers.go).
var tables = map[string]*getopt{}

// tableOf is the getopt table of the program name, nil when the
// analyser has none.
func tableOf(name string) *getopt { return tables[name] }

// gitSubcommandTables are the long options of the git subcommands whose
// flags policies name (push --force, reset --hard, clean --force, branch
// --delete): git's parse-options takes an unambiguous prefix too.
var gitSubcommandTables = map[string]*getopt{
	"push": opts("all branches prune mirror n|dry-run porcelain d|delete tags follow-tags signed:: no-signed atomic no-atomic " +
		"o|push-option: receive-pack: exec: force-with-lease:: no-force-with-lease f|force force-if-includes " +
		"no-force-if-includes repo: u|set-upstream thin no-thin q|quiet v|verbose progress recurse-submodules: " +
		"no-recurse-submodules verify no-verify 4|ipv4 6|ipv6"),
	"reset": opts("soft mixed hard merge keep q|quiet no-quiet refresh no-refresh recurse-submodules:: no-recurse-submodules " +
		"p|patch N|intent-to-add pathspec-from-file: pathspec-file-nul U|unified: inter-hunk-context:"),
	"clean": opts("f|force i|interactive n|dry-run q|quiet e|exclude: x X d"),
	"checkout": opts("q|quiet progress no-progress f|force ours theirs m|merge conflict: detach orphan: " +
		"ignore-skip-worktree-bits overwrite-ignore no-overwrite-ignore recurse-submodules no-recurse-submodules " +
		"ignore-other-worktrees guess no-guess t|track:: no-track p|patch overlay no-overlay pathspec-from-file: " +
		"pathspec-file-nul b: B: l"),
	"branch": opts("d|delete D f|force m|move M c|copy C l|list a|all r|remotes v|verbose q|quiet abbrev: no-abbrev " +
		"column:: no-column sort: merged:: no-merged:: contains:: no-contains:: points-at: format: color:: no-color " +
		"i|ignore-case omit-empty create-reflog t|track:: no-track u|set-upstream-to: unset-upstream edit-description " +
		"show-current recurse-submodules"),
	"rm": opts("f|force n|dry-run r cached ignore-unmatch q|quiet sparse pathspec-from-file: pathspec-file-nul"),
}

// gitSubcommandAt is the index of git's subcommand among its words
// (after its own options), -1 when there is none.
func gitSubcommandAt(fs []field) int {
	for i := 0; i < len(fs); i++ {
		f := fs[i]
		if f.dynamic {
			return -1
		}
		if !strings.HasPrefix(f.text, "-") {
			return i
		}
		if takes := gitGlobalOpts[f.text]; takes {
			i++ // -C DIR, -c KEY=VALUE, --git-dir DIR
		}
	}
	return -1
}

// hasLongOption reports whether any of a command's words is a long
// option, which longOptions may spell otherwise: most commands have none.
func hasLongOption(fs []field) bool {
	for i := range fs {
		if t := fs[i].text; len(t) > 2 && t[0] == '-' && t[1] == '-' && !fs[i].dynamic {
			return true
		}
	}
	return false
}

// longOptions spells each long option of a command's words as its
// program reads it (the whole option's name for a prefix), or reports
// the problem that makes the words unreadable: an ambiguous prefix. It
// returns nil when nothing is to be respelled.
func longOptions(name string, fs []field) (spelled []string, problem string, at int) {
	g := tableOf(name)
	off := 0
	if name == "git" {
		if i := gitSubcommandAt(fs); i >= 0 {
			g, off = gitSubcommandTables[fs[i].text], i+1
		}
	}
	if g == nil {
		return nil, "", 0
	}
	r := g.read(fs[off:])
	if strings.HasPrefix(r.problem, "an abbreviated option") {
		return nil, r.problem, off + r.problemAt
	}
	for _, o := range r.opts {
		o.at += off
		f := fs[o.at]
		if f.dynamic || !strings.HasPrefix(f.text, "--") || len(o.name) < 2 {
			continue
		}
		t := "--" + o.name
		if _, value, eq := strings.Cut(f.text, "="); eq {
			t += "=" + value
		}
		if t == f.text {
			continue
		}
		if spelled == nil {
			spelled = make([]string, len(fs))
		}
		spelled[o.at] = t
	}
	return spelled, "", 0
}
