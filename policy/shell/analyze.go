// Package shell decides what a shell command line will run, so that a
// policy written as "rm -rf /" also stops `sudo /bin/rm -r -f //`.
//
// # What Analyze resolves
//
// The script is parsed with mvdan.cc/sh (bash dialect, a superset of
// POSIX sh; zsh's for zsh -c); nothing here lexes shell. Every simple
// command that would run is reported, wherever it sits: lists, pipelines,
// &&/||, subshells, groups, if/while/for/case bodies, function bodies,
// command and process substitutions in any position. Each is normalised:
//
//   - the executable: quotes and escapes removed ('rm', r\m, $'\x72m'),
//     basename taken (/bin/rm), folded (policy/textfold);
//   - brace expansion performed ({rm,-rf,/} is `rm -rf /`);
//   - arguments: quotes and escapes removed, folded; combined short flags
//     split (-rf is -r -f); after "--" every word is an operand; paths
//     cleaned lexically (//, /./, /bin/.. are /; ~/ is ~); a few long
//     flags mapped to their short form where the meaning is well known
//     (rm --recursive --force is rm -r -f, git push --force is -f).
//
// What a command runs is followed and reported besides it, with the
// wrappers it was found under (Command.Via): the commands of wrappers
// (sudo, env -S, timeout, xargs, nsenter, ...), the scripts of shells and
// of options that take one (bash -c, su -c, find -exec, ssh HOST CMD, git
// -c core.sshCommand, git aliases, tar --to-command), variables whose
// value programs run (GIT_SSH_COMMAND, EDITOR). Each such program has a
// table of its options in getopt's notation (options.go), read as the
// program reads it, so the inner command is found where it is found.
//
// # What counts as unresolved
//
// The analyser fails closed: what it does not know, or what cannot be
// known without running the script, is listed in Script.Unresolved, and a
// decider must never treat such a script as allowed: an option a table
// does not hold, a word not known statically where an option, a command
// or a script could be (a variable, a substitution, arithmetic, a glob
// that could start with -; rm${IFS}-rf is one), eval or sh -c of anything
// not static, a git subcommand or configuration key it does not know, a
// variable that changes what names run (PATH ahead of the system's,
// LD_PRELOAD), a program that builds the commands it runs (parallel), a
// shell reading its commands from a pipe or from stdin, a parse error,
// nesting deeper than 8 wrappers, more than 4096 commands, a script over
// 1 MiB. An argument that is not static is kept, marked Dynamic: a pattern
// it could match matches only Possibly.
//
// # Interpreter code
//
// Code handed to an interpreter (python -c, perl -e, node -e, php -r, an
// awk program that can run commands, sed's e, fish -c, a here-document fed
// to python3) is reported in Script.Code: the analyser does not read
// other languages, and a policy decides what becomes of it.
package shell

