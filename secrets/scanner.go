package secrets

import (
	_ "embed"
	"fmt"
	"math"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Finding is one credential found in a text. It never holds the secret.
type Finding struct {
	Rule        string // the ruleset's id, e.g. "github-pat", "aws-access-token"; safe to log
	Description string // the rule's words ("GitHub Personal Access Token"); safe to show
	Where       string // the location the caller gave
	Start, End  int    // byte offsets of the secret in the text scanned (redaction, Seen.Add)
	Checked     bool   // the format's checksum verified (for PyPI and JWT, its structure; check.go)
	Digest      string // keyed digest (HMAC-SHA256, per-process key from crypto/rand), e.g. "hmac:1a2b3c4d5e6f"; never the secret
}

// Scanner finds credentials in text by a ruleset; safe for concurrent
// use. Its rules are compiled when a scan first needs one (rule).
type Scanner struct {
	specs []ruleSpec
	// rules holds each rule once compiled; compileMu serializes the
	// compilations (rare: once per rule and process).
	rules     []atomic.Pointer[rule]
	compileMu sync.Mutex
	index     ruleIndex // checked against each rule as it compiles
	global    []*allowlist
	// words are the keywords and anchors (plan.go) of every rule, found
	// in one pass; an occurrence of word w gates the rules keyOf[w] and
	// is a candidate start for the branches anchorOf[w].
	words    *keywordIndex
	keyOf    [][]uint16
	anchorOf [][]branchRef
	skipped  map[string]string
	scratch  sync.Pool
}

// branchRef names branch b of rule r.
type branchRef struct {
	r, b int
	// n is the anchor's length. What may follow it (follow.go) is found
	// on its first occurrence (known) and kept here, in the line the
	// scan reads anyway: follow, need, once ready is set.
	n      int
	ready  atomic.Bool
	follow followSet
	need   int
	anchor string
	prog   func() *syntax.Prog
}

//go:embed gitleaks/gitleaks.toml
var gitleaksTOML []byte

// newDefault makes a Scanner of the embedded ruleset, tuned, from its
// generated index: no rule is compiled yet.
func newDefault() (*Scanner, error) {
	rs, err := parseRuleset(gitleaksTOML)
	if err != nil {
		return nil, err
	}
	if err := tune(rs); err != nil {
		return nil, err
	}
	return newIndexedScanner(rs, defaultIndex)
}

var defaultScanner = sync.OnceValue(func() *Scanner {
	s, err := newDefault()
	if err != nil {
		// The ruleset and its index are embedded and tested; this is a
		// broken build.
		panic(fmt.Sprintf("secrets: the embedded ruleset does not compile: %v", err))
	}
	return s
})

// Default returns the shipped ruleset (gitleaks', with the changes
// tuning.go lists). The Scanner is made on first use; each rule is
// compiled when a text first holds one of its words.
func Default() *Scanner { return defaultScanner() }

// newScanner compiles every rule of rs now and makes a Scanner of
// them: an error in any rule is the ruleset's.
func newScanner(rs *ruleset) (*Scanner, error) {
	rules := make([]*rule, len(rs.specs))
	for i, sp := range rs.specs {
		r, err := compileRule(sp)
		if err != nil {
			return nil, err
		}
		rules[i] = r
	}
	x, err := indexOf(rules)
	if err != nil {
		return nil, err
	}
	s, err := newIndexedScanner(rs, x)
	if err != nil {
		return nil, err
	}
	for i, r := range rules {
		s.rules[i].Store(r)
	}
	return s, nil
}

// newIndexedScanner makes a Scanner of rs whose rules compile when
// first needed, x being their index.
func newIndexedScanner(rs *ruleset, x ruleIndex) (*Scanner, error) {
	if len(x.rules) != len(rs.specs) {
		return nil, fmt.Errorf("secrets: the index has %d rules, the ruleset %d", len(x.rules), len(rs.specs))
	}
	for i, sp := range rs.specs {
		if x.rules[i].id != sp.id {
			return nil, fmt.Errorf("secrets: rule %d is %s, the index has %s", i, sp.id, x.rules[i].id)
		}
	}
	s := &Scanner{
		specs:    rs.specs,
		rules:    make([]atomic.Pointer[rule], len(rs.specs)),
		index:    x,
		global:   rs.global,
		keyOf:    x.keyOf,
		anchorOf: make([][]branchRef, len(x.words)),
		skipped:  rs.skipped,
	}
	for w, refs := range x.anchorOf {
		s.anchorOf[w] = make([]branchRef, len(refs))
		for i, a := range refs {
			ri, b := int(a.r), int(a.b)
			s.anchorOf[w][i] = branchRef{r: ri, b: b, n: len(x.words[w]), anchor: x.words[w],
				prog: func() *syntax.Prog { return s.rule(ri).plan.branches[b].followProg() }}
		}
	}
	kw, err := newKeywordIndex(x.words)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	s.words = kw
	return s, nil
}

// rule returns rule ri, compiled. A rule of the embedded ruleset that
// fails to compile, or disagrees with its generated index, is a broken
// build (the tests compile each): it panics, as Default would.
func (s *Scanner) rule(ri int) *rule {
	if r := s.rules[ri].Load(); r != nil {
		return r
	}
	s.compileMu.Lock()
	defer s.compileMu.Unlock()
	if r := s.rules[ri].Load(); r != nil {
		return r
	}
	r, err := compileRule(s.specs[ri])
	if err == nil {
		if why := s.index.agrees(ri, r); why != "" {
			err = fmt.Errorf("secrets: the index is stale (%s): run go test ./secrets -run TestDefaultIndex -update", why)
		}
	}
	if err != nil {
		panic(fmt.Sprintf("secrets: the embedded ruleset does not compile: %v", err))
	}
	s.rules[ri].Store(r)
	return r
}

// Windows: a text is scanned in windows of windowSize bytes that
// overlap by at least windowOverlap, each cut after a line break where
// one is near. A window owns the matches that begin before the next
// one starts. Rules run over whole windows (planWhole) see at most a
// window, which keeps their cost linear in the text; a match of theirs
// longer than the overlap may be missed across a cut. Anchored rules
// are tried at every keyword of the text and read past the window as
// far as their longest match.
const (
	windowSize    = 64 << 10
	windowOverlap = 8 << 10
)

// shortReach is the input an anchored regex is tried on first: when no
// path of its existence check reads past it, Go's regexp gets that much
// and uses its backtracker, not its slower NFA.
const shortReach = 320

// anchoredBudget bounds, in windows, what a rule's anchored regexes
// may read past shortReach in one window before the rest of the window
// is run gitleaks' way (runAnchored).
const anchoredBudget = 2

// lineCap bounds the line a line-target allowlist is matched against,
// on each side of the match: gitleaks' line allowlists look for what
// stands beside a key (--mount=type=secret, an import statement).
const lineCap = 512

// scratch is one Scan's working memory, reused through a pool.
type scratch struct {
	occ     []occurrence
	cand    [][][]int // per rule and branch: anchor positions the window owns
	gated   []bool    // per rule: one of its keywords is in the window
	some    []bool    // per rule: one of its branches has a candidate in the window
	hit     []bool    // per rule: in touched
	cursor  []int     // per rule: where its last match ended
	ran     []int     // the rules that ran in this scan (whose cursor may be set)
	spent   []int     // per rule: bytes its anchored regexes read past shortReach
	budget  int       // what spent may reach in this window
	touched []int
	pend    []pending
	ex      existsRun
	found   []found
	refuted [][2]int // secrets a format's check refuted
}

// pending is a branch's next match, or its end (done).
type pending struct {
	next       int // index of the next candidate to try
	start, end int
	groups     []int // the match's groups, offsets into the text
	q          int   // the anchor of the match
	ok, done   bool
}

// found is a finding before it gets its digest.
type found struct {
	rule       int
	start, end int // the secret
	matchStart int
	checked    bool
}

func (s *Scanner) getScratch() *scratch {
	if sc, ok := s.scratch.Get().(*scratch); ok {
		return sc
	}
	sc := &scratch{
		cand:   make([][][]int, len(s.rules)),
		gated:  make([]bool, len(s.rules)),
		some:   make([]bool, len(s.rules)),
		hit:    make([]bool, len(s.rules)),
		cursor: make([]int, len(s.rules)),
		spent:  make([]int, len(s.rules)),
	}
	for i, x := range s.index.rules {
		sc.cand[i] = make([][]int, x.branches)
	}
	return sc
}

func (s *Scanner) putScratch(sc *scratch) {
	if cap(sc.occ) > 1<<16 || cap(sc.found) > 1<<12 {
		return // do not keep what one large text needed
	}
	for _, ri := range sc.ran {
		sc.cursor[ri] = 0 // the cursors of the rules that ran: a few lines, not every rule's
	}
	sc.ran = sc.ran[:0]
	sc.found = sc.found[:0]
	sc.refuted = sc.refuted[:0]
	s.scratch.Put(sc)
}

// Scan returns the credentials in text, ordered by where they start.
// where is copied into each Finding. Memory is bounded by a window,
// not by the text (besides the findings), and time is linear in
// len(text).
func (s *Scanner) Scan(where, text string) []Finding {
	if text == "" {
		return nil
	}
	sc := s.getScratch()
	defer s.putScratch(sc)

	for ws := 0; ws < len(text); {
		we := min(len(text), ws+windowSize)
		own := we
		if we < len(text) {
			own = cutPoint(text, ws, we-windowOverlap)
		}
		s.scanWindow(sc, text, ws, we, own)
		ws = own
	}
	fs := s.dedupeGeneric(text, dropRefuted(sc.found, sc.refuted))
	if len(fs) == 0 {
		return nil
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].start != fs[j].start {
			return fs[i].start < fs[j].start
		}
		return fs[i].rule < fs[j].rule
	})
	out := make([]Finding, 0, len(fs))
	for _, f := range fs {
		r := &s.specs[f.rule]
		out = append(out, Finding{
			Rule:        r.id,
			Description: r.tr.Description,
			Where:       where,
			Start:       f.start,
			End:         f.end,
			Checked:     f.checked,
			Digest:      Digest(text[f.start:f.end]),
		})
	}
	return out
}

