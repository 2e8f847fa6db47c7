package shell

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// What a command reads: a shell or an interpreter takes its script from
// standard input, from a file it names, or from one of its descriptors
// (bash /dev/fd/3 3<<<'…', source <(curl …)). The shell applies a
// command's redirections in order, so the last one to a descriptor wins
// (bash </dev/null <evil.sh reads evil.sh), and a duplication copies what
// the other descriptor is at that point (3<<<'…' 0<&3).

// inputKind is where a descriptor's data come from.
type inputKind uint8

const (
	// fromCaller: not redirected on the command: a pipe, or what the
	// shell running the line has (the caller's stdin).
	fromCaller inputKind = iota
	// fromText: a here-document or here-string, read in text.
	fromText
	// fromFile: a file redirected in (< FILE, <> FILE), read in file; a
	// process substitution too (< <(curl …)), with file.procSubst.
	fromFile
	// fromOther: closed, duplicated from a descriptor named by a
	// variable, the network (/dev/tcp/…), or written to.
	fromOther
)

// input is what one descriptor of a command reads.
type input struct {
	kind inputKind
	text field // fromText
	file field // fromFile
	why  string
}

// literal reports whether the input is text known statically (a glob in
// a here-document or here-string is not expanded).
func (in input) literal() bool {
	return in.kind == fromText && (!in.text.dynamic || in.text.why == whyGlob)
}

// described says where a script that is not literal comes from, for
// messages.
func (in input) described(fd int) string {
	switch in.kind {
	case fromText:
		return "a here-document or here-string that is not static"
	case fromFile:
		if in.file.procSubst {
			return "a process substitution (" + in.file.text + "), which is what a command prints"
		}
		return "a file that is not static"
	case fromOther:
		if in.why != "" {
			return in.why
		}
	}
	if fd == 0 {
		return "stdin (a pipe or the caller)"
	}
	return "descriptor " + strconv.Itoa(fd) + ", which the caller gives"
}

// inputOf is what descriptor fd of a command with these redirections
// reads.
func (s *Script) inputOf(redirs []*syntax.Redirect, fd int) input {
	if len(redirs) == 0 {
		return input{}
	}
	type slot struct {
		fd int
		in input
	}
	var table []slot // the descriptors redirected so far, each once
	get := func(n int) input {
		for _, e := range table {
			if e.fd == n {
				return e.in
			}
		}
		return input{}
	}
	set := func(n int, in input) {
		for i := range table {
			if table[i].fd == n {
				table[i].in = in
				return
			}
		}
		table = append(table, slot{n, in})
	}
	named := false // a descriptor named by a variable ({fd}<x): bash picks one from 10 up
	for _, r := range redirs {
		n := 0
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.DplOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll,
			syntax.RdrAllClob, syntax.AppAllClob:
			n = 1
		}
		if r.N != nil {
			v, err := strconv.Atoi(r.N.Value)
			if err != nil {
				named = true
				continue
			}
			n = v
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			in := input{kind: fromText}
			if r.Hdoc != nil {
				in.text = s.unquote(r.Hdoc)
			}
			set(n, in)
		case syntax.WordHdoc:
			set(n, input{kind: fromText, text: s.unquote(r.Word)})
		case syntax.RdrIn, syntax.RdrInOut:
			f := s.unquote(r.Word)
			f.word = r.Word
			switch dev, k, known := fdFile(f); {
			case dev && known:
				set(n, get(k)) // /dev/fd/3 opens what descriptor 3 is
			case dev:
				set(n, input{kind: fromOther, why: "a descriptor of another process: " + f.text})
			case !f.dynamic && (strings.HasPrefix(path.Clean(f.text), "/dev/tcp/") || strings.HasPrefix(path.Clean(f.text), "/dev/udp/")):
				set(n, input{kind: fromOther, why: "the network (" + f.text + ")"})
			default:
				set(n, input{kind: fromFile, file: f})
			}
		case syntax.DplIn, syntax.DplOut:
			f := s.unquote(r.Word)
			k, err := strconv.Atoi(f.text)
			switch {
			case f.dynamic || err != nil:
				set(n, input{kind: fromOther})
			default:
				set(n, get(k))
			}
		default:
			set(n, input{kind: fromOther})
			if r.Op == syntax.RdrAll || r.Op == syntax.AppAll || r.Op == syntax.RdrAllClob || r.Op == syntax.AppAllClob {
				set(2, input{kind: fromOther})
			}
		}
	}
	if named && fd >= 10 {
		return input{kind: fromOther, why: "a descriptor named by a variable"}
	}
	return get(fd)
}

