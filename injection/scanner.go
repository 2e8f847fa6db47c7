package injection

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// Scanner scans texts with one set of Options. Build it once (the names
// of the other servers' tools are indexed then) and use it for every
// text of a listing or of a session; it is safe for concurrent use.
type Scanner struct {
	opts    Options
	budget  int
	maxText int
	// tools maps a tool name, folded to its letters and digits, to how
	// it may be mentioned; own holds the folded names of OwnTools.
	tools map[string]toolName
	// toolEnds has a bit set for the last two bytes of every key of
	// tools: a name must end a chunk, and most chunks end otherwise.
	toolEnds [1 << 16 / 64]uint64
	// toolFirst and toolLast have a bit per length and first (last)
	// byte of every key of tools up to 64 bytes: a key that passes both
	// may be a name, and only then is the map (a few cold cache lines
	// per lookup in the serving process) asked.
	toolFirst, toolLast nameEnds
	// full: take the full path everywhere, none of the shortcuts that
	// skip work which cannot change a finding (whole ASCII words folded
	// at once, the lexicon's table, sentences without markup). Only the
	// differential tests set it, to prove the shortcuts change nothing.
	full bool
}

// mayBeTool: key may be a key of tools (false: it is not).
func (s *Scanner) mayBeTool(key []byte) bool {
	n := len(key)
	return n >= len(s.toolLast) || s.toolFirst.has(n, key[0]) && s.toolLast.has(n, key[n-1])
}

func (s *Scanner) mayEndTool(a, b byte) bool {
	k := uint16(a)<<8 | uint16(b)
	return s.toolEnds[k/64]&(1<<(k%64)) != 0
}

// toolName is one name of another server's tool.
type toolName struct {
	name string // as given, for the finding
	// plain: the name is one ordinary word ("fetch", "search"), which
	// counts as a mention only where the text treats it as a name: in
	// quotes or backticks, followed by "()" or "tool", after "call".
	plain bool
}

// New returns a Scanner for opts.
func New(opts Options) *Scanner {
	s := &Scanner{opts: opts, budget: opts.Budget, maxText: opts.MaxText}
	if s.budget <= 0 {
		s.budget = DefaultBudget
	}
	if s.maxText <= 0 {
		s.maxText = DefaultMaxText
	}
	own := map[string]bool{}
	for _, n := range opts.OwnTools {
		own[toolKey(n)] = true
	}
	for _, n := range opts.OtherTools {
		k := toolKey(n)
		if len(k) < 2 || own[k] {
			continue
		}
		if s.tools == nil {
			s.tools = map[string]toolName{}
		}
		if _, dup := s.tools[k]; !dup {
			s.tools[k] = toolName{name: n, plain: isPlainName(n)}
			e := uint16(k[len(k)-2])<<8 | uint16(k[len(k)-1])
			s.toolEnds[e/64] |= 1 << (e % 64)
			if n := len(k); n < len(s.toolLast) {
				s.toolFirst[n][k[0]/64] |= 1 << (k[0] % 64)
				s.toolLast[n][k[n-1]/64] |= 1 << (k[n-1] % 64)
			}
		}
	}
	return s
}