// cutPoint returns where the window that starts at ws hands over to
// the next: just after a line break in the half window-overlap before
// at, or at itself (moved to a rune's start).
func cutPoint(text string, ws, at int) int {
	lo := max(ws+1, at-windowOverlap/2)
	if i := strings.LastIndexByte(text[lo:at], '\n'); i >= 0 {
		return lo + i + 1
	}
	for at > ws+1 && !utf8.RuneStart(text[at]) {
		at--
	}
	return at
}

func (s *Scanner) scanWindow(sc *scratch, text string, ws, we, own int) {
	sc.occ = s.words.find(text, ws, we, sc.occ[:0])
	if len(sc.occ) == 0 {
		return
	}
	sc.touched = sc.touched[:0]
	touch := func(ri int) {
		if !sc.hit[ri] {
			sc.hit[ri] = true
			sc.touched = append(sc.touched, ri)
		}
	}
	for _, o := range sc.occ {
		for _, ri := range s.keyOf[o.id] {
			sc.gated[ri] = true
			touch(int(ri))
		}
		if o.pos < own {
			for i := range s.anchorOf[o.id] {
				br := &s.anchorOf[o.id][i]
				if !br.follows(text, o.pos) {
					continue
				}
				sc.cand[br.r][br.b] = append(sc.cand[br.r][br.b], o.pos)
				sc.some[br.r] = true
				touch(br.r)
			}
		}
	}
	for _, ri := range sc.touched {
		if sc.gated[ri] {
			r := s.rule(ri)
			if r.plan.kind == planAnchored {
				if sc.some[ri] { // else no branch can match in the window
					sc.ran = append(sc.ran, ri)
					s.runAnchored(sc, ri, text, ws, we, own)
				}
			} else {
				sc.ran = append(sc.ran, ri)
				s.runWhole(sc, ri, text, ws, we, own)
			}
		}
		for b := range sc.cand[ri] {
			sc.cand[ri][b] = sc.cand[ri][b][:0]
		}
		sc.gated[ri] = false
		sc.hit[ri] = false
		sc.some[ri] = false
	}
}

