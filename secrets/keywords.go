package secrets

import (
	"fmt"
	"slices"
	"strings"
)

// maxKeywordLen bounds a keyword's length in bytes (gitleaks' longest,
// sidekiq's "bundle_enterprise__contribsys__com", has 34).
const maxKeywordLen = 64

// keywordIndex finds every occurrence of a set of ASCII keywords in a
// text in one pass, folding case as gitleaks' strings.ToLower does for
// them: an Aho-Corasick automaton, compiled to a table over the bytes
// the keywords use. Safe for concurrent use once built.
type keywordIndex struct {
	words  []string // folded keywords; an occurrence names one by index
	plain  bool     // fold ASCII only (no K and ſ): strings.ToLower's way
	class  [256]uint8
	nclass int
	// The transition table, state*nclass + class -> the target's row
	// (its state*nclass), which spares a multiply for each byte. States
	// are numbered breadth first, those where no keyword ends before
	// those where one does, so that the rows ordinary text walks (the
	// root and the states a letter or two deep) lie together in a few
	// cache lines, and a row at or past outRow means keywords end there.
	// The table is of uint16 when it fits (every table the rulesets
	// make: half the lines of uint32 to bring in when the serving
	// process comes to it cold), of uint32 otherwise.
	row16  []uint16
	row32  []uint32
	outRow uint32
	out    [][]uint16 // by state: the keywords that end there
}

// contains reports whether text holds one of the keywords.
func (k *keywordIndex) contains(text string) bool {
	if k.row16 != nil {
		return containsIn(k.row16, &k.class, k.outRow, text)
	}
	return containsIn(k.row32, &k.class, k.outRow, text)
}

func containsIn[T uint16 | uint32](row []T, class *[256]uint8, outRow uint32, text string) bool {
	r := uint32(0)
	for i := 0; i < len(text); i++ {
		r = uint32(row[r+uint32(class[text[i]])])
		if r >= outRow {
			return true
		}
	}
	return false
}

// occurrence is a keyword found at byte offset pos of a text.
type occurrence struct {
	pos int
	id  uint16
}

func newKeywordIndex(words []string) (*keywordIndex, error) {
	k := &keywordIndex{}
	// Symbol classes: 0 for every byte no keyword uses.
	var used [256]bool
	for _, w := range words {
		if w == "" || len(w) > maxKeywordLen {
			return nil, fmt.Errorf("keyword %q: empty or longer than %d bytes", w, maxKeywordLen)
		}
		for i := 0; i < len(w); i++ {
			c := w[i]
			if c >= 0x80 || ('A' <= c && c <= 'Z') {
				return nil, fmt.Errorf("keyword %q: not folded ASCII", w)
			}
			used[c] = true
		}
	}
	n := 1
	for c := 0; c < 256; c++ {
		if used[c] {
			k.class[c] = uint8(n)
			n++
		}
	}
	for c := 'A'; c <= 'Z'; c++ {
		k.class[c] = k.class[c+'a'-'A']
	}
	k.nclass = n
	k.words = words

	// The trie, as rows of n children (0: none; the root is no one's
	// child): built in place, it is the transition table's first draft.
	// A process builds dozens of these (every rule's stopwords too), so
	// no map per node: a hook pays this at each tool call.
	next := make([]uint32, n)
	ends := [][]uint16{nil}
	for id, w := range words {
		s := 0
		for i := 0; i < len(w); i++ {
			c := int(k.class[w[i]])
			t := next[s*n+c]
			if t == 0 {
				t = uint32(len(ends))
				next[s*n+c] = t
				next = append(next, make([]uint32, n)...)
				ends = append(ends, nil)
			}
			s = int(t)
		}
		ends[s] = append(ends[s], uint16(id))
	}
	states := len(ends)
	if uint64(states)*uint64(n) > 1<<31 {
		return nil, fmt.Errorf("%d keyword states, more than the table holds", states)
	}
	// Breadth first: failure links, outputs along them, and the full
	// transition table (a missing child takes its failure's target).
	k.out = make([][]uint16, states)
	fail := make([]int, states)
	bfs := make([]int, 1, states)
	k.out[0] = ends[0]
	for c := 0; c < n; c++ {
		if t := next[c]; t != 0 {
			bfs = append(bfs, int(t))
		}
	}
	for q := 1; q < len(bfs); q++ {
		s := bfs[q]
		out := append(append([]uint16(nil), ends[s]...), k.out[fail[s]]...)
		slices.Sort(out)
		k.out[s] = out
		for c := 0; c < n; c++ {
			if t := next[s*n+c]; t != 0 {
				fail[t] = int(next[fail[s]*n+c])
				bfs = append(bfs, int(t))
			} else {
				next[s*n+c] = next[fail[s]*n+c]
			}
		}
	}
	// Renumber: breadth first (the queue's order), the states where no
	// keyword ends first.
	order := make([]int, 0, states)
	for _, outs := range []bool{false, true} {
		for _, s := range bfs {
			if (len(k.out[s]) > 0) == outs {
				order = append(order, s)
			}
		}
	}
	renum := make([]uint32, states)
	for i, s := range order {
		renum[s] = uint32(i)
	}
	firstOut := len(order)
	for i, s := range order {
		if len(k.out[s]) > 0 {
			firstOut = i
			break
		}
	}
	k.outRow = uint32(firstOut * n)
	out := make([][]uint16, states)
	for i, s := range order {
		out[i] = k.out[s]
	}
	k.out = out
	size := states * n
	if size <= 1<<16 {
		k.row16 = make([]uint16, size)
	} else {
		k.row32 = make([]uint32, size)
	}
	for i, s := range order {
		for c := 0; c < n; c++ {
			t := renum[next[s*n+c]] * uint32(n)
			if k.row16 != nil {
				k.row16[i*n+c] = uint16(t)
			} else {
				k.row32[i*n+c] = t
			}
		}
	}
	return k, nil
}

