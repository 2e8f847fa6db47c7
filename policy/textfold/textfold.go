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
	if isFolded(s) {
		return s
	}
	if isASCII(s) {
		// ASCII is its own NFKC form, and lower-casing keeps it so.
		return mapASCII(s)
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
	if isASCII(s) {
		return mapASCII(s)
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

// isFolded is the fast path: plain ASCII text that Fold would not change.
// Anything beyond ASCII takes the full path (NFKC needs it).
func isFolded(s string) bool {
	prevSpace := true // a leading space is not folded
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return false
		case c == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
		case c < ' ' || c == 0x7f, c >= 'A' && c <= 'Z':
			return false
		default:
			prevSpace = false
		}
	}
	return !prevSpace || s == ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// mapASCII is mapRunes for ASCII text, a byte at a time.
func mapASCII(s string) string {
	var b strings.Builder // one allocation: String does not copy
	b.Grow(len(s))
	pendingSpace := false
	for i := 0; i < len(s); i++ {
		c := asciiFold[s[i]]
		if c == ' ' {
			pendingSpace = true
			continue
		}
		if pendingSpace && b.Len() > 0 {
			b.WriteByte(' ')
		}
		pendingSpace = false
		b.WriteByte(c)
	}
	return b.String()
}

// asciiFold maps an ASCII byte to what mapRunes makes of it: upper case
// to lower, white space and controls to ' ' (folded by the caller).
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for c := range t {
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
