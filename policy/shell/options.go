package shell

import (
	"sort"
	"strings"
)

// getopt is how a command reads its options, written in the notation of
// getopt(3) and getopt_long(3), each option once, separated by spaces:
//
//	"x"        a short flag
//	"x:"       a short option with a value (attached, -xVALUE, or the next word)
//	"x::"      a short option with an optional value (attached only)
//	"name"     a long flag (--name)
//	"name:"    a long option with a value (--name=VALUE or --name VALUE)
//	"name::"   a long option with an optional value (--name=VALUE only)
//	"x|name:"  spellings of one option (the colons apply to all; its name
//	           is its first long one)
//
// A leading "+" makes the command stop reading options at its first
// operand, as the wrappers do (getopt's "+"); without it options may
// follow operands (GNU permutation). A leading "=" makes long options
// exact: getopt_long takes any unique prefix of a long option (--us for
// --user), git's global options and most interpreters do not.
//
// The option's name, as handlers ask for it, is its long name when it
// has one, else its letter.
type getopt struct {
	stop  bool
	exact bool
	// anyLong: a long option the table does not know is a flag, or holds
	// its value after '=' (node passes them to V8, which takes no value
	// from the next word).
	anyLong bool
	short   [128]arity
	// shortName maps a letter to the option's name, as an index into
	// shortNames plus one (0: none): a table of strings per letter would
	// be 2 KiB of pointers per program for the collector to scan.
	shortName  [128]uint8
	shortNames []string
	long       map[string]longOpt
	longNames  []string // sorted, for prefix matches
}

type arity uint8

const (
	unknown arity = iota
	flag
	required
	optional
)

type longOpt struct {
	name  string // the option's name (the long name itself)
	arity arity
}

// opts compiles a getopt spec; it panics on a malformed one (the specs
// are constants of this package, checked by its tests).
func opts(spec string) *getopt {
	g := &getopt{long: map[string]longOpt{}}
	for {
		switch {
		case strings.HasPrefix(spec, "+"):
			g.stop, spec = true, spec[1:]
			continue
		case strings.HasPrefix(spec, "="):
			g.exact, spec = true, spec[1:]
			continue
		}
		break
	}
	for item := range strings.FieldsSeq(spec) {
		a := flag
		switch {
		case strings.HasSuffix(item, "::"):
			a, item = optional, item[:len(item)-2]
		case strings.HasSuffix(item, ":"):
			a, item = required, item[:len(item)-1]
		}
		// Names of one letter are short, longer ones long; the option's
		// name is its first long name, else its letter.
		names := strings.Split(item, "|")
		name := ""
		for _, n := range names {
			if len(n) > 1 {
				name = n
				break
			}
		}
		if name == "" {
			name = names[0]
		}
		for _, n := range names {
			switch {
			case n == "":
				panic("shell: empty option name in " + item)
			case len(n) == 1:
				if n[0] >= 128 || g.short[n[0]] != unknown {
					panic("shell: bad or repeated short option " + item)
				}
				g.short[n[0]] = a
				g.shortNames = append(g.shortNames, name)
				g.shortName[n[0]] = uint8(len(g.shortNames))
			default:
				if _, dup := g.long[n]; dup {
					panic("shell: repeated long option " + n)
				}
				g.long[n] = longOpt{name, a}
				g.longNames = append(g.longNames, n)
			}
		}
	}
	sort.Strings(g.longNames)
	return g
}

// option is one option as a command read it.
type option struct {
	name  string
	value field // its value, when has
	has   bool
	sep   bool // the value is the word after the option's
	at    int  // the index of the word that holds the option
}

// readOpts is what a command's option parser makes of its words.
type readOpts struct {
	opts []option
	// operands are the indexes of the words that are no option and no
	// value of one. With a stopping getopt, they are the words from the
	// first operand on.
	operands []int
	// problem says why the words could not be read as the command reads
	// them ("" when they could): an option the table does not know, a word
	// not known statically where an option could be. problemAt is the
	// index of that word.
	problem   string
	problemAt int
}

