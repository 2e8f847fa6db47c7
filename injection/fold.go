package injection

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// state is one text being scanned: a single pass over its runes that
// notes what a reader cannot see, and writes the rest, folded, into the
// current sentence, which is matched when it ends. Memory is bounded by
// the longest sentence (maxSentence), whatever the size of the text.
type state struct {
	b     *Batch
	where string
	raw   string

	// The current sentence, folded: lower case, NFKD without marks,
	// look-alike letters as the Latin ones, white space as one space,
	// invisible characters dropped; fo[i] is the raw offset fb[i] came
	// from. Bytes of fb before report were matched already (a long
	// sentence is cut with an overlap).
	fb     []byte
	fo     []int32
	words  []word
	chunks []chunk
	nb     []byte // NFKD of one rune
	// sentence holds what the current sentence mentions.
	sentence sentenceNotes

	// Runs of invisible characters that carry data (their counts are
	// marks').
	tagRun, vsRun []byte

	progress
}

// progress is what a scan notes as it goes, none of it a pointer: reset
// clears it at once, where clearing the whole state field by field, with
// a write barrier's check for each pointer, was a kilobyte and a half of
// code run cold at every text.
type progress struct {
	data    bool
	hidden  bool // raw was decoded from invisible characters
	noTools bool // the tool's own name: mentions of other tools are item 5's business

	report int
	// gates says which matchers the sentence needs (tokenize; flush);
	// phraseGate is gatePhrase once a word that starts a phrase is met.
	gates, phraseGate uint8

	// White space between visible characters.
	inSpace  bool
	hspace   int
	newlines int
	spaceAt  int

	// The current word, for mixed scripts.
	inWord   bool
	wLatin   bool
	wForeign rune
	wAt      int

	prev rune // the rune before, visible or not

	// innerScans counts the scans of decoded hidden text: a text of a
	// million tiny runs is one finding, not a million scans.
	innerScans int

	// Runs of invisible characters that carry data.
	tagN, tagAt        int
	tagBase            rune
	vsN, vsAt          int
	zw, zwAt           int
	bidi, bidiAt       int
	override           bool
	marks, marksAt     int
	esc, escAt         int
	conceal            bool
	backspace, bsAt    int
	ctrl, ctrlAt       int
	lonelyCR, lonelyAt int
}

// word is one word of the sentence: fb[a:b], with what the lexicon
// knows of it.
type word struct {
	a, b    int32
	id      uint16
	classes wordClass
	start   bool  // first of its sentence, or after a colon or a bullet
	chunk   int32 // the chunk it is in
}

// chunk is a run of fb without spaces: a path, an address, a name;
// has ORs the chunkByte classes of its bytes.
type chunk struct {
	a, b int32
	has  uint8
}

const (
	// maxSentence bounds a sentence in folded bytes: a longer one is
	// matched in parts that overlap by sentenceOverlap, so that no
	// phrase is lost at a cut.
	maxSentence     = 2048
	sentenceOverlap = 512
	// padSpaces and padLines are white space long enough to push the
	// text after it out of view.
	padSpaces = 64
	padLines  = 8
	// manyZeroWidth zero-width characters inside words are hiding, not
	// a stray paste.
	manyZeroWidth = 3
	// maxInnerScans bounds the scans of hidden text per text.
	maxInnerScans = 16
)

func (st *state) reset(b *Batch, where, raw string, hidden bool) {
	st.b, st.where, st.raw = b, where, raw
	st.nb, st.fb, st.fo, st.words, st.chunks, st.tagRun, st.vsRun = st.nb[:0], st.fb[:0], st.fo[:0], st.words[:0], st.chunks[:0], st.tagRun[:0], st.vsRun[:0]
	n := &st.sentence
	n.classes = 0
	n.paths, n.vars, n.addrs, n.urls, n.mentions, n.matched = n.paths[:0], n.vars[:0], n.addrs[:0], n.urls[:0], n.mentions[:0], n.matched[:0]
	st.progress = progress{data: b.s.opts.Data, hidden: hidden}
}