// find appends to occ every keyword occurrence that starts at or after
// from and ends at or before to (offsets into text), in the order of
// their ends. K KELVIN SIGN and ſ LONG S count as k and s, as Go's
// (?i) matches them (see foldRune).
func (k *keywordIndex) find(text string, from, to int, occ []occurrence) []occurrence {
	if !k.plain && foldsWide(text[from:to]) {
		return k.findFolding(text, from, to, occ)
	}
	if k.row16 != nil {
		return findIn(k, k.row16, text, from, to, occ)
	}
	return findIn(k, k.row32, text, from, to, occ)
}

// findIn is find's loop over a table of T. Every symbol is one byte: a
// keyword of l bytes ending at i starts at i+1-l.
func findIn[T uint16 | uint32](k *keywordIndex, row []T, text string, from, to int, occ []occurrence) []occurrence {
	class, outRow := &k.class, k.outRow
	t := text[from:to]
	r := uint32(0)
	for j := 0; j < len(t); j++ {
		r = uint32(row[r+uint32(class[t[j]])])
		if r >= outRow {
			occ = k.ended(occ, r, from+j)
		}
	}
	return occ
}

// ended appends the keywords that end at byte i, where the search
// reached row r. Not inlined, so that the search loop keeps its few
// values in registers.
//
//go:noinline
func (k *keywordIndex) ended(occ []occurrence, r uint32, i int) []occurrence {
	for _, id := range k.out[r/uint32(k.nclass)] {
		occ = append(occ, occurrence{pos: i + 1 - len(k.words[id]), id: id})
	}
	return occ
}

// foldsWide reports whether s holds K KELVIN SIGN or ſ LONG S, the
// runes of more than one byte that find folds to a keyword's letter.
func foldsWide(s string) bool {
	return strings.Contains(s, "\u212a") || strings.Contains(s, "\u017f")
}

// findFolding is find on a text that holds K or ſ: it notes where each
// symbol starts.
func (k *keywordIndex) findFolding(text string, from, to int, occ []occurrence) []occurrence {
	var starts [maxKeywordLen]int
	n := 0
	class, nc, outRow := &k.class, uint32(k.nclass), k.outRow
	step := func(r uint32, c byte) uint32 {
		if k.row16 != nil {
			return uint32(k.row16[r+uint32(class[c])])
		}
		return k.row32[r+uint32(class[c])]
	}
	r := uint32(0)
	for i := from; i < to; {
		start := i
		c := text[i]
		i++
		if c >= 0x80 && !k.plain {
			switch {
			case c == 0xe2 && i+1 < to && text[i] == 0x84 && text[i+1] == 0xaa:
				c = 'k'
				i += 2
			case c == 0xc5 && i < to && text[i] == 0xbf:
				c = 's'
				i++
			}
		}
		starts[n&(maxKeywordLen-1)] = start
		n++
		r = step(r, c)
		if r >= outRow {
			for _, id := range k.out[r/nc] {
				l := len(k.words[id])
				occ = append(occ, occurrence{pos: starts[(n-l)&(maxKeywordLen-1)], id: id})
			}
		}
	}
	return occ
}
