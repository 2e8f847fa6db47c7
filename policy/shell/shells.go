package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellFlavour is how a POSIX shell reads its own options: bash's rules
// (shell.c), which dash, ksh and zsh share in what matters here. Letters
// come in clusters after '-' or '+'; the letters of values take the next
// word each (-o pipefail, -O extglob, also inside a cluster: -xo
// pipefail); long options come first, and "-" or "--" ends the options.
// Then, with c, the first operand is the script (the rest $0, $1, ...);
// with s or no operand the shell reads its commands from stdin; else the
// first operand is a script file.
type shellFlavour struct {
	letters string          // flags: set options and c, i, l, r, s
	values  string          // letters that take the next word
	long    map[string]bool // --name: true when it takes the next word
	anyLong bool            // every --name is an option without a value (zsh: --emacs)
	lang    syntax.LangVariant
}

var (
	bashFlavour = &shellFlavour{letters: "abefhkmnptuvxBCEHPTcilrsD", values: "oO", lang: syntax.LangBash,
		long: map[string]bool{"debug": false, "debugger": false, "dump-po-strings": false, "dump-strings": false,
			"help": false, "init-file": true, "rcfile": true, "login": false, "noediting": false, "noprofile": false,
			"norc": false, "posix": false, "pretty-print": false, "protected": false, "restricted": false,
			"verbose": false, "version": false, "wordexp": false}}
	dashFlavour = &shellFlavour{letters: "abCefhIilmnpqsuvVxEc", values: "o", lang: syntax.LangBash}
	kshFlavour  = &shellFlavour{letters: "abcefhiklmnprstuvxBCDEGHUX", values: "oRT", lang: syntax.LangBash}
	// zsh's letters are all options (digits too), -o takes a value, and
	// --name sets option name.
	zshFlavour = &shellFlavour{letters: "abcdefghijklmnpqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", values: "o",
		anyLong: true, lang: syntax.LangZsh}
)

// posixShells are the shells whose scripts the analyser reads: POSIX sh
// and its kin. Shells of other languages (fish, csh, nu, pwsh) are
// interpreters (see interpreters).
var posixShells = map[string]*shellFlavour{
	"sh": dashFlavour, "dash": dashFlavour, "ash": dashFlavour, "hush": dashFlavour, "posh": dashFlavour,
	"bash": bashFlavour, "rbash": bashFlavour,
	"ksh": kshFlavour, "ksh93": kshFlavour, "mksh": kshFlavour, "lksh": kshFlavour, "pdksh": kshFlavour, "oksh": kshFlavour,
	"yash": dashFlavour,
	"zsh":  zshFlavour,
}

// shell follows what a POSIX shell runs: -c SCRIPT, a file, or stdin (a
// here-document or here-string read here, else unresolved).
func shell(s *Script, c *invocation) {
	fl := posixShells[c.name]
	if fl == nil {
		// bash5, zsh5.9: a shell by its versioned name (the handler was
		// found so).
		fl = posixShells[strings.TrimRight(c.name, "0123456789.-")]
	}
	if fl == nil {
		fl = bashFlavour
	}
	args := c.args
	cmd, stdin := false, false
	i := 0
options:
	for ; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			if a.lead != "" && a.lead[0] != '-' && a.lead[0] != '+' {
				break // an operand
			}
			s.cannot(c, "a shell option that is not static: "+s.source(a))
			return
		}
		t := a.text
		switch {
		case t == "--" || t == "-":
			i++
			break options
		case strings.HasPrefix(t, "--"):
			takes, ok := fl.long[t[2:]]
			if !ok && !fl.anyLong {
				s.cannot(c, "an option the analyser does not know: "+t)
				return
			}
			if takes {
				if i+1 >= len(args) {
					s.cannot(c, "an option missing its value: "+t)
					return
				}
				i++
			}
		case len(t) > 1 && (t[0] == '-' || t[0] == '+'):
			for _, l := range t[1:] {
				switch {
				case l < 128 && strings.IndexByte(fl.values, byte(l)) >= 0:
					if i+1 >= len(args) {
						s.cannot(c, "an option missing its value: "+t)
						return
					}
					i++
					if args[i].dynamic {
						s.cannot(c, "a shell option that is not static: "+s.source(args[i]))
						return
					}
				case l < 128 && strings.IndexByte(fl.letters, byte(l)) >= 0:
					cmd = cmd || l == 'c'
					stdin = stdin || l == 's'
				default:
					s.cannot(c, "an option the analyser does not know: "+t)
					return
				}
			}
		default:
			break options
		}
	}
	switch {
	case cmd:
		if i >= len(args) {
			s.cannot(c, "-c without a script")
			return
		}
		f := args[i]
		if f.dynamic {
			s.unresolved(c.name + " -c of a script that is not static: " + s.source(f))
			return
		}
		s.parseAs(f.text, fl.lang, c.under(c.name+" -c"), c.depth+1)
	case stdin || i >= len(args):
		s.stdin(c.redirs, c.under(c.name), c.depth, fl.lang)
	default:
		s.scriptOperand(args[i], c.redirs, c.under(c.name), c.depth, fl.lang)
	}
}

// stdin is a shell reading its commands from standard input, by the
// command's redirections (input.go): a here-document or here-string is
// read; a file redirected in is a script file; anything else (a pipe, the
// caller's stdin) is unresolved.
func (s *Script) stdin(redirs []*syntax.Redirect, via []string, depth int, lang syntax.LangVariant) {
	s.shellScript(redirs, 0, false, via, depth, lang)
}

// parseAs analyses src as a script in a shell language: zsh's has
// expansions that run code (glob qualifiers *(e:…:), ${(e)x}) which the
// analyser does not follow, so they leave it unresolved.
func (s *Script) parseAs(src string, lang syntax.LangVariant, via []string, depth int) {
	if lang != syntax.LangZsh {
		s.script(src, via, depth)
		return
	}
	if depth > MaxDepth {
		s.unresolved("nesting deeper than 8 shells or wrappers")
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangZsh)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.unresolved("parse error (zsh): " + err.Error())
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Lit:
			if strings.ContainsRune(n.Value, '(') {
				s.unresolved("zsh: a glob qualifier, which can run code: " + n.Value)
			}
		case *syntax.ParamExp:
			if n.Flags != nil || n.GlobSubst != syntax.OptUnset || n.Split != syntax.OptUnset || n.RcExpand != syntax.OptUnset ||
				n.NestedParam != nil || len(n.Modifiers) > 0 || n.IsSet {
				s.unresolved("zsh: a parameter expansion with flags, which can run code")
			}
		}
		return true
	})
	s.walk(f, via, depth)
}