func (r *readOpts) has(names ...string) bool {
	for _, o := range r.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values are the values given to the options of these names, in order.
func (r *readOpts) values(names ...string) []option {
	var out []option
	for _, o := range r.opts {
		for _, n := range names {
			if o.name == n && o.has {
				out = append(out, o)
			}
		}
	}
	return out
}

// first is the index of the first operand, len(args) when there is none.
func (r *readOpts) first(n int) int {
	if len(r.operands) == 0 {
		return n
	}
	return r.operands[0]
}

// mayBeOption reports whether a word could be read as an option: it
// starts with '-', or it is not static and could start with one.
func mayBeOption(f field) bool {
	if !f.dynamic {
		return len(f.text) > 1 && f.text[0] == '-'
	}
	return f.lead == "" || f.lead[0] == '-'
}

// read reads args as the command's getopt does.
func (g *getopt) read(args []field) readOpts {
	var r readOpts
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !mayBeOption(a) {
			r.operands = append(r.operands, i)
			if g.stop {
				for j := i + 1; j < len(args); j++ {
					r.operands = append(r.operands, j)
				}
				return r
			}
			continue
		}
		t := a.text
		if a.dynamic {
			// Only the static start of the word is known: enough when
			// it holds a whole option that takes a value (--to=$X, -o$X).
			t = a.lead
		}
		if t == "--" && !a.dynamic {
			for j := i + 1; j < len(args); j++ {
				r.operands = append(r.operands, j)
			}
			return r
		}
		var next *field
		if i+1 < len(args) {
			next = &args[i+1]
		}
		o, used, problem := g.option(t, a, next)
		if problem != "" {
			r.problem, r.problemAt = problem, i
			return r
		}
		for k := range o {
			o[k].at = i
		}
		r.opts = append(r.opts, o...)
		i += used
	}
	return r
}

// option reads the option word t (a's static text, or the static start of
// a dynamic a), taking its value from next when it needs one. It returns
// the options read, how many following words they used, and a problem.
func (g *getopt) option(t string, a field, next *field) ([]option, int, string) {
	if strings.HasPrefix(t, "--") {
		body := t[2:]
		name, value, eq := strings.Cut(body, "=")
		if a.dynamic && !eq {
			return nil, 0, "a word that is not static where an option could be"
		}
		lo, problem := g.lookup(name)
		if problem != "" {
			return nil, 0, problem
		}
		o := option{name: lo.name}
		switch lo.arity {
		case flag:
			if eq {
				return nil, 0, "an option that takes no value given one: --" + name
			}
		case optional:
			if eq {
				o.value, o.has = valueField(a, len(t)-len(value)), true
			}
		case required:
			switch {
			case eq:
				o.value, o.has = valueField(a, len(t)-len(value)), true
			case next == nil:
				return nil, 0, "an option missing its value: --" + name
			default:
				o.value, o.has, o.sep = *next, true, true
				return []option{o}, 1, ""
			}
		}
		return []option{o}, 0, ""
	}
	var out []option
	for j := 1; j < len(t); j++ {
		c := t[j]
		if c >= 128 || g.short[c] == unknown {
			return nil, 0, "an option the analyser does not know: -" + string(rune(c))
		}
		o := option{name: g.shortNames[g.shortName[c]-1]}
		switch g.short[c] {
		case flag:
			out = append(out, o)
			continue
		case optional:
			if j+1 < len(t) || a.dynamic {
				o.value, o.has = valueField(a, j+1), true
			}
			return append(out, o), 0, ""
		case required:
			if j+1 < len(t) || a.dynamic {
				o.value, o.has = valueField(a, j+1), true
				return append(out, o), 0, ""
			}
			if next == nil {
				return nil, 0, "an option missing its value: -" + string(rune(c))
			}
			o.value, o.has, o.sep = *next, true, true
			return append(out, o), 1, ""
		}
	}
	if a.dynamic {
		// The static start held only flags: the rest could be more.
		return nil, 0, "a word that is not static where an option could be"
	}
	return out, 0, ""
}

