// Package textfold folds text for policy matching: patterns and the
// subjects they are matched against go through the same Fold, so a pattern
// written for "drop table" also sees "DROP\tTABLE", "ＤＲＯＰ TABLE"
// (full-width) and "drop\x00table".
//
// Fold is deliberately lossy in the direction of matching more: a deny or
// requires_approval pattern should catch every spelling the downstream
// server would treat the same, and an auto_approve pattern is never
// matched against text a model wrote (see the evaluator).
package textfold

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Fold returns s in matching form:
//   - invalid UTF-8 bytes become U+FFFD;
//   - Unicode NFKC (compatibility forms: full-width letters, ligatures,
//     superscripts and the like become their plain letters);
//   - lower case;
//   - control characters (NUL, tab, newline, DEL, C1 controls) and every
//     Unicode white space count as white space, and each run of white space
//     becomes one ASCII space; leading and trailing white space is dropped;
//   - format characters (zero-width space and joiners, bidi controls, the
//     BOM) are removed: they are invisible to a reader of the policy.
//
// Text that is already in that form is returned as is, without allocating.
func Fold(s string) string {
	if foldedPrefix(s) == len(s) {
		return s
	}
	// ASCII is its own NFKC form, and lower-casing keeps it so.
	if out, ok := mapASCII(s); ok {
		return out
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	// Lower-casing can make a text that NFKC would compose further
	// ("Y" + ring above has no composed capital, "y" + ring has), so
	// normalise and map until neither changes anything; two rounds are
	// enough in practice, the bound only guards against a surprise.
	for range 4 {
		s = mapRunes(norm.NFKC.String(s))
		if norm.NFKC.IsNormalString(s) {
			break
		}
	}
	return s
}

// mapRunes lower-cases, folds white space and controls into single
// spaces, trims, and drops format characters.
func mapRunes(s string) string {
	if out, ok := mapASCII(s); ok {
		return out
	}
	var b strings.Builder
	b.Grow(len(s))
	pendingSpace := false
	for _, r := range s {
		switch {
		case isSpace(r):
			pendingSpace = true
			continue
		case unicode.Is(unicode.Cf, r):
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

// IsSpace reports whether Fold treats r as white space.
func IsSpace(r rune) bool { return isSpace(r) }

func isSpace(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsControl(r)
}

// foldedPrefix is the length of the longest prefix of s that is plain
// ASCII Fold would not change, given what follows it: len(s) when Fold
// returns s as it is (the fast path). Anything beyond ASCII ends the
// prefix (NFKC needs it), and so does a space that turns out to trail.
func foldedPrefix(s string) int {
	prevSpace := true // a leading space is not folded
	for i := 0; i < len(s); i++ {
		c := s[i]
		if asciiFold[c] != c || c == ' ' && prevSpace {
			return i
		}
		prevSpace = c == ' '
	}
	if prevSpace && s != "" {
		return len(s) - 1
	}
	return len(s)
}

// mapASCII is mapRunes for ASCII text, a byte at a time into a buffer
// on the stack for the usual short text (a strings.Builder's per-byte
// checks cost more than the copy String then makes). ok is false, and
// nothing is returned, when s is not ASCII.
func mapASCII(s string) (out string, ok bool) {
	// Trimmed first, every run of white space left is followed by a word,
	// so its first byte can be written as a space at once.
	for len(s) > 0 && asciiFold[s[len(s)-1]] == ' ' {
		s = s[:len(s)-1]
	}
	for len(s) > 0 && asciiFold[s[0]] == ' ' {
		s = s[1:]
	}
	var small [256]byte
	buf := small[:]
	if len(s) > len(small) {
		buf = make([]byte, len(s))
	}
	n, space := 0, false
	for i := 0; i < len(s); i++ {
		c := asciiFold[s[i]]
		switch {
		case c == notASCII:
			return "", false
		case c == ' ' && space:
			continue
		}
		space = c == ' '
		buf[n] = c
		n++
	}
	return string(buf[:n]), true
}

// FoldByte is what Fold makes of an ASCII byte before it collapses white
// space: upper case to lower, white space and controls to ' ', anything
// else itself. ok is false for a byte beyond ASCII, which only Fold of
// the whole text can fold (NFKC).
func FoldByte(b byte) (folded byte, ok bool) {
	f := asciiFold[b]
	return f, f != notASCII
}

// notASCII is what asciiFold maps a byte beyond ASCII to: no ASCII
// byte folds to NUL (it is a control, so a space).
const notASCII = 0

// asciiFold maps an ASCII byte to what mapRunes makes of it: upper case
// to lower, white space and controls to ' ' (folded by the caller), and
// every other byte to notASCII.
var asciiFold = func() (t [256]byte) {
	for c := range utf8.RuneSelf {
		switch {
		case c <= ' ' || c == 0x7f:
			t[c] = ' '
		case c >= 'A' && c <= 'Z':
			t[c] = byte(c) + 'a' - 'A'
		default:
			t[c] = byte(c)
		}
	}
	return t
}()
