package injection

import (
	"bytes"
)

// sentenceNotes is what the current sentence mentions, weighed together
// when it ends: a secret place is worse next to "read".
type sentenceNotes struct {
	classes  wordClass
	paths    []hit
	vars     []hit // environment variables that hold secrets
	addrs    []hit
	urls     []urlHit
	mentions []mention
	// matched holds, per rule already reported in this sentence, where
	// its match ended: an overlapping match is the same one.
	matched []ruleEnd
}

// hit is something a chunk of the sentence is, at fb[a:b].
type hit struct{ a, b int32 }

// mention is a name of another server's tool; called: the sentence
// calls or uses it as a tool.
type mention struct {
	hit
	name   string
	called bool
}

type urlHit struct {
	hit
	placeholder []byte // the name of a placeholder for data, if any (in fb)
	strong      bool   // the placeholder names private data
	query       bool   // the placeholder is in the query
	scheme      bool   // an absolute URL (scheme:// or www.)
}

type ruleEnd struct {
	rule *phraseRule
	end  int
}

// flush matches the current sentence and starts the next. forced: the
// sentence is cut because it is long; its last sentenceOverlap bytes
// start the next part and are reported there.
func (st *state) flush(forced bool) {
	if len(st.fb) == 0 {
		return
	}
	st.report = len(st.fb)
	if forced && len(st.fb) > sentenceOverlap {
		cut := len(st.fb) - sentenceOverlap
		if i := bytes.IndexByte(st.fb[cut:], ' '); i >= 0 && i < sentenceOverlap/2 {
			cut += i + 1
		}
		st.report = cut
	}
	st.tokenize()
	if g := st.gates; st.b.s.full {
		st.matchPhrases()
		st.scanChunks()
		st.scanTags()
		st.judge()
	} else {
		// Each matcher runs only on a sentence that holds what it looks
		// for (tokenize notes it as it reads the words and chunks): most
		// sentences of a result start no phrase, hold no chunk but
		// words and no markup, and so run none of their code, which the
		// serving process finds cold at every result.
		if g&gatePhrase != 0 {
			st.matchPhrasesFlat()
		}
		if g&gateChunk != 0 || g&gateAnyChunk != 0 && st.b.s.tools != nil && !st.noTools {
			st.scanChunks()
		}
		if g&(gateMark|gateLine) != 0 {
			st.scanTags()
		}
		if st.sentence.classes&classShell != 0 || st.sentence.any() {
			st.judge()
		}
	}

	n := 0
	if st.report < len(st.fb) {
		n = copy(st.fb, st.fb[st.report:])
		copy(st.fo, st.fo[st.report:])
	}
	st.fb, st.fo = st.fb[:n], st.fo[:n]
	s := &st.sentence
	s.classes = 0
	s.paths, s.addrs, s.urls, s.mentions, s.matched, s.vars = s.paths[:0], s.addrs[:0], s.urls[:0], s.mentions[:0], s.matched[:0], s.vars[:0]
}

// any reports whether the sentence mentions a path, a variable, an
// address, a tool or a URL: whether judge has anything to weigh
// besides a shell's command.
func (s *sentenceNotes) any() bool {
	return len(s.paths)+len(s.vars)+len(s.addrs)+len(s.mentions)+len(s.urls) > 0
}

