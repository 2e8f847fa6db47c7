package policy

import (
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy/textfold"
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

	// The automaton, over byte classes. States are numbered so that those
	// where a literal ends come last, from firstOut on, and a state is
	// kept as its row in next (state*classes): matching a byte b is one
	// lookup, next[row+class[b]], and one comparison says whether any
	// literal ends there.
	class    [256]uint8
	classes  int
	next     []int32
	firstOut int32     // the row of the first state where a literal ends
	out      [][]int32 // state → the positions whose literal ends here
	// leavesRoot says which bytes lead away from the root (the first
	// bytes of the literals).
	leavesRoot [256]bool

	// For markFolding, by raw byte: the class of its fold, whether it
	// folds to white space or is beyond ASCII, and whether it stops the
	// skip at the root (it leads away from it, or is beyond ASCII).
	rawClass [256]uint8
	rawKind  [256]rawKind
	rawStop  [256]bool
}

type rawKind uint8

const (
	rawPlain rawKind = iota
	rawSpace
	rawBeyondASCII
)

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
	next, class, firstOut, leaves := li.next, &li.class, li.firstOut, &li.leavesRoot
	row := int32(0)
	for i := 0; i < len(subject); i++ {
		if row == 0 {
			// At the root, skip the bytes that keep it there: no step of
			// this loop waits for the one before, where each step of the
			// automaton waits for the last lookup.
			for i < len(subject) && !leaves[subject[i]] {
				i++
			}
			if i == len(subject) {
				return
			}
		}
		row = next[row+int32(class[subject[i]])]
		if row >= firstOut {
			for _, p := range li.out[int(row)/li.classes] {
				set.Add(int(p))
			}
		}
	}
}

// markFolding is mark of textfold.Fold(raw) for ASCII text, without
// making the folded copy: each byte is folded as the automaton reads it,
// and a run of white space is read as one space. The folded text is the
// stream read here but for a leading or trailing space, so nothing it
// would mark is missed (a space at either end can only add candidates).
// At the first byte beyond ASCII it stops and returns false: what it
// marked stays (more candidates, never fewer) and the caller marks the
// folded text. It is mark's loop with the fold and the run of spaces
// added; one loop for both, with the folded text read through tables
// of its own, made mark ~30% slower (BenchmarkValueIndex), so they stay
// two.
func (li *literalIndex) markFolding(raw string, set Candidates) bool {
	if len(li.out) == 0 {
		return true
	}
	next, firstOut := li.next, li.firstOut
	row := int32(0)
	for i := 0; i < len(raw); i++ {
		if row == 0 {
			for i < len(raw) && !li.rawStop[raw[i]] {
				i++
			}
			if i == len(raw) {
				return true
			}
		}
		b := raw[i]
		switch li.rawKind[b] {
		case rawBeyondASCII:
			return false
		case rawSpace:
			if i > 0 && li.rawKind[raw[i-1]] == rawSpace {
				continue // one space for the run
			}
		}
		row = next[row+int32(li.rawClass[b])]
		if row >= firstOut {
			for _, p := range li.out[int(row)/li.classes] {
				set.Add(int(p))
			}
		}
	}
	return true
}

// Candidates is a set of pattern positions.
type Candidates []uint64

// NewCandidates returns an empty set for n patterns.
func NewCandidates(n int) Candidates { return make(Candidates, (n+63)/64) }

// Add puts pattern i in the set.
func (c Candidates) Add(i int) { c[i/64] |= 1 << (uint(i) % 64) }

// Empty reports whether the set holds no pattern (a nil set holds none).
func (c Candidates) Empty() bool {
	for _, w := range c {
		if w != 0 {
			return false
		}
	}
	return true
}

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
	li.renumber()
}

