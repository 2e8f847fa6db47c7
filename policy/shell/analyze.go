// Package shell decides what a shell command line will run, so that a
// policy written as "rm -rf /" also stops `sudo /bin/rm -r -f //`.
//
// # What Analyze resolves
//
// The script is parsed with mvdan.cc/sh (bash dialect, a superset of
// POSIX sh); nothing here lexes shell. Every simple command that would run
// is reported, wherever it sits: lists, pipelines, &&/||, subshells,
// groups, if/while/for/case bodies, function bodies, command and process
// substitutions in any position. Each is normalised:
//
//   - the executable: quotes and escapes removed ('rm', r\m, $'\x72m'),
//     basename taken (/bin/rm), folded (policy/textfold);
//   - brace expansion performed ({rm,-rf,/} is `rm -rf /`);
//   - arguments: quotes and escapes removed, folded; combined short flags
//     split (-rf is -r -f); after "--" every word is an operand; paths
//     cleaned lexically (//, /./, /bin/.. are /; ~/ is ~); a few long
//     flags mapped to their short form where the meaning is well known
//     (rm --recursive --force is rm -r -f, git push --force is -f);
//   - wrappers recursed, the inner command reported besides the wrapper:
//     sh/bash/zsh/dash/ksh/ash -c SCRIPT (and a shell fed a here-document),
//     eval, xargs, env, sudo, doas, nice, nohup, timeout, command, exec,
//     builtin, stdbuf, ionice, chrt, setsid, time, watch, busybox,
//     find -exec/-execdir/-ok/-okdir, trap 'SCRIPT', alias NAME='SCRIPT'.
//
// # What counts as unresolved
//
// What cannot be known without running the script is listed in
// Script.Unresolved, and a decider must never treat such a script as
// allowed: a variable, a command substitution or arithmetic in command
// position (rm${IFS}-rf is one such word), eval or sh -c of anything
// not static, a shell reading its commands from a pipe or from stdin, a
// parse error, nesting deeper than 8 wrappers, a script over 1 MiB. An
// argument that is not static (a variable, a substitution, an unquoted
// glob) is kept, marked Dynamic: a pattern it could match matches only
// Possibly.
package shell

import (
	"path"
	"strings"

	"github.com/aqlguard/aqlguard/policy/textfold"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits on what is analysed.
const (
	MaxScript = 1 << 20 // bytes
	MaxDepth  = 8       // nested wrappers (bash -c "bash -c ...")
)

// Script is what a command line will run.
type Script struct {
	Commands []Command
	// Unresolved lists, in words, what could not be resolved statically.
	Unresolved []string

	printer *syntax.Printer // made on demand: most words are never printed
}

// print renders a word as written, for messages.
func (s *Script) print(w *syntax.Word) string {
	if w == nil || len(w.Parts) == 0 {
		return ""
	}
	if s.printer == nil {
		s.printer = syntax.NewPrinter()
	}
	var b strings.Builder
	if err := s.printer.Print(&b, w); err != nil {
		return "?"
	}
	return b.String()
}

// Kind is what an argument is.
type Kind uint8

const (
	Operand Kind = iota // a positional argument
	Short               // one short flag, "-r"
	Long                // a long flag, "--force" or "--opt=value"
)

// Arg is one normalised argument.
type Arg struct {
	Text string
	Kind Kind
	// Dynamic: the value is not known statically (a variable, a
	// substitution, arithmetic, an unquoted glob the shell expands).
	Dynamic bool
}

// Command is one simple command, normalised.
type Command struct {
	// Name is the executable's basename, folded.
	Name string
	Args []Arg
	// Via are the wrappers it was found under, outermost first.
	Via []string
}

// String renders the command on one line, for explanations.
func (c Command) String() string {
	var b strings.Builder
	b.WriteString(c.Name)
	for _, a := range c.Args {
		b.WriteByte(' ')
		if a.Dynamic {
			b.WriteString("<dynamic>")
			continue
		}
		b.WriteString(a.Text)
	}
	if len(c.Via) > 0 {
		b.WriteString(" (via " + strings.Join(c.Via, ", ") + ")")
	}
	return b.String()
}

// Analyze parses src and returns every command it would run. The
// Script is not changed after Analyze returns: callers may share it.
func Analyze(src string) (s *Script) {
	s = &Script{}
	defer func() {
		s.printer = nil // a helper of the analysis, not part of its result
		// The parser and expander are well tested, but a panic in them
		// must not take the guard down: a script we could not read is
		// one we cannot allow.
		if r := recover(); r != nil {
			s.unresolved("the shell parser failed on this script")
		}
	}()
	s.script(src, nil, 0)
	return s
}

func (s *Script) unresolved(why string) {
	for _, have := range s.Unresolved {
		if have == why {
			return
		}
	}
	s.Unresolved = append(s.Unresolved, why)
}

func (s *Script) script(src string, via []string, depth int) {
	if depth > MaxDepth {
		s.unresolved("nesting deeper than 8 shells or wrappers")
		return
	}
	if len(src) > MaxScript {
		s.unresolved("a script over 1 MiB")
		return
	}
	if words, ok := plainWords(src); ok {
		s.call(words, nil, via, depth)
		return
	}
	s.parse(src, via, depth)
}

// parse analyses src with the shell parser.
func (s *Script) parse(src string, via []string, depth int) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		s.unresolved("parse error: " + err.Error())
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if call, ok := n.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				s.call(s.words(call.Args), n.Redirs, via, depth)
			}
		case *syntax.DeclClause:
			// declare/export/local/readonly: assignments, not commands;
			// substitutions inside are walked into.
		}
		return true
	})
}