// lookup finds a long option by its name or, unless exact, a unique
// prefix of it.
func (g *getopt) lookup(name string) (longOpt, string) {
	if lo, ok := g.long[name]; ok {
		return lo, ""
	}
	if g.anyLong && name != "" {
		return longOpt{name: name, arity: optional}, ""
	}
	if g.exact || name == "" {
		return longOpt{}, "an option the analyser does not know"
	}
	i := sort.SearchStrings(g.longNames, name)
	var found longOpt
	n := 0
	for ; i < len(g.longNames) && strings.HasPrefix(g.longNames[i], name); i++ {
		lo := g.long[g.longNames[i]]
		if n > 0 && (lo.name != found.name || lo.arity != found.arity) {
			return longOpt{}, "an abbreviated option that could be more than one"
		}
		found, n = lo, n+1
	}
	if n == 0 {
		return longOpt{}, "an option the analyser does not know"
	}
	return found, ""
}

// valueField is the part of word a from byte off on: the value of an
// option written in the same word (a's static start, lead, is a prefix of
// its text).
func valueField(a field, off int) field {
	text := a.text[min(off, len(a.text)):]
	if !a.dynamic {
		return field{text: text, src: text, quoted: a.quoted}
	}
	f := field{text: text, dynamic: true, why: a.why, src: text, quoted: a.quoted}
	if off <= len(a.lead) {
		f.lead = a.lead[off:]
	}
	return f
}

// watched finds a few options among a command's words, for commands
// whose other options are not in a table (git's subcommands, rsync, man):
// long options by any prefix (--name, --name=value), short letters in
// clusters (-ix CMD), as getopt_long and git's parse-options read them.
// Other options are skipped as flags: when one takes a value, that value
// is read as a word of its own, which only ever finds more.
func watched(args []field, long map[string]string, short map[byte]string) (found []option, problem string, at int) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !mayBeOption(a) {
			continue
		}
		if a.dynamic {
			return nil, "a word that is not static where an option could be", i
		}
		t := a.text
		if t == "--" {
			break
		}
		if strings.HasPrefix(t, "--") {
			name, value, eq := strings.Cut(t[2:], "=")
			for full, canon := range long {
				if name != "" && strings.HasPrefix(full, name) {
					o := option{name: canon, at: i}
					switch {
					case eq:
						o.value, o.has = field{text: value, src: value}, true
					case i+1 < len(args):
						o.value, o.has, o.sep = args[i+1], true, true
					}
					found = append(found, o)
					break
				}
			}
			continue
		}
		for j := 1; j < len(t); j++ {
			canon, ok := short[t[j]]
			if !ok {
				continue
			}
			o := option{name: canon, at: i}
			switch {
			case j+1 < len(t):
				o.value, o.has = field{text: t[j+1:], src: t[j+1:]}, true
			case i+1 < len(args):
				o.value, o.has, o.sep = args[i+1], true, true
			}
			found = append(found, o)
			break
		}
	}
	return found, "", 0
}

// watchedScripts follows the values of the watched options as scripts.
func (s *Script) watchedScripts(c *invocation, long map[string]string, short map[byte]string) {
	found, ok := s.given(c, long, short)
	if !ok {
		return
	}
	for _, o := range found {
		s.runScript(c, o.value, c.name+" --"+o.name)
	}
}

// given are the watched options (watched) given on c's line; ok is
// false when its options cannot be read, and the command is then
// unresolved: every handler that watches a few options reads them so.
func (s *Script) given(c *invocation, long map[string]string, short map[byte]string) ([]option, bool) {
	found, problem, at := watched(c.args, long, short)
	if problem != "" {
		s.cannot(c, problem+": "+s.source(c.args[at]))
		return nil, false
	}
	out := found[:0]
	for _, o := range found {
		if o.has {
			out = append(out, o)
		}
	}
	return out, true
}
