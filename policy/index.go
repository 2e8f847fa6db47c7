package policy

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// PatternIndex narrows a pattern list to the patterns that can match a
// subject. Every glob names a literal that any text it matches contains
// (the longest run of plain characters; "" for a glob like "*" or
// "{a,b}*"); one automaton (Aho–Corasick) finds, in a single pass over a
// subject, every literal it contains. A pattern whose literal is absent
// cannot match, so the evaluator runs the glob only for the candidates,
// in list order, and decides exactly as a scan of the whole list would
// (a differential fuzz test in the evaluator holds it to that).
type PatternIndex struct {
	text literalIndex // the globs, by the literal of each
	// commands are the patterns also read as command lines, by the
	// literal of their command name's glob: a parsed command can match
	// one whose glob text appears nowhere in the value.
	commands literalIndex
}

// literalIndex finds the positions whose literal a subject contains.
type literalIndex struct {
	n      int   // positions
	always []int // positions without a literal: candidates for every subject

	// The automaton, over byte classes: a state's transition on a byte b
	// is next[state*classes+class[b]].
	class   [256]uint8
	classes int
	next    []int32
	out     [][]int32 // state → the positions whose literal ends here
}

// NewPatternIndex indexes pats (folded globs, as CompilePattern made
// them).
func NewPatternIndex(pats []Pattern) *PatternIndex {
	ix := &PatternIndex{}
	ix.text.build(len(pats), func(i int) (string, bool) { return requiredLiteral(pats[i].norm), true })
	ix.commands.build(len(pats), func(i int) (string, bool) {
		if pats[i].cmd == nil {
			return "", false
		}
		return requiredLiteral(pats[i].cmd.NameGlob()), true
	})
	return ix
}

// Len is the number of patterns indexed.
func (ix *PatternIndex) Len() int { return ix.text.n }

// Always adds to set the patterns that are candidates for any subject.
func (ix *PatternIndex) Always(set Candidates) { ix.text.addAlways(set) }

// Mark adds to set the patterns whose literal occurs in subject (folded,
// as the patterns are).
func (ix *PatternIndex) Mark(subject string, set Candidates) { ix.text.mark(subject, set) }

// MarkCommand adds to set the patterns read as command lines whose name
// glob can match a command named name (any, for a glob without a
// literal).
func (ix *PatternIndex) MarkCommand(name string, set Candidates) {
	ix.commands.addAlways(set)
	ix.commands.mark(name, set)
}

func (li *literalIndex) addAlways(set Candidates) {
	for _, i := range li.always {
		set.Add(i)
	}
}

func (li *literalIndex) mark(subject string, set Candidates) {
	if len(li.out) == 0 {
		return
	}
	state := int32(0)
	for i := 0; i < len(subject); i++ {
		state = li.next[int(state)*li.classes+int(li.class[subject[i]])]
		for _, p := range li.out[state] {
			set.Add(int(p))
		}
	}
}

// Candidates is a set of pattern positions.
type Candidates []uint64

// NewCandidates returns an empty set for n patterns.
func NewCandidates(n int) Candidates { return make(Candidates, (n+63)/64) }

// Add puts pattern i in the set.
func (c Candidates) Add(i int) { c[i/64] |= 1 << (uint(i) % 64) }

// Has reports whether pattern i is in the set.
func (c Candidates) Has(i int) bool { return c[i/64]&(1<<(uint(i)%64)) != 0 }

// Next returns the smallest position >= i in the set, or -1 if there is
// none. Walking a list by Next costs one step per 64 positions plus one
// per candidate, where testing Has at each position costs one per
// pattern: at 1,000 patterns that scan was most of what the index left.
func (c Candidates) Next(i int) int {
	if i < 0 {
		i = 0
	}
	w := i / 64
	if w >= len(c) {
		return -1
	}
	if rest := c[w] >> (uint(i) % 64); rest != 0 {
		return i + bits.TrailingZeros64(rest)
	}
	for w++; w < len(c); w++ {
		if c[w] != 0 {
			return w*64 + bits.TrailingZeros64(c[w])
		}
	}
	return -1
}

