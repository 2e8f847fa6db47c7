package shell

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy/textfold"
	"mvdan.cc/sh/v3/syntax"
)

// A command line can give a name another meaning: hash -p /bin/rm ls
// makes ls run rm (and so does BASH_CMDS[ls]=/bin/rm), alias ls='rm -rf'
// makes ls the words of the alias (dash and zsh expand aliases in
// scripts; bash with expand_aliases). Where the definition takes effect
// depends on the order the shell runs things in (a function defined first
// and called later, a loop), which the analyser does not follow; so it
// reads the line again when it defines a name, and then judges every
// command of that name, wherever it stands, also as what the name was
// made to run. A function's body is judged where it is defined, and a
// call of it with its words (f -rf / of f() { rm "$@"; } is a dynamic rm).

// definition is what a name was made to run.
type definition struct {
	// program is the file hash -p gave the name; alias is the text of an
	// alias (when program is empty).
	program field
	alias   string
}

// names are the names a command line defines, by their folded names.
type names map[string][]definition

// define records that the line makes name run d.
func (s *Script) define(name string, d definition) {
	name = textfold.Fold(name)
	if s.names == nil {
		s.names = names{}
	}
	for _, have := range s.names[name] {
		if have.program.text == d.program.text && have.alias == d.alias {
			return
		}
	}
	if len(s.names[name]) < maxReasons {
		s.names[name] = append(s.names[name], d)
	}
}

// redefined follows what a command run by its name (not a path) was
// made to run, in the line's second reading.
func (s *Script) redefined(name string, fs []field, redirs []*syntax.Redirect, via []string, depth int) {
	for _, d := range s.names[name] {
		if d.alias == "" {
			words := append([]field{d.program}, fs[1:]...)
			s.call(words, redirs, append(via[:len(via):len(via)], "hash -p "+name), depth+1)
			continue
		}
		label := "alias " + name
		if contains(via, label) {
			continue // an alias is not expanded in its own expansion
		}
		words := append([]field{{text: d.alias, src: d.alias}}, quotedWords(fs[1:])...)
		s.eval(words, append(via[:len(via):len(via)], label), depth+1)
	}
}

// hashCommand: hash -p FILE NAME... makes each NAME run FILE (bash); zsh
// writes hash NAME=FILE. Other forms list, forget or look names up.
func hashCommand(s *Script, c *invocation) {
	var program *field
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		switch {
		case a.dynamic:
			s.cannot(c, "a word that is not static, which can make a name run another program: "+s.source(a))
			return
		case a.text == "--":
		case a.text == "-p" && i+1 < len(c.args):
			program = &c.args[i+1]
			i++
		case strings.HasPrefix(a.text, "-p"):
			program = &field{text: a.text[2:], src: a.text[2:]}
		case strings.HasPrefix(a.text, "-"):
		case program != nil:
			if program.dynamic {
				s.cannot(c, "-p of a program that is not static: "+s.source(*program))
				return
			}
			s.define(a.text, definition{program: *program})
			s.runs(*program)
		default:
			if name, file, ok := strings.Cut(a.text, "="); ok && name != "" {
				s.define(name, definition{program: field{text: file, src: file}})
				s.runs(field{text: file})
			}
		}
	}
}

// defines follows an assignment to the shell's tables of names:
// BASH_CMDS[NAME]=FILE is hash -p, BASH_ALIASES[NAME]=TEXT an alias. Any
// other assignment to them (a whole array, a name not static) is not
// followed, and leaves the line unresolved.
func (s *Script) defines(a *syntax.Assign) {
	if a.Name == nil || a.Name.Value != "BASH_CMDS" && a.Name.Value != "BASH_ALIASES" {
		return
	}
	var name string
	if w, ok := a.Index.(*syntax.Word); ok {
		name = w.Lit()
	}
	if name == "" || a.Value == nil || a.Append {
		s.unresolved(a.Name.Value + " assigned in a way the analyser does not follow: it makes names run other programs")
		return
	}
	v := s.unquote(a.Value)
	if v.dynamic {
		s.unresolved(a.Name.Value + "[" + name + "] of a value that is not static: it makes " + name + " run another program")
		return
	}
	if a.Name.Value == "BASH_CMDS" {
		s.define(name, definition{program: v})
		s.runs(v)
		return
	}
	s.define(name, definition{alias: v.text})
}

func init() {
	special["hash"] = hashCommand
}