import (
	"path"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy/textfold"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits on what is analysed.
const (
	MaxScript   = 1 << 20 // bytes
	MaxDepth    = 8       // nested wrappers (bash -c "bash -c ...")
	MaxCommands = 4096    // simple commands followed (find -exec in find -exec multiplies them)
)

// Script is what a command line will run.
type Script struct {
	Commands []Command
	// Code is the code the command line hands to interpreters (python -c,
	// perl -e, an awk program that can run commands, a here-document fed
	// to node), which the analyser does not read: a policy decides what
	// becomes of it (the evaluator's interpreter_code).
	Code []Code
	// Unresolved lists, in words, what could not be resolved statically.
	Unresolved []string

	printer *syntax.Printer // made on demand: most words are never printed
	calls   int             // simple commands followed so far
	files   files           // what the line writes and runs (files.go)
	names   names           // the names the line gives other meanings (names.go)
	again   bool            // the second reading, which judges names by names
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
	// Path is the file the command names by its path (cleaned), "" when
	// the shell looks the name up in PATH. /tmp/x/ls is not ls: an
	// approval of a name covers only the system's own programs (see
	// SystemProgram).
	Path string
	Args []Arg
	// Via are the wrappers it was found under, outermost first.
	Via []string
}

// Code is program text handed to an interpreter, or an action whose
// reach the command line does not tell (find -delete).
type Code struct {
	// Interpreter is the program that runs the code, its basename folded
	// ("python3", "perl", "awk", "fish", "find").
	Interpreter string
	// Form is how the code was given: an option ("-c", "-e", "--eval"),
	// "program" (awk's first operand), "stdin" (a here-document or a
	// pipe), or what acts ("-delete").
	Form string
	// Text is the code as the interpreter gets it; empty when Dynamic.
	Text string
	// Dynamic: the code is not known statically (a variable, a pipe).
	Dynamic bool
	// Via are the wrappers it was found under, outermost first.
	Via []string
}

// String renders the code on one line for explanations, its text cut
// short: `python3 -c "import os; os.sy…"`.
func (c Code) String() string {
	var b strings.Builder
	b.WriteString(c.Interpreter)
	b.WriteByte(' ')
	b.WriteString(c.Form)
	switch {
	case c.Dynamic:
		b.WriteString(" <dynamic>")
	case c.Text != "" && c.Text != c.Form:
		b.WriteString(" " + strconv.Quote(shorten(c.Text, 60)))
	}
	if len(c.Via) > 0 {
		b.WriteString(" (via " + strings.Join(c.Via, ", ") + ")")
	}
	return b.String()
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}

// String renders the command on one line, for explanations.
func (c Command) String() string {
	var b strings.Builder
	if c.Path != "" && !SystemProgram(c.Path) {
		b.WriteString(c.Path)
	} else {
		b.WriteString(c.Name)
	}
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
func Analyze(src string) *Script {
	return analyze(func(s *Script) { s.script(src, nil, 0) })
}

// analyze is Analyze with the first reading of the line given: the fuzz
// test reads a line of plain words both ways and compares.
func analyze(read func(*Script)) (s *Script) {
	s = &Script{}
	defer func() {
		s.printer, s.calls, s.files, s.names, s.again = nil, 0, files{}, nil, false // helpers of the analysis, not part of its result
		// The parser and expander are well tested, but a panic in them
		// must not take the guard down: a script we could not read is
		// one we cannot allow.
		if r := recover(); r != nil {
			s.unresolved("the shell parser failed on this script")
		}
	}()
	read(s)
	if len(s.names) > 0 {
		// The line makes names run other programs (hash -p, alias): read
		// it again, judging every command of those names also as what
		// they were made to run, wherever it stands (names.go).
		*s = Script{names: s.names, again: true}
		read(s)
	}
	s.runsWhatItWrote()
	return s
}

func (s *Script) unresolved(why string) {
	if len(s.Unresolved) >= maxReasons {
		return // the first ones say enough; a line made to list many costs no more
	}
	for _, have := range s.Unresolved {
		if have == why {
			return
		}
	}
	s.Unresolved = append(s.Unresolved, why)
}

// maxReasons bounds the reasons and the pieces of code a Script lists.
const maxReasons = 32

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
	s.walk(f, via, depth)
}

// walk follows every simple command of a parsed script, the environment
// its assignments give the commands, and the data it evaluates
// (arith.go).
func (s *Script) walk(f *syntax.File, via []string, depth int) {
	var ev *evaluated
	defer func() {
		if ev != nil {
			if why := ev.verdict(); why != "" {
				s.unresolved(why)
			}
		}
	}()
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause, *syntax.CStyleLoop, *syntax.BinaryTest,
			*syntax.ParamExp, *syntax.Assign, *syntax.ForClause:
			if ev == nil {
				ev = &evaluated{numeric: map[string]bool{}, other: map[string]bool{}}
			}
			ev.note(n)
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			if call, ok := n.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
				s.call(s.words(call.Args), n.Redirs, via, depth)
			}
			if t, ok := n.Cmd.(*syntax.TimeClause); ok && t.Stmt != nil {
				// bash's time keyword takes -p alone, but sh has no such
				// keyword: there `time -f %e CMD` is /usr/bin/time.
				if call, ok := t.Stmt.Cmd.(*syntax.CallExpr); ok && len(call.Args) > 0 {
					if fs := s.words(call.Args); !fs[0].dynamic && strings.HasPrefix(fs[0].text, "-") {
						s.call(append([]field{{text: "time", src: "time"}}, fs...), t.Stmt.Redirs, via, depth)
					}
				}
			}
		case *syntax.DeclClause:
			s.declaration(n)
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet {
				if w, ok := n.X.(*syntax.Word); ok {
					f := s.unquote(w)
					f.word = w
					s.evaluatedName(f, "[[ -v ]]")
				}
			}
		case *syntax.Assign:
			s.defines(n)
			// x=1 cmd, export x=1, declare x=1: the value may be a
			// program's configuration that runs code (GIT_SSH_COMMAND).
			if n.Name != nil && n.Value != nil && !n.Append {
				s.assigned(n.Name.Value, s.unquote(n.Value), via, depth)
			}
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
	why     string // for a dynamic word: what makes it so
	// lead is, for a dynamic word, its static start: the text before its
	// first dynamic part, a prefix of text ("src/" of src/*.go). A word
	// whose lead is not empty and does not start with '-' is no option.
	lead   string
	word   *syntax.Word // the word as written, printed for messages only
	src    string       // or its text, for words made here
	quoted bool         // some part was quoted (a glob character there is literal)
	// procSubst: the word is one process substitution, <(…) or >(…),
	// which the shell replaces with the path of a descriptor (/dev/fd/63):
	// never an option, and what a command prints or reads.
	procSubst bool
}

