package secrets

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// How a rule's regex is run. gitleaks runs every rule whose keyword
// occurs anywhere in a fragment over the whole fragment. That is
// exact but slow: the semi-generic rules begin with [\w.-]{0,50}?,
// which no literal prefix speeds up, and generic-api-key's keywords
// ("api", "key", "token", "auth", "access") are in almost every tool
// result, so that alone costs about 300 µs per KB in Go's regexp.
//
// Most rules can be run where their matches begin instead, with the
// same findings. When every match of an alternative of the regex
// (after an optional lazy bounded run of one character class, the
// [\w.-]{0,50}? of the semi-generic rules) begins with one of a few
// strings (a keyword of the rule, or a literal prefix of three bytes
// or more), the matches FindAll would report are exactly those found
// by trying the alternative anchored at each occurrence of those
// strings in turn, extending the match left over the lazy run as far
// as it reaches, and taking at each step the leftmost match of any
// alternative (the first alternative on a tie, as leftmost-first
// does). TestPlansAgreeWithGitleaks checks it on every text of the
// corpora and FuzzPlans on any text. The rest run gitleaks' way over
// each window. Either way a rule runs only where one of its keywords
// is, as in gitleaks.
type planKind uint8

const (
	// planWhole runs the regex over the window when one of the rule's
	// keywords is in it, as gitleaks does.
	planWhole planKind = iota
	// planAnchored tries the regex at each keyword occurrence.
	planAnchored
)

func (k planKind) String() string {
	if k == planAnchored {
		return "anchored"
	}
	return "whole"
}

// plan is how one rule's regex is run.
type plan struct {
	kind planKind
	why  string // for planWhole: why the rule cannot be anchored
	// For planAnchored: the regex's top-level alternatives, each tried
	// at its own anchors; their matches are merged as FindAll would.
	branches []branch
}

// branch is one alternative of a rule's regex: P X, where P is an
// optional lazy run of at most preMax characters of one class (the
// [\w.-]{0,50}? of gitleaks' semi-generic rules) and every match of X
// begins with one of anchors (folded as the keyword prefilter folds
// text: a keyword of the rule, or a literal prefix of X).
type branch struct {
	anchors []string
	pre     bool
	preMax  int // in runes; the run may be empty
	inPre   func(rune) bool
	// at0 is ^(?:X), for an anchor at the start of the text; at1 is
	// ^(?s:.)(?:X), run from the rune before the anchor, so that \b and
	// ^ inside X see what precedes it. Both are compiled on first use:
	// most rules never match in a session, and Go's programs for them
	// would be most of the ruleset's memory.
	at0, at1 func() *regexp.Regexp
	// maxLen is the most bytes a match of X can span, or -1 when X is
	// unbounded (then it is tried on at most unboundedReach bytes).
	maxLen int
	// exists tells cheaply whether X can match at an anchor at all;
	// Go's regexp runs only where it can (exists.go).
	exists *existsProg
	// followProg is X's program for the follow sets of its anchors,
	// compiled on first use (follow.go).
	followProg func() *syntax.Prog
}

// minAnchorLen is the shortest literal prefix used as an anchor when it
// does not begin with one of the rule's keywords.
const minAnchorLen = 3

// unboundedReach is how far past its anchor a regex without a bound on
// its length (a private key block, curl's header) is tried: a match
// longer than this is not found whole.
const unboundedReach = 64 << 10

// makePlan chooses how a rule's regex is run.
func makePlan(expr string, keywords []string) (plan, error) {
	whole := func(why string, args ...any) (plan, error) {
		return plan{kind: planWhole, why: fmt.Sprintf(why, args...)}, nil
	}
	if len(keywords) == 0 {
		return whole("no keywords")
	}
	for _, k := range keywords {
		if k == "" || len(k) > maxKeywordLen {
			return whole("keyword %q is empty or longer than %d bytes", k, maxKeywordLen)
		}
		for i := 0; i < len(k); i++ {
			if k[i] >= utf8.RuneSelf {
				return whole("keyword %q is not ASCII", k)
			}
		}
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return plan{}, err
	}
	alts := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		alts = re.Sub
	}
	p := plan{kind: planAnchored}
	for _, alt := range alts {
		b, why, err := makeBranch(alt, keywords)
		if err != nil {
			return plan{}, err
		}
		if why != "" {
			return whole("%s", why)
		}
		p.branches = append(p.branches, b)
	}
	return p, nil
}

func makeBranch(re *syntax.Regexp, keywords []string) (branch, string, error) {
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	var b branch
	if first := subs[0]; len(subs) > 1 && first.Op == syntax.OpRepeat && first.Flags&syntax.NonGreedy != 0 &&
		first.Min == 0 && first.Max > 0 && first.Sub[0].Op == syntax.OpCharClass {
		b.pre = true
		b.preMax = first.Max
		cls := first.Sub[0].Rune
		b.inPre = func(r rune) bool {
			for i := 0; i+1 < len(cls); i += 2 {
				if cls[i] <= r && r <= cls[i+1] {
					return true
				}
			}
			return false
		}
		subs = subs[1:]
	}
	x := subs[0]
	if len(subs) > 1 {
		x = &syntax.Regexp{Op: syntax.OpConcat, Flags: re.Flags, Sub: subs}
	}
	set, _ := prefixes(x)
	if len(set) == 0 {
		return b, "no prefix every match begins with", nil
	}
	for _, s := range set {
		a := ""
		for _, k := range keywords {
			if strings.HasPrefix(s, k) {
				a = k
				break
			}
		}
		if a == "" {
			// A literal prefix of its own, cut at the first character the
			// prefilter does not fold (non-ASCII) and at its length limit.
			a = s
			for i := 0; i < len(a); i++ {
				if a[i] >= utf8.RuneSelf {
					a = a[:i]
					break
				}
			}
			if len(a) > maxKeywordLen {
				a = a[:maxKeywordLen]
			}
			if len(a) < minAnchorLen {
				return b, fmt.Sprintf("a match may begin with %q, shorter than %d and no keyword", s, minAnchorLen), nil
			}
		}
		if !slices.Contains(b.anchors, a) {
			b.anchors = append(b.anchors, a)
		}
	}
	// Written out and compiled on first use (TestPlans compiles every
	// one): String alone is half the cost of compiling the ruleset.
	xs := sync.OnceValue(x.String)
	b.at0 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:` + xs() + `)`) })
	b.at1 = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?s:.)(?:` + xs() + `)`) })
	b.maxLen = maxLen(x)
	b.exists = compileExists(x)
	b.followProg = sync.OnceValue(func() *syntax.Prog { return compileFollow(x) })
	return b, "", nil
}

