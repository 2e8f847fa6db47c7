package injection

import "bytes"

// tagKind says how a tag dresses text up.
type tagKind uint8

const (
	tagEmphasis tagKind = iota + 1 // <IMPORTANT>, <critical>, <secret>
	tagPrompt                      // <system>, <instructions>: the prompt itself
)

// tagNames are the names of tags that dress text up as the model's own
// instructions. Honest descriptions use tags too (<examples>, <hints>),
// and those are not here.
var tagNames = map[string]tagKind{
	"important": tagEmphasis, "critical": tagEmphasis, "urgent": tagEmphasis, "mandatory": tagEmphasis,
	"secret": tagEmphasis, "hidden": tagEmphasis, "override": tagEmphasis, "admin": tagEmphasis,
	"note_to_ai": tagEmphasis, "ai_note": tagEmphasis, "priority": tagEmphasis, "warning_to_ai": tagEmphasis,
	"system": tagPrompt, "sys": tagPrompt, "system_prompt": tagPrompt, "system-prompt": tagPrompt, "systemprompt": tagPrompt,
	"system_message": tagPrompt, "instructions": tagPrompt, "instruction": tagPrompt, "prompt": tagPrompt,
	"developer": tagPrompt, "assistant_instructions": tagPrompt, "tool_instructions": tagPrompt, "policy": tagPrompt,
}

// bracketNames are the names that dress text up in square brackets.
var bracketNames = map[string]tagKind{
	"important": tagEmphasis, "critical": tagEmphasis, "urgent": tagEmphasis, "admin": tagEmphasis, "override": tagEmphasis,
	"system": tagPrompt, "sys": tagPrompt, "instructions": tagPrompt, "system message": tagPrompt, "system note": tagPrompt,
}

// roleNames start a line as a speaker of a chat would ("System: …").
var roleNames = [][]byte{[]byte("system:"), []byte("system message:"), []byte("system prompt:"),
	[]byte("system override:"), []byte("system note:"), []byte("system update:"), []byte("assistant:"), []byte("developer:"), []byte("sys:"), []byte("admin:"), []byte("operator:")}

// startsLineTag holds the first bytes of what lineStart looks for: a
// role's name or a heading.
var startsLineTag = func() (t [256]bool) {
	for _, role := range roleNames {
		t[role[0]] = true
	}
	t['#'] = true
	return t
}()

// scanTags finds tags in the folded sentence.
func (st *state) scanTags() {
	fb := st.fb
	for line := 0; line < st.report && line < len(fb); {
		st.lineStart(line)
		next := bytes.IndexByte(fb[line:], '\n')
		if next < 0 {
			break
		}
		line += next + 1
	}
	end := min(st.report, len(fb))
	from := 0
	if !st.b.s.full {
		// Most sentences have no markup: three searches that skip 16
		// bytes at a time say so, or where the first mark is.
		from = end
		for _, c := range []byte("<[*") {
			if i := bytes.IndexByte(fb[:from], c); i >= 0 {
				from = i
			}
		}
	}
	for i := from; i < end; i++ {
		switch fb[i] {
		case '<':
			st.angleTag(i)
		case '[':
			j := i + 1
			if j < len(fb) && fb[j] == '/' {
				j++
			}
			name, k := tagName(fb, j, true)
			if k < len(fb) && fb[k] == ']' {
				if string(name) == "inst" {
					st.tag("role-token", int32(i), int32(k+1), High, High, func() string { return "uses a model's chat markup ([INST])" })
				} else if kind := bracketNames[string(name)]; kind != 0 {
					st.tag(tagRule(name), int32(i), int32(k+1), High, Low, func() string { return "dresses text up as instructions with [" + string(name) + "]" })
				}
			}
		case '*':
			if i+1 < len(fb) && fb[i+1] == '*' {
				name, k := tagName(fb, i+2, true)
				if k+1 < len(fb) && fb[k] == '*' && fb[k+1] == '*' && (string(name) == "system" || string(name) == "admin" || bracketNames[string(name)] == tagPrompt) {
					st.tag(tagRule(name), int32(i), int32(k+2), High, Low, func() string { return "dresses text up as instructions with **" + string(name) + "**" })
				}
				i++
			}
		}
	}
}

