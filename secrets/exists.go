package secrets

import (
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// existsProg answers one question of a regex anchored at a position:
// can it match there at all? It carries sets of positions through the
// syntax tree, without priorities or groups, which for the shapes
// gitleaks' rules have (bounded runs of a class, small alternations)
// costs a fraction of Go's regexp: generic-api-key's regex, anchored at
// "api" in a URL, takes Go's backtracker about 4 µs and this about
// 0.2 µs. Go's regexp runs only where this says yes, to find the
// match leftmost-first semantics picks. FuzzExists checks that it
// never says no where Go's regexp matches.
type existsProg struct {
	root *enode
	// begins: the regex begins with \A (or ^ outside (?m)), so an
	// unanchored search needs to try the start only.
	begins bool
}

type enode struct {
	// The fields eval reads at each node first, together in the node's
	// first cache line.
	//
	// nullable: n may match the empty string; else first holds every
	// byte a match of n can begin with, and positions whose byte is not
	// in it are dropped before n is tried.
	first    [4]uint64 // bits
	op       syntax.Op
	fold     bool
	nullable bool
	single   bool // matches exactly one rune (class, any, 1-rune literal)
	nonASCII bool // class: holds runes past ASCII
	min, max int  // repeats; max -1 is unbounded
	sub      []*enode
	runes    []rune    // literal, or class ranges
	ascii    [2]uint64 // class: which ASCII runes it holds
}

func (n *enode) begins(c byte) bool { return n.first[c/64]&(1<<(c%64)) != 0 }

func (n *enode) addFirst(c int) { n.first[c/64] |= 1 << (c % 64) }

func compileExists(re *syntax.Regexp) *existsProg {
	p := &existsProg{root: packENodes(compileENode(re))}
	for first := re; ; {
		switch first.Op {
		case syntax.OpBeginText:
			p.begins = true
		case syntax.OpConcat, syntax.OpCapture:
			if len(first.Sub) > 0 {
				first = first.Sub[0]
				continue
			}
		}
		break
	}
	return p
}

func compileENode(re *syntax.Regexp) *enode {
	n := &enode{op: re.Op, fold: re.Flags&syntax.FoldCase != 0, min: re.Min, max: re.Max}
	switch re.Op {
	case syntax.OpLiteral:
		n.runes = re.Rune
		n.single = len(re.Rune) == 1
	case syntax.OpCharClass:
		n.runes = re.Rune
		n.single = true
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			for r := lo; r <= hi && r < 128; r++ {
				n.ascii[r/64] |= 1 << (r % 64)
			}
			if hi >= 128 {
				n.nonASCII = true
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		n.single = true
	case syntax.OpStar:
		n.op, n.min, n.max = syntax.OpRepeat, 0, -1
	case syntax.OpPlus:
		n.op, n.min, n.max = syntax.OpRepeat, 1, -1
	case syntax.OpQuest:
		n.op, n.min, n.max = syntax.OpRepeat, 0, 1
	}
	for _, s := range re.Sub {
		n.sub = append(n.sub, compileENode(s))
	}
	n.setFirst()
	return n
}

// packENodes copies the tree of root into one array, in the order eval
// walks it (a node, then its children's trees), with the children lists
// and the runes in arrays of their own: the serving process comes to
// a rule's program cold on each call, and a tree spread over the heap
// costs a cache miss or two for each node it visits.
func packENodes(root *enode) *enode {
	var nodes, subs, runes int
	var count func(n *enode)
	count = func(n *enode) {
		nodes++
		subs += len(n.sub)
		runes += len(n.runes)
		for _, s := range n.sub {
			count(s)
		}
	}
	count(root)
	nodeArr := make([]enode, 0, nodes)
	subArr := make([]*enode, 0, subs)
	runeArr := make([]rune, 0, runes)
	var pack func(n *enode) *enode
	pack = func(n *enode) *enode {
		nodeArr = append(nodeArr, *n)
		c := &nodeArr[len(nodeArr)-1]
		if n.runes != nil {
			at := len(runeArr)
			runeArr = append(runeArr, n.runes...)
			c.runes = runeArr[at:len(runeArr):len(runeArr)]
		}
		if n.sub != nil {
			at := len(subArr)
			subArr = append(subArr, make([]*enode, len(n.sub))...)
			c.sub = subArr[at:len(subArr):len(subArr)]
			for i, s := range n.sub {
				c.sub[i] = pack(s)
			}
		}
		return c
	}
	return pack(root)
}

// setFirst computes nullable and first from n's children.
func (n *enode) setFirst() {
	all := func() { n.first = [4]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)} }
	addRune := func(r rune) {
		if r < utf8.RuneSelf {
			n.addFirst(int(r))
			return
		}
		var b [utf8.UTFMax]byte
		utf8.EncodeRune(b[:], r)
		n.addFirst(int(b[0]))
	}
	high := func() { // every byte past ASCII: leading bytes, and invalid ones, which match as U+FFFD
		n.first[2], n.first[3] = ^uint64(0), ^uint64(0)
	}
	switch n.op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		n.nullable = true
	case syntax.OpNoMatch:
	case syntax.OpLiteral:
		if len(n.runes) == 0 {
			n.nullable = true
			return
		}
		r := n.runes[0]
		addRune(r)
		if n.fold {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				addRune(f)
			}
		}
		if r == utf8.RuneError {
			high()
		}
	case syntax.OpCharClass:
		n.first[0], n.first[1] = n.ascii[0], n.ascii[1]
		if n.nonASCII {
			high()
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		all()
	case syntax.OpCapture:
		n.nullable, n.first = n.sub[0].nullable, n.sub[0].first
	case syntax.OpConcat:
		n.nullable = true
		for _, s := range n.sub {
			for i := range n.first {
				n.first[i] |= s.first[i]
			}
			if !s.nullable {
				n.nullable = false
				break
			}
		}
	case syntax.OpAlternate:
		for _, s := range n.sub {
			for i := range n.first {
				n.first[i] |= s.first[i]
			}
			n.nullable = n.nullable || s.nullable
		}
	case syntax.OpRepeat:
		n.first = n.sub[0].first
		n.nullable = n.min == 0 || n.sub[0].nullable
	default:
		n.nullable = true
	}
}