// fdFile reports whether f names a descriptor of a process (/dev/stdin,
// /dev/fd/N, /proc/self/fd/N), and which of this one's (known) it is.
// A process substitution is one of a descriptor the line does not tell.
func fdFile(f field) (dev bool, fd int, known bool) {
	if f.procSubst {
		return false, 0, false
	}
	if f.dynamic {
		return false, 0, false
	}
	p := path.Clean(f.text)
	switch p {
	case "/dev/stdin":
		return true, 0, true
	case "/dev/stdout":
		return true, 1, true
	case "/dev/stderr":
		return true, 2, true
	}
	dir, num := path.Split(p)
	k, err := strconv.Atoi(num)
	if err != nil || k < 0 || !isNumber(field{text: num}) {
		return false, 0, false
	}
	switch {
	case dir == "/dev/fd/", dir == "/proc/self/fd/", dir == "/proc/thread-self/fd/":
		return true, k, true
	case strings.HasPrefix(dir, "/proc/") && strings.HasSuffix(dir, "/fd/"):
		return true, 0, false
	}
	return false, 0, false
}

// shellScript follows the script a shell (who, found under via) reads
// from descriptor fd: parsed when it is literal; a file is a script file,
// not ours to read (unless the line wrote it); anything else is not known
// statically. A script that is not literal from a here-document, a
// here-string, a process substitution or a descriptor the shell is told
// to read is also interpreter code, so that interpreter_code decides
// what becomes of it besides the question it asks.
func (s *Script) shellScript(redirs []*syntax.Redirect, fd int, explicit bool, via []string, depth int, lang syntax.LangVariant) {
	form := "stdin"
	if fd != 0 {
		form = "/dev/fd/" + strconv.Itoa(fd)
	}
	s.shellReads(s.inputOf(redirs, fd), fd, form, explicit, via, depth, lang)
}

// shellReads follows a shell's script read from in (descriptor fd, -1
// for none of its own), named form when it is code.
func (s *Script) shellReads(in input, fd int, form string, explicit bool, via []string, depth int, lang syntax.LangVariant) {
	switch {
	case in.literal():
		s.parseAs(in.text.text, lang, via, depth+1)
		return
	case in.kind == fromFile && !in.file.dynamic:
		s.runs(in.file) // a script file: not ours to read, unless the line wrote it
		return
	case in.kind == fromFile && !in.file.procSubst:
		s.unresolved("a shell reads a script file that is not static: " + s.source(in.file))
		return
	case fd == 0 && !explicit && in.kind == fromCaller:
		s.unresolved("a shell reads its commands from stdin (a pipe or the caller)")
		return
	}
	s.unresolved("a shell reads its commands from " + in.described(fd))
	s.viaCode(via, form, in)
}

// viaCode records the script a shell found under via reads, not known
// statically, as interpreter code of that shell.
func (s *Script) viaCode(via []string, form string, in input) {
	if len(s.Code) >= maxReasons || len(via) == 0 {
		return
	}
	who := via[len(via)-1]
	who, _, _ = strings.Cut(who, " ")
	if in.kind == fromFile && in.file.procSubst {
		form = "<(…)"
	}
	s.Code = append(s.Code, Code{Interpreter: who, Form: form, Dynamic: true, Via: via[:len(via)-1]})
}

// scriptOperand follows a shell's script file operand f (bash FILE,
// source FILE): a descriptor's path reads that descriptor, a process
// substitution is what a command prints.
func (s *Script) scriptOperand(f field, redirs []*syntax.Redirect, via []string, depth int, lang syntax.LangVariant) {
	who := via[len(via)-1]
	switch dev, fd, known := fdFile(f); {
	case f.procSubst:
		s.shellReads(input{kind: fromFile, file: f}, -1, "<(…)", true, via, depth, lang)
	case dev && known:
		s.shellScript(redirs, fd, true, via, depth, lang)
	case dev:
		s.shellReads(input{kind: fromOther, why: "a descriptor of another process: " + f.text}, -1, f.text, true, via, depth, lang)
	case f.dynamic:
		s.unresolved(who + " runs a script file that is not static: " + s.source(f))
	default:
		// A script file: what it holds is not ours to see, unless the
		// line wrote it.
		s.runs(f)
	}
}

// codeFrom records the program an interpreter (c) reads from descriptor
// fd: a literal text is code (when runs says it can run something), a
// file is a program file (not ours to read), anything else is code not
// known statically.
func (s *Script) codeFrom(c *invocation, in input, form string, runs func(string) bool) {
	switch {
	case in.literal():
		if runs == nil || runs(in.text.text) {
			s.addCode(c, form, in.text.text, false)
		}
	case in.kind == fromFile && !in.file.dynamic:
		s.runs(in.file)
	case in.kind == fromFile && in.file.procSubst:
		s.addCode(c, "<(…)", "", true)
	default:
		s.addCode(c, form, "", true)
	}
}

// programOperand follows an interpreter's program file operand, when it
// names a descriptor or is a process substitution (python3 <(curl …),
// perl /dev/fd/3 3<<<'…'); true when it did.
func (s *Script) programOperand(c *invocation, f field, runs func(string) bool) bool {
	switch dev, fd, known := fdFile(f); {
	case f.procSubst:
		s.addCode(c, "<(…)", "", true)
	case dev && known:
		form := "stdin"
		if fd != 0 {
			form = "/dev/fd/" + strconv.Itoa(fd)
		}
		s.codeFrom(c, s.inputOf(c.redirs, fd), form, runs)
	case dev:
		s.addCode(c, f.text, "", true)
	default:
		return false
	}
	return true
}