// ascii classes of the rune loop.
const (
	aPunct = iota
	aLetter
	aDigit
	aSpace
	aNewline
	aCR
	aCtrl
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for c := range utf8.RuneSelf {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			t[c] = aLetter
		case c >= '0' && c <= '9':
			t[c] = aDigit
		case c == ' ' || c == '\t':
			t[c] = aSpace
		case c == '\n' || c == '\v' || c == '\f':
			t[c] = aNewline
		case c == '\r':
			t[c] = aCR
		case c < ' ' || c == 0x7f:
			t[c] = aCtrl
		default:
			t[c] = aPunct
		}
	}
	return t
}()

// run scans the whole of st.raw.
func (st *state) run() {
	raw := st.raw
	for i := 0; i < len(raw); {
		c := raw[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(raw[i:])
			st.nonASCII(r, i, n)
			st.prev = r
			i += n
			continue
		}
		if st.tagN > 0 || st.vsN > 0 {
			st.endRuns()
		}
		switch asciiClass[c] {
		case aLetter:
			st.visible(c, i)
			if !st.inWord {
				st.inWord, st.wAt = true, i
			}
			st.wLatin = true
			st.put(c|0x20, i)
			if !st.b.s.full {
				i = st.asciiWord(i + 1)
				st.prev = rune(raw[i-1])
				continue
			}
		case aDigit:
			st.visible(c, i)
			if !st.inWord {
				st.inWord, st.wAt = true, i
			}
			st.put(c, i)
			if !st.b.s.full {
				i = st.asciiWord(i + 1)
				st.prev = rune(raw[i-1])
				continue
			}
		case aPunct:
			st.visible(c, i)
			st.endWord()
			st.put(c, i)
		case aSpace:
			st.space(i, false)
		case aNewline:
			st.space(i, true)
		case aCR:
			if i+1 < len(raw) && raw[i+1] == '\n' {
				i++
			} else if st.lonelyCR++; st.lonelyCR == 1 {
				st.lonelyAt = i
			}
			st.space(i, true)
		case aCtrl:
			i += st.control(i) - 1
		}
		st.prev = rune(c)
		i++
	}
	st.endRuns()
	st.endWord()
	st.flush(false)
	st.finish()
}

// asciiWord folds the rest of a word of ASCII letters and digits from
// raw[i:] at once and returns where it ends. Inside a word the loop of
// run would only do the same byte by byte: no white space ends there,
// and the sentence is cut at maxSentence as visible would cut it (the
// word stops short of it, and run's next byte cuts).
func (st *state) asciiWord(i int) int {
	raw := st.raw
	end := min(len(raw), i+maxSentence-len(st.fb))
	if end <= i {
		return i
	}
	n := len(st.fb)
	// The sentence grows by at most end-i bytes (up to maxSentence):
	// the word is folded as it is found.
	st.fb, st.fo = slices.Grow(st.fb, end-i), slices.Grow(st.fo, end-i)
	fb, fo := st.fb[n:n+end-i], st.fo[n:n+end-i]
	var kinds uint8
	j := i
	for ; j < end; j++ {
		c := raw[j]
		k := wordByte[c]
		if k == 0 {
			break
		}
		kinds |= k
		fb[j-i] = c | 0x20 // lower case; digits have the bit already
		fo[j-i] = int32(j)
	}
	st.fb, st.fo = st.fb[:n+j-i], st.fo[:n+j-i]
	st.wLatin = st.wLatin || kinds&wordLetter != 0
	return j
}

// wordByte classes the bytes of an ASCII word: letters and digits.
const (
	wordLetter = 1 << iota
	wordDigit
)

var wordByte = func() (t [256]uint8) {
	for c := range utf8.RuneSelf {
		switch asciiClass[c] {
		case aLetter:
			t[c] = wordLetter
		case aDigit:
			t[c] = wordDigit
		}
	}
	return t
}()

// put appends one folded byte from raw offset off.
func (st *state) put(c byte, off int) {
	st.fb = append(st.fb, c)
	st.fo = append(st.fo, int32(off))
}

// space notes white space at off.
func (st *state) space(off int, newline bool) {
	st.endWord()
	if !st.inSpace {
		st.inSpace, st.spaceAt, st.hspace, st.newlines = true, off, 0, 0
	}
	if newline {
		st.newlines++
	} else {
		st.hspace++
	}
}