// lineStart judges the start of a line at fb[i:]: a speaker's name
// ("System:") or a heading ("### System").
func (st *state) lineStart(i int) {
	fb := st.fb[i:]
	if !st.b.s.full && !startsLineTag[fb[0]] {
		return
	}
	for _, role := range roleNames {
		if bytes.HasPrefix(fb, role) {
			st.tag("role-prefix", int32(i), int32(i+len(role)), High, Low, func() string {
				return "writes a line as if the " + string(role[:bytes.IndexAny(role, " :")]) + " of the chat spoke it"
			})
			return
		}
	}
	if len(fb) == 0 || fb[0] != '#' {
		return
	}
	j := 0
	for j < len(fb) && (fb[j] == '#' || fb[j] == ' ') {
		j++
	}
	name, k := tagName(fb, j, true)
	if (k == len(fb) || fb[k] == ':' || fb[k] == '\n') && (bracketNames[string(name)] == tagPrompt || string(name) == "system prompt") {
		st.tag("tag-heading", int32(i), int32(i+k), High, Low, func() string { return "heads text as “" + string(name) + "”, as if it were the model's own prompt" })
	}
}

// angleTag judges a '<' at i.
func (st *state) angleTag(i int) {
	fb := st.fb
	rest := fb[i:]
	switch {
	case bytes.HasPrefix(rest, []byte("<!--")):
		body := rest[4:min(len(rest), 4+256)] // a letter near the start will do
		if end := bytes.Index(body, []byte("-->")); end >= 0 {
			body = body[:end]
		}
		for _, c := range body {
			if c >= 'a' && c <= 'z' || c >= 0x80 {
				end := i + 4 + len(body)
				st.tag("html-comment", int32(i), int32(end), High, Low, func() string { return "hides text in an HTML comment, which a rendered view does not show" })
				return
			}
		}
		return
	case bytes.HasPrefix(rest, []byte("<|")):
		name, k := tagName(fb, i+2, false)
		if len(name) > 0 && k+1 < len(fb) && fb[k] == '|' && fb[k+1] == '>' {
			st.tag("role-token", int32(i), int32(k+2), High, High, func() string { return "uses a model's chat markup (<|" + string(name) + "|>)" })
		}
		return
	case bytes.HasPrefix(rest, []byte("<<sys>>")):
		st.tag("role-token", int32(i), int32(i+7), High, High, func() string { return "uses a model's chat markup (<<SYS>>)" })
		return
	}
	j := i + 1
	for j < len(fb) && (fb[j] == ' ' || fb[j] == '/') {
		j++
	}
	name, k := tagName(fb, j, false)
	for k < len(fb) && (fb[k] == ' ' || fb[k] == '/') {
		k++
	}
	if k >= len(fb) || fb[k] != '>' {
		return
	}
	kind := tagNames[string(name)]
	if kind == 0 {
		return
	}
	def, data := High, High
	if kind == tagPrompt {
		// <system>GitHub</system> in a POM, "the <instructions>
		// element" in a manual: a prompt tag counts when it holds
		// words, and in data when they speak to the assistant.
		if wordsUntil(fb[k+1:], '<') < 3 {
			def, data = Low, Low
		} else if st.sentence.classes&(classControl|classYou) == 0 {
			data = Low
		}
	}
	st.tag(tagRule(name), int32(i), int32(k+1), def, data, func() string {
		if kind == tagPrompt {
			return "dresses text up as the model's own prompt with a <" + string(name) + "> tag"
		}
		return "dresses text up as instructions with an <" + string(name) + "> tag"
	})
}

// tagName reads a tag's name at fb[j:]: letters, digits, '_' and '-',
// and with spaces (up to two words) when spaced.
func tagName(fb []byte, j int, spaced bool) ([]byte, int) {
	k := j
	words := 1
	for k < len(fb) {
		c := fb[k]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			k++
			continue
		}
		if spaced && c == ' ' && words < 2 && k+1 < len(fb) && fb[k+1] >= 'a' && fb[k+1] <= 'z' {
			words++
			k++
			continue
		}
		break
	}
	if k-j > 32 {
		return nil, j
	}
	return bytes.TrimRight(fb[j:k], " "), k
}

// tagRule is the rule of a tag name: its kind of tag.
func tagRule(name []byte) string {
	if kind := tagNames[string(name)]; kind == tagPrompt || bracketNames[string(name)] == tagPrompt || string(name) == "system" || string(name) == "admin" {
		return "tag-prompt"
	}
	return "tag-emphasis"
}

// wordsUntil counts the words in b before the byte stop, up to 3.
func wordsUntil(b []byte, stop byte) int {
	n, in := 0, false
	for _, c := range b {
		if c == stop || n == 3 {
			break
		}
		space := c == ' ' || c == '\n'
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// tag reports a tag at fb[a:b]; say is called only for a finding that
// is not a repeat.
func (st *state) tag(rule string, a, b int32, def, data Confidence, say func() string) {
	conf := def
	if st.data {
		conf = data
	}
	if conf == 0 || st.seen(rule, conf) {
		return
	}
	st.add(Finding{Kind: Tag, Confidence: conf, Rule: rule, Excerpt: st.excerptOf(a, b), Say: say()})
}
