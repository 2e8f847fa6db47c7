package secrets

import (
	"regexp/syntax"
	"sync"
	"unicode/utf8"
)

// The keywords that ordinary prose holds ("s." at the end of every
// plural sentence, "ey" in "they" and "key") wake rules whose regexes
// cannot match there: a HashiCorp Vault token is "s." and 24 letters
// or digits, a JWT "ey" and 17, not "s. All" or "they ". Trying each
// such anchor costs its rule's existence check (exists.go), code and
// nodes the serving process finds cold at every result. So every
// anchor of a branch carries the bytes that may follow it in a match of
// the branch (its follow set, found from the regex's program at
// first use), and an occurrence whose next byte is not in it is no
// candidate. A rule none of whose anchors is a candidate in a window
// does not run there.

// knownMu serializes the first look at an anchor (known): rare, once
// per anchor and process.
var knownMu sync.Mutex

// known fills in what may follow br's anchor on its first occurrence,
// not when the ruleset compiles: the programs of the 287 anchors'
// branches cost twice the rest of the compilation, and a session meets
// few of them. need: a match holds one of operators within need runes
// after the anchor (0: not known).
func (br *branchRef) known() *branchRef {
	if !br.ready.Load() {
		knownMu.Lock()
		if !br.ready.Load() {
			p := br.prog()
			br.follow, br.need = anchorFollow(p, br.anchor), anchorNeeds(p, br.anchor)
			br.ready.Store(true)
		}
		knownMu.Unlock()
	}
	return br
}

// followSet is a set of bytes.
type followSet [4]uint64

func (f *followSet) has(c byte) bool { return f[c/64]&(1<<(c%64)) != 0 }

func (f *followSet) add(c int) { f[c/64] |= 1 << (c % 64) }

// allBytes lets every byte follow: what is not known.
var allBytes = followSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}

// follows reports whether a match of the branch that br refers to may
// begin with its anchor at text[q:], as far as the byte after the
// anchor tells. An occurrence that is not the anchor's bytes in ASCII
// (the prefilter folds K and ſ too) or that ends the text is let
// through.
func (br *branchRef) follows(text string, q int) bool {
	e := q + int(br.n)
	if e >= len(text) {
		return true
	}
	for i := q; i < e; i++ {
		if text[i] >= utf8.RuneSelf {
			return true
		}
	}
	br.known()
	if !br.follow.has(text[e]) {
		return false
	}
	if br.need == 0 {
		return true
	}
	// A match needs one of operators within need runes: a byte past
	// ASCII (a rune of several bytes) lets it through.
	for _, c := range []byte(text[e:min(len(text), e+br.need)]) {
		if c >= utf8.RuneSelf || operatorByte[c] {
			return true
		}
	}
	return false
}

var operatorByte = func() (t [256]bool) {
	for i := 0; i < len(operators); i++ {
		t[operators[i]] = true
	}
	return t
}()

// anchorFollow is the follow set of anchor a (folded, ASCII) at the
// start of x: every byte that may come next in a match of x that begins
// with a in any case. It over-approximates: every empty-width assertion
// (\b, ^, $) is taken as holding, a byte past ASCII is always let
// through, and anything unexpected gives allBytes.
func anchorFollow(prog *syntax.Prog, a string) followSet {
	threads := anchorThreads(prog, a)
	if threads == nil {
		return allBytes
	}
	var f followSet
	for _, pc := range threads {
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstMatch, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			return allBytes
		case syntax.InstRune, syntax.InstRune1:
			for c := range utf8.RuneSelf {
				if matchesRune(in, rune(c)) {
					f.add(c)
				}
			}
		}
	}
	for c := utf8.RuneSelf; c < 256; c++ {
		f.add(c) // the first byte of a rune past ASCII: not judged here
	}
	return f
}

// compileFollow is the program anchorFollow and anchorNeeds run: x's,
// or nil when it does not compile (then nothing is known).
func compileFollow(x *syntax.Regexp) *syntax.Prog {
	prog, err := syntax.Compile(x.Simplify())
	if err != nil {
		return nil
	}
	return prog
}

