package secrets

import (
	"regexp/syntax"
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
// compile time), and an occurrence whose next byte is not in it is no
// candidate. A rule none of whose anchors is a candidate in a window
// does not run there.

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
	c := text[e]
	if br.follow.has(c) {
		return true
	}
	for i := q; i < e; i++ {
		if text[i] >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// anchorFollow is the follow set of anchor a (folded, ASCII) at the
// start of x: every byte that may come next in a match of x that begins
// with a in any case. It over-approximates: every empty-width assertion
// (\b, ^, $) is taken as holding, a byte past ASCII is always let
// through, and anything unexpected gives allBytes.
func anchorFollow(x *syntax.Regexp, a string) followSet {
	prog, err := syntax.Compile(x.Simplify())
	if err != nil {
		return allBytes
	}
	threads := closure(prog, nil, uint32(prog.Start))
	for i := 0; i < len(a); i++ {
		c := rune(a[i])
		if c >= utf8.RuneSelf {
			return allBytes
		}
		runes := []rune{c}
		if 'a' <= c && c <= 'z' {
			runes = append(runes, c-'a'+'A')
		}
		var next []uint32
		for _, pc := range threads {
			in := &prog.Inst[pc]
			switch in.Op {
			case syntax.InstMatch:
				return allBytes // a match may end inside the anchor
			case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
				for _, r := range runes {
					if matchesRune(in, r) {
						next = closure(prog, next, in.Out)
						break
					}
				}
			}
		}
		if len(next) == 0 {
			return allBytes // the anchor begins no match: not expected, so not relied on
		}
		threads = next
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

// closure adds to set the instructions that consume a rune or match,
// reachable from pc through instructions that consume nothing (every
// empty-width assertion taken as holding).
func closure(prog *syntax.Prog, set []uint32, pc uint32) []uint32 {
	seen := map[uint32]bool{}
	for _, x := range set {
		seen[x] = true
	}
	var walk func(pc uint32)
	walk = func(pc uint32) {
		if seen[pc] {
			return
		}
		seen[pc] = true
		in := &prog.Inst[pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			walk(in.Out)
			walk(in.Arg)
		case syntax.InstCapture, syntax.InstNop, syntax.InstEmptyWidth:
			walk(in.Out)
		case syntax.InstFail:
		default:
			set = append(set, pc)
		}
	}
	walk(pc)
	return set
}