// plainByte are the bytes of a plain word: nothing a shell quotes,
// expands, globs, redirects, comments or separates on. A command line
// of plain words and single spaces is those words to any shell.
var plainByte = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:,+%@=") {
		t[c] = true
	}
	return t
}()

// parsedFirst are the words that mean more than a command name at the
// start of a line (reserved words and the declaration builtins the
// parser reads as clauses), so a line starting with one is parsed.
var parsedFirst = map[string]bool{"if": true, "then": true, "elif": true, "else": true, "fi": true,
	"while": true, "until": true, "for": true, "do": true, "done": true, "case": true, "esac": true,
	"in": true, "function": true, "select": true, "time": true, "coproc": true,
	"declare": true, "local": true, "export": true, "readonly": true, "typeset": true, "nameref": true, "let": true}

// plainWords splits a command line of plain words (plainByte) separated
// by spaces, whose first word is neither an assignment nor in
// parsedFirst: one simple command, which the parser would turn into
// exactly these words at many times the cost. Most command lines a model
// sends are of this kind (go test ./..., ls -la /srv, git status).
// FuzzPlainWords holds it to the parser.
func plainWords(src string) ([]field, bool) {
	n := 0
	for i := 0; i < len(src); i++ {
		switch c := src[i]; {
		case c == ' ':
		case !plainByte[c]:
			return nil, false
		case i == 0 || src[i-1] == ' ':
			n++
		}
	}
	if n == 0 {
		return nil, false
	}
	out := make([]field, 0, n)
	for w := range strings.FieldsSeq(src) {
		out = append(out, field{text: w, src: w})
	}
	if first := out[0].text; strings.Contains(first, "=") || parsedFirst[first] {
		return nil, false
	}
	return out, true
}

// field is one word after brace expansion and quote removal.
type field struct {
	text    string
	dynamic bool
	why     string       // for a dynamic word: what makes it so
	word    *syntax.Word // the word as written, printed for messages only
	src     string       // or its text, for words made here
	quoted  bool         // some part was quoted (a glob character there is literal)
}