// whyGlob is the why of a word made dynamic by an unquoted glob alone.
const whyGlob = "an unquoted glob"

// becomes marks f dynamic for why, its text so far its lead when this is
// its first dynamic part. A glob does not hide a stronger reason.
func (f *field) becomes(why string, sofar string) {
	if !f.dynamic {
		f.dynamic, f.why, f.lead = true, why, sofar
		return
	}
	if why != whyGlob {
		f.why = why
	}
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
				if c == '*' || c == '?' || c == '[' && strings.IndexByte(v[i+1:], ']') >= 0 {
					// A [ with no ] after it is no bracket expression: the
					// [ of [ -f x ] is the command [.
					f.becomes(whyGlob, b.String())
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
			static := true
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					static = false
					f.becomes(dynamicWhy(q), b.String())
				}
			}
			if !static {
				b.WriteString(s.print(&syntax.Word{Parts: []syntax.WordPart{p}}))
				continue
			}
			v, err := expand.Literal(nil, &syntax.Word{Parts: []syntax.WordPart{p}})
			if err != nil {
				return field{dynamic: true, why: "a quoted string that cannot be decoded"}
			}
			b.WriteString(v)
		case *syntax.ProcSubst:
			// Replaced by a descriptor's path: its static start is that.
			f.becomes(dynamicWhy(p), b.String()+"/dev/fd/")
			f.procSubst = len(w.Parts) == 1
			b.WriteString(s.print(&syntax.Word{Parts: []syntax.WordPart{p}}))
		default:
			f.becomes(dynamicWhy(p), b.String())
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

// call records one simple command and follows what it runs.
func (s *Script) call(fs []field, redirs []*syntax.Redirect, via []string, depth int) {
	if len(fs) == 0 {
		return
	}
	if depth > MaxDepth {
		s.unresolved("nesting deeper than 8 shells or wrappers")
		return
	}
	if s.calls++; s.calls > MaxCommands {
		s.unresolved("more than 4096 commands to follow")
		return
	}
	head := fs[0]
	if head.dynamic {
		s.unresolved(head.why + " in command position: " + s.source(head))
		return
	}
	name := textfold.Fold(path.Base(head.text))
	if head.text == "." {
		name = "." // the builtin that reads a file, as source does
	} else if name == "" || name == "." || name == "/" {
		s.unresolved("a command whose name is empty or invisible: " + s.source(head))
		return
	}
	var file string
	if strings.Contains(head.text, "/") {
		file = path.Clean(head.text)
	}
	if name == "busybox" && len(fs) > 1 && !fs[1].dynamic && !strings.HasPrefix(fs[1].text, "-") {
		// busybox CMD is CMD, run by the busybox that file names.
		n := len(s.Commands)
		s.call(fs[1:], redirs, append(via[:len(via):len(via)], "busybox"), depth+1)
		if file != "" && len(s.Commands) > n && s.Commands[n].Path == "" {
			s.Commands[n].Path = file
		}
		return
	}
	var spelled []string
	if hasLongOption(fs[1:]) {
		var problem string
		var at int
		if spelled, problem, at = longOptions(name, fs[1:]); problem != "" {
			s.unresolved(name + ": " + problem + ": " + s.source(fs[1+at]))
		}
	}
	s.Commands = append(s.Commands, Command{Name: name, Path: file, Args: normalise(name, fs[1:], spelled), Via: via})
	if file != "" {
		s.runs(head)
	}
	s.redirected(redirs)
	s.writers(name, fs[1:])
	h := handlers[name]
	if h == nil {
		// python3.12, perl5.36, lua5.4: an interpreter by its versioned name.
		h = handlers[strings.TrimRight(name, "0123456789.-")]
	}
	if h == nil && name[0] == 'l' && isLoader(name) {
		h = loaderCommand
	}
	if h != nil {
		h(s, &invocation{name: name, args: fs[1:], redirs: redirs, via: via, depth: depth})
	}
	if file == "" && s.again {
		s.redefined(name, fs, redirs, via, depth)
	}
}