// Limits of the prefix analysis: beyond them a set is cut short, which
// keeps it a set of prefixes (every match still begins with one).
const (
	maxPrefixSet = 256
	maxPrefixLen = 64
)

// prefixes returns strings, folded as the keyword prefilter folds
// text, such that every match of re begins with one of them; exact
// reports that the set is every string re can match, so that what
// follows re may extend them. An empty set means nothing is known.
func prefixes(re *syntax.Regexp) (set []string, exact bool) {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return []string{""}, true
	case syntax.OpLiteral:
		var b strings.Builder
		for _, r := range re.Rune {
			b.WriteRune(foldRune(r))
		}
		return []string{b.String()}, true
	case syntax.OpCharClass:
		n := 0
		for i := 0; i+1 < len(re.Rune); i += 2 {
			n += int(re.Rune[i+1]-re.Rune[i]) + 1
			if n > 16 {
				return nil, false
			}
		}
		seen := map[rune]bool{}
		var out []string
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				f := foldRune(r)
				if !seen[f] {
					seen[f] = true
					out = append(out, string(f))
				}
			}
		}
		return out, true
	case syntax.OpCapture:
		return prefixes(re.Sub[0])
	case syntax.OpConcat:
		acc := []string{""}
		for _, s := range re.Sub {
			set, exact := prefixes(s)
			if len(set) == 0 {
				return acc, false
			}
			next, ok := cross(acc, set)
			if !ok {
				return acc, false
			}
			acc = next
			if !exact {
				return acc, false
			}
		}
		return acc, true
	case syntax.OpAlternate:
		var out []string
		exact := true
		for _, s := range re.Sub {
			set, e := prefixes(s)
			if len(set) == 0 {
				return nil, false
			}
			out = append(out, set...)
			exact = exact && e
		}
		if len(out) > maxPrefixSet {
			return nil, false
		}
		return dedupe(out), exact
	case syntax.OpQuest:
		set, e := prefixes(re.Sub[0])
		if len(set) == 0 {
			return []string{""}, false
		}
		return dedupe(append(set, "")), e
	case syntax.OpPlus:
		set, _ := prefixes(re.Sub[0])
		return set, false
	case syntax.OpRepeat:
		if re.Min == 0 {
			set, e := prefixes(re.Sub[0])
			if len(set) == 0 || re.Max != 1 {
				return []string{""}, false
			}
			return dedupe(append(set, "")), e
		}
		set, e := prefixes(re.Sub[0])
		if len(set) == 0 {
			return nil, false
		}
		acc := set
		for i := 1; i < re.Min && e; i++ {
			next, ok := cross(acc, set)
			if !ok {
				return acc, false
			}
			acc = next
		}
		return acc, e && re.Min == re.Max
	}
	// OpStar, OpAnyChar, OpAnyCharNotNL, OpNoMatch: nothing known.
	return []string{""}, false
}

// cross returns every a+b, or false when the set would grow too big.
// Strings at the length limit are kept as they are (still prefixes).
func cross(as, bs []string) ([]string, bool) {
	if len(as)*len(bs) > maxPrefixSet {
		return nil, false
	}
	out := make([]string, 0, len(as)*len(bs))
	for _, a := range as {
		for _, b := range bs {
			s := a + b
			if len(s) > maxPrefixLen {
				s = a
			}
			out = append(out, s)
		}
	}
	return dedupe(out), true
}

func dedupe(ss []string) []string {
	seen := make(map[string]bool, len(ss))
	out := ss[:0:0]
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// foldRune folds r as the keyword prefilter folds text: ASCII upper
// case to lower, and the two non-ASCII letters that Go's (?i) matches
// for ASCII ones (K KELVIN SIGN for k, ſ LONG S for s) to those.
func foldRune(r rune) rune {
	switch {
	case 'A' <= r && r <= 'Z':
		return r + 'a' - 'A'
	case r == '\u212a':
		return 'k'
	case r == '\u017f':
		return 's'
	}
	return r
}

// maxLen returns the most bytes a match of re can span, or -1.
func maxLen(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpNoMatch:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			w := utf8.RuneLen(r)
			if re.Flags&syntax.FoldCase != 0 {
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					w = max(w, utf8.RuneLen(f))
				}
			}
			n += max(w, 1)
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(re.Rune[len(re.Rune)-1]), 1)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxLen(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n += m
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range re.Sub {
			m := maxLen(s)
			if m < 0 {
				return -1
			}
			n = max(n, m)
		}
		return n
	case syntax.OpQuest:
		return maxLen(re.Sub[0])
	case syntax.OpRepeat:
		if re.Max < 0 {
			return -1
		}
		m := maxLen(re.Sub[0])
		if m < 0 {
			return -1
		}
		return m * re.Max
	}
	return -1 // OpStar, OpPlus
}