// visible is called before a visible character, whose first folded byte
// is c, at raw offset off: the white space before it ends, and with it
// perhaps the sentence.
func (st *state) visible(c byte, off int) {
	if !st.inSpace {
		if len(st.fb) >= maxSentence {
			st.endWord()
			st.flush(true)
		}
		return
	}
	st.inSpace = false
	if st.hspace >= padSpaces || st.newlines >= padLines {
		st.padding(off)
	}
	end := st.newlines >= 2 || st.newlines >= 1 && (c == '-' || c == '*' || c == '#' || c == '>' || c == '|')
	if n := len(st.fb); n > 0 && !end {
		switch st.fb[n-1] {
		case '.', '!', '?':
			end = true
		}
	}
	switch {
	case end || len(st.fb) >= maxSentence:
		st.flush(!end)
	case len(st.fb) > 0:
		sep := byte(' ')
		if st.newlines > 0 {
			sep = '\n' // a line's start matters to headings and "System:"
		}
		st.put(sep, st.spaceAt)
	}
}

// endWord ends the current word: a Latin word with look-alike letters
// of another script in it is a finding.
func (st *state) endWord() {
	if !st.inWord {
		return
	}
	st.inWord = false
	if st.wLatin && st.wForeign != 0 {
		st.confusable()
	}
	st.wLatin, st.wForeign = false, 0
}

// control handles an ASCII control character at off and returns how
// many bytes it took (an escape sequence is read whole).
func (st *state) control(off int) int {
	raw := st.raw
	switch raw[off] {
	case 0x1b:
		if st.esc++; st.esc == 1 {
			st.escAt = off
		}
		n, conceal := escapeLen(raw[off:])
		st.conceal = st.conceal || conceal
		return n
	case '\b':
		if st.backspace++; st.backspace == 1 {
			st.bsAt = off
		}
	default:
		if st.ctrl++; st.ctrl == 1 {
			st.ctrlAt = off
		}
	}
	return 1
}

// escapeLen is the length of the terminal escape sequence s starts with
// (at least 1), and whether it conceals text (SGR 8).
func escapeLen(s string) (n int, conceal bool) {
	if len(s) < 2 {
		return 1, false
	}
	switch s[1] {
	case '[': // CSI: parameters, intermediates, one final byte
		i := 2
		for i < len(s) && i < 64 && s[i] >= 0x20 && s[i] <= 0x3f {
			i++
		}
		if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
			return i + 1, s[i] == 'm' && hasParam(s[2:i], "8")
		}
		return i, false
	case ']': // OSC: up to BEL or ST
		for i := 2; i < len(s) && i < 512; i++ {
			if s[i] == 0x07 {
				return i + 1, false
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2, false
			}
		}
		return 2, false
	}
	return 2, false
}

// hasParam reports whether the parameters of an escape sequence (split
// at ';' and ':') hold p.
func hasParam(params, p string) bool {
	for params != "" {
		end := strings.IndexAny(params, ";:")
		if end < 0 {
			return params == p
		}
		if params[:end] == p {
			return true
		}
		params = params[end+1:]
	}
	return false
}

// nonASCII handles one rune beyond ASCII, n bytes at off.
func (st *state) nonASCII(r rune, off, n int) {
	isTag := r >= 0xE0000 && r <= 0xE007F
	isVS := r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF
	if st.tagN > 0 && !isTag || st.vsN > 0 && !isVS {
		st.endRuns()
	}
	switch {
	case isTag:
		if st.tagN == 0 {
			st.tagAt, st.tagBase = off, st.prev
		}
		st.tagN++
		if r >= 0xE0020 && r <= 0xE007E && len(st.tagRun) < 4096 {
			st.tagRun = append(st.tagRun, byte(r-0xE0000))
		}
		return
	case isVS:
		if st.vsN == 0 {
			st.vsAt = off
		}
		st.vsN++
		if len(st.vsRun) < 4096 {
			if r <= 0xFE0F {
				st.vsRun = append(st.vsRun, byte(r-0xFE00))
			} else {
				st.vsRun = append(st.vsRun, byte(r-0xE0100+16))
			}
		}
		return
	case r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069:
		if st.bidi++; st.bidi == 1 {
			st.bidiAt = off
		}
		st.override = st.override || r == 0x202D || r == 0x202E
		return
	case r == 0x200E || r == 0x200F || r == 0x061C:
		if st.marks++; st.marks == 1 {
			st.marksAt = off
		}
		return
	case r == 0x00AD: // soft hyphen: shown where a line breaks, folded away
		return
	case r >= 0x80 && r <= 0x9f:
		if st.ctrl++; st.ctrl == 1 {
			st.ctrlAt = off
		}
		return
	case r == 0x2800 || r == 0x3164 || r == 0xFFA0 || r == 0x115F || r == 0x1160:
		// Letters that draw nothing: blank as space, and hiding.
		st.zeroWidth(off)
		st.space(off, false)
		return
	case r == 0x85 || r == 0x2028 || r == 0x2029:
		st.space(off, true)
		return
	case unicode.Is(unicode.Cf, r) || r == 0x034F || r == 0x17B4 || r == 0x17B5:
		if !st.joinerInPlace(r, off, n) {
			st.zeroWidth(off)
		}
		return
	case unicode.IsSpace(r):
		st.space(off, false)
		return
	case r == utf8.RuneError && n == 1:
		st.visible('#', off)
		st.endWord()
		st.put('#', off)
		return
	}
	st.letters(r, off, n)
}