// anchorThreads runs prog over a in any case: the instructions that may
// consume the byte after it (nil: no program, a match may end inside a,
// or a begins none; nothing is known).
func anchorThreads(prog *syntax.Prog, a string) []uint32 {
	if prog == nil {
		return nil
	}
	cl := newCloser(prog)
	threads := cl.closure(nil, uint32(prog.Start))
	for i := 0; i < len(a); i++ {
		c := rune(a[i])
		if c >= utf8.RuneSelf {
			return nil
		}
		runes := []rune{c}
		if 'a' <= c && c <= 'z' {
			runes = append(runes, c-'a'+'A')
		}
		cl.step()
		var next []uint32
		for _, pc := range threads {
			in := &prog.Inst[pc]
			switch in.Op {
			case syntax.InstMatch:
				return nil // a match may end inside the anchor
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				for _, r := range runes {
					if matchesRune(in, r) {
						next = cl.closure(next, in.Out)
						break
					}
				}
			}
		}
		if len(next) == 0 {
			return nil // the anchor begins no match: not expected, so not relied on
		}
		threads = next
	}
	return threads
}

// operators are the bytes that assign a value in the semi-generic
// rules of gitleaks (generic-api-key's "key", "auth", "token" and the
// like are followed, within a few bytes, by one of = : > | ? ,): the
// one set anchorNeeds tries to prove necessary.
const operators = "=:>|?,"

// maxNeed bounds, in bytes after an anchor, where anchorNeeds looks for
// the byte a match needs.
const maxNeed = 64

// anchorNeeds proves, from the program of x, that every match of x that
// begins with a (in any case) holds one of operators within its first
// d runes after a, and returns d (0: not proven). The proof runs the
// program over every rune that is not one of operators (every
// empty-width assertion taken as holding): it must run out of
// instructions within maxNeed runes without reaching a match.
func anchorNeeds(prog *syntax.Prog, a string) (d int) {
	threads := anchorThreads(prog, a)
	if threads == nil {
		return 0
	}
	cl := newCloser(prog)
	var need followSet
	for i := 0; i < len(operators); i++ {
		need.add(int(operators[i]))
	}
	for d = 0; d <= maxNeed; d++ {
		if len(threads) == 0 {
			return d
		}
		cl.step()
		var next []uint32
		for _, pc := range threads {
			in := &prog.Inst[pc]
			switch in.Op {
			case syntax.InstMatch, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				return 0
			case syntax.InstRune, syntax.InstRune1:
				if matchesOther(in, &need) {
					next = cl.closure(next, in.Out)
				}
			}
		}
		threads = next
	}
	return 0
}

// matchesOther reports whether the rune instruction in consumes a rune
// outside the ASCII bytes of set: any rune past ASCII counts as one.
func matchesOther(in *syntax.Inst, set *followSet) bool {
	for c := range utf8.RuneSelf {
		if !set.has(byte(c)) && in.MatchRune(rune(c)) {
			return true
		}
	}
	for i := 1; i < len(in.Rune); i += 2 {
		if in.Rune[i] >= utf8.RuneSelf {
			return true
		}
	}
	// Case folding adds runes past ASCII only to letters (K and ſ to k
	// and s), which the loop above found outside set already.
	return len(in.Rune) == 1 && in.Rune[0] >= utf8.RuneSelf
}

// matchesRune reports whether the rune instruction in consumes r.
func matchesRune(in *syntax.Inst, r rune) bool {
	switch in.Op {
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return r != '\n'
	}
	return in.MatchRune(r)
}

// closer builds the sets of one step of a run of prog: seen marks the
// instructions met in the current step (by its number, so that a step
// starts afresh without clearing).
type closer struct {
	prog  *syntax.Prog
	seen  []uint32
	epoch uint32
	stack []uint32
}

func newCloser(prog *syntax.Prog) *closer {
	return &closer{prog: prog, seen: make([]uint32, len(prog.Inst)), epoch: 1}
}

// step starts a step's set: call it before each.
func (c *closer) step() { c.epoch++ }

// closure adds to set the instructions that consume a rune or match,
// reachable from pc through instructions that consume nothing (every
// empty-width assertion taken as holding), each once a step.
func (c *closer) closure(set []uint32, pc uint32) []uint32 {
	c.stack = append(c.stack[:0], pc)
	for len(c.stack) > 0 {
		pc := c.stack[len(c.stack)-1]
		c.stack = c.stack[:len(c.stack)-1]
		if c.seen[pc] == c.epoch {
			continue
		}
		c.seen[pc] = c.epoch
		in := &c.prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			c.stack = append(c.stack, in.Arg, in.Out)
		case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
			c.stack = append(c.stack, in.Out)
		case syntax.InstFail:
		default:
			set = append(set, pc)
		}
	}
	return set
}