// renumber puts the states where a literal ends after all others (the
// root, which ends none, stays first) and turns every transition into
// the target's row (see literalIndex).
func (li *literalIndex) renumber() {
	states := len(li.out)
	order := make([]int32, 0, states) // new number → old
	for s := range states {
		if len(li.out[s]) == 0 {
			order = append(order, int32(s))
		}
	}
	first := len(order)
	for s := range states {
		if len(li.out[s]) > 0 {
			order = append(order, int32(s))
		}
	}
	renamed := make([]int32, states) // old number → new
	for n, o := range order {
		renamed[o] = int32(n)
	}
	next := make([]int32, len(li.next))
	out := make([][]int32, states)
	for n, o := range order {
		out[n] = li.out[o]
		for c := 0; c < li.classes; c++ {
			next[n*li.classes+c] = renamed[li.next[int(o)*li.classes+c]] * int32(li.classes)
		}
	}
	li.next, li.out, li.firstOut = next, out, int32(first*li.classes)
	for b := range li.leavesRoot {
		li.leavesRoot[b] = li.next[li.class[b]] != 0
	}
	for b := range 256 {
		f, ok := textfold.FoldByte(byte(b))
		switch {
		case !ok:
			li.rawKind[b], li.rawStop[b] = rawBeyondASCII, true
		case f == ' ':
			li.rawKind[b] = rawSpace
		}
		if ok {
			li.rawClass[b], li.rawStop[b] = li.class[f], li.leavesRoot[f]
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
		case '[':
			flush()
			i = skipClass(norm, i) - 1
		case '{':
			flush()
			i = skipAlternatives(norm, i) - 1
		case '*', '?', ']', '}', ',', '!', '^':
			flush()
		default:
			run.WriteByte(c)
		}
	}
	flush()
	return best
}

// skipClass returns the position just past the character class that
// opens at norm[i] ('['), read as gobwas/glob's lexer reads it: an
// optional '!', then either LO-HI (any two runes) or text up to the
// first unescaped ']'. Inside a class, '{', '}' and ',' are plain
// characters: counting them as brackets ended "[!}0]" at its '}' and
// made "0" its required literal, so it was no candidate for "1", which
// it matches (FuzzPatternIndex).
func skipClass(norm string, i int) int {
	i++ // '['
	if i < len(norm) && norm[i] == '!' {
		i++
	}
	if _, lo := utf8.DecodeRuneInString(norm[i:]); i+lo < len(norm) && norm[i+lo] == '-' {
		_, hi := utf8.DecodeRuneInString(norm[i+lo+1:])
		return min(i+lo+1+hi+1, len(norm)) // LO - HI ]
	}
	for ; i < len(norm); i++ {
		switch norm[i] {
		case '\\':
			i++
		case ']':
			return i + 1
		}
	}
	return len(norm)
}

// skipAlternatives returns the position just past the alternatives that
// open at norm[i] ('{'), which may hold classes and alternatives.
func skipAlternatives(norm string, i int) int {
	for i++; i < len(norm); {
		switch norm[i] {
		case '\\':
			i += 2
		case '[':
			i = skipClass(norm, i)
		case '{':
			i = skipAlternatives(norm, i)
		case '}':
			return i + 1
		default:
			i++
		}
	}
	return len(norm)
}

// minIndexed is the shortest list worth an index. It was 16 while
// marking a call's subjects cost more than scanning a few globs; since
// the automaton skips the bytes that keep it at its root, an index pays
// for itself from one pattern on (a decision under ten patterns: 2.0 ->
// 1.0 us), and the per-tool memo comes with it.
const minIndexed = 1

// Indexes are a compiled policy's pattern indexes (see PatternIndex); a
// list shorter than minIndexed has none (nil) and is scanned.
type Indexes struct {
	Deny, Refuse, RequiresApproval, AutoApprove *PatternIndex
	// RuleOperations indexes the rules' operation patterns, RuleValues
	// their value patterns, both by rule position.
	RuleOperations, RuleValues *PatternIndex
	// RiskRules indexes the risk rules' patterns, by position.
	RiskRules *PatternIndex
	// Values finds the candidates of every indexed list among a call's
	// argument values in one pass over each (nil: no list is indexed).
	Values *ValueIndex
	// Tools is the evaluator's per-tool memo.
	Tools *ToolMemo
}

// The lists a ValueIndex covers.
const (
	ListDeny = iota
	ListRefuse
	ListRuleValues
	ListRequiresApproval
	ListRiskRules
	lists
)

// ValueIndex is one automaton over the literals of every indexed list's
// patterns: an argument value is scanned once, not once per list. Its
// candidate set holds each list's set at a word boundary of its own, so
// a list's part of it is a slice (Of).
type ValueIndex struct {
	text  literalIndex
	at    [lists]int // each list's first word in a set
	words [lists]int // and its length in words (0: not indexed)
	total int
}

