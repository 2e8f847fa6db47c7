package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gobwas/glob"
)

// MaxPatternLength bounds a pattern's source. Real policy globs are a few
// dozen bytes; the bound keeps a pasted blob from turning every evaluation
// into a long backtracking walk.
const MaxPatternLength = 1024

// Pattern is a compiled glob. The zero Pattern matches nothing.
type Pattern struct {
	// Source is the pattern as written in the configuration.
	Source string
	norm   string
	g      *glob.Pattern
}

// CompilePattern compiles a policy glob. See the package documentation for
// the syntax and the normalisation applied to both sides of a match.
func CompilePattern(src string) (Pattern, error) {
	if !utf8.ValidString(src) {
		return Pattern{}, errors.New("pattern is not valid UTF-8")
	}
	if len(src) > MaxPatternLength {
		return Pattern{}, fmt.Errorf("pattern is %d bytes long; the limit is %d", len(src), MaxPatternLength)
	}
	norm := Normalize(src)
	if norm == "" {
		return Pattern{}, errors.New("pattern is empty")
	}
	// No separators: policy subjects are operation names, dotted
	// server.tool names, free-text hints and argument values, none of which
	// has a path structure that `*` should stop at.
	g, err := glob.Compile(norm)
	if err != nil {
		var se *glob.SyntaxError
		if errors.As(err, &se) {
			if norm == src {
				return Pattern{}, fmt.Errorf("invalid glob: %s (at byte %d)", se.Reason, se.Offset)
			}
			return Pattern{}, fmt.Errorf("invalid glob: %s", se.Reason)
		}
		return Pattern{}, fmt.Errorf("invalid glob: %v", err)
	}
	return Pattern{Source: src, norm: norm, g: g}, nil
}

// Match reports whether subject matches the whole pattern, after both are
// normalised.
func (p Pattern) Match(subject string) bool {
	if p.g == nil {
		return false
	}
	return p.g.Match(Normalize(subject))
}

// MatchNormalized is Match for a subject that has already been through
// Normalize. Evaluators that try many patterns against the same few subjects
// normalise once and call this, which does not allocate.
func (p Pattern) MatchNormalized(normalized string) bool {
	if p.g == nil {
		return false
	}
	return p.g.Match(normalized)
}

// Normalized is the form the glob was compiled from.
func (p Pattern) Normalized() string { return p.norm }

// String returns the source text, so a Pattern prints as it was configured.
func (p Pattern) String() string { return p.Source }

// Normalize folds s for matching: Unicode lower case, every run of Unicode
// white space (including tabs, newlines and no-break spaces) replaced by a
// single ASCII space, and leading and trailing white space removed. Invalid
// UTF-8 bytes become U+FFFD. Patterns and subjects go through the same
// function, so `*drop table*` also catches "DROP\t\tTABLE".
func Normalize(s string) string {
	if isNormalized(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	pendingSpace := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			pendingSpace = true
			continue
		}
		if pendingSpace && b.Len() > 0 {
			b.WriteByte(' ')
		}
		pendingSpace = false
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// isNormalized lets Normalize return its input without allocating in the
// common case of an already lower-case, single-spaced subject.
func isNormalized(s string) bool {
	prevSpace := true // a leading space is not normalised
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == ' ':
				if prevSpace {
					return false
				}
				prevSpace = true
			case c >= 'A' && c <= 'Z', c == '\t', c == '\n', c == '\v', c == '\f', c == '\r':
				return false
			default:
				prevSpace = false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if unicode.IsSpace(r) || unicode.ToLower(r) != r {
			return false
		}
		prevSpace = false
		i += size
	}
	return !prevSpace || s == ""
}
