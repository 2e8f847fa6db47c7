package secrets

import (
	"fmt"
	"sort"
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
	next   []uint16 // state*nclass + class -> state
	// row is next for the search loops: the target's row (state*nclass)
	// with outFlag set when keywords end there, which spares a multiply
	// and a look at out for each byte.
	row []uint32
	out [][]uint16
}

// contains reports whether text holds one of the keywords.
func (k *keywordIndex) contains(text string) bool {
	row, class := k.row, &k.class
	r := uint32(0)
	for i := 0; i < len(text); i++ {
		r = row[r+uint32(class[text[i]])]
		if r&outFlag != 0 {
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

	// The trie.
	type node struct {
		child map[uint8]int
		out   []uint16
	}
	nodes := []node{{child: map[uint8]int{}}}
	for id, w := range words {
		s := 0
		for i := 0; i < len(w); i++ {
			c := k.class[w[i]]
			t, ok := nodes[s].child[c]
			if !ok {
				t = len(nodes)
				nodes = append(nodes, node{child: map[uint8]int{}})
				nodes[s].child[c] = t
			}
			s = t
		}
		nodes[s].out = append(nodes[s].out, uint16(id))
	}
	if len(nodes) > 1<<16 {
		return nil, fmt.Errorf("%d keyword states, more than the table holds", len(nodes))
	}
	// Breadth first: failure links, outputs along them, and the full
	// transition table.
	k.next = make([]uint16, len(nodes)*n)
	k.out = make([][]uint16, len(nodes))
	fail := make([]int, len(nodes))
	queue := []int{}
	for c := 0; c < n; c++ {
		if t, ok := nodes[0].child[uint8(c)]; ok {
			k.next[c] = uint16(t)
			queue = append(queue, t)
		}
	}
	k.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		out := append([]uint16(nil), nodes[s].out...)
		out = append(out, k.out[fail[s]]...)
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		k.out[s] = out
		for c := 0; c < n; c++ {
			if t, ok := nodes[s].child[uint8(c)]; ok {
				fail[t] = int(k.next[fail[s]*n+c])
				k.next[s*n+c] = uint16(t)
				queue = append(queue, t)
			} else {
				k.next[s*n+c] = k.next[fail[s]*n+c]
			}
		}
	}
	k.row = make([]uint32, len(k.next))
	for i, t := range k.next {
		k.row[i] = uint32(t) * uint32(n)
		if len(k.out[t]) > 0 {
			k.row[i] |= outFlag
		}
	}
	return k, nil
}

const outFlag = 1 << 31

// find appends to occ every keyword occurrence that starts at or after
// from and ends at or before to (offsets into text), in the order of
// their ends. K KELVIN SIGN and ſ LONG S count as k and s, as Go's
// (?i) matches them (see foldRune).
func (k *keywordIndex) find(text string, from, to int, occ []occurrence) []occurrence {
	if !k.plain && foldsWide(text[from:to]) {
		return k.findFolding(text, from, to, occ)
	}
	// Every symbol is one byte: a keyword of l bytes ending at i starts
	// at i+1-l.
	row, class, nc := k.row, &k.class, uint32(k.nclass)
	r := uint32(0)
	for i := from; i < to; i++ {
		r = row[r&^outFlag+uint32(class[text[i]])]
		if r&outFlag != 0 {
			for _, id := range k.out[(r&^outFlag)/nc] {
				occ = append(occ, occurrence{pos: i + 1 - len(k.words[id]), id: id})
			}
		}
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
	row, class, nc := k.row, &k.class, uint32(k.nclass)
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
		r = row[r&^outFlag+uint32(class[c])]
		if r&outFlag != 0 {
			for _, id := range k.out[(r&^outFlag)/nc] {
				l := len(k.words[id])
				occ = append(occ, occurrence{pos: starts[(n-l)&(maxKeywordLen-1)], id: id})
			}
		}
	}
	return occ
}