// runAnchored finds rule ri's matches from its branches' candidates:
// each branch's next match from the cursor on, the leftmost of them
// taken (the first branch on a tie), the cursor moved past it, as
// FindAll over the text would (plan.go).
//
// When the regexes read far past their anchors (an unbounded branch,
// such as curl's header rule on a megabyte of one line that says curl
// again and again), more than anchoredBudget times the window, the
// rest of the window is run gitleaks' way instead, which reads it once.
func (s *Scanner) runAnchored(sc *scratch, ri int, text string, ws, we, own int) {
	r := s.rule(ri)
	sc.spent[ri] = 0
	sc.budget = anchoredBudget * (we - ws)
	nb := len(r.plan.branches)
	if cap(sc.pend) < nb {
		sc.pend = make([]pending, nb)
	}
	sc.pend = sc.pend[:nb]
	clear(sc.pend)
	for b := range nb {
		c := sc.cand[ri][b]
		if !sort.IntsAreSorted(c) {
			sort.Ints(c)
		}
	}
	for {
		best := -1
		for b := range nb {
			pd := &sc.pend[b]
			if pd.done {
				continue
			}
			if !pd.ok || pd.q < sc.cursor[ri] {
				s.nextMatch(sc, ri, b, text)
				if pd.done {
					continue
				}
			}
			pd.start = max(pd.start, sc.cursor[ri])
			if best < 0 || pd.start < sc.pend[best].start {
				best = b
			}
		}
		if sc.spent[ri] > sc.budget {
			s.runWhole(sc, ri, text, ws, we, own)
			return
		}
		if best < 0 {
			return
		}
		pd := &sc.pend[best]
		pd.ok = false
		sc.cursor[ri] = pd.end
		s.judge(sc, ri, text, pd.start, pd.end, pd.groups)
	}
}