// zeroWidth counts an invisible character at off.
func (st *state) zeroWidth(off int) {
	if st.zw++; st.zw == 1 {
		st.zwAt = off
	}
}

// joinerInPlace reports whether the format character r at off is where
// honest text puts it: a byte order mark at the start, a zero-width
// joiner inside an emoji sequence, a joiner or non-joiner after a letter
// of a script that shapes its letters (Arabic, Indic, …).
func (st *state) joinerInPlace(r rune, off, n int) bool {
	switch r {
	case 0xFEFF:
		return off == 0
	case 0x200D, 0x200C:
		p := st.prev
		if r == 0x200D && (unicode.Is(unicode.So, p) || p == 0xFE0F || p >= 0x1F3FB && p <= 0x1F3FF) {
			next, _ := utf8.DecodeRuneInString(st.raw[off+n:])
			return unicode.Is(unicode.So, next) || next >= 0x2640 && next <= 0x27BF
		}
		return unicode.IsLetter(p) && p >= 0x0590 && !unicode.Is(unicode.Cyrillic, p) && !unicode.Is(unicode.Greek, p) &&
			!unicode.Is(unicode.Han, p)
	}
	return false
}

// letters folds a visible rune beyond ASCII into the sentence.
func (st *state) letters(r rune, off, n int) {
	// The compatibility decomposition, from the tables: no allocation
	// (NFKD of a whole string would reorder marks, which are dropped).
	dec := norm.NFKD.PropertiesString(st.raw[off : off+n]).Decomposition()
	if len(dec) == 0 {
		st.nb = append(st.nb[:0], st.raw[off:off+n]...)
		dec = st.nb
	}
	for _, d := range string(dec) {
		if unicode.In(d, unicode.Mn, unicode.Me) {
			continue
		}
		d = unicode.ToLower(d)
		if d < utf8.RuneSelf {
			c := byte(d)
			switch asciiClass[c] {
			case aLetter, aDigit:
				st.visible(c, off)
				if !st.inWord {
					st.inWord, st.wAt = true, off
				}
				st.wLatin = st.wLatin || asciiClass[c] == aLetter
				st.put(c, off)
			case aSpace, aNewline, aCR:
				st.space(off, false)
			case aPunct:
				st.visible(c, off)
				st.endWord()
				st.put(c, off)
			}
			continue
		}
		if latin, ok := confusables[d]; ok {
			st.visible(latin, off)
			if !st.inWord {
				st.inWord, st.wAt = true, off
			}
			if unicode.Is(unicode.Latin, d) {
				st.wLatin = true
			} else if st.wForeign == 0 {
				st.wForeign = d
			}
			st.put(latin, off)
			continue
		}
		if unicode.IsLetter(d) || unicode.IsNumber(d) {
			st.visible(0x80, off)
			if !st.inWord {
				st.inWord, st.wAt = true, off
			}
			st.wLatin = st.wLatin || unicode.Is(unicode.Latin, d)
			var buf [utf8.UTFMax]byte
			for _, c := range buf[:utf8.EncodeRune(buf[:], d)] {
				st.put(c, off)
			}
			continue
		}
		c := punctuation(d)
		st.visible(c, off)
		st.endWord()
		st.put(c, off)
	}
}

