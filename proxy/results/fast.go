package results

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// readRaw reads the pieces from the bytes as they came, without decoding
// the document (what every result pays; a change decodes it, writable):
// the same pieces, in the same order, as walk of the decoded document.
// raw is valid UTF-8 JSON whose objects name no member twice. It reports
// false where it leaves the reading to walk (nesting past maxDepth).
func (r *Result) readRaw() (ok bool) {
	defer func() {
		// Bytes that are no valid JSON run off their end: the decoder
		// reads them instead, and refuses them.
		if recover() != nil {
			ok = false
		}
		if !ok {
			r.Pieces, r.Binary = nil, 0
		}
	}()
	p := rawReader{b: r.raw, seen: map[string]string{}}
	p.space()
	return p.value(r, "", 0)
}

type rawReader struct {
	b []byte
	i int
	// seen are the long strings with escapes already decoded, by their
	// bytes: a tool's text and the same as structured content are
	// decoded once.
	seen map[string]string
}

func (p *rawReader) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// str reads a string at p.i, returning its value.
func (p *rawReader) str() string {
	start := p.i
	escaped := p.pass()
	body := p.b[start+1 : p.i-1]
	if !escaped {
		return string(body)
	}
	if len(body) < 64 {
		return unquote(body)
	}
	if s, ok := p.seen[string(body)]; ok {
		return s
	}
	s := unquote(body)
	p.seen[string(body)] = s
	return s
}

// pass passes over the string at p.i, and says whether it holds an
// escape.
func (p *rawReader) pass() (escaped bool) {
	p.i++ // the opening quote
	for {
		j := bytes.IndexAny(p.b[p.i:], "\"\\")
		p.i += j
		if p.b[p.i] == '"' {
			p.i++
			return escaped
		}
		escaped = true
		p.i += 2
	}
}

// unquote decodes the escapes of a valid JSON string's body.
func unquote(s []byte) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch s[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(s[i+3:])); r2 != utf8.RuneError {
						out = utf8.AppendRune(out, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError // a lone surrogate, as encoding/json decodes it
			}
			out = utf8.AppendRune(out, r)
		default: // '"', '\\', '/'
			out = append(out, s[i])
		}
	}
	return string(out)
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// skip passes over the value at p.i.
func (p *rawReader) skip() {
	switch p.b[p.i] {
	case '"':
		p.pass()
	case '{', '[':
		depth := 0
		for {
			switch p.b[p.i] {
			case '"':
				p.pass()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			p.i++
			if depth == 0 {
				return
			}
		}
	default:
		for p.i < len(p.b) && !strings.ContainsRune(",}] \t\r\n", rune(p.b[p.i])) {
			p.i++
		}
	}
}

type rawMember struct {
	key        string
	start, end int // the value's bytes
}

// value reads the value at p.i into r's pieces, as walk does.
func (p *rawReader) value(r *Result, where string, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch p.b[p.i] {
	case '"':
		r.Pieces = append(r.Pieces, Piece{Where: where, Text: p.str()})
	case '{':
		var members []rawMember
		p.i++
		p.space()
		for p.b[p.i] != '}' {
			key := p.str()
			p.space()
			p.i++ // ':'
			p.space()
			start := p.i
			p.skip()
			members = append(members, rawMember{key, start, p.i})
			p.space()
			if p.b[p.i] == ',' {
				p.i++
				p.space()
			}
		}
		p.i++
		slices.SortFunc(members, func(a, b rawMember) int { return strings.Compare(a.key, b.key) })
		binary := false
		for _, m := range members {
			if m.key == "type" && p.b[m.start] == '"' {
				t := (&rawReader{b: p.b, i: m.start, seen: p.seen}).str()
				binary = t == "image" || t == "audio"
			}
		}
		for _, m := range members {
			at := join(where, m.key)
			if !plainName(m.key) {
				r.Pieces = append(r.Pieces, Piece{Where: at + " (its name)", Text: m.key})
			}
			sub := &rawReader{b: p.b, i: m.start, seen: p.seen}
			if p.b[m.start] == '"' {
				switch {
				case binary && m.key == "data":
					r.Binary += len(sub.str())
					continue
				case m.key == "blob":
					r.blob(at, sub.str(), nil)
					continue
				}
			}
			if !sub.value(r, at, depth+1) {
				return false
			}
		}
	case '[':
		p.i++
		p.space()
		for n := 0; p.b[p.i] != ']'; n++ {
			if !p.value(r, index(where, n), depth+1) {
				return false
			}
			p.space()
			if p.b[p.i] == ',' {
				p.i++
				p.space()
			}
		}
		p.i++
	default:
		p.skip() // a number, true, false, null: nothing to read
	}
	return true
}
