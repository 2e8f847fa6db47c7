package shell

// Programs that read documents which can run commands: pagers' initial
// commands, TeX with \write18, DVI specials, latexmk's programs.

import (
	"strings"
)

// dvipsCommand: dvips -R0 lets the DVI file run commands (\special with
// a backquote).
func dvipsCommand(s *Script, c *invocation) {
	for i, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		if a.text == "-R0" || a.text == "-R" && i+1 < len(c.args) && c.args[i+1].text == "0" {
			var ops []field
			for _, b := range c.args {
				if !mayBeOption(b) {
					ops = append(ops, b)
				}
			}
			s.addCode(c, "-R0", joinTexts(ops), anyDynamic(ops))
			return
		}
	}
}

// lessCommand: less +CMD runs a command of less's at the start: !, | and v
// run commands (s and o write files), so any but a line number, a search
// or a move is code; a lesskey file binds keys and sets LESSOPEN.
func lessCommand(s *Script, c *invocation) {
	for _, a := range c.args {
		if a.dynamic {
			if a.lead == "" || a.lead[0] == '+' || a.lead[0] == '-' {
				s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
				return
			}
			continue
		}
		t := a.text
		switch {
		case t == "--":
			return
		case strings.HasPrefix(t, "++"):
			t = t[1:]
			fallthrough
		case strings.HasPrefix(t, "+"):
			if !lessInertCommand(t[1:]) {
				s.codeOf(c, "+", field{text: t[1:], src: t})
			}
		case strings.HasPrefix(t, "--lesskey") || t == "-k" || strings.HasPrefix(t, "-k") && !strings.HasPrefix(t, "--"):
			s.cannot(c, "a lesskey file, which can bind keys to commands and set LESSOPEN: "+t)
			return
		}
	}
}

// lessInertCommand: a number, a search (/ ?), G, g, F and empty move or
// follow, and run nothing.
func lessInertCommand(cmd string) bool {
	switch {
	case cmd == "" || isNumber(field{text: cmd}):
		return true
	case strings.HasPrefix(cmd, "/") || strings.HasPrefix(cmd, "?"):
		return !strings.ContainsAny(cmd, "!|")
	}
	return strings.Trim(cmd, "0123456789GgFpP%") == ""
}

// texCommand: TeX engines run what the document says through \write18
// when --shell-escape (-shell-escape, -enable-write18) is given, and
// read that document from their operands (TeX code or a file).
func texCommand(s *Script, c *invocation) {
	escape := false
	var ops []field
	for _, a := range c.args {
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name, value, _ := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		switch {
		case !mayBeOption(a):
			ops = append(ops, a)
		case name == "shell-escape" || name == "enable-write18":
			escape = true
		case name == "cnf-line" && strings.Contains(value, "shell_escape"):
			escape = true
		}
	}
	if escape {
		s.addCode(c, "--shell-escape", joinTexts(ops), anyDynamic(ops))
	}
}

// latexmkCommand: latexmk -pdflatex=CMD (and its other programs) runs CMD
// through the shell; -e CODE is Perl, -r FILE a Perl file.
func latexmkCommand(s *Script, c *invocation) {
	for i := 0; i < len(c.args); i++ {
		a := c.args[i]
		if a.dynamic && mayBeOption(a) {
			s.cannot(c, "a word that is not static where an option could be: "+s.source(a))
			return
		}
		name, value, eq := strings.Cut(strings.TrimLeft(a.text, "-"), "=")
		if !strings.HasPrefix(a.text, "-") {
			continue
		}
		switch {
		case eq && latexmkPrograms[name]:
			s.runScript(c, field{text: value, src: value}, "latexmk -"+name)
		case (name == "e" || name == "r") && i+1 < len(c.args):
			i++
			if name == "e" {
				s.codeOf(c, "-e", c.args[i])
			} else {
				s.launchedFile(c, c.args[i], nil)
			}
		}
	}
}

var latexmkPrograms = set2(`latex pdflatex lualatex xelatex dvilualatex hilatex dvipdf ps2pdf dvips makeindex bibtex biber
	pdf_previewer ps_previewer ps_previewer_landscape dvi_previewer dvi_previewer_landscape print_type lpr lpr_dvi lpr_pdf
	pdf_update_command ps_filter ps_filter_landscape`)