// existsRun is one question's working memory: an arena the position
// sets live in, and the bounds of the text that may be read.
type existsRun struct {
	text  string
	limit int  // positions past limit are not read
	cut   bool // a path reached limit short of the text's end
	arena []int
	occ   []occurrence // anySearch's words
	tried []bool       // anySearch's alternatives
}

// exists reports whether the regex can match text anchored at q,
// reading no further than limit. It says yes when a path reaches limit
// before the text's end: what lies beyond is not known.
func (p *existsProg) exists(r *existsRun, text string, q, limit int) bool {
	r.text, r.limit, r.cut = text, limit, false
	r.arena = append(r.arena[:0], q)
	out := r.eval(p.root, r.arena[0:1:1])
	return len(out) > 0 || r.cut
}

// anywhere reports whether the regex matches somewhere in text: an
// unanchored search, from every position at once.
func (p *existsProg) anywhere(r *existsRun, text string) bool {
	if p.begins {
		return p.exists(r, text, 0, len(text))
	}
	r.text, r.limit, r.cut = text, len(text), false
	r.arena = r.arena[:0]
	// Every position Go's regexp would start at: it steps a rune at a
	// time, an invalid byte being one rune.
	for i := 0; ; {
		if p.root.nullable || (i < len(text) && p.root.begins(text[i])) {
			r.arena = append(r.arena, i)
		}
		if i >= len(text) {
			break
		}
		if text[i] < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRuneInString(text[i:])
			i += w
		}
	}
	n := len(r.arena)
	out := r.eval(p.root, r.arena[0:n:n])
	return len(out) > 0
}