// gates: what tokenize saw in a sentence, for flush to run only the
// matchers that can find something in it.
const (
	gatePhrase   = 1 << iota // a word that starts a phrase
	gateChunk                // a chunk with a byte beyond letters, digits and '-' before its closing punctuation
	gateAnyChunk             // a chunk: perhaps a tool's name
	gateMark                 // '<', '[' or '*': a tag, a bracket, bold
	gateLine                 // a line starts with a role's or a heading's first byte
)

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// tokenize splits the sentence into chunks (runs without spaces) and
// words (runs of letters and digits), splitting contractions. It reads
// each byte once (tokenizeFull, the full path, reads a chunk again for
// its words).
func (st *state) tokenize() {
	if st.b.s.full {
		st.tokenizeFull()
		return
	}
	st.words, st.chunks = st.words[:0], st.chunks[:0]
	fb := st.fb
	start := true
	var gates, marks uint8
	st.phraseGate = 0
	for i := 0; i < len(fb); {
		if tokByte[fb[i]]&tkSpace != 0 {
			i++
			continue
		}
		ca := i
		if ca == 0 || fb[ca-1] == '\n' {
			if startsLineTag[fb[ca]] {
				gates |= gateLine
			}
		}
		ci := int32(len(st.chunks))
		st.chunks = append(st.chunks, chunk{a: int32(ca)})
		// core is has without the chunk's closing punctuation (a word's
		// ".", ",", ":" or ")": what scanChunks trims): has as it was at
		// the chunk's last byte that is not chunkTrail's.
		var has, core uint8
		for i < len(fb) {
			t := tokByte[fb[i]]
			if t&tkSpace != 0 {
				break
			}
			if t&tkWord == 0 {
				has |= t & tkChunk
				marks |= t
				if !isChunkTrail[fb[i]] {
					core = has
				}
				i++
				continue
			}
			wa := i
			h := uint32(flatOffset) // flatHash of the word, as it is found
			for i < len(fb) {
				t := tokByte[fb[i]]
				if t&tkWord == 0 {
					break
				}
				has |= t & tkChunk
				h = flatStep(h, fb[i])
				i++
			}
			wb := i
			if i+1 < len(fb) && fb[i] == '\'' && isWordByte(fb[i+1]) {
				k := i + 1
				for k < len(fb) && isWordByte(fb[k]) {
					k++
				}
				for ; i < k; i++ {
					has |= tokByte[fb[i]] & tkChunk
					marks |= tokByte[fb[i]]
				}
				core = has
				if k == wb+2 && fb[wb+1] == 't' && fb[wb-1] == 'n' && wb-1 > wa {
					st.addID(flatNegStem(fb[wa:wb-1]), int32(wa), int32(wb-1), ci, start)
					st.addID(flatNot, int32(wb-1), int32(k), ci, false)
					start = false
					continue
				}
				// 's, 're, 'll, 've, 'd: the word without them
			}
			core = has
			if a, b, ok := flatContraction(fb[wa:wb]); ok {
				st.addID(a, int32(wa), int32(wb), ci, start)
				st.addID(b, int32(wa), int32(wb), ci, false)
			} else {
				st.addID(flatLookup(fb[wa:wb], h), int32(wa), int32(wb), ci, start)
			}
			start = false
		}
		st.chunks[ci].b, st.chunks[ci].has = int32(i), has
		gates |= gateAnyChunk
		if core != 0 {
			gates |= gateChunk
		}
		last := fb[i-1]
		start = last == ':' || i-ca == 1 && (last == '-' || last == '*' || last == '>')
	}
	if marks&tkMark != 0 {
		gates |= gateMark
	}
	st.gates = gates | st.phraseGate
}

// tokByte classes the bytes of a sentence for tokenize: white space
// between chunks, the bytes of words, and a chunk's chunkByte classes.
const (
	tkChunk = 0x1f // chunkByte's classes
	tkMark  = 0x20 // '<', '[', '*': what scanTags looks for past a line's start
	tkWord  = 0x40
	tkSpace = 0x80
)

var tokByte = func() (t [256]uint8) {
	for c := range 256 {
		t[c] = chunkByte[c]
		if chunkByte[c]&^tkChunk != 0 {
			panic("injection: chunkByte outgrew tokByte")
		}
		if isWordByte(byte(c)) {
			t[c] |= tkWord
		}
		if c == ' ' || c == '\n' {
			t[c] |= tkSpace
		}
		if c == '<' || c == '[' || c == '*' {
			t[c] |= tkMark
		}
	}
	return t
}()