// invocation is one command a handler follows: its words after the name,
// its redirections and where it was found.
type invocation struct {
	name   string
	args   []field
	redirs []*syntax.Redirect
	via    []string
	depth  int
}

// under is the Via of what this command runs: its own Via and label.
func (c *invocation) under(label string) []string {
	return append(c.via[:len(c.via):len(c.via)], label)
}

// run follows the command words run, found under label.
func (s *Script) run(c *invocation, words []field, label string) {
	s.call(words, c.redirs, c.under(label), c.depth+1)
}

// runScript follows a script given as one word, found under label.
func (s *Script) runScript(c *invocation, f field, label string) {
	s.scriptField(f, c.under(label), c.depth, label+" of a script that is not static")
}

// runJoined follows a script made of words joined with spaces (ssh, watch,
// eval), found under label.
func (s *Script) runJoined(c *invocation, words []field, label string) {
	s.eval(words, c.under(label), c.depth)
}

// cannot says what about this command could not be resolved.
func (s *Script) cannot(c *invocation, what string) {
	s.unresolved(c.name + ": " + what)
}

// badOptions reports that c's words could not be read as c reads them.
func (s *Script) badOptions(c *invocation, r readOpts) {
	why := c.name + ": " + r.problem
	if src := s.source(c.args[r.problemAt]); !strings.HasSuffix(why, ": "+src) {
		why += ": " + src
	}
	s.unresolved(why)
}

// options reads c's words as g says; false when they cannot be read
// (reported as unresolved), or when they ask for help or a version only
// (nothing of them runs).
func (s *Script) options(c *invocation, g *getopt) (readOpts, bool) {
	r := g.read(c.args)
	if r.problem != "" {
		s.badOptions(c, r)
		return r, false
	}
	return r, !r.has("help", "version")
}

// scriptField analyses a word that holds a script (sh -c, trap, alias).
func (s *Script) scriptField(f field, via []string, depth int, unknown string) {
	if f.dynamic {
		s.unresolved(unknown + ": " + s.source(f))
		return
	}
	s.script(f.text, via, depth+1)
}

// eval follows words joined with spaces and read again as a script. A
// glob is kept as written, for the script to read again.
func (s *Script) eval(args []field, via []string, depth int) {
	parts := make([]string, 0, len(args))
	for _, f := range args {
		if f.dynamic && f.why != whyGlob {
			s.unresolved(via[len(via)-1] + " of " + f.why + ": " + s.source(f))
			return
		}
		parts = append(parts, f.text)
	}
	s.script(strings.Join(parts, " "), via, depth+1)
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

// normalise turns a command's fields into normalised arguments; spelled,
// when not nil, holds the long options as the program reads them
// (longOptions), "" for the other words.
func normalise(name string, fs []field, spelled []string) []Arg {
	out := make([]Arg, 0, len(fs))
	syn := synonyms[name]
	operands := false
	for i, f := range fs {
		if f.dynamic {
			out = append(out, Arg{Text: textfold.Fold(f.text), Dynamic: true, Kind: guessKind(f.text)})
			continue
		}
		t := f.text
		if spelled != nil && spelled[i] != "" {
			t = spelled[i]
		}
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

// SystemProgram reports whether file, a command's path, is in one of the
// system's program directories (systemDirs), so that its name is the
// program a policy names; a file anywhere else (./ls, /tmp/x/git, ~/bin/rm)
// is whatever its author wrote.
func SystemProgram(file string) bool {
	return systemDirs[path.Dir(path.Clean(file))]
}