// eval returns the positions n can end at from any position in in
// (sorted, without duplicates), appended to the arena.
func (r *existsRun) eval(n *enode, in []int) []int {
	if len(in) == 0 {
		return nil
	}
	if !n.nullable {
		keep := 0
		for _, p := range in {
			if p < len(r.text) && n.begins(r.text[p]) {
				keep++
			}
		}
		if keep == 0 {
			return nil
		}
		if keep < len(in) {
			start := len(r.arena)
			for _, p := range in {
				if p < len(r.text) && n.begins(r.text[p]) {
					r.arena = append(r.arena, p)
				}
			}
			in = r.arena[start:len(r.arena):len(r.arena)]
		}
	}
	switch n.op {
	case syntax.OpNoMatch:
		return nil
	case syntax.OpEmptyMatch:
		return in
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		start := len(r.arena)
		for _, p := range in {
			if r.assert(n.op, p) {
				r.arena = append(r.arena, p)
			}
		}
		return r.arena[start:len(r.arena):len(r.arena)]
	case syntax.OpLiteral:
		start := len(r.arena)
		for _, p := range in {
			if e, ok := r.literal(n, p); ok {
				r.arena = append(r.arena, e)
			}
		}
		return r.sorted(start)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		start := len(r.arena)
		for _, p := range in {
			if w := r.one(n, p); w > 0 {
				r.arena = append(r.arena, p+w)
			}
		}
		return r.sorted(start)
	case syntax.OpCapture:
		return r.eval(n.sub[0], in)
	case syntax.OpConcat:
		cur := in
		for _, s := range n.sub {
			cur = r.eval(s, cur)
			if len(cur) == 0 {
				return nil
			}
		}
		return cur
	case syntax.OpAlternate:
		// A child that cannot begin with any byte at the positions is
		// passed over without a look at each (gitleaks' allowlists are
		// alternations of dozens of words, tried at every position).
		var present [4]uint64
		for _, p := range in {
			if p < len(r.text) {
				c := r.text[p]
				present[c/64] |= 1 << (c % 64)
			}
		}
		// The children's results go through a slice of their own: each
		// child's evaluation appends its own working sets to the arena.
		var outs []int
		for _, s := range n.sub {
			if !s.nullable && s.first[0]&present[0]|s.first[1]&present[1]|s.first[2]&present[2]|s.first[3]&present[3] == 0 {
				continue
			}
			outs = append(outs, r.eval(s, in)...)
		}
		if len(outs) == 0 {
			return nil
		}
		start := len(r.arena)
		r.arena = append(r.arena, outs...)
		return r.sorted(start)
	case syntax.OpRepeat:
		if n.sub[0].single {
			return r.runs(n, in)
		}
		return r.repeat(n, in)
	}
	// Anything else: say it may match anywhere it may end.
	r.cut = true
	return nil
}

// sorted sorts and dedupes the arena from start and returns that part.
func (r *existsRun) sorted(start int) []int {
	s := r.arena[start:]
	if len(s) > 1 && !slices.IsSorted(s) {
		slices.Sort(s)
		s = slices.Compact(s)
		r.arena = r.arena[:start+len(s)]
	}
	return r.arena[start:len(r.arena):len(r.arena)]
}

// runs evaluates a repeat of a one-rune matcher: from each position,
// every length from min to max of the run of matching runes. Starts
// come in order and their runs overlap, so a position already given is
// looked up rather than given twice, which keeps the result sorted.
func (r *existsRun) runs(n *enode, in []int) []int {
	start := len(r.arena)
	sub := n.sub[0]
	last := -1
	unsorted := false
	// For an unbounded run, a start inside the last walk stops where
	// that walk stopped, and gives nothing that walk did not (the
	// positions are on one grid of runes): an unanchored search tries
	// every position, and this keeps it linear.
	walked, stop := -1, -1
	for _, p := range in {
		if n.max < 0 && walked >= 0 && p <= stop {
			continue
		}
		walked = p
		k, at := 0, p
		for {
			if k >= n.min {
				switch {
				case at > last:
					r.arena = append(r.arena, at)
					last = at
				case !unsorted:
					if _, found := slices.BinarySearch(r.arena[start:], at); !found {
						r.arena = append(r.arena, at)
						unsorted = true
					}
				default:
					r.arena = append(r.arena, at)
				}
			}
			if n.max >= 0 && k == n.max {
				break
			}
			w := r.one(sub, at)
			if w == 0 {
				break
			}
			k++
			at += w
		}
		stop = at
	}
	if unsorted {
		return r.sorted(start)
	}
	return r.arena[start:len(r.arena):len(r.arena)]
}