// build indexes n positions by literal(i); a position for which ok is
// false is left out, one with an empty literal is always a candidate.
func (li *literalIndex) build(n int, literal func(i int) (lit string, ok bool)) {
	li.n = n
	var lits []string
	var owners [][]int32
	seen := map[string]int{}
	for i := range n {
		lit, ok := literal(i)
		switch {
		case !ok:
			continue
		case lit == "":
			li.always = append(li.always, i)
			continue
		}
		id, found := seen[lit]
		if !found {
			id = len(lits)
			seen[lit] = id
			lits = append(lits, lit)
			owners = append(owners, nil)
		}
		owners[id] = append(owners[id], int32(i))
	}
	if len(lits) == 0 {
		return
	}
	// Byte classes: each byte that occurs in a literal is a class of its
	// own; every other byte is class 0 and leads back to the root. When
	// the literals use 255 bytes or more, the classes are the bytes.
	distinct := 0
	var used [256]bool
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			if !used[l[i]] {
				used[l[i]] = true
				distinct++
			}
		}
	}
	if distinct >= 255 {
		li.classes = 256
		for b := range li.class {
			li.class[b] = uint8(b)
		}
	} else {
		li.classes = 1
		for b, u := range used {
			if u {
				li.class[b] = uint8(li.classes)
				li.classes++
			}
		}
	}
	// The trie.
	type node struct {
		edge map[uint8]int32
		out  []int32
	}
	nodes := []node{{edge: map[uint8]int32{}}}
	for k, l := range lits {
		s := int32(0)
		for i := 0; i < len(l); i++ {
			c := li.class[l[i]]
			nxt, ok := nodes[s].edge[c]
			if !ok {
				nxt = int32(len(nodes))
				nodes = append(nodes, node{edge: map[uint8]int32{}})
				nodes[s].edge[c] = nxt
			}
			s = nxt
		}
		nodes[s].out = append(nodes[s].out, owners[k]...)
	}
	// Failure links, breadth first, folded into a full transition table
	// so that matching is one lookup per byte.
	li.next = make([]int32, len(nodes)*li.classes)
	li.out = make([][]int32, len(nodes))
	fail := make([]int32, len(nodes))
	queue := make([]int32, 0, len(nodes))
	for c := 0; c < li.classes; c++ {
		if nxt, ok := nodes[0].edge[uint8(c)]; ok {
			li.next[c] = nxt
			queue = append(queue, nxt)
		}
	}
	li.out[0] = nodes[0].out
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		out := append(slices.Clone(nodes[s].out), li.out[fail[s]]...)
		slices.Sort(out)
		li.out[s] = slices.Compact(out)
		for c := 0; c < li.classes; c++ {
			if nxt, ok := nodes[s].edge[uint8(c)]; ok {
				fail[nxt] = li.next[int(fail[s])*li.classes+c]
				li.next[int(s)*li.classes+c] = nxt
				queue = append(queue, nxt)
			} else {
				li.next[int(s)*li.classes+c] = li.next[int(fail[s])*li.classes+c]
			}
		}
	}
}

// requiredLiteral is the longest run of plain characters in a folded
// glob that every text the glob matches contains: text inside [...] or
// {...} and after an unescaped metacharacter ends a run. It errs on the
// short side — a shorter literal only makes more candidates.
func requiredLiteral(norm string) string {
	best, run := "", strings.Builder{}
	flush := func() {
		if run.Len() > len(best) {
			best = run.String()
		}
		run.Reset()
	}
	for i := 0; i < len(norm); i++ {
		c := norm[i]
		switch c {
		case '\\':
			if i+1 < len(norm) {
				i++
				run.WriteByte(norm[i])
				continue
			}
			flush()
		case '[', '{':
			flush()
			// Skip the class or the alternatives (nested braces too).
			depth := 1
			for i++; i < len(norm) && depth > 0; i++ {
				switch norm[i] {
				case '\\':
					i++
				case '[', '{':
					depth++
				case ']', '}':
					depth--
				}
			}
			i--
		case '*', '?', ']', '}', ',', '!', '^':
			flush()
		default:
			run.WriteByte(c)
		}
	}
	flush()
	return best
}

// minIndexed is the shortest list worth an index: a scan of a few globs
// costs less than marking a call's subjects.
const minIndexed = 16

// Indexes are a compiled policy's pattern indexes (see PatternIndex); a
// list shorter than minIndexed has none (nil) and is scanned.
type Indexes struct {
	Deny, RequiresApproval, AutoApprove *PatternIndex
	// RuleOperations indexes the rules' operation patterns, RuleValues
	// their value patterns, both by rule position.
	RuleOperations, RuleValues *PatternIndex
	// Tools is the evaluator's per-tool memo.
	Tools *ToolMemo
}

func newIndexes(p *Policy) *Indexes {
	ops := make([]Pattern, len(p.Rules))
	vals := make([]Pattern, len(p.Rules))
	for i, r := range p.Rules {
		ops[i], vals[i] = r.Operation, r.Pattern
	}
	index := func(pats []Pattern) *PatternIndex {
		if len(pats) < minIndexed {
			return nil
		}
		return NewPatternIndex(pats)
	}
	return &Indexes{Deny: index(p.Deny), RequiresApproval: index(p.RequiresApproval),
		AutoApprove: index(p.AutoApprove), RuleOperations: index(ops), RuleValues: index(vals), Tools: &ToolMemo{}}
}

// ToolMemo keeps what the evaluator derives from a tool's names alone
// (the names' folded forms, which patterns and rules they can match), so
// that a decision does only the work that depends on the arguments. It
// belongs to one compiled policy: a reload starts afresh. It is bounded —
// a server can list any number of tools, and a name the model makes up
// reaches the evaluator too — so past maxMemoTools names it stops
// remembering and the evaluator derives the facts per call, as without a
// memo. Safe for concurrent use.
type ToolMemo struct {
	m sync.Map
	n atomic.Int64
}

// maxMemoTools bounds a ToolMemo.
const maxMemoTools = 4096

// Load returns what was stored for key.
func (t *ToolMemo) Load(key string) (any, bool) { return t.m.Load(key) }

// Store remembers v for key unless the memo is full; it returns the value
// to use (the one stored first, if two calls raced).
func (t *ToolMemo) Store(key string, v any) any {
	if t.n.Load() >= maxMemoTools {
		return v
	}
	actual, loaded := t.m.LoadOrStore(key, v)
	if !loaded {
		t.n.Add(1)
	}
	return actual
}