func newValueIndex(ixs [lists]*PatternIndex, pats [lists][]Pattern) *ValueIndex {
	vi := &ValueIndex{}
	for l, ix := range ixs {
		if ix != nil {
			vi.at[l], vi.words[l] = vi.total, (ix.Len()+63)/64
			vi.total += vi.words[l]
		}
	}
	if vi.total == 0 {
		return nil
	}
	// Positions are bit offsets into the combined set; those past a
	// list's patterns (padding to the word boundary) get no literal.
	vi.text.build(vi.total*64, func(bit int) (string, bool) {
		for l, ix := range ixs {
			if i := bit - vi.at[l]*64; ix != nil && i >= 0 && i < ix.Len() {
				if lit := requiredLiteral(pats[l][i].norm); lit != "" {
					return lit, true
				}
				return "", false // always a candidate: the list's own index adds those
			}
		}
		return "", false
	})
	return vi
}

// Words is the length of a combined candidate set.
func (vi *ValueIndex) Words() int { return vi.total }

// Mark adds to set (of Words words) the candidates, in every list, whose
// literal occurs in value (folded, as the patterns are).
func (vi *ValueIndex) Mark(value string, set Candidates) { vi.text.mark(value, set) }

// MarkFolding is Mark of textfold.Fold(raw) for ASCII text, without
// folding it; it returns false, having marked only some of the
// candidates, when raw is not ASCII (then Mark its folded text).
func (vi *ValueIndex) MarkFolding(raw string, set Candidates) bool {
	return vi.text.markFolding(raw, set)
}

// Of is list's part of a combined set, nil when the list has no index.
func (vi *ValueIndex) Of(set Candidates, list int) Candidates {
	if vi.words[list] == 0 {
		return nil
	}
	return set[vi.at[list] : vi.at[list]+vi.words[list]]
}

func newIndexes(p *Policy) *Indexes {
	ops := make([]Pattern, len(p.Rules))
	vals := make([]Pattern, len(p.Rules))
	for i, r := range p.Rules {
		ops[i], vals[i] = r.Operation, r.Pattern
	}
	risk := make([]Pattern, len(p.RiskRules))
	for i, r := range p.RiskRules {
		risk[i] = r.Pattern
	}
	index := func(pats []Pattern) *PatternIndex {
		if len(pats) < minIndexed {
			return nil
		}
		return NewPatternIndex(pats)
	}
	ixs := &Indexes{Deny: index(p.Deny), Refuse: index(p.Refuse), RequiresApproval: index(p.RequiresApproval),
		AutoApprove: index(p.AutoApprove), RuleOperations: index(ops), RuleValues: index(vals), RiskRules: index(risk),
		Tools: &ToolMemo{}}
	// auto_approve patterns are matched against names only (a value must
	// not approve its own call), so their literals are not looked for in
	// values.
	ixs.Values = newValueIndex([lists]*PatternIndex{ixs.Deny, ixs.Refuse, ixs.RuleValues, ixs.RequiresApproval, ixs.RiskRules},
		[lists][]Pattern{p.Deny, p.Refuse, vals, p.RequiresApproval, risk})
	return ixs
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
	mu sync.Mutex                     // serialises stores
	m  atomic.Pointer[map[string]any] // never changed once published: reads take no lock
}

// maxMemoTools bounds a ToolMemo.
const maxMemoTools = 4096

// memoKey is a tool's key, built in buf (no allocation for the usual
// names: a lookup costs no garbage).
func memoKey(buf []byte, operation, server, tool string) []byte {
	buf = append(buf, operation...)
	buf = append(buf, 0)
	buf = append(buf, server...)
	buf = append(buf, 0)
	return append(buf, tool...)
}

// Load returns what was stored for the tool. It takes no lock: every
// decision loads, from every session at once, where a tool is stored
// once.
func (t *ToolMemo) Load(operation, server, tool string) (any, bool) {
	m := t.m.Load()
	if m == nil {
		return nil, false
	}
	var buf [128]byte
	v, ok := (*m)[string(memoKey(buf[:0], operation, server, tool))]
	return v, ok
}

// Store remembers v for the tool unless the memo is full; it returns the
// value to use (the one stored first, if two calls raced). It publishes
// a copy with v added (at most maxMemoTools stores, each copying at most
// that many entries).
func (t *ToolMemo) Store(operation, server, tool string, v any) any {
	k := string(memoKey(nil, operation, server, tool))
	t.mu.Lock()
	defer t.mu.Unlock()
	var old map[string]any
	if m := t.m.Load(); m != nil {
		old = *m
	}
	if have, ok := old[k]; ok {
		return have
	}
	if len(old) >= maxMemoTools {
		return v
	}
	m := make(map[string]any, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[k] = v
	t.m.Store(&m)
	return v
}
