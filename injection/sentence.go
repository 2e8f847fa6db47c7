package injection

import (
	"bytes"
	"fmt"
	"strings"
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
type hit struct {
	a, b int32
	text string // what to call it in a finding (made safe)
}

// mention is a name of another server's tool; called: the sentence
// calls or uses it as a tool.
type mention struct {
	hit
	called bool
}

type urlHit struct {
	hit
	placeholder string // the name of a placeholder for data, if any
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
	st.matchPhrases()
	st.scanChunks()
	st.scanTags()
	st.judge()

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

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 0x80
}

// tokenize splits the sentence into chunks (runs without spaces) and
// words (runs of letters and digits), splitting contractions.
func (st *state) tokenize() {
	st.words, st.chunks = st.words[:0], st.chunks[:0]
	fb := st.fb
	start := true
	for i := 0; i < len(fb); {
		if fb[i] == ' ' || fb[i] == '\n' {
			i++
			continue
		}
		ca := i
		for i < len(fb) && fb[i] != ' ' && fb[i] != '\n' {
			i++
		}
		ci := int32(len(st.chunks))
		st.chunks = append(st.chunks, chunk{int32(ca), int32(i)})
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
			if pair, ok := contractions[string(fb[wa:wb])]; ok {
				st.addWord(lexicon[pair[0]], int32(wa), int32(wb), ci, start)
				st.addWord(lexicon[pair[1]], int32(wa), int32(wb), ci, false)
			} else {
				st.addWord(lexicon[string(fb[wa:wb])], int32(wa), int32(wb), ci, start)
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
	return lexicon[string(b)]
}

// contractions written without their apostrophe.
var contractions = map[string][2]string{
	"dont": {"do", "not"}, "doesnt": {"does", "not"}, "didnt": {"did", "not"}, "cant": {"can", "not"},
	"wont": {"will", "not"}, "shouldnt": {"should", "not"}, "mustnt": {"must", "not"}, "isnt": {"is", "not"},
}

// matchPhrases runs the phrase rules over the sentence's words.
func (st *state) matchPhrases() {
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
	if conf == 0 {
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
		quoted := false
		for a < b && strings.IndexByte(chunkLead, fb[a]) >= 0 {
			quoted = quoted || fb[a] == '`' || fb[a] == '\'' || fb[a] == '"'
			a++
		}
		for b > a && strings.IndexByte(chunkTrail, fb[b-1]) >= 0 {
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
		var pathy, at, url bool
		for _, x := range core {
			switch x {
			case '/', '\\', '~', '.', '_':
				pathy = true
			case '@':
				at = true
			case '?', ':':
				url = true
			}
		}
		h := hit{a: int32(a), b: int32(b)}
		if pathy && secretPath(core) {
			h.text = st.rawText(h.a, h.b, 60)
			st.sentence.paths = append(st.sentence.paths, h)
		}
		if secretVariable(st.raw, st.fo, a, b, core) {
			h.text = st.rawText(h.a, h.b, 60)
			st.sentence.vars = append(st.sentence.vars, h)
		}
		if at && isEmail(core) || core[0] == '+' && isPhone(core) {
			if !exampleAddress(core) {
				h.text = st.rawText(h.a, h.b, 60)
				st.sentence.addrs = append(st.sentence.addrs, h)
			}
		}
		if url || bytes.HasPrefix(core, []byte("www.")) {
			if u, ok := parseURL(core); ok {
				u.hit = hit{a: h.a, b: h.b, text: st.rawText(h.a, h.b, 80)}
				st.sentence.urls = append(st.sentence.urls, u)
			}
		}
		if st.b.s.tools != nil && !st.noTools {
			st.toolMention(ci, w, core, quoted || call, h)
		}
	}
}

// toolMention reports a chunk that names another server's tool. Its
// parts (split at _ - . : /) are matched in every contiguous run, so
// that mcp_tool_send_email names send_email; a plain word names a tool
// only where the text treats it as a name.
func (st *state) toolMention(ci, firstWord int, core []byte, marked bool, h hit) {
	for _, x := range core {
		if !(isWordByte(x) && x < 0x80 || x == '_' || x == '-' || x == '.' || x == ':' || x == '/') {
			return
		}
	}
	var parts [8][]byte
	n := 0
	for _, p := range bytes.FieldsFunc(core, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ':' || r == '/' }) {
		if n == len(parts) {
			break
		}
		parts[n] = p
		n++
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
		if k <= 0 {
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
		st.sentence.mentions = append(st.sentence.mentions, mention{hit: hit{a: h.a, b: h.b, text: clip(t.name, 60)}, called: verb || noun})
		return
	}
}

// shells are the programs that run a script piped into them.
var shells = []string{"bash", "sh", "zsh", "dash", "ksh", "fish", "python", "python3", "perl", "ruby", "node", "iex", "pwsh", "powershell"}

// pipeToShell finds a download piped into a shell ("curl … | bash"):
// the offsets of the download and of the shell, or -1.
func pipeToShell(fb []byte) (int, int) {
	dl := -1
	for _, w := range []string{"curl ", "wget ", "iwr ", "invoke-webrequest ", "irm "} {
		if i := bytes.Index(fb, []byte(w)); i >= 0 && (dl < 0 || i < dl) {
			dl = i
		}
	}
	if dl < 0 {
		return -1, -1
	}
	for i := dl; i < len(fb); i++ {
		if fb[i] != '|' {
			continue
		}
		j := i + 1
		for j < len(fb) && fb[j] == ' ' {
			j++
		}
		for _, sh := range shells {
			if bytes.HasPrefix(fb[j:], []byte(sh)) && (j+len(sh) == len(fb) || !isWordByte(fb[j+len(sh)])) {
				return dl, j + len(sh)
			}
		}
	}
	return -1, -1
}

// shellCode are the marks of a reverse shell: code that hands a shell
// to another machine.
var shellCode = [][]byte{[]byte("/dev/tcp/"), []byte("-e /bin/sh"), []byte("-e /bin/bash"), []byte("-e cmd.exe"),
	[]byte("bash -i >"), []byte("sh -i >"), []byte("mkfifo /tmp/"), []byte("nc -l"), []byte("ncat -e"), []byte("socat exec:")}

// reverseShell is the offset of a reverse shell's mark in fb, or -1.
func reverseShell(fb []byte) int {
	if bytes.IndexByte(fb, '/') < 0 && bytes.IndexByte(fb, '-') < 0 {
		return -1
	}
	for _, m := range shellCode {
		if i := bytes.Index(fb, m); i >= 0 {
			return i
		}
	}
	return -1
}

// destructiveCommands destroy a home, a disk or a machine.
var destructiveCommands = [][]byte{[]byte("rm -rf ~"), []byte("rm -rf /"), []byte("rm -rf $home"), []byte("rm -rf *"),
	[]byte("rm -fr ~"), []byte("rm -fr /"), []byte("rm -rf --no-preserve-root"), []byte("mkfs."), []byte("of=/dev/sd"),
	[]byte("of=/dev/nvme"), []byte(":(){"), []byte("chmod -r 777 /"), []byte("chmod -r 777 ~"), []byte("chmod -r 0666 ~"),
	[]byte("chmod -r 0777 ~"), []byte("del /s /q c:"), []byte("format c:")}

// destructive is the offset of a destructive command in fb, or -1.
func destructive(fb []byte) int {
	for _, m := range destructiveCommands {
		if i := bytes.Index(fb, m); i >= 0 {
			return i
		}
	}
	return -1
}

// judge weighs what the sentence mentions against what it says.
func (st *state) judge() {
	if a, b := pipeToShell(st.fb[:st.report]); a >= 0 {
		conf := High
		if st.data {
			conf = Low // install instructions in a README
		}
		st.add(Finding{Kind: Instruction, Confidence: conf, Rule: "remote-script", Excerpt: st.excerptOf(int32(a), int32(b)),
			Say: "tells the assistant to run a script downloaded from the internet"})
	}
	if i := reverseShell(st.fb[:st.report]); i >= 0 {
		conf := High
		if st.data {
			conf = Low
		}
		st.add(Finding{Kind: Instruction, Confidence: conf, Rule: "shell-code", Excerpt: st.excerptOf(int32(i), int32(min(i+24, st.report))),
			Say: "carries code that opens a shell to another machine"})
	}
	if i := destructive(st.fb[:st.report]); i >= 0 {
		conf := Low
		if !st.data && st.sentence.classes&classCall != 0 && st.sentence.classes&classNegation == 0 {
			conf = High
		}
		st.add(Finding{Kind: Instruction, Confidence: conf, Rule: "destructive-command", Excerpt: st.excerptOf(int32(i), int32(min(i+24, st.report))),
			Say: "tells the assistant to run a command that destroys data"})
	}
	s := &st.sentence
	read := s.classes&classRead != 0
	pass := s.classes&classPass != 0
	for _, p := range s.paths {
		f := Finding{Kind: SecretFile, Confidence: High, Excerpt: st.excerptOf(p.a, p.b)}
		switch {
		case read:
			f.Rule, f.Say = "read-secret", "tells the assistant to read "+p.text
		case pass:
			f.Rule, f.Say = "send-secret", "asks for "+p.text+" to be sent"
		default:
			f.Rule, f.Say = "secret-path", "mentions "+p.text+", a place where secrets are kept"
		}
		if st.data && !(read && pass) {
			f.Confidence = Low
		}
		st.add(f)
	}
	for _, v := range s.vars {
		if pass && !st.data {
			st.add(Finding{Kind: SecretFile, Confidence: High, Rule: "send-secret-variable", Excerpt: st.excerptOf(v.a, v.b),
				Say: "asks for the secret in " + v.text + " to be sent"})
		}
	}
	covert := s.classes&classSend != 0 && s.classes&classCovert != 0
	for _, a := range s.addrs {
		f := Finding{Kind: SendData, Confidence: Low, Rule: "address", Excerpt: st.excerptOf(a.a, a.b),
			Say: "mentions the address " + a.text}
		if covert {
			f.Confidence, f.Rule, f.Say = High, "send-to-address", "tells the assistant to send data to "+a.text
			if st.data {
				f.Confidence = Low
			}
		} else if st.data {
			continue
		}
		st.add(f)
	}
	control := s.classes&classControl != 0
	for _, m := range s.mentions {
		f := Finding{Kind: OtherTool, Confidence: Low, Rule: "other-tool", Excerpt: st.excerptOf(m.a, m.b),
			Say: "mentions " + m.text + ", a tool of another server"}
		if control && (!st.data || m.called) {
			f.Confidence, f.Say = High, "tells the assistant how to use "+m.text+", a tool of another server"
		}
		st.add(f)
	}
	for _, u := range s.urls {
		f := Finding{Kind: SendData, Confidence: High, Excerpt: st.excerptOf(u.a, u.b)}
		switch {
		case u.placeholder != "" && (u.strong || u.query):
			f.Rule, f.Say = "url-placeholder", fmt.Sprintf("puts %s into a URL: %s", clip(u.placeholder, 40), u.text)
			if st.data && !u.strong {
				f.Confidence = Low
			}
		case u.scheme && s.classes&classSecretNoun != 0 && (pass || s.classes&classSend != 0):
			f.Rule, f.Say = "send-to-url", "asks for secrets to be sent to "+u.text
			if st.data {
				f.Confidence = Low
			}
		case u.scheme && covert:
			f.Rule, f.Say = "send-to-url", "tells the assistant to send a copy to "+u.text
			if st.data {
				f.Confidence = Low
			}
		default:
			continue
		}
		st.add(f)
	}
}