// tokenizeFull is tokenize along the full path.
func (st *state) tokenizeFull() {
	st.words, st.chunks = st.words[:0], st.chunks[:0]
	fb := st.fb
	start := true
	for i := 0; i < len(fb); {
		if fb[i] == ' ' || fb[i] == '\n' {
			i++
			continue
		}
		ca := i
		var has uint8
		for i < len(fb) && fb[i] != ' ' && fb[i] != '\n' {
			has |= chunkByte[fb[i]]
			i++
		}
		ci := int32(len(st.chunks))
		st.chunks = append(st.chunks, chunk{int32(ca), int32(i), has})
		for j := ca; j < i; {
			if !isWordByte(fb[j]) {
				j++
				continue
			}
			wa := j
			for j < i && isWordByte(fb[j]) {
				j++
			}
			wb := j
			if j+1 < i && fb[j] == '\'' && isWordByte(fb[j+1]) {
				k := j + 1
				for k < i && isWordByte(fb[k]) {
					k++
				}
				if k == j+2 && fb[j+1] == 't' && fb[wb-1] == 'n' && wb-1 > wa {
					st.addWord(negStem(fb[wa:wb-1]), int32(wa), int32(wb-1), ci, start)
					st.addWord(lexicon["not"], int32(wb-1), int32(k), ci, false)
					start = false
					j = k
					continue
				}
				j = k // 's, 're, 'll, 've, 'd: the word without them
			}
			if pair, ok := contraction(fb[wa:wb]); ok {
				st.addWord(lexicon[pair[0]], int32(wa), int32(wb), ci, start)
				st.addWord(lexicon[pair[1]], int32(wa), int32(wb), ci, false)
			} else {
				st.addWord(lookup(fb[wa:wb]), int32(wa), int32(wb), ci, start)
			}
			start = false
		}
		last := fb[i-1]
		start = last == ':' || i-ca == 1 && (last == '-' || last == '*' || last == '>')
	}
}

func (st *state) addWord(e *lexEntry, a, b, chunk int32, start bool) {
	w := word{a: a, b: b, start: start, chunk: chunk}
	if e != nil {
		w.id, w.classes = e.id, e.classes
		st.sentence.classes |= e.classes
	}
	st.words = append(st.words, w)
}

// addID is addWord for the word of id (0: none) in the flat lexicon.
func (st *state) addID(id uint16, a, b, chunk int32, start bool) {
	w := word{a: a, b: b, start: start, chunk: chunk}
	if id != 0 {
		fw := &flatWords[id]
		w.id = id
		w.classes = fw.classes
		st.sentence.classes |= w.classes
		if fw.startN != 0 {
			st.phraseGate = gatePhrase
		}
	}
	st.words = append(st.words, w)
}

// flatNegStem is negStem's id in the flat lexicon.
func flatNegStem(b []byte) uint16 {
	switch string(b) {
	case "ca":
		return flatCan
	case "wo":
		return flatWill
	case "sha":
		return flatShall
	}
	return flatLookup(b, flatHash(b))
}

// flatContraction is contraction's pair as ids of the flat lexicon,
// without a map: words ending in "nt" (client, content) are common.
func flatContraction(w []byte) (a, b uint16, ok bool) {
	if len(w) < 4 || w[len(w)-1] != 't' || w[len(w)-2] != 'n' {
		return 0, 0, false
	}
	var first string
	switch string(w) {
	case "dont":
		first = "do"
	case "doesnt":
		first = "does"
	case "didnt":
		first = "did"
	case "cant":
		first = "can"
	case "wont":
		first = "will"
	case "shouldnt":
		first = "should"
	case "mustnt":
		first = "must"
	case "isnt":
		first = "is"
	default:
		return 0, 0, false
	}
	return flatContractionFirst[first], flatNot, true
}

// flatContractionFirst holds the ids of the first words of contractions
// (built with the flat tables).
var flatContractionFirst map[string]uint16

// negStem is the entry of the word before "n't": "do" of "don't", "can"
// of "can't", "will" of "won't".
func negStem(b []byte) *lexEntry {
	switch string(b) {
	case "ca":
		return lexicon["can"]
	case "wo":
		return lexicon["will"]
	case "sha":
		return lexicon["shall"]
	}
	return lookup(b)
}

// contraction is the two words of a contraction written without its
// apostrophe ("dont").
func contraction(w []byte) ([2]string, bool) {
	if len(w) < 4 || w[len(w)-1] != 't' || w[len(w)-2] != 'n' {
		return [2]string{}, false
	}
	pair, ok := contractions[string(w)]
	return pair, ok
}

// contractions written without their apostrophe.
var contractions = map[string][2]string{
	"dont": {"do", "not"}, "doesnt": {"does", "not"}, "didnt": {"did", "not"}, "cant": {"can", "not"},
	"wont": {"will", "not"}, "shouldnt": {"should", "not"}, "mustnt": {"must", "not"}, "isnt": {"is", "not"},
}

