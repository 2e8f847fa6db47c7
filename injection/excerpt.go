package injection

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// excerpt is raw around [from, to): some context before, the match,
// some after, made safe to show (see safe) and at most MaxExcerpt bytes.
func excerpt(raw string, from, to int) string { return excerptOf(raw, from, to, false) }

// excerptOf is excerpt; foreign: letters of other scripts that look
// Latin are written as \u{…} too.
func excerptOf(raw string, from, to int, foreign bool) string {
	const before = 32
	if from < 0 {
		from = 0
	}
	if from > len(raw) {
		from = len(raw)
	}
	start := from - before
	if start < 0 {
		start = 0
	}
	for start > 0 && !utf8.RuneStart(raw[start]) {
		start--
	}
	// Start at a word if one begins near.
	for i := start; i < from && i < start+12; i++ {
		if raw[i] == ' ' || raw[i] == '\n' {
			start = i + 1
			break
		}
	}
	end := start + 4*MaxExcerpt // enough raw text to fill the excerpt
	if end > len(raw) {
		end = len(raw)
	}
	var b strings.Builder
	if start > 0 {
		b.WriteString("…")
	}
	cut := writeSafe(&b, raw[start:end], MaxExcerpt-len("…"), foreign)
	if cut || end < len(raw) {
		s := b.String()
		if len(s)+len("…") > MaxExcerpt {
			s = clipBytes(s, MaxExcerpt-len("…"))
		}
		return strings.TrimRight(s, " ") + "…"
	}
	return b.String()
}

// clip is s made safe to show on one line, cut to at most n bytes, with
// "…" when cut: white space folded to single spaces, and every
// character a reader cannot see (controls, format characters, variation
// selectors, tag characters, blank letters, private use and unassigned
// code points) written as \u{…}.
func clip(s string, n int) string {
	var b strings.Builder
	if writeSafe(&b, s, n-len("…"), false) {
		return strings.TrimRight(b.String(), " ") + "…"
	}
	return b.String()
}

// writeSafe writes s made safe into b, stopping before b would pass max
// bytes; it reports whether it stopped early.
func writeSafe(b *strings.Builder, s string, max int, foreign bool) bool {
	space := false
	for _, r := range s {
		var piece string
		switch {
		case r == utf8.RuneError:
			piece = `\u{FFFD}` // invalid UTF-8, or the replacement character itself
		case r == '\n' || r == '\t' || r == '\r' || r == ' ' || (unicode.IsSpace(r) && r != 0x85 && r != 0x2028 && r != 0x2029):
			if r == ' ' || r == '\n' || r == '\t' || r == '\r' {
				space = true
				continue
			}
			piece = escapeRune(r) // a space that is not ' ' is shown for what it is
		case invisible(r):
			piece = escapeRune(r)
		case foreign && r >= 0x370 && isConfusable(r):
			piece = escapeRune(r)
		default:
			piece = string(r)
		}
		if space {
			if b.Len() > 0 {
				if b.Len()+1 > max {
					return true
				}
				b.WriteByte(' ')
			}
			space = false
		}
		if b.Len()+len(piece) > max {
			return true
		}
		b.WriteString(piece)
	}
	return false
}

// invisible reports whether r is a character a reader cannot see, or
// one that changes how the text around it is shown.
func invisible(r rune) bool {
	switch {
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	case r >= 0xE0000 && r <= 0xE007F: // tags
		return true
	case r == 0x034F || r == 0x115F || r == 0x1160 || r == 0x17B4 || r == 0x17B5 || r == 0x2800 || r == 0x3164 || r == 0xFFA0:
		return true
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		return true
	case unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs):
		return true
	case !unicode.IsPrint(r) && !unicode.IsSpace(r):
		return true // unassigned, noncharacters
	}
	return false
}

func escapeRune(r rune) string {
	return `\u{` + strings.ToUpper(strconv.FormatInt(int64(r), 16)) + `}`
}

// isConfusable: r is a letter of another script that looks Latin.
func isConfusable(r rune) bool {
	r = unicode.ToLower(r)
	_, ok := confusables[r]
	return ok && !unicode.Is(unicode.Latin, r)
}

// clipBytes cuts s to at most n bytes at a rune boundary.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// escapeForeign is a word made safe, its letters of other scripts that
// look Latin written as \u{…}, so that "ignоre" shows as "ign\u{43E}re".
func escapeForeign(w string) string {
	var b strings.Builder
	for _, r := range w {
		if isConfusable(r) || invisible(r) {
			b.WriteString(escapeRune(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