// repeat evaluates a repeat of anything, one round at a time. A
// position reached again after min rounds is not walked again: it was
// reached before with as many rounds left.
func (r *existsRun) repeat(n *enode, in []int) []int {
	var acc []int
	if n.min == 0 {
		acc = append(acc, in...)
	}
	cur := in
	for k := 1; n.max < 0 || k <= n.max; k++ {
		next := r.eval(n.sub[0], cur)
		if k >= n.min {
			fresh := make([]int, 0, len(next))
			for _, p := range next {
				if _, found := slices.BinarySearch(acc, p); !found {
					fresh = append(fresh, p)
				}
			}
			acc = append(acc, fresh...)
			slices.Sort(acc)
			next = fresh
		}
		if len(next) == 0 {
			break
		}
		cur = next
	}
	return acc
}

// one returns the width of the rune at p when the one-rune matcher n
// matches it, else 0.
func (r *existsRun) one(n *enode, p int) int {
	if p >= r.limit {
		if p < len(r.text) {
			r.cut = true
		}
		return 0
	}
	c, w := rune(r.text[p]), 1
	if c >= utf8.RuneSelf {
		c, w = utf8.DecodeRuneInString(r.text[p:])
	}
	if p+w > r.limit && p+w <= len(r.text) {
		r.cut = true
		return 0
	}
	switch n.op {
	case syntax.OpAnyChar:
		return w
	case syntax.OpAnyCharNotNL:
		if c == '\n' {
			return 0
		}
		return w
	case syntax.OpLiteral:
		if foldEq(n.runes[0], c, n.fold) {
			return w
		}
		return 0
	}
	// A class.
	if c < 128 {
		if n.ascii[c/64]&(1<<(c%64)) != 0 {
			return w
		}
		return 0
	}
	if !n.nonASCII {
		return 0
	}
	rs := n.runes
	for i := 0; i+1 < len(rs); i += 2 {
		if rs[i] <= c && c <= rs[i+1] {
			return w
		}
	}
	return 0
}

// literal returns where the literal n ends when it matches at p.
func (r *existsRun) literal(n *enode, p int) (int, bool) {
	for _, want := range n.runes {
		if p >= r.limit {
			if p < len(r.text) {
				r.cut = true
			}
			return 0, false
		}
		c, w := rune(r.text[p]), 1
		if c >= utf8.RuneSelf {
			c, w = utf8.DecodeRuneInString(r.text[p:])
		}
		if !foldEq(want, c, n.fold) {
			return 0, false
		}
		p += w
	}
	return p, true
}

func foldEq(want, c rune, fold bool) bool {
	if want == c {
		return true
	}
	if !fold {
		return false
	}
	if want < utf8.RuneSelf && c < utf8.RuneSelf {
		return 'a' <= want|0x20 && want|0x20 <= 'z' && want|0x20 == c|0x20
	}
	for f := unicode.SimpleFold(want); f != want; f = unicode.SimpleFold(f) {
		if f == c {
			return true
		}
	}
	return false
}

// assert evaluates an empty-width assertion at p as Go's regexp does
// over the whole text.
func (r *existsRun) assert(op syntax.Op, p int) bool {
	t := r.text
	switch op {
	case syntax.OpBeginText:
		return p == 0
	case syntax.OpBeginLine:
		return p == 0 || t[p-1] == '\n'
	}
	if p >= r.limit && p < len(t) {
		r.cut = true // the end, a line's end or a word's edge is past limit
	}
	switch op {
	case syntax.OpEndText:
		return p == len(t)
	case syntax.OpEndLine:
		return p == len(t) || t[p] == '\n'
	}
	before, after := rune(-1), rune(-1)
	if p > 0 {
		before, _ = utf8.DecodeLastRuneInString(t[:p])
	}
	if p < len(t) {
		after, _ = utf8.DecodeRuneInString(t[p:])
	}
	b := syntax.IsWordChar(before) != syntax.IsWordChar(after)
	if op == syntax.OpWordBoundary {
		return b
	}
	return !b
}