// matchPhrases runs the phrase rules over the sentence's words.
func (st *state) matchPhrases() {
	if !st.b.s.full {
		st.matchPhrasesFlat()
		return
	}
	words := st.words
	for t := range words {
		w := &words[t]
		if int(w.a) >= st.report {
			break
		}
		if w.id == 0 {
			continue
		}
		e := lexByID[w.id]
		for _, p := range e.starts {
			if p.atStart && !w.start {
				continue
			}
			end, ok := p.match(words, 0, t)
			if !ok || st.matchedBefore(p.rule, t, end) {
				continue
			}
			st.phraseFinding(p.rule, t, end)
		}
	}
}

// matchedBefore reports whether rule already matched words overlapping
// [t, end), and notes this match.
func (st *state) matchedBefore(r *phraseRule, t, end int) bool {
	m := st.sentence.matched
	for i := range m {
		if m[i].rule == r {
			if t < m[i].end {
				return true
			}
			m[i].end = end
			return false
		}
	}
	st.sentence.matched = append(m, ruleEnd{r, end})
	return false
}

func (st *state) phraseFinding(r *phraseRule, t, end int) {
	conf := r.def
	if st.data {
		conf = r.data
	}
	if conf == 0 || st.seen(r.id, conf) {
		return
	}
	st.add(Finding{Kind: r.kind, Confidence: conf, Rule: r.id, Excerpt: st.excerptOf(st.words[t].a, st.words[end-1].b), Say: r.say})
}

// excerptOf is the excerpt of fb[a:b].
func (st *state) excerptOf(a, b int32) string {
	from, to := st.rawSpan(a, b)
	return excerpt(st.raw, from, to)
}

// rawSpan is the raw text fb[a:b] came from.
func (st *state) rawSpan(a, b int32) (int, int) {
	from := int(st.fo[a])
	to := int(st.fo[b-1]) + 1
	for to < len(st.raw) && st.raw[to]&0xC0 == 0x80 {
		to++
	}
	return from, to
}

// rawText is the raw text of fb[a:b], made safe and cut to n bytes.
func (st *state) rawText(a, b int32, n int) string {
	from, to := st.rawSpan(a, b)
	return clip(st.raw[from:to], n)
}

// chunkTrim is what is trimmed from a chunk's ends to find the name,
// path or address in it.
const (
	chunkLead  = "`'\"([{<*"
	chunkTrail = "`'\")]}>*,.;:!?"
)

var isChunkLead, isChunkTrail = byteSet(chunkLead), byteSet(chunkTrail)

func byteSet(s string) (t [256]bool) {
	for i := 0; i < len(s); i++ {
		t[s[i]] = true
	}
	return t
}

// opener is the opening bracket of a closing one, or 0.
func opener(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	case '}':
		return '{'
	case '>':
		return '<'
	}
	return 0
}

// scanChunks looks at every chunk for what a phrase cannot see: paths,
// addresses, URLs, and the names of other servers' tools.
func (st *state) scanChunks() {
	fb := st.fb
	w := 0 // first word of the current chunk
	for ci, c := range st.chunks {
		if int(c.a) >= st.report {
			break
		}
		for w < len(st.words) && int(st.words[w].chunk) < ci {
			w++
		}
		a, b := int(c.a), int(c.b)
		if c.has == 0 && !st.b.s.full {
			// Letters, digits and hyphens (most chunks: words): nothing
			// to trim, no path, address or URL, perhaps a tool's name.
			if st.b.s.tools != nil && !st.noTools {
				st.toolMention(ci, w, fb[a:b], false, hit{a: c.a, b: c.b})
			}
			continue
		}
		quoted := false
		for a < b && isChunkLead[fb[a]] {
			quoted = quoted || fb[a] == '`' || fb[a] == '\'' || fb[a] == '"'
			a++
		}
		for b > a && isChunkTrail[fb[b-1]] {
			if open := opener(fb[b-1]); open != 0 && bytes.Count(fb[a:b], []byte{open}) >= bytes.Count(fb[a:b], []byte{fb[b-1]}) {
				break // a placeholder's end: {content}
			}
			quoted = quoted || fb[b-1] == '`' || fb[b-1] == '\'' || fb[b-1] == '"'
			b--
		}
		call := false
		if b-a > 2 && fb[b-2] == '(' && fb[b-1] == ')' {
			b -= 2
			call = true
		}
		if a >= b {
			continue
		}
		core := fb[a:b]
		var has uint8
		for _, x := range core {
			has |= chunkByte[x]
		}
		h := hit{a: int32(a), b: int32(b)}
		if has&cbPath != 0 && secretPath(core, st.b.s.full) {
			st.sentence.paths = append(st.sentence.paths, h)
		}
		if has&cbUnderscore != 0 && secretVariable(st.raw, st.fo, a, b, core) {
			st.sentence.vars = append(st.sentence.vars, h)
		}
		if has&cbAt != 0 && isEmail(core) || core[0] == '+' && isPhone(core) {
			if !exampleAddress(core) {
				st.sentence.addrs = append(st.sentence.addrs, h)
			}
		}
		if has&cbURL != 0 || bytes.HasPrefix(core, []byte("www.")) {
			if u, ok := parseURL(core); ok {
				u.hit = h
				st.sentence.urls = append(st.sentence.urls, u)
			}
		}
		if st.b.s.tools != nil && !st.noTools && has&cbNotName == 0 {
			st.toolMention(ci, w, core, quoted || call, h)
		}
	}
}

