package shell

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy/textfold"
	"github.com/gobwas/glob"
)

// Pattern is a command pattern: a policy text pattern read as a command
// line ("*rm -rf /", "git push*", "sudo *").
//
// The source is folded, one leading '*' is dropped (in a text pattern it
// means "anywhere"; here every simple command is checked on its own) and
// the rest split at spaces: the first word is a
// glob over the command's name, then short-flag clusters (-rf is r and f,
// in any order, anywhere among the command's flags), long flags (globs),
// and operands (globs, `\*` a literal star) that must appear in order
// among the command's operands.
type Pattern struct {
	src      string
	nameGlob string // the command name's glob, folded
	name     *glob.Pattern
	short    []string // "-r", "-f"
	long     []*glob.Pattern
	operands []*glob.Pattern
	// open: the source ended in '*', so MatchExact allows more words.
	open bool
}

// Match is how sure a match is.
type Match int

const (
	NoMatch  Match = iota
	Possible       // only if dynamic words take certain values
	Definite
)

// CompilePattern reads src as a command pattern. ok is false (and err
// nil) when src is not shaped like a command line: its first word, after
// an optional leading '*', must be a plausible command name ("rm", "git",
// "mkfs*"), not a flag, a path or punctuation.
func CompilePattern(src string) (p *Pattern, ok bool, err error) {
	s := textfold.Fold(src)
	s = strings.TrimPrefix(s, "*")
	// A trailing '*' stays on its word ("push*" still matches push), and
	// lets MatchExact accept more words.
	open := strings.HasSuffix(s, "*") && !strings.HasSuffix(s, `\*`)
	ws := strings.Fields(s)
	if len(ws) == 0 || !commandShaped(ws[0]) {
		return nil, false, nil
	}
	p = &Pattern{src: src, nameGlob: ws[0], open: open}
	g, err := glob.Compile(ws[0])
	if err != nil {
		return nil, false, nil // not a glob of a name: not a command pattern
	}
	p.name = g
	syn := synonyms[ws[0]]
	operands := false
	for _, w := range ws[1:] {
		switch {
		case operands || w == "-" || !strings.HasPrefix(w, "-"):
			g, err := glob.Compile(cleanPath(w))
			if err != nil {
				return nil, false, nil
			}
			p.operands = append(p.operands, g)
		case w == "--":
			operands = true
		case strings.HasPrefix(w, "--"):
			if s, ok := syn[w]; ok {
				p.short = append(p.short, s)
				continue
			}
			g, err := glob.Compile(w)
			if err != nil {
				return nil, false, nil
			}
			p.long = append(p.long, g)
		case isLetters(strings.TrimSuffix(w[1:], "*")):
			// "-rf*" (as in the spec's "rm -rf*") is the flags r and f,
			// whatever follows.
			for _, r := range strings.TrimSuffix(w[1:], "*") {
				f := "-" + string(r)
				if s, ok := syn[f]; ok {
					f = s
				}
				p.short = append(p.short, f)
			}
		default:
			g, err := glob.Compile(w)
			if err != nil {
				return nil, false, nil
			}
			p.long = append(p.long, g) // -n5: matched like a long flag
		}
	}
	return p, true, nil
}

// commandShaped: letters, digits and . _ + - and glob characters, at
// least one letter or digit, not starting with '-', '.' or '/'.
func commandShaped(w string) bool {
	if w == "" || w[0] == '-' || w[0] == '.' || w[0] == '/' {
		return false
	}
	alnum := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c >= 0x80:
			alnum = true
		case strings.IndexByte("._+-*?[]{},!", c) >= 0:
		default:
			return false
		}
	}
	return alnum
}

// String is the pattern's source.
func (p *Pattern) String() string { return p.src }

// NameGlob is the glob a command's name must match (folded), for indexes:
// a command whose name lacks the glob's literal text cannot match.
func (p *Pattern) NameGlob() string { return p.nameGlob }

