package injection

import "unicode"

// confusables maps the lower-case letters of other scripts that look
// like a Latin letter to that letter (from Unicode's confusables.txt,
// the letters a Latin word can be spelled with unseen). Folding maps
// them, so that "ignоre" with a Cyrillic о matches "ignore", and a
// Latin word that holds one is a finding.
var confusables = map[rune]byte{
	// Cyrillic
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k',
	'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x',
	'ѕ': 's', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ү': 'y', 'ь': 'b', 'п': 'n',
	'ԍ': 'g', 'ҳ': 'x', 'ӕ': 'a', 'ѵ': 'v',
	// Greek
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o',
	'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'γ': 'y', 'ϲ': 'c', 'ϳ': 'j', 'ζ': 'z', 'ω': 'w',
	// Armenian
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'հ': 'h', 'ո': 'n', 'ա': 'w', 'զ': 'q', 'ք': 'p',
	// Latin letters that look like plain ones: folded, never a finding
	// (Turkish writes ı among Latin letters).
	'ı': 'i', 'ɑ': 'a', 'ɩ': 'i', 'ɡ': 'g', 'ſ': 's',
}

// scriptOf names the script of a look-alike letter.
func scriptOf(r rune) string {
	switch {
	case unicode.Is(unicode.Cyrillic, r):
		return "Cyrillic"
	case unicode.Is(unicode.Greek, r):
		return "Greek"
	case unicode.Is(unicode.Armenian, r):
		return "Armenian"
	}
	return "non-Latin"
}