// toolKey folds a tool name to its letters and digits in lower case:
// send_email, send-email, sendEmail and SEND_EMAIL are one name.
func toolKey(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isPlainName: the name is a single lower-case word without digits or
// separators, one that ordinary prose uses.
func isPlainName(name string) bool {
	for _, r := range name {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// Scan scans one text.
func Scan(text string, opts Options) []Finding {
	return New(opts).Scan(text)
}

// Scan scans one text.
func (s *Scanner) Scan(text string) []Finding {
	b := s.Batch()
	b.Text("", text)
	return b.Findings()
}

// Batch scans several texts against one budget: the members of one tool
// definition, the content blocks of one tool result (Text for each
// block, Value for structuredContent). A Batch belongs to one goroutine.
type Batch struct {
	s         *Scanner
	remaining int
	findings  []Finding
	// index finds a finding by where and rule, to count repeats.
	index map[findingKey]int
	// over: the budget ran out; cut: bytes left unread.
	over bool
	cut  int
	// cutWhere is the first text that was not read to its end.
	cutWhere string
	// depth is how deep the walk of a JSON value is; tooDeep: a value
	// went deeper than maxDepth (and was said to).
	depth   int
	tooDeep bool
}

type findingKey struct{ where, rule string }

// maxFindings bounds the findings of a batch: past it, a finding of a
// rule already reported (at any place) is counted, not added.
const maxFindings = 64

// Batch starts a batch of texts.
func (s *Scanner) Batch() *Batch {
	return &Batch{s: s, remaining: s.budget}
}

// Text scans text, found at where.
func (b *Batch) Text(where, text string) { b.text(where, text, false) }

func (b *Batch) text(where, text string, noTools bool) {
	if text == "" {
		return
	}
	if !b.s.opts.Data && len(text) > b.s.maxText {
		b.add(Finding{Kind: Oversize, Confidence: Low, Rule: "oversize", Where: where,
			Excerpt: excerpt(text, 0, 0),
			Say:     fmt.Sprintf("is %s long, more than a description needs (%s)", size(len(text)), size(b.s.maxText))})
	}
	n := len(text)
	if n > b.remaining {
		n = b.remaining
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		if !b.over {
			b.cutWhere = where
		}
		b.over = true
		b.cut += len(text) - n
	}
	b.remaining -= n
	if n > 0 {
		st := getState(b, where, text[:n], false)
		st.noTools = noTools
		st.run()
		putState(st)
	}
}

// Findings ends the batch: its findings, High before Low, in the order
// found. Text past the budget is one Unscanned finding.
func (b *Batch) Findings() []Finding {
	if b.over {
		where := b.cutWhere
		b.add(Finding{Kind: Unscanned, Confidence: High, Rule: "budget", Where: where,
			Say: fmt.Sprintf("not scanned past %s: %s more were not read", size(b.s.budget), size(b.cut))})
		b.over = false
	}
	if len(b.findings) == 0 {
		return nil // most texts: no clone, no sort to run cold
	}
	out := slices.Clone(b.findings)
	slices.SortStableFunc(out, func(x, y Finding) int { return int(y.Confidence) - int(x.Confidence) })
	return out
}

// counted counts a finding of rule at where if one at least as
// confident is recorded already (or, the batch being full, one of the
// rule anywhere), and reports whether it did.
func (b *Batch) counted(where, rule string, conf Confidence) bool {
	if i, ok := b.index[findingKey{where, rule}]; ok && b.findings[i].Confidence >= conf {
		b.findings[i].Count++
		return true
	}
	if len(b.findings) >= maxFindings {
		for i := range b.findings {
			if g := &b.findings[i]; g.Rule == rule && g.Confidence >= conf {
				g.Count++
				return true
			}
		}
	}
	return false
}

// add records f, or counts it against the same rule at the same place.
// A repeat that is more confident than the one recorded replaces it.
func (b *Batch) add(f Finding) {
	if f.Count == 0 {
		f.Count = 1
	}
	k := findingKey{f.Where, f.Rule}
	if len(b.findings) >= maxFindings {
		k.where = "\x00" // full: one per rule, whatever the place
		for i, g := range b.findings {
			if g.Rule == f.Rule {
				b.bump(i, f)
				return
			}
		}
	}
	if i, ok := b.index[k]; ok {
		b.bump(i, f)
		return
	}
	if b.index == nil {
		b.index = map[findingKey]int{}
	}
	b.index[k] = len(b.findings)
	b.findings = append(b.findings, f)
}

func (b *Batch) bump(i int, f Finding) {
	g := &b.findings[i]
	n := g.Count + f.Count
	if f.Confidence > g.Confidence {
		*g = f
	}
	g.Count = n
}

// size writes a byte count as people read it.
func size(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// statePool keeps the scan buffers of finished scans: a scan of every
// tool result must not allocate them afresh.
var statePool = sync.Pool{New: func() any { return new(state) }}

func getState(b *Batch, where, raw string, hidden bool) *state {
	loadLexicon()
	st := statePool.Get().(*state)
	st.reset(b, where, raw, hidden)
	return st
}

func putState(st *state) {
	if cap(st.fb) > 64<<10 {
		return // a huge sentence once: let it go
	}
	st.b = nil
	statePool.Put(st)
}