// punctuation is the ASCII a symbol or punctuation mark beyond ASCII
// folds to: quotes to quotes, dashes and bullets to '-', angle brackets
// to '<' and '>', an ideographic full stop to '.', anything else to '#'
// (a mark that ends a word).
func punctuation(r rune) byte {
	switch r {
	case '‘', '’', '‚', '‛', '′', '‵', 'ʼ':
		return '\''
	case '“', '”', '„', '‟', '″', '«', '»':
		return '"'
	case '‐', '‑', '‒', '–', '—', '―', '−', '⁃', '•', '·', '∙', '◦', '‣', '●', '▪':
		return '-'
	case '\u2039', '\u2329', '\u27E8', '\u3008':
		return '<'
	case '\u203A', '\u232A', '\u27E9', '\u3009':
		return '>'
	case '。', '｡':
		return '.'
	}
	return '#'
}

// endRuns ends runs of tag characters and variation selectors.
func (st *state) endRuns() {
	if st.tagN > 0 {
		st.endTags()
	}
	if st.vsN > 0 {
		st.endSelectors()
	}
}

// endTags judges a run of Unicode tag characters. The only honest use is
// a flag: U+1F3F4 followed by a region's letters in tags and CANCEL TAG
// (the flags of England, Scotland, Wales).
func (st *state) endTags() {
	n := st.tagN
	st.tagN = 0
	if !(st.tagBase == 0x1F3F4 && n >= 3 && n <= 8 && isFlagTags(st.raw[st.tagAt:], n)) {
		st.invisibleText("unicode-tags", st.tagAt, n, st.tagRun)
	}
	st.tagRun = st.tagRun[:0]
}

func isFlagTags(s string, n int) bool {
	for i := 0; i < n; i++ {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		last := i == n-1
		switch {
		case last && r == 0xE007F:
		case !last && (r >= 0xE0061 && r <= 0xE007A || r >= 0xE0030 && r <= 0xE0039):
		default:
			return false
		}
	}
	return true
}

// endSelectors judges a run of variation selectors: one after a
// character chooses how it is drawn; two or more in a row draw nothing
// and carry a byte each.
func (st *state) endSelectors() {
	n := st.vsN
	st.vsN = 0
	if n >= 2 {
		st.invisibleText("variation-selectors", st.vsAt, n, st.vsRun)
	}
	st.vsRun = st.vsRun[:0]
}

// invisibleText reports n invisible characters at off that carry
// decoded (the first 4 KiB of it), and scans what they say when it is
// text: the first maxInnerScans times in a text.
func (st *state) invisibleText(rule string, off, n int, decoded []byte) {
	readable := printable(decoded)
	if !st.seen(rule, High) {
		say := "hides text in invisible Unicode tag characters"
		if rule == "variation-selectors" {
			say = fmt.Sprintf("hides %d bytes of data in variation selectors", n)
		}
		if readable {
			say += ": “" + clip(string(decoded), 60) + "”"
		}
		st.add(Finding{Kind: Invisible, Confidence: High, Rule: rule, Excerpt: excerpt(st.raw, off, off+n*4), Say: say})
	}
	if readable && !st.hidden && len(decoded) >= 2 && st.innerScans < maxInnerScans {
		st.innerScans++
		inner := getState(st.b, st.where, string(decoded), true)
		inner.run()
		putState(inner)
	}
}

// printable reports whether b is text a person can read (letters,
// digits, punctuation, spaces, at least one letter or digit).
func printable(b []byte) bool {
	if len(b) == 0 || !utf8.Valid(b) {
		return false
	}
	letters := 0
	for _, r := range string(b) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			letters++
		case unicode.IsPunct(r) || unicode.IsSymbol(r) || r == ' ' || r == '\n' || r == '\t':
		default:
			return false
		}
	}
	return letters > 0
}

// confusable reports the word that just ended.
func (st *state) confusable() {
	end := len(st.raw)
	if len(st.fo) > 0 {
		last := int(st.fo[len(st.fo)-1])
		_, n := utf8.DecodeRuneInString(st.raw[last:])
		end = last + n
	}
	if end < st.wAt {
		end = st.wAt
	}
	w := st.raw[st.wAt:end]
	conf := High
	if st.data {
		conf = Low
	}
	if st.seen("mixed-script", conf) {
		return
	}
	st.add(Finding{Kind: Confusable, Confidence: conf, Rule: "mixed-script",
		Excerpt: excerptOf(st.raw, st.wAt, end, true),
		Say: fmt.Sprintf("mixes look-alike %s letters into the Latin word “%s”",
			scriptOf(st.wForeign), clip(escapeForeign(w), 48))})
}