// chunkByte classes the bytes of a chunk: ORed over a chunk's core, it
// says which of the checks of scanChunks can find anything there, and
// most chunks of a text are words that none of them can.
var chunkByte = func() (t [256]uint8) {
	for c := range 256 {
		switch c {
		case '/', '\\', '~', '.':
			t[c] |= cbPath
		case '_':
			t[c] |= cbPath | cbUnderscore
		case '@':
			t[c] |= cbAt
		case '?', ':':
			t[c] |= cbURL
		}
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':' || c == '/') {
			t[c] |= cbNotName
		}
	}
	return t
}()

const (
	cbPath       = 1 << iota // a path's separators: secretPath
	cbUnderscore             // an environment variable's: secretVariable
	cbAt                     // an email address
	cbURL                    // a URL without www.
	cbNotName                // a byte no tool's name (folded) holds
)

// toolMention reports a chunk that names another server's tool (the
// caller saw that it holds only the bytes of names). Its
// parts (split at _ - . : /) are matched in every contiguous run, so
// that mcp_tool_send_email names send_email; a plain word names a tool
// only where the text treats it as a name.
func (st *state) toolMention(ci, firstWord int, core []byte, marked bool, h hit) {
	end := len(core)
	for end > 0 && isSeparator(core[end-1]) {
		end--
	}
	if end < 2 || !st.b.s.mayEndTool(core[end-2], core[end-1]) {
		return
	}
	var parts [8][]byte
	n := 0
	for start, i := 0, 0; i <= len(core) && n < len(parts); i++ {
		if i < len(core) && !isSeparator(core[i]) {
			continue
		}
		if i > start {
			parts[n] = core[start:i]
			n++
		}
		start = i + 1
	}
	var key [96]byte
	for i := 0; i < n; i++ {
		// The name is the chunk, or its end: a client writes a server's
		// or its own prefix before a tool's name (mcp_tool_send_email,
		// github.create_issue), while create_project_view is another
		// name than create_project.
		k := 0
		for j := i; j < n; j++ {
			if k+len(parts[j]) > len(key) {
				k = -1
				break
			}
			k += copy(key[k:], parts[j])
		}
		if k <= 0 || !st.b.s.full && !st.b.s.mayBeTool(key[:k]) {
			continue
		}
		t, ok := st.b.s.tools[string(key[:k])]
		if !ok {
			continue
		}
		// Context: a call verb before, "tool" after.
		verb := firstWord > 0 && st.words[firstWord-1].classes&classCall != 0
		noun := false
		for x := firstWord; x < len(st.words); x++ {
			if int(st.words[x].chunk) > ci {
				noun = st.words[x].classes&classToolNoun != 0
				break
			}
		}
		if t.plain && (n > 1 || !(marked || verb || noun)) {
			return
		}
		st.sentence.mentions = append(st.sentence.mentions, mention{hit: h, name: t.name, called: verb || noun})
		return
	}
}