// words expands and unquotes a command's words.
func (s *Script) words(ws []*syntax.Word) []field {
	out := make([]field, 0, len(ws))
	for _, orig := range ws {
		w := orig
		if hasBrace(w) {
			// SplitBraces rewrites the word it is given; the walk still
			// needs the original.
			w = &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
		}
		if syntax.SplitBraces(w) {
			n := 0
			for bw, err := range expand.BracesSeq(nil, w) {
				if err != nil || n > 256 {
					out = append(out, field{dynamic: true, why: "a brace expansion too large to follow", word: orig})
					break
				}
				n++
				f := s.unquote(bw)
				f.word = orig
				out = append(out, f)
			}
			continue
		}
		f := s.unquote(w)
		f.word = orig
		out = append(out, f)
	}
	return out
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

// source is a field as written, for messages.
func (s *Script) source(f field) string {
	if f.word != nil {
		return s.print(f.word)
	}
	return f.src
}

// unquote removes quotes and escapes from a word, or says why its value
// cannot be known statically.
func (s *Script) unquote(w *syntax.Word) field {
	var b strings.Builder
	f := field{}
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			for i := 0; i < len(v); i++ {
				c := v[i]
				if c == '\\' && i+1 < len(v) {
					i++
					b.WriteByte(v[i])
					continue
				}
				if c == '*' || c == '?' || c == '[' {
					f.dynamic, f.why = true, "an unquoted glob"
				}
				b.WriteByte(c)
			}
		case *syntax.SglQuoted:
			f.quoted = true
			if !p.Dollar {
				b.WriteString(p.Value)
				continue
			}
			v, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{p}})
			if err != nil {
				return field{dynamic: true, why: "an ANSI-C string that cannot be decoded"}
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			f.quoted = true
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					f.dynamic, f.why = true, dynamicWhy(q)
				}
			}
			if f.dynamic && f.why != "an unquoted glob" {
				b.WriteString(s.print(&syntax.Word{Parts: []syntax.WordPart{p}}))
				continue
			}
			v, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{p}})
			if err != nil {
				return field{dynamic: true, why: "a quoted string that cannot be decoded"}
			}
			b.WriteString(v)
		default:
			f.dynamic, f.why = true, dynamicWhy(p)
			b.WriteString(s.print(&syntax.Word{Parts: []syntax.WordPart{p}}))
		}
	}
	f.text = b.String()
	return f
}

func dynamicWhy(p syntax.WordPart) string {
	switch p.(type) {
	case *syntax.ParamExp:
		return "a variable"
	case *syntax.CmdSubst:
		return "a command substitution"
	case *syntax.ArithmExp:
		return "arithmetic"
	case *syntax.ProcSubst:
		return "a process substitution"
	case *syntax.ExtGlob:
		return "an extended glob"
	}
	return "a dynamic word"
}

// shells read a script: with -c from an argument, else from a file
// operand, else from stdin.
var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "ash": true,
	"mksh": true, "yash": true, "busybox sh": true, "rbash": true}

// call records one simple command and recurses into what it runs.
func (s *Script) call(fs []field, redirs []*syntax.Redirect, via []string, depth int) {
	if len(fs) == 0 {
		return
	}
	if depth > MaxDepth {
		s.unresolved("nesting deeper than 8 shells or wrappers")
		return
	}
	head := fs[0]
	if head.dynamic {
		s.unresolved(head.why + " in command position: " + s.source(head))
		return
	}
	name := textfold.Fold(path.Base(head.text))
	if name == "" || name == "." || name == "/" {
		s.unresolved("a command whose name is empty or invisible: " + s.source(head))
		return
	}
	if name == "busybox" && len(fs) > 1 && !fs[1].dynamic {
		// busybox CMD is CMD.
		s.call(fs[1:], redirs, append(via, "busybox"), depth+1)
		return
	}
	cmd := Command{Name: name, Args: normalise(name, fs[1:]), Via: via}
	s.Commands = append(s.Commands, cmd)
	rest := fs[1:]
	inner := append(via[:len(via):len(via)], name)
	switch {
	case shells[name]:
		s.shell(name, rest, redirs, via, depth)
	case name == "eval":
		s.eval(rest, append(via[:len(via):len(via)], "eval"), depth)
	case name == "trap":
		if len(rest) > 0 && !strings.HasPrefix(rest[0].text, "-") {
			s.scriptField(rest[0], append(via[:len(via):len(via)], "trap"), depth, "trap of a script that is not static")
		}
	case name == "alias":
		for _, f := range rest {
			if _, v, ok := strings.Cut(f.text, "="); ok {
				s.scriptField(field{text: v, dynamic: f.dynamic, why: f.why, word: f.word}, append(via[:len(via):len(via)], "alias"), depth, "an alias that is not static")
			}
		}
	case name == "watch":
		i := skipOptions(rest, map[string]bool{"-n": true, "--interval": true, "-d": false, "-q": true})
		if i < len(rest) {
			s.eval(rest[i:], append(via[:len(via):len(via)], "watch"), depth)
		}
	case name == "find":
		s.find(rest, inner, depth)
	case name == "xargs":
		i := skipOptions(rest, xargsValue)
		inner := rest[i:]
		if len(inner) == 0 {
			inner = []field{{text: "echo"}}
		}
		// xargs appends what it reads: one more word we cannot know.
		inner = append(inner[:len(inner):len(inner)], field{text: "", dynamic: true, why: "xargs input", src: "<stdin>"})
		s.call(inner, nil, append(via[:len(via):len(via)], "xargs"), depth+1)
	default:
		if i, ok := wrapped(name, rest); ok && i < len(rest) {
			s.call(rest[i:], redirs, append(via[:len(via):len(via)], name), depth+1)
		}
	}
}

