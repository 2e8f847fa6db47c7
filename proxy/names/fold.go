package names

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Names are compared in three forms, each coarser than the one before:
//
//	basic     NFKC, lower case, letters and digits only: "GitHub",
//	          "git-hub" and "ｇｉｔｈｕｂ" are one name, written two ways.
//	folded    basic, with accents dropped and the letters of other
//	          scripts that look like Latin ones read as those ("gіthub"
//	          with a Cyrillic і, "githuƅ").
//	skeleton  folded, with the characters people mistake for each other
//	          in a name read as one: 0 and o; 1, i and l; 3 and e;
//	          4 and a; 5 and s; 7 and t; 8 and b; 9 and g; rn and m;
//	          vv and w ("fi1esystem", "githuh" is not one: h is no b).

// basic is a name as people mean it: NFKC, lower case, letters and
// digits only.
func basic(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKC.String(s) {
		r = unicode.ToLower(r)
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// folded is a name as it looks: basic, accents dropped, lookalikes of
// other scripts read as the Latin letters they pass for. What is left
// outside a-z and 0-9 stays as it is (a name in another script is its
// own name).
func folded(s string) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(basic(s)) {
		if unicode.Is(unicode.Mn, r) {
			continue // an accent
		}
		if l, ok := lookalikes[r]; ok {
			r = l
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// lookalikes are letters of other scripts (lower case: basic folds case
// first) that pass for a Latin letter in a name: Unicode's confusables
// for a-z, as far as the Cyrillic, Greek, Armenian and Latin-extended
// letters people use for them.
var lookalikes = map[rune]rune{
	// Cyrillic
	'а': 'a', 'в': 'b', 'ь': 'b', 'с': 'c', 'ԁ': 'd', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j',
	'к': 'k', 'ӏ': 'l', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'ԛ': 'q', 'г': 'r', 'ѕ': 's', 'т': 't',
	'ѵ': 'v', 'ԝ': 'w', 'х': 'x', 'у': 'y', 'ӡ': 'z', 'ԍ': 'g',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'γ': 'y', 'ζ': 'z', 'μ': 'u', 'ω': 'w',
	// Armenian
	'օ': 'o', 'ս': 'u', 'հ': 'h', 'ո': 'n', 'ց': 'g', 'զ': 'q',
	// Latin letters that are not a-z
	'ı': 'i', 'ȷ': 'j', 'ƅ': 'b', 'ɑ': 'a', 'ɡ': 'g', 'ɩ': 'i', 'ɪ': 'i', 'ʏ': 'y', 'ᴄ': 'c', 'ᴏ': 'o',
	'ᴠ': 'v', 'ᴡ': 'w', 'ᴢ': 'z', 'ł': 'l', 'ƚ': 'l', 'đ': 'd', 'ħ': 'h', 'ø': 'o', 'ß': 's',
}

// skeleton reads the characters people mistake for each other in a name
// as one (see above).
func skeleton(s string) string {
	s = folded(s)
	s = strings.NewReplacer("rn", "m", "vv", "w").Replace(s)
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '0':
			r = 'o'
		case '1', 'i':
			r = 'l'
		case '3':
			r = 'e'
		case '4':
			r = 'a'
		case '5':
			r = 's'
		case '7':
			r = 't'
		case '8':
			r = 'b'
		case '9':
			r = 'g'
		}
		b.WriteRune(r)
	}
	return b.String()
}