// shells are the programs that run a script piped into them.
var shells = []string{"bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node", "iex", "pwsh", "powershell"}

// pipedToShell finds, after a download at the start of s, its pipe
// into a shell ("curl … | bash"): the offset past the shell's name, or
// -1. Only the first pipe within 256 bytes counts.
func pipedToShell(s []byte) int {
	i := bytes.IndexByte(s[:min(len(s), 256)], '|')
	if i < 0 {
		return -1
	}
	j := i + 1
	for j < len(s) && s[j] == ' ' {
		j++
	}
	for _, sh := range shells {
		if bytes.HasPrefix(s[j:], []byte(sh)) && (j+len(sh) == len(s) || !isWordByte(s[j+len(sh)])) {
			return j + len(sh)
		}
	}
	return -1
}

// destructive reports whether the command at the start of s destroys a
// home, a disk or a machine (window: s's first bytes).
func destructive(s, window []byte) bool {
	for _, m := range destructiveCommands {
		if bytes.HasPrefix(s, m) {
			return true
		}
	}
	return bytes.HasPrefix(s, []byte("dd ")) && bytes.Contains(window, []byte("of=/dev/"))
}

// destructiveCommands destroy a home, a disk or a machine.
var destructiveCommands = [][]byte{[]byte("rm -rf ~"), []byte("rm -rf /"), []byte("rm -rf $home"), []byte("rm -rf *"),
	[]byte("rm -fr ~"), []byte("rm -fr /"), []byte("rm -rf --no-preserve-root"), []byte("mkfs"), []byte("chmod -r 777 /"),
	[]byte("chmod -r 777 ~"), []byte("chmod -r 0666 ~"), []byte("chmod -r 0777 ~"), []byte("del /s /q c:"), []byte("format c:")}

// reverseShell reports whether the word at fb[at:] (s, and window its
// first bytes) starts code that hands a shell to another machine.
func reverseShell(fb []byte, at int, s, window []byte) bool {
	switch {
	case bytes.HasPrefix(s, []byte("tcp/")):
		return at >= 5 && bytes.Equal(fb[at-5:at], []byte("/dev/"))
	case bytes.HasPrefix(s, []byte("nc ")), bytes.HasPrefix(s, []byte("ncat ")):
		return bytes.Contains(window, []byte(" -e /bin/")) || bytes.Contains(window, []byte(" -e cmd")) ||
			bytes.Contains(window, []byte(" -c /bin/")) || bytes.HasPrefix(s, []byte("nc -l"))
	case bytes.HasPrefix(s, []byte("socat ")):
		return bytes.Contains(window, []byte("exec:"))
	case bytes.HasPrefix(s, []byte("bash -i >")), bytes.HasPrefix(s, []byte("sh -i >")):
		return true
	case bytes.HasPrefix(s, []byte("mkfifo /tmp/")):
		return true
	}
	return false
}

