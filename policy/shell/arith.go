package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// evaluated is what a script evaluates of its own data: bash reads the
// value of a variable named in arithmetic ($((x)), ((x)), let, [[ x -eq 1
// ]], ${a[x]}, ${s:x}) as an expression in turn, and runs the command
// substitutions of an array subscript in it: x='a[$(rm -rf /)]'; echo
// $((x)) runs rm. ${x@P} and ${!x} expand a value again too. So
// arithmetic on a name is resolved only when the script gives that name
// numbers alone (x=5, ((i=0)), for i in 1 2 3), or it is one of the
// shell's own numbers ($?, RANDOM).
type evaluated struct {
	names   []string        // names whose values arithmetic evaluates
	numeric map[string]bool // names the script gives numbers
	other   map[string]bool // names it gives anything else
	why     string          // a form that evaluates data, found directly
}

// shellNumbers are variables the shell itself keeps, numbers always.
var shellNumbers = set2(`RANDOM SRANDOM SECONDS EPOCHSECONDS LINENO BASHPID PPID UID EUID OPTIND ? # $ !`)

// note records what one node of a script evaluates or assigns.
func (e *evaluated) note(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.ArithmExp:
		e.arithm(n.X)
	case *syntax.ArithmCmd:
		e.arithm(n.X)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			e.arithm(x)
		}
	case *syntax.CStyleLoop:
		e.arithm(n.Init)
		e.arithm(n.Cond)
		e.arithm(n.Post)
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, x := range []syntax.TestExpr{n.X, n.Y} {
				if w, ok := x.(*syntax.Word); ok {
					e.arithm(w)
				}
			}
		}
	case *syntax.ParamExp:
		if w, ok := n.Index.(*syntax.Word); ok && (w.Lit() == "@" || w.Lit() == "*") {
			// ${a[@]}: every element, no arithmetic
		} else if n.Index != nil {
			e.arithm(n.Index)
		}
		if n.Slice != nil {
			e.arithm(n.Slice.Offset)
			e.arithm(n.Slice.Length)
		}
		if n.Excl && n.Names == 0 && n.Index == nil {
			e.why = "${!name}, which expands a value again"
		}
		if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && n.Exp.Word.Lit() == "P" {
			e.why = "${name@P}, which expands a value as a prompt (running $(…) in it)"
		}
	case *syntax.Assign:
		if n.Name == nil {
			return
		}
		if n.Value != nil && !n.Append && n.Index == nil && isNumberWord(n.Value) {
			e.numeric[n.Name.Value] = true
		} else {
			e.other[n.Name.Value] = true
		}
	case *syntax.ForClause:
		if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil {
			numbers := len(it.Items) > 0
			for _, w := range it.Items {
				numbers = numbers && isNumberWord(w)
			}
			if numbers {
				e.numeric[it.Name.Value] = true
			} else {
				e.other[it.Name.Value] = true
			}
		}
	}
}

// arithm notes the names an arithmetic expression evaluates, and the
// names it assigns numbers.
func (e *evaluated) arithm(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case nil:
	case *syntax.BinaryArithm:
		// x=… gives x a number; x+=… reads x first, as ++ does.
		if x.Op == syntax.Assgn {
			if name := arithName(x.X); name != "" {
				e.numeric[name] = true
			}
		}
		e.arithm(x.X)
		e.arithm(x.Y)
	case *syntax.UnaryArithm:
		e.arithm(x.X)
	case *syntax.ParenArithm:
		e.arithm(x.X)
	case *syntax.Word:
		for _, p := range x.Parts {
			switch p := p.(type) {
			case *syntax.Lit:
				e.names = append(e.names, litNames(p.Value)...)
			case *syntax.ParamExp:
				if p.Param != nil {
					e.names = append(e.names, p.Param.Value)
				}
			case *syntax.CmdSubst, *syntax.ProcSubst:
				e.why = "arithmetic on the output of a command, which bash evaluates as an expression"
			case *syntax.SglQuoted, *syntax.DblQuoted:
				e.why = "arithmetic on a quoted string, which bash evaluates as an expression"
			}
		}
	default:
		e.why = "an arithmetic form the analyser does not know"
	}
}

// arithName is the variable an arithmetic assignment assigns, or "".
func arithName(x syntax.ArithmExpr) string {
	if w, ok := x.(*syntax.Word); ok {
		if l := w.Lit(); isName(l) {
			return l
		}
	}
	return ""
}