// scriptField analyses a word that holds a script (sh -c, trap, alias).
func (s *Script) scriptField(f field, via []string, depth int, unknown string) {
	if f.dynamic {
		s.unresolved(unknown + ": " + s.source(f))
		return
	}
	s.script(f.text, via, depth+1)
}

func (s *Script) eval(args []field, via []string, depth int) {
	parts := make([]string, 0, len(args))
	for _, f := range args {
		if f.dynamic && f.why != "an unquoted glob" {
			s.unresolved("eval of " + f.why + ": " + s.source(f))
			return
		}
		parts = append(parts, f.text)
	}
	s.script(strings.Join(parts, " "), via, depth+1)
}

// shell follows what a shell interpreter runs: -c SCRIPT, a file, or
// stdin (a here-document or here-string we can read, else unresolved).
func (s *Script) shell(name string, args []field, redirs []*syntax.Redirect, via []string, depth int) {
	via = append(via[:len(via):len(via)], name)
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a.dynamic {
			s.unresolved("a shell option that is not static: " + s.source(a))
			return
		}
		t := a.text
		switch {
		case t == "--" || !strings.HasPrefix(t, "-") && !strings.HasPrefix(t, "+"):
			if t == "--" {
				i++
			}
			if i < len(args) && args[i].text != "-" && args[i].text != "/dev/stdin" {
				return // a script file: what it holds is not ours to see
			}
			s.stdin(redirs, via, depth)
			return
		case strings.HasPrefix(t, "--"):
			continue
		case strings.ContainsRune(t[1:], 'c'):
			for j := i + 1; j < len(args); j++ {
				// Options after the cluster (bash -c -x 'cmd') come
				// before the script.
				if args[j].dynamic || !strings.HasPrefix(args[j].text, "-") {
					s.scriptField(args[j], append(via[:len(via)-1:len(via)-1], name+" -c"), depth, name+" -c of a script that is not static")
					return
				}
			}
			s.unresolved(name + " -c without a script")
			return
		case strings.ContainsAny(t[1:], "o") && i+1 < len(args):
			i++ // -o OPTION
		}
	}
	s.stdin(redirs, via, depth)
}

// stdin is a shell reading its commands from standard input.
func (s *Script) stdin(redirs []*syntax.Redirect, via []string, depth int) {
	for _, r := range redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				continue
			}
			f := s.unquote(r.Hdoc)
			if f.dynamic && f.why != "an unquoted glob" {
				s.unresolved("a shell reads a here-document that is not static")
				return
			}
			s.script(f.text, via, depth+1)
			return
		case syntax.WordHdoc:
			f := s.unquote(r.Word)
			s.scriptField(f, via, depth, "a shell reads a here-string that is not static")
			return
		case syntax.RdrIn:
			return // a script file
		}
	}
	s.unresolved("a shell reads its commands from stdin (a pipe or the caller)")
}

// find -exec CMD ARGS ; (or +) runs CMD.
func (s *Script) find(args []field, via []string, depth int) {
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].text != ";" && args[j].text != "+" {
				j++
			}
			s.call(args[i+1:j], nil, via, depth+1)
			i = j
		}
	}
}