// judge weighs what the sentence mentions against what it says.
func (st *state) judge() {
	fb := st.fb[:st.report]
	if st.sentence.classes&classShell != 0 {
		st.commands(fb)
	}

	s := &st.sentence
	read := s.classes&classRead != 0
	pass := s.classes&classPass != 0
	for _, p := range s.paths {
		conf := High
		if st.data && !(read && pass) {
			conf = Low
		}
		switch {
		case read:
			if !st.seen("read-secret", conf) {
				st.found(SecretFile, conf, "read-secret", p.a, p.b, "tells the assistant to read "+st.rawText(p.a, p.b, 60))
			}
		case pass:
			if !st.seen("send-secret", conf) {
				st.found(SecretFile, conf, "send-secret", p.a, p.b, "asks for "+st.rawText(p.a, p.b, 60)+" to be sent")
			}
		default:
			if !st.seen("secret-path", conf) {
				st.found(SecretFile, conf, "secret-path", p.a, p.b, "mentions "+st.rawText(p.a, p.b, 60)+", a place where secrets are kept")
			}
		}
	}
	for _, v := range s.vars {
		if pass && !st.data && !st.seen("send-secret-variable", High) {
			st.found(SecretFile, High, "send-secret-variable", v.a, v.b, "asks for the secret in "+st.rawText(v.a, v.b, 60)+" to be sent")
		}
	}
	covert := s.classes&classSend != 0 && s.classes&classCovert != 0
	for _, a := range s.addrs {
		switch {
		case covert:
			conf := High
			if st.data {
				conf = Low
			}
			if !st.seen("send-to-address", conf) {
				st.found(SendData, conf, "send-to-address", a.a, a.b, "tells the assistant to send data to "+st.rawText(a.a, a.b, 60))
			}
		case !st.data:
			if !st.seen("address", Low) {
				st.found(SendData, Low, "address", a.a, a.b, "mentions the address "+st.rawText(a.a, a.b, 60))
			}
		}
	}
	control := s.classes&classControl != 0
	for _, m := range s.mentions {
		if control && (!st.data || m.called) {
			if !st.seen("other-tool", High) {
				st.found(OtherTool, High, "other-tool", m.a, m.b, "tells the assistant how to use "+clip(m.name, 60)+", a tool of another server")
			}
		} else if !st.seen("other-tool", Low) {
			st.found(OtherTool, Low, "other-tool", m.a, m.b, "mentions "+clip(m.name, 60)+", a tool of another server")
		}
	}
	for _, u := range s.urls {
		conf, rule := High, "send-to-url"
		switch {
		case len(u.placeholder) > 0 && (u.strong || u.query):
			rule = "url-placeholder"
			if st.data && !u.strong {
				conf = Low
			}
		case u.scheme && (covert || s.classes&classSecretNoun != 0 && (pass || s.classes&classSend != 0)):
			if st.data {
				conf = Low
			}
		default:
			continue
		}
		if st.seen(rule, conf) {
			continue
		}
		say := "tells the assistant to send a copy to " + st.rawText(u.a, u.b, 80)
		switch {
		case rule == "url-placeholder":
			say = "puts " + clip(string(u.placeholder), 40) + " into a URL: " + st.rawText(u.a, u.b, 80)
		case !covert:
			say = "asks for secrets to be sent to " + st.rawText(u.a, u.b, 80)
		}
		st.found(SendData, conf, rule, u.a, u.b, say)
	}
}

// commands judges the commands a sentence with a shell's word carries:
// a download piped into a shell, a reverse shell, a command that
// destroys a home or a disk. Each is looked for where its word is.
func (st *state) commands(fb []byte) {
	for i := range st.words {
		w := &st.words[i]
		if w.classes&classShell == 0 || int(w.a) >= len(fb) {
			continue
		}
		rest := fb[w.a:]
		window := rest[:min(len(rest), 96)]
		switch string(fb[w.a:w.b]) {
		case "curl", "wget", "iwr", "irm", "invoke":
			if end := pipedToShell(rest); end >= 0 {
				conf := High
				if st.data {
					conf = Low // install instructions in a README
				}
				if !st.seen("remote-script", conf) {
					st.found(Instruction, conf, "remote-script", w.a, w.a+int32(end), "tells the assistant to run a script downloaded from the internet")
				}
			}
		case "rm", "chmod", "mkfs", "dd", "del", "format":
			if !destructive(rest, window) {
				continue
			}
			conf := Low
			if !st.data && st.sentence.classes&classCall != 0 && st.sentence.classes&classNegation == 0 {
				conf = High
			}
			if !st.seen("destructive-command", conf) {
				st.found(Instruction, conf, "destructive-command", w.a, int32(min(int(w.a)+24, len(fb))), "tells the assistant to run a command that destroys data")
			}
		default: // nc, ncat, socat, bash, sh, mkfifo, tcp
			if !reverseShell(fb, int(w.a), rest, window) {
				continue
			}
			conf := High
			if st.data {
				conf = Low
			}
			if !st.seen("shell-code", conf) {
				st.found(Instruction, conf, "shell-code", w.a, int32(min(int(w.a)+24, len(fb))), "carries code that opens a shell to another machine")
			}
		}
	}
}

// found records a finding at fb[a:b].
func (st *state) found(kind Kind, conf Confidence, rule string, a, b int32, say string) {
	st.add(Finding{Kind: kind, Confidence: conf, Rule: rule, Excerpt: st.excerptOf(a, b), Say: say})
}

func isSeparator(c byte) bool { return c == '_' || c == '-' || c == '.' || c == ':' || c == '/' }