// finish reports what the whole text showed: counts of invisible
// characters and controls.
func (st *state) finish() {
	if st.zw|st.bidi|st.marks|st.esc|st.backspace|st.lonelyCR|st.ctrl == 0 {
		return // most texts: one test, not seven spread over the code below
	}
	def := func(d, data Confidence) Confidence {
		if st.data {
			return data
		}
		return d
	}
	if st.zw > 0 {
		conf := Low
		if st.zw >= manyZeroWidth {
			conf = def(High, Low)
		}
		st.add(Finding{Kind: Invisible, Confidence: conf, Rule: "zero-width", Excerpt: excerpt(st.raw, st.zwAt, st.zwAt),
			Say: fmt.Sprintf("has %d invisible zero-width %s", st.zw, plural(st.zw, "character", "characters"))})
	}
	if st.bidi > 0 {
		conf := def(High, Low)
		if st.override {
			conf = High
		}
		st.add(Finding{Kind: Invisible, Confidence: conf, Rule: "bidi", Excerpt: excerpt(st.raw, st.bidiAt, st.bidiAt),
			Say: fmt.Sprintf("has %d bidirectional %s, which change the order text is shown in", st.bidi, plural(st.bidi, "control", "controls"))})
	}
	if st.marks > 0 {
		st.add(Finding{Kind: Invisible, Confidence: Low, Rule: "bidi-mark", Excerpt: excerpt(st.raw, st.marksAt, st.marksAt),
			Say: fmt.Sprintf("has %d invisible direction %s", st.marks, plural(st.marks, "mark", "marks"))})
	}
	if st.esc > 0 {
		conf := def(High, Low)
		say := "has terminal control codes, which can hide or redraw text on a terminal"
		if st.conceal {
			conf, say = High, "hides text with a terminal control code (conceal)"
		}
		st.add(Finding{Kind: Invisible, Confidence: conf, Rule: "terminal-codes", Excerpt: excerpt(st.raw, st.escAt, st.escAt+8), Say: say})
	}
	if st.backspace > 0 {
		st.add(Finding{Kind: Invisible, Confidence: def(High, Low), Rule: "backspace", Excerpt: excerpt(st.raw, st.bsAt, st.bsAt),
			Say: "has backspace characters, which overwrite text on a terminal"})
	}
	if st.lonelyCR > 0 {
		st.add(Finding{Kind: Invisible, Confidence: Low, Rule: "carriage-return", Excerpt: excerpt(st.raw, st.lonelyAt, st.lonelyAt),
			Say: "has carriage returns inside a line, which overwrite text on a terminal"})
	}
	if st.ctrl > 0 {
		st.add(Finding{Kind: Invisible, Confidence: Low, Rule: "control", Excerpt: excerpt(st.raw, st.ctrlAt, st.ctrlAt),
			Say: fmt.Sprintf("has %d control %s", st.ctrl, plural(st.ctrl, "character", "characters"))})
	}
}

// padding reports white space long enough to push what follows at off
// out of view.
func (st *state) padding(off int) {
	what := fmt.Sprintf("%d spaces", st.hspace)
	if st.newlines >= padLines {
		what = fmt.Sprintf("%d line breaks", st.newlines)
	}
	conf := High
	if st.data {
		conf = Low
	}
	st.add(Finding{Kind: Invisible, Confidence: conf, Rule: "padding", Excerpt: excerpt(st.raw, off, off),
		Say: "pads with " + what + ", pushing the text after it out of view"})
}

// seen reports whether rule already has a finding at this place at
// least as confident as conf, and if so counts this one: a text that
// repeats a thing a hundred thousand times must not build a hundred
// thousand excerpts.
func (st *state) seen(rule string, conf Confidence) bool {
	if st.hidden {
		return false // rare, and its rule is renamed in add
	}
	return st.b.counted(st.where, rule, conf)
}

// add records a finding of this text: where it is, and for text decoded
// from invisible characters, that it was hidden (and so High).
func (st *state) add(f Finding) {
	f.Where = st.where
	if st.hidden {
		f.Confidence = High
		f.Rule = "hidden-" + f.Rule
		f.Say = "in text hidden in invisible characters, " + f.Say
	}
	st.b.add(f)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