// nextMatch finds branch b's first match anchored at a candidate at or
// after the cursor.
func (s *Scanner) nextMatch(sc *scratch, ri, b int, text string) {
	br := &s.rule(ri).plan.branches[b]
	pd := &sc.pend[b]
	cand := sc.cand[ri][b]
	cursor := sc.cursor[ri]
	for ; pd.next < len(cand); pd.next++ {
		q := cand[pd.next]
		if q < cursor || (pd.next > 0 && cand[pd.next-1] == q) {
			continue
		}
		// The input: one rune before q (at1) or none (at0), through one
		// rune past the longest match X can have, so that $ and \b at a
		// match's end see what follows it.
		end := min(len(text), q+unboundedReach)
		if br.maxLen >= 0 {
			end = min(len(text), q+br.maxLen+1)
		}
		for end < len(text) && !utf8.RuneStart(text[end]) {
			end++
		}
		from := q
		if q > 0 {
			_, k := utf8.DecodeLastRuneInString(text[:q])
			from = q - k
		}
		// Try the shortest input that decides: when no path of X reads
		// past it, Go's regexp finds over it what it finds over the
		// whole text, and a short input lets it use its backtracker
		// instead of the slower NFA.
		short := min(end, q+shortReach)
		for short < end && !utf8.RuneStart(text[short]) {
			short++
		}
		if !br.exists.exists(&sc.ex, text, q, short) {
			continue
		}
		if sc.ex.cut {
			// A path reads past short: Go's regexp gets the whole reach,
			// and what it may read past shortReach is counted.
			short = end
			sc.spent[ri] += max(0, end-q-shortReach)
			if sc.spent[ri] > sc.budget {
				pd.done = true // runAnchored goes the whole window's way
				return
			}
		}
		var loc []int
		if q == 0 {
			loc = br.at0().FindStringSubmatchIndex(text[:short])
		} else {
			loc = br.at1().FindStringSubmatchIndex(text[from:short])
		}
		if loc == nil {
			continue
		}
		e := from + loc[1]
		if br.maxLen < 0 && e == end && end < len(text) {
			continue // it may end there only because the input does
		}
		start := q
		if br.pre {
			// The lazy run before the anchor: the match starts as far
			// left as the run's class and bound allow, not before the
			// cursor.
			for n := 0; n < br.preMax && start > cursor; n++ {
				c, k := utf8.DecodeLastRuneInString(text[:start])
				if !br.inPre(c) {
					break
				}
				start -= k
			}
		}
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += from
			}
		}
		pd.next++
		*pd = pending{next: pd.next, start: start, end: e, groups: loc, q: q, ok: true}
		return
	}
	pd.done = true
}

// runWhole runs rule ri's regex over the window, as gitleaks runs it
// over a fragment, and keeps the matches the window owns.
func (s *Scanner) runWhole(sc *scratch, ri int, text string, ws, we, own int) {
	r := s.rule(ri)
	for _, loc := range r.re().FindAllStringSubmatchIndex(text[ws:we], -1) {
		for i := range loc {
			if loc[i] >= 0 {
				loc[i] += ws
			}
		}
		start, end := loc[0], loc[1]
		if start >= own {
			break
		}
		if start < sc.cursor[ri] {
			continue
		}
		sc.cursor[ri] = end
		s.judge(sc, ri, text, start, end, loc)
	}
}

// judge applies to one match what gitleaks' detectRule applies after
// the regex: the secret group, entropy, the global and the rule's
// allowlists; then the format's own check. groups are the match's
// groups as the regex found them in the text (offsets into it), or nil.
func (s *Scanner) judge(sc *scratch, ri int, text string, start, end int, groups []int) {
	s.judgeAs(sc, ri, text, start, end, groups, false)
}