// litNames are the variable names in a literal of an arithmetic
// expression ("x", "a[i]" has a and i); numbers are none.
func litNames(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '#')
	}) {
		if f != "" && !(f[0] >= '0' && f[0] <= '9') {
			out = append(out, f)
		}
	}
	return out
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// isNumberWord: a word that is a number (5, -3, 16#ff) or an arithmetic
// expansion (checked where it stands).
func isNumberWord(w *syntax.Word) bool {
	if len(w.Parts) == 1 {
		if _, ok := w.Parts[0].(*syntax.ArithmExp); ok {
			return true
		}
	}
	l := w.Lit()
	l = strings.TrimPrefix(l, "-")
	if l == "" {
		return false
	}
	base, digits, based := strings.Cut(l, "#")
	if based {
		return isNumber(field{text: base}) && digits != "" && !strings.ContainsFunc(digits, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '@' || r == '_')
		})
	}
	return isNumber(field{text: l}) || strings.HasPrefix(l, "0x") && len(l) > 2
}

// verdict is what the script's evaluated data leave unresolved, or "".
func (e *evaluated) verdict() string {
	if e.why != "" {
		return e.why
	}
	for _, n := range e.names {
		if shellNumbers[n] || e.numeric[n] && !e.other[n] {
			continue
		}
		return "arithmetic on " + n + ", whose value bash evaluates as an expression (an array subscript in it runs $(…)), and which the script does not give numbers alone"
	}
	return ""
}

// Bash evaluates the array subscript of a variable's name wherever a
// builtin takes a name to assign or test: printf -v 'a[$(rm -rf /)]' 1,
// read NAME, [[ -v NAME ]], test -v NAME, declare 'a[$(…)]=1' and a
// nameref's target all run the $(…). So such a name is resolved only
// when it is static with a subscript of digits at most (a[0]); a name
// made at run time, or one whose subscript holds more, is unresolved.
// declare reads a quoted word as an assignment again (declare -a "$x"
// with x='a=($(rm -rf /))' runs rm), so a word of declare that is not
// static, or holds $ or `, is unresolved too.

// evaluatedName checks a name a builtin (what) assigns or tests.
func (s *Script) evaluatedName(f field, what string) {
	if f.dynamic && f.why == whyGlob && !strings.ContainsAny(f.text, "*?") {
		// a[0] unquoted is a bracket glob, which only a file a0 matches:
		// a name either way.
		f.dynamic = false
	}
	if f.dynamic {
		s.unresolved(what + " of a name that is not static, whose array subscript bash evaluates (running $(…) in it): " + s.source(f))
		return
	}
	name, sub, ok := strings.Cut(f.text, "[")
	if !ok && isName(name) {
		return
	}
	if ok && isName(name) && strings.HasSuffix(sub, "]") && (isNumber(field{text: sub[:len(sub)-1]}) || sub == "@]" || sub == "*]") {
		return
	}
	if ok || strings.ContainsAny(f.text, "$`") {
		s.unresolved(what + " of a name whose array subscript bash evaluates (running $(…) in it): " + f.text)
	}
}

// declaration checks the words of declare, local, export, readonly and
// typeset: see evaluatedName.
func (s *Script) declaration(d *syntax.DeclClause) {
	what := d.Variant.Value
	nameref := what == "nameref"
	for _, a := range d.Args {
		switch {
		case a.Naked && a.Name == nil && a.Value != nil:
			f := s.unquote(a.Value)
			f.word = a.Value
			if !f.dynamic && (strings.HasPrefix(f.text, "-") || strings.HasPrefix(f.text, "+")) {
				nameref = nameref || strings.ContainsRune(f.text[1:], 'n')
				continue
			}
			if f.dynamic || strings.ContainsAny(f.text, "$`") {
				s.unresolved(what + " of a word that is not static, which bash reads as an assignment again (running $(…) in it): " + s.source(f))
				continue
			}
			s.evaluatedName(field{text: strings.SplitN(f.text, "=", 2)[0]}, what)
		case nameref && a.Name != nil && a.Value != nil:
			f := s.unquote(a.Value)
			f.word = a.Value
			s.evaluatedName(f, what+" -n")
		}
	}
}

// nameArguments checks the names read, printf -v and test -v take.
func nameArguments(s *Script, c *invocation) {
	args := c.args
	switch c.name {
	case "printf":
		for i := 0; i+1 < len(args); i++ {
			if t := args[i].text; args[i].dynamic || !strings.HasPrefix(t, "-") || t == "--" {
				return
			}
			if args[i].text == "-v" {
				s.evaluatedName(args[i+1], "printf -v")
				i++
			}
		}
	case "read":
		r := readBuiltinOpts.read(args)
		if r.problem != "" {
			s.badOptions(c, r)
			return
		}
		for _, k := range r.operands {
			s.evaluatedName(args[k], "read")
		}
	case "test", "[":
		for i := 0; i+1 < len(args); i++ {
			if !args[i].dynamic && args[i].text == "-v" {
				s.evaluatedName(args[i+1], c.name+" -v")
			}
		}
	}
}

// readBuiltinOpts are bash's read's options (5.3: -E).
var readBuiltinOpts = opts("+a: d: e E i: n: N: p: r s t: u:")

func init() {
	for _, name := range []string{"printf", "read", "test", "["} {
		special[name] = nameArguments
	}
}
