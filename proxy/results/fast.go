package results

import (
	"bytes"
	"encoding/binary"
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
// escape. The body is passed eight bytes at a time where none of them
// is '"' or '\\'.
func (p *rawReader) pass() (escaped bool) {
	b, i := p.b, p.i+1 // past the opening quote
	for {
		for i+8 <= len(b) && quiet8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		switch b[i] {
		case '"':
			p.i = i + 1
			return escaped
		case '\\':
			escaped = true
			i += 2
		default:
			i++
		}
	}
}

// quiet8 reports whether none of the eight bytes of x is '"' or '\\'.
func quiet8(x uint64) bool {
	quote := x ^ (lows * '"')
	backslash := x ^ (lows * '\\')
	return ((quote-lows)&^quote|(backslash-lows)&^backslash)&highs == 0
}

// unquote decodes the escapes of a valid JSON string's body, copying
// the runs between them whole.
func unquote(s []byte) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			out = append(out, s[i:]...)
			break
		}
		out = append(out, s[i:i+j]...)
		i += j + 1
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

// skip passes over the number, true, false or null at p.i.
func (p *rawReader) skip() {
	for p.i < len(p.b) && !strings.ContainsRune(",}] \t\r\n", rune(p.b[p.i])) {
		p.i++
	}
}

// rawMember is a member of an object as read: its name, the pieces it
// gave (r.Pieces[from:to], its name's piece first), and where its value
// is when that is a string whose reading waits for the object's "type"
// (a "data" or "blob").
type rawMember struct {
	key      string
	from, to int
	waits    int // the value's first byte; -1: read in place
}

// value reads the value at p.i into r's pieces, as walk does: one pass
// over the bytes, an object's members read where they stand and their
// pieces put in the order of their names after.
func (p *rawReader) value(r *Result, where string, depth int) bool {
	if depth > maxDepth {
		return false
	}
	switch p.b[p.i] {
	case '"':
		r.Pieces = append(r.Pieces, Piece{Where: where, Text: p.str()})
	case '{':
		var small [4]rawMember
		members := small[:0]
		base := len(r.Pieces)
		binary, waits := false, false
		p.i++
		p.space()
		for p.b[p.i] != '}' {
			key := p.str()
			p.space()
			p.i++ // ':'
			p.space()
			at := join(where, key)
			m := rawMember{key: key, from: len(r.Pieces), waits: -1}
			if !plainName(key) {
				r.Pieces = append(r.Pieces, Piece{Where: at + " (its name)", Text: key})
			}
			isString := p.b[p.i] == '"'
			switch {
			case isString && (key == "data" || key == "blob"):
				m.waits = p.i
				waits = true
				p.pass()
			case !p.value(r, at, depth+1):
				return false
			case isString && key == "type":
				t := r.Pieces[len(r.Pieces)-1].Text
				binary = t == "image" || t == "audio"
			}
			m.to = len(r.Pieces)
			members = append(members, m)
			p.space()
			if p.b[p.i] == ',' {
				p.i++
				p.space()
			}
		}
		p.i++
		byName := func(a, b rawMember) int { return strings.Compare(a.key, b.key) }
		if !waits && slices.IsSortedFunc(members, byName) {
			break
		}
		got := slices.Clone(r.Pieces[base:])
		r.Pieces = r.Pieces[:base]
		slices.SortFunc(members, byName)
		for _, m := range members {
			r.Pieces = append(r.Pieces, got[m.from-base:m.to-base]...)
			if m.waits < 0 {
				continue
			}
			s := (&rawReader{b: p.b, i: m.waits, seen: p.seen}).str()
			at := join(where, m.key)
			switch {
			case binary && m.key == "data":
				r.Binary += len(s)
			case m.key == "blob":
				r.blob(at, s, nil)
			default:
				r.Pieces = append(r.Pieces, Piece{Where: at, Text: s})
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