// Match reports whether c does what the pattern names, whatever else it
// does too: the name matches, every flag of the pattern is among the
// command's, and the pattern's operands appear in order among the
// command's. A dynamic argument of the command may stand for anything,
// which makes the match at best Possible.
func (p *Pattern) Match(c Command) Match {
	if c.Name == "" || !p.name.Match(c.Name) {
		return NoMatch
	}
	best := Definite
	dynamic := false
	var shorts, longs []string
	var ops []Arg
	for _, a := range c.Args {
		if a.Dynamic {
			dynamic = true
		}
		switch a.Kind {
		case Short:
			shorts = append(shorts, a.Text)
		case Long:
			longs = append(longs, a.Text)
		default:
			ops = append(ops, a)
		}
	}
	for _, f := range p.short {
		if !contains(shorts, f) {
			if !dynamic {
				return NoMatch
			}
			best = Possible
		}
	}
	for _, g := range p.long {
		if !matchesAny(g, longs) {
			if !dynamic {
				return NoMatch
			}
			best = Possible
		}
	}
	switch subsequence(p.operands, ops) {
	case NoMatch:
		return NoMatch
	case Possible:
		best = Possible
	}
	return best
}

// MatchExact reports whether c is exactly what the pattern names, for
// auto_approve: every word of the command is accounted for by the pattern
// (flags in any order), nothing is dynamic, and extra words are allowed
// only when the pattern ended in '*'. A pattern names a program, so a
// command run from a file outside the system's program directories
// (/tmp/x/ls, ./git) is not what it approves, whatever its name.
func (p *Pattern) MatchExact(c Command) Match {
	if c.Name == "" || !p.name.Match(c.Name) {
		return NoMatch
	}
	if c.Path != "" && !SystemProgram(c.Path) {
		return NoMatch
	}
	var shorts, longs []string
	var ops []string
	for _, a := range c.Args {
		if a.Dynamic {
			return NoMatch
		}
		switch a.Kind {
		case Short:
			shorts = append(shorts, a.Text)
		case Long:
			longs = append(longs, a.Text)
		default:
			ops = append(ops, a.Text)
		}
	}
	for _, f := range p.short {
		if !contains(shorts, f) {
			return NoMatch
		}
	}
	for _, g := range p.long {
		if !matchesAny(g, longs) {
			return NoMatch
		}
	}
	if len(ops) < len(p.operands) {
		return NoMatch
	}
	for i, g := range p.operands {
		if !g.Match(ops[i]) {
			return NoMatch
		}
	}
	if !p.open {
		for _, f := range shorts {
			if !contains(p.short, f) {
				return NoMatch
			}
		}
		for _, l := range longs {
			if !p.longMatches(l) {
				return NoMatch
			}
		}
		if len(ops) != len(p.operands) {
			return NoMatch
		}
	}
	return Definite
}

func (p *Pattern) longMatches(l string) bool {
	for _, g := range p.long {
		if g.Match(l) {
			return true
		}
	}
	return false
}

// subsequence matches pattern operands, in order, against the command's:
// Definite using static operands only, else Possible if dynamic operands
// standing for anything complete it.
func subsequence(pats []*glob.Pattern, ops []Arg) Match {
	if greedy(pats, ops, false) {
		return Definite
	}
	if greedy(pats, ops, true) {
		return Possible
	}
	return NoMatch
}

func greedy(pats []*glob.Pattern, ops []Arg, wild bool) bool {
	i := 0
	for _, g := range pats {
		// A dynamic operand whose written form matches (an unquoted "/*"
		// against the literal `/\*`) counts as written.
		for i < len(ops) && !(ops[i].Dynamic && wild || g.Match(ops[i].Text)) {
			i++
		}
		if i == len(ops) {
			return false
		}
		i++
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func matchesAny(g *glob.Pattern, list []string) bool {
	for _, s := range list {
		if g.Match(s) {
			return true
		}
		if name, _, ok := strings.Cut(s, "="); ok && g.Match(name) {
			return true
		}
	}
	return false
}

// LooksLikeShell reports whether s is plausibly a command line: it parses
// as shell and names a command. Deliberately generous: prose in a
// parameter named command costs only a parse, while a heuristic that
// judged "Sudo rm -r -f /" to be prose would let it pass on a
// case-insensitive file system. A value that does not parse would not run
// either (a shell refuses it too).
func LooksLikeShell(s string) bool { return Analyze(s).LooksLikeShell() }

// LooksLikeShell is LooksLikeShell for an analysed script.
func (s *Script) LooksLikeShell() bool {
	for _, u := range s.Unresolved {
		if strings.HasPrefix(u, "parse error") {
			return false
		}
	}
	return len(s.Commands) > 0 || len(s.Unresolved) > 0
}