// anySearch answers whether any of a set of alternatives matches
// anywhere in a text, as an existsProg of each; an alternative that
// requires a word (factors) the text does not hold is not tried, so
// that gitleaks' generic allowlist, forty alternatives, costs what the
// two or three whose words are in the match cost.
type anySearch struct {
	alts    []*existsProg
	always  []int         // alternatives without a required word
	words   *keywordIndex // the required words of the others
	wordAlt [][]int       // word id -> alternatives
}

// newAnySearch compiles re, whose top-level alternatives are tried
// separately. It returns nil when one of them can match the empty
// string (then only Go's regexp answers as gitleaks asks).
func newAnySearch(re *syntax.Regexp) *anySearch {
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		subs = re.Sub
	}
	a := &anySearch{}
	ids := map[string]int{}
	var words []string
	for i, sub := range subs {
		p := compileExists(sub)
		if p.root.nullable {
			return nil
		}
		a.alts = append(a.alts, p)
		fs := factors(sub)
		if fs == nil {
			a.always = append(a.always, i)
			continue
		}
		for _, w := range fs {
			id, ok := ids[w]
			if !ok {
				id = len(words)
				ids[w] = id
				words = append(words, w)
				a.wordAlt = append(a.wordAlt, nil)
			}
			a.wordAlt[id] = append(a.wordAlt[id], i)
		}
	}
	if len(words) > 0 {
		k, err := newKeywordIndex(words)
		if err != nil {
			return nil
		}
		a.words = k
	}
	return a
}

func (a *anySearch) match(run *existsRun, text string) bool {
	for _, i := range a.always {
		if a.alts[i].anywhere(run, text) {
			return true
		}
	}
	if a.words == nil {
		return false
	}
	run.occ = a.words.find(text, 0, len(text), run.occ[:0])
	if len(run.occ) == 0 {
		return false
	}
	if cap(run.tried) < len(a.alts) {
		run.tried = make([]bool, len(a.alts))
	}
	tried := run.tried[:len(a.alts)]
	clear(tried)
	for _, o := range run.occ {
		for _, i := range a.wordAlt[o.id] {
			if !tried[i] {
				tried[i] = true
				if a.alts[i].anywhere(run, text) {
					return true
				}
			}
		}
	}
	return false
}

// factors returns words, folded as the keyword prefilter folds text, one
// of which every match of re holds somewhere, each at least
// minAnchorLen bytes of ASCII; nil when none is known.
func factors(re *syntax.Regexp) []string {
	best := func(cands ...[]string) []string {
		var b []string
		bm := 0
		for _, c := range cands {
			if len(c) == 0 {
				continue
			}
			m := len(c[0])
			for _, s := range c {
				m = min(m, len(s))
			}
			if m > bm || (m == bm && len(c) < len(b)) {
				b, bm = c, m
			}
		}
		return b
	}
	switch re.Op {
	case syntax.OpCapture:
		return factors(re.Sub[0])
	case syntax.OpPlus:
		return factors(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return factors(re.Sub[0])
		}
		return nil
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			f := factors(s)
			if f == nil {
				return nil
			}
			out = append(out, f...)
		}
		return dedupe(out)
	case syntax.OpLiteral, syntax.OpConcat:
		// The strings a suffix of the concatenation begins with are
		// words of the whole; so are a required child's words.
		subs := []*syntax.Regexp{re}
		if re.Op == syntax.OpConcat {
			subs = re.Sub
		}
		var cands [][]string
		for i := range subs {
			tail := &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: subs[i:]}
			if set, _ := prefixes(tail); len(set) > 0 {
				cands = append(cands, asciiWords(set))
			}
			if re.Op == syntax.OpConcat {
				cands = append(cands, factors(subs[i]))
			}
		}
		return best(cands...)
	}
	return nil
}

// asciiWords cuts each string at its first non-ASCII byte, and returns
// nil when one is then shorter than minAnchorLen.
func asciiWords(set []string) []string {
	out := make([]string, 0, len(set))
	for _, s := range set {
		for i := 0; i < len(s); i++ {
			if s[i] >= utf8.RuneSelf {
				s = s[:i]
				break
			}
		}
		if len(s) < minAnchorLen {
			return nil
		}
		out = append(out, min64(s))
	}
	return dedupe(out)
}

func min64(s string) string {
	if len(s) > maxKeywordLen {
		return s[:maxKeywordLen]
	}
	return s
}