// Options of the wrappers that take a value, so the inner command is not
// mistaken for one.
var (
	xargsValue = map[string]bool{"-a": true, "-d": true, "-E": true, "-e": false, "-I": true, "-i": false, "-L": true, "-l": false,
		"-n": true, "-P": true, "-s": true, "--arg-file": true, "--delimiter": true, "--max-args": true, "--max-procs": true, "--max-chars": true}
	wrapperValue = map[string]map[string]bool{
		"sudo":    {"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true, "-T": true, "--user": true, "--group": true, "--chdir": true, "--prompt": true},
		"doas":    {"-u": true, "-C": true},
		"env":     {"-u": true, "-C": true, "-S": true, "--unset": true, "--chdir": true, "--split-string": true},
		"nice":    {"-n": true, "--adjustment": true},
		"timeout": {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
		"stdbuf":  {"-i": true, "-o": true, "-e": true},
		"ionice":  {"-c": true, "-n": true, "-p": true, "-P": true, "-u": true},
		"chrt":    {"-p": true},
		"exec":    {"-a": true},
		"command": {},
		"builtin": {},
		"nohup":   {},
		"setsid":  {},
		"time":    {"-f": true, "-o": true, "--format": true, "--output": true},
	}
)

// wrapped returns where the inner command of a wrapper starts.
func wrapped(name string, args []field) (int, bool) {
	values, ok := wrapperValue[name]
	if !ok {
		return 0, false
	}
	i := skipOptions(args, values)
	if name == "command" {
		for _, a := range args[:i] {
			if a.text == "-v" || a.text == "-V" {
				return 0, false // command -v looks a command up; it runs nothing
			}
		}
	}
	switch name {
	case "env":
		for i < len(args) && !args[i].dynamic && strings.Contains(args[i].text, "=") && !strings.HasPrefix(args[i].text, "=") {
			i++ // NAME=VALUE
		}
	case "timeout":
		if i < len(args) {
			i++ // DURATION
		}
	case "chrt":
		if i < len(args) {
			i++ // PRIORITY
		}
	}
	return i, true
}

// skipOptions returns the index of the first operand, skipping options
// and the values of those that take one.
func skipOptions(args []field, takesValue map[string]bool) int {
	i := 0
	for i < len(args) {
		t := args[i].text
		if args[i].dynamic || !strings.HasPrefix(t, "-") || t == "-" {
			return i
		}
		if t == "--" {
			return i + 1
		}
		if strings.HasPrefix(t, "--") && strings.Contains(t, "=") {
			i++
			continue
		}
		i++
		if takesValue[t] {
			i++
		}
	}
	// An option that takes a value may be the last word, its value
	// missing.
	return min(i, len(args))
}

// synonyms map long flags to the short flag they mean, per command.
var synonyms = map[string]map[string]string{
	"rm":    {"--recursive": "-r", "--force": "-f", "-R": "-r"},
	"cp":    {"--recursive": "-r", "--force": "-f", "-R": "-r"},
	"mv":    {"--force": "-f"},
	"ln":    {"--force": "-f"},
	"chmod": {"--recursive": "-r", "-R": "-r"},
	"chown": {"--recursive": "-r", "-R": "-r"},
	"chgrp": {"--recursive": "-r", "-R": "-r"},
	"git":   {"--force": "-f"},
}

// normalise turns a command's fields into normalised arguments.
func normalise(name string, fs []field) []Arg {
	out := make([]Arg, 0, len(fs))
	syn := synonyms[name]
	operands := false
	for _, f := range fs {
		if f.dynamic {
			out = append(out, Arg{Text: textfold.Fold(f.text), Dynamic: true, Kind: guessKind(f.text)})
			continue
		}
		t := f.text
		switch {
		case operands || t == "-" || !strings.HasPrefix(t, "-"):
			out = append(out, Arg{Text: cleanPath(textfold.Fold(t)), Kind: Operand})
		case t == "--":
			operands = true
		case strings.HasPrefix(t, "--"):
			l := textfold.Fold(t)
			if s, ok := syn[l]; ok {
				out = append(out, Arg{Text: s, Kind: Short})
				continue
			}
			out = append(out, Arg{Text: l, Kind: Long})
		case isLetters(t[1:]):
			for _, r := range t[1:] {
				flag := "-" + string(r)
				if s, ok := syn[flag]; ok {
					flag = s
				}
				out = append(out, Arg{Text: strings.ToLower(flag), Kind: Short})
			}
		default:
			out = append(out, Arg{Text: textfold.Fold(t), Kind: Short}) // -n5, -1
		}
	}
	return out
}

func guessKind(t string) Kind {
	switch {
	case strings.HasPrefix(t, "--"):
		return Long
	case strings.HasPrefix(t, "-"):
		return Short
	}
	return Operand
}

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// cleanPath cleans what looks like a path lexically, so // and /./ are /.
func cleanPath(t string) string {
	switch {
	case strings.HasPrefix(t, "/"), strings.HasPrefix(t, "./"), strings.HasPrefix(t, "../"), t == "~", strings.HasPrefix(t, "~/"):
		c := path.Clean(t)
		return c
	}
	return t
}
