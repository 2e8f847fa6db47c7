package secrets

import (
	"fmt"
	"reflect"
	"sort"
	"testing"
)

// TestKeywordIndexAsBuiltBefore: the index built in rows (newKeywordIndex)
// is the one the map-per-node trie built (kept here as the reference),
// field for field, for every index the default ruleset makes and for
// small sets with shared prefixes and suffixes.
func TestKeywordIndexAsBuiltBefore(t *testing.T) {
	sets := [][]string{
		{"a"}, {"ab", "b", "bc", "abc", "c"}, {"he", "she", "his", "hers"},
		{"key", "ey", "s.", "auth", "http://", "api_key", "apikey", "k"},
		Default().words.words,
	}
	d := Default()
	lists := d.global
	for _, r := range d.compiledRules() {
		lists = append(lists, r.allow...)
	}
	for _, a := range lists {
		if a.stopIndex != nil {
			sets = append(sets, a.stopwords)
		}
	}
	if len(sets) < 6 {
		t.Fatal("the default ruleset has no stop words' index: the test reads nothing of it")
	}
	for _, words := range sets {
		got, err := newKeywordIndex(words)
		if err != nil {
			t.Fatal(err)
		}
		want, err := newKeywordIndexByMaps(words)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("the index of %d words differs from the reference's (first %q)", len(words), words[0])
		}
	}
}

func BenchmarkNewKeywordIndex(b *testing.B) {
	words := Default().words.words
	for b.Loop() {
		if _, err := newKeywordIndex(words); err != nil {
			b.Fatal(err)
		}
	}
}

func newKeywordIndexByMaps(words []string) (*keywordIndex, error) {
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
	if uint64(len(nodes))*uint64(n) > 1<<31 {
		return nil, fmt.Errorf("%d keyword states, more than the table holds", len(nodes))
	}
	// Breadth first: failure links, outputs along them, and the full
	// transition table.
	next := make([]uint32, len(nodes)*n)
	k.out = make([][]uint16, len(nodes))
	fail := make([]int, len(nodes))
	queue := []int{}
	for c := 0; c < n; c++ {
		if t, ok := nodes[0].child[uint8(c)]; ok {
			next[c] = uint32(t)
			queue = append(queue, t)
		}
	}
	bfs := append([]int{0}, queue...)
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
				fail[t] = int(next[fail[s]*n+c])
				next[s*n+c] = uint32(t)
				queue = append(queue, t)
				bfs = append(bfs, t)
			} else {
				next[s*n+c] = next[fail[s]*n+c]
			}
		}
	}
	// Renumber: breadth first (the queue's order), the states where no
	// keyword ends first.
	order := make([]int, 0, len(nodes))
	for _, outs := range []bool{false, true} {
		for _, s := range bfs {
			if (len(k.out[s]) > 0) == outs {
				order = append(order, s)
			}
		}
	}
	renum := make([]uint32, len(nodes))
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
	out := make([][]uint16, len(nodes))
	for i, s := range order {
		out[i] = k.out[s]
	}
	k.out = out
	size := len(nodes) * n
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

func BenchmarkNewKeywordIndexByMaps(b *testing.B) {
	words := Default().words.words
	for b.Loop() {
		if _, err := newKeywordIndexByMaps(words); err != nil {
			b.Fatal(err)
		}
	}
}