// judgeAs is judge; literal takes the groups as gitleaks does, from
// Go's regexp over the trimmed match (the reference of the tests).
func (s *Scanner) judgeAs(sc *scratch, ri int, text string, start, end int, groups []int, literal bool) {
	r := s.rule(ri)
	m := text[start:end]
	match := strings.Trim(m, "\n")
	if match == "" {
		return
	}
	lead := len(m) - len(strings.TrimLeft(m, "\n"))
	secStart, secEnd := lead, lead+len(match) // within m
	if r.ncap > 0 {
		// gitleaks runs the regex again over the trimmed match for its
		// groups: the secret is secretGroup, or the first group that
		// matched something. When nothing was trimmed, the groups found
		// in the text are those (TestPlansAgreeWithGitleaks compares).
		var g []int
		if groups != nil && len(match) == len(m) && !literal {
			g = make([]int, len(groups))
			for i, o := range groups {
				g[i] = -1
				if o >= 0 {
					g[i] = o - start
				}
			}
		} else if literal {
			g = r.re().FindStringSubmatchIndex(match)
		} else {
			g = s.groupsIn(ri, match)
		}
		if g != nil {
			if r.secretGroup > 0 {
				a, b := g[2*r.secretGroup], g[2*r.secretGroup+1]
				if a < 0 || a == b {
					return // an empty secret is no credential
				}
				secStart, secEnd = lead+a, lead+b
			} else {
				for i := 1; i < len(g)/2; i++ {
					if a, b := g[2*i], g[2*i+1]; a >= 0 && b > a {
						secStart, secEnd = lead+a, lead+b
						break
					}
				}
			}
		}
	}
	secret := m[secStart:secEnd]
	if r.entropy != 0 && shannonEntropy(secret) <= r.entropy {
		return
	}
	line := ""
	for _, lists := range [][]*allowlist{s.global, r.allow} {
		for _, a := range lists {
			if a.target == targetLine && line == "" {
				line = lineAround(text, start, end)
			}
			if a.allowed(&sc.ex, secret, match, line) {
				return
			}
		}
	}
	checked := false
	if r.check != nil {
		if !r.check(secret) {
			// Not a credential of this format: nor are these characters
			// one for a generic rule (a sample token with a made-up tail
			// in "token: ghp_…" is no generic key either).
			sc.refuted = append(sc.refuted, [2]int{start + secStart, start + secEnd})
			return
		}
		checked = true
	}
	sc.found = append(sc.found, found{
		rule:       ri,
		start:      start + secStart,
		end:        start + secEnd,
		matchStart: start,
		checked:    checked,
	})
}

// anchors reports whether word id is an anchor of branch b of rule ri.
func (s *Scanner) anchors(id uint16, ri, b int) bool {
	for i := range s.anchorOf[id] {
		if br := &s.anchorOf[id][i]; br.r == ri && br.b == b {
			return true
		}
	}
	return false
}

// groupsIn returns what rule ri's regex's FindStringSubmatchIndex(m)
// returns, found the anchored way when the rule has an anchored plan
// (the whole regex's leftmost match: each branch's first, the leftmost
// of them, the first branch on a tie), which spares Go's NFA the
// semi-generic regexes (tens of µs for a line).
func (s *Scanner) groupsIn(ri int, m string) []int {
	r := s.rule(ri)
	if r.plan.kind != planAnchored {
		return r.re().FindStringSubmatchIndex(m)
	}
	occ := s.words.find(m, 0, len(m), nil)
	sort.SliceStable(occ, func(i, j int) bool { return occ[i].pos < occ[j].pos })
	var best []int
	for b := range r.plan.branches {
		br := &r.plan.branches[b]
		for _, o := range occ {
			if !s.anchors(o.id, ri, b) {
				continue
			}
			q := o.pos
			var loc []int
			from := q
			if q == 0 {
				loc = br.at0().FindStringSubmatchIndex(m)
			} else {
				_, k := utf8.DecodeLastRuneInString(m[:q])
				from = q - k
				loc = br.at1().FindStringSubmatchIndex(m[from:])
			}
			if loc == nil {
				continue
			}
			for i := range loc {
				if loc[i] >= 0 {
					loc[i] += from
				}
			}
			start := q
			if br.pre {
				for n := 0; n < br.preMax && start > 0; n++ {
					c, k := utf8.DecodeLastRuneInString(m[:start])
					if !br.inPre(c) {
						break
					}
					start -= k
				}
			}
			loc[0] = start
			if best == nil || start < best[0] {
				best = loc
			}
			break
		}
	}
	return best
}

// dropRefuted drops the findings without a check of their own whose
// secret overlaps one a format's check refuted.
func dropRefuted(fs []found, refuted [][2]int) []found {
	if len(refuted) == 0 {
		return fs
	}
	// Sorted by start, with the furthest end of each prefix: a secret
	// [s, e) overlaps one iff among those starting before e the
	// furthest end is past s.
	sort.Slice(refuted, func(i, j int) bool { return refuted[i][0] < refuted[j][0] })
	reach := make([]int, len(refuted))
	for i, r := range refuted {
		reach[i] = r[1]
		if i > 0 {
			reach[i] = max(reach[i], reach[i-1])
		}
	}
	out := fs[:0]
	for _, f := range fs {
		if !f.checked {
			n := sort.Search(len(refuted), func(i int) bool { return refuted[i][0] >= f.end })
			if n > 0 && reach[n-1] > f.start {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// lineAround returns the lines the match [start, end) is on, from the
// line break before it (gitleaks includes it) to the one after it, at
// most lineCap bytes on each side. gitleaks takes everything from the
// text's start when the match is on the last line; this does not, so
// that an "import … from" anywhere above cannot hide a key below.
func lineAround(text string, start, end int) string {
	lo := max(0, start-lineCap)
	if i := strings.LastIndexByte(text[lo:start], '\n'); i >= 0 {
		lo += i
	}
	hi := min(len(text), end+lineCap)
	if i := strings.IndexAny(text[end:hi], "\n"); i >= 0 {
		hi = end + i
	}
	return text[lo:hi]
}

// dedupeGeneric drops a finding of a generic rule when a finding of
// another, specific rule whose match starts on the same line holds its
// secret, as gitleaks' filter does. A line break belongs to the line
// after it, as in gitleaks' location. On a line with more than
// maxSpecificPerLine specific findings, only those that overlap the
// generic one are looked at, which keeps a line of thousands of
// findings from costing their square.
func (s *Scanner) dedupeGeneric(text string, fs []found) []found {
	generic := func(f found) bool { return strings.Contains(s.specs[f.rule].id, "generic") }
	nGeneric := 0
	for _, f := range fs {
		if generic(f) {
			nGeneric++
		}
	}
	if nGeneric == 0 || nGeneric == len(fs) {
		return fs
	}
	// The line of each match start, in one pass over the text.
	starts := make([]int, 0, len(fs))
	for _, f := range fs {
		starts = append(starts, f.matchStart)
	}
	slices.Sort(starts)
	starts = slices.Compact(starts)
	lineOf := make(map[int]int, len(starts))
	line, at := 0, 0
	for _, p := range starts {
		line += strings.Count(text[at:p+1], "\n") // the break at p is on the line after it
		at = p + 1
		lineOf[p] = line
	}
	specific := map[int][]found{}
	for _, f := range fs {
		if !generic(f) {
			l := lineOf[f.matchStart]
			specific[l] = append(specific[l], f)
		}
	}
	out := fs[:0:0]
	for _, f := range fs {
		if generic(f) {
			secret := text[f.start:f.end]
			same := specific[lineOf[f.matchStart]]
			held := false
			for _, g := range same {
				if len(same) > maxSpecificPerLine && (g.end <= f.start || f.end <= g.start) {
					continue
				}
				if g.rule != f.rule && strings.Contains(text[g.start:g.end], secret) {
					held = true
					break
				}
			}
			if held {
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// maxSpecificPerLine: see dedupeGeneric.
const maxSpecificPerLine = 64

// shannonEntropy is gitleaks' shannonEntropy: bits per character over
// the secret's runes, divided by its length in bytes.
func shannonEntropy(data string) float64 {
	if data == "" {
		return 0
	}
	var ascii [128]int
	var other map[rune]int
	for _, c := range data {
		if c < 128 {
			ascii[c]++
		} else {
			if other == nil {
				other = map[rune]int{}
			}
			other[c]++
		}
	}
	inv := 1.0 / float64(len(data))
	e := 0.0
	add := func(n int) {
		f := float64(n) * inv
		e -= f * math.Log2(f)
	}
	for _, n := range ascii {
		if n > 0 {
			add(n)
		}
	}
	for _, n := range other {
		add(n)
	}
	return e
}
