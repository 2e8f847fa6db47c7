package results

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// readRaw reads the pieces from the bytes as they came, without decoding
// the document (what every result pays; a change decodes it, writable):
// the same pieces, in the same order, as walk of the decoded document.
// raw is valid UTF-8 JSON. With names, it reports false at a member
// name beyond ASCII or one that an object holds twice in one or two
// cases, which rawjson.UnambiguousValid judges instead (so that the
// bytes are passed once when no name can be read two ways); without,
// raw's objects name no member twice. It reports false where it leaves
// the reading to walk (nesting past maxDepth).
func (r *Result) readRaw(names bool) (ok bool) {
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
	p := rawReader{b: r.raw, seen: new(decoded), names: names}
	// A tool's result holds a few strings (a content block's type and
	// text, the structured content's): room for them at once, not
	// three growths.
	r.Pieces = make([]Piece, 0, 8)
	p.space()
	if !p.value(r, "", 0) {
		return false
	}
	p.space()
	return p.i == len(p.b)
}

type rawReader struct {
	b []byte
	i int
	// seen are the long strings with escapes already decoded, by their
	// bytes: a tool's text and the same as structured content are
	// decoded once.
	seen *decoded
	// names: check that an object's member names are ASCII and
	// distinct in any case (readRaw).
	names bool
}

// distinct reports whether key, a name of an object whose earlier names
// are members, is ASCII and differs from each of them in any case;
// folded holds those names in upper case once the object has many.
func distinct(key string, members []rawMember, folded *map[string]struct{}) bool {
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return false
		}
	}
	const few = 16
	if len(members) < few {
		for _, m := range members {
			if len(m.key) == len(key) && asciiEqualFold(m.key, key) {
				return false
			}
		}
		return true
	}
	if *folded == nil {
		*folded = make(map[string]struct{}, 2*few)
		for _, m := range members {
			(*folded)[upper(m.key)] = struct{}{}
		}
	}
	u := upper(key)
	if _, dup := (*folded)[u]; dup {
		return false
	}
	(*folded)[u] = struct{}{}
	return true
}

func asciiEqualFold(a, b string) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x != y && x|0x20 != y|0x20 || x != y && (x|0x20 < 'a' || x|0x20 > 'z') {
			return false
		}
	}
	return true
}

func upper(s string) string { return strings.ToUpper(s) }

func (p *rawReader) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n' || p.b[p.i] == '\r') {
		p.i++
	}
}

// str reads a string at p.i, returning its value.
func (p *rawReader) str() string {
	start := p.i
	if s, n, ok := p.seen.again(p.b[start+1:]); ok {
		p.i = start + 1 + n + 1
		return s
	}
	escaped := p.pass()
	body := p.b[start+1 : p.i-1]
	if !escaped {
		return string(body)
	}
	if len(body) < 64 {
		return unquote(body)
	}
	if s, ok := p.seen.find(body); ok {
		return s
	}
	s := unquote(body)
	p.seen.add(body, s)
	return s
}

// decoded holds long strings with escapes and their values, by their
// bytes: the first few in an array, by the bytes of the result they
// stand in (a result holds one or two, and a map would copy each and
// hash it whole twice), the rest in a map.
type decoded struct {
	few [4]struct {
		body  []byte
		value string
	}
	n    int
	more map[string]string
}

func (d *decoded) find(body []byte) (string, bool) {
	for i := 0; i < d.n; i++ {
		if bytes.Equal(d.few[i].body, body) {
			return d.few[i].value, true
		}
	}
	s, ok := d.more[string(body)]
	return s, ok
}

// again reports whether the string whose body starts rest (past its
// opening quote) is one of the first few, by its bytes, with its value
// and its body's length: the bytes of a valid string's
// body followed by a quote are that string whole (the body's last
// escape is complete, so the quote after it closes), so the pass over
// it, which would find the same end and escapes, is spared (a tool's
// text met again as structured content: 1 KiB of escapes read once).
func (d *decoded) again(rest []byte) (string, int, bool) {
	for k := 0; k < d.n; k++ {
		body := d.few[k].body
		if len(rest) > len(body) && rest[len(body)] == '"' && bytes.Equal(rest[:len(body)], body) {
			return d.few[k].value, len(body), true
		}
	}
	return "", 0, false
}

func (d *decoded) add(body []byte, value string) {
	if d.n < len(d.few) {
		d.few[d.n].body, d.few[d.n].value = body, value
		d.n++
		return
	}
	if d.more == nil {
		d.more = map[string]string{}
	}
	d.more[string(body)] = value
}

// pass passes over the string at p.i, and says whether it holds an
// escape; it panics where the bytes are no JSON string (readRaw).
func (p *rawReader) pass() (escaped bool) {
	end, escaped := stringEnd(p.b, p.i)
	if end < 0 {
		panic(errInvalid)
	}
	p.i = end
	return escaped
}

// errInvalid: the bytes are no valid JSON.
var errInvalid = errors.New("results: invalid JSON")

// want passes over the byte c at p.i, and panics at any other.
func (p *rawReader) want(c byte) {
	if p.b[p.i] != c {
		panic(errInvalid)
	}
	p.i++
}

// unquote decodes the escapes of a valid JSON string's body, copying
// the runs between them whole.
func unquote(s []byte) string {
	var out strings.Builder // one allocation: its String does not copy
	out.Grow(len(s))
	for i := 0; i < len(s); i++ {
		j := bytes.IndexByte(s[i:], '\\')
		if j < 0 {
			out.Write(s[i:])
			break
		}
		out.Write(s[i : i+j])
		i += j + 1
		switch s[i] {
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r := hex4(s[i+1:])
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(s[i+3:])); r2 != utf8.RuneError {
						out.WriteRune(r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError // a lone surrogate, as encoding/json decodes it
			}
			out.WriteRune(r)
		default: // '"', '\\', '/'
			out.WriteByte(s[i])
		}
	}
	return out.String()
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

// skip passes over the number, true, false or null at p.i, and panics
// at anything else.
func (p *rawReader) skip() {
	end := -1
	switch c := p.b[p.i]; {
	case c == '-' || c >= '0' && c <= '9':
		end = numberEnd(p.b, p.i)
	case c == 't':
		end = literalEnd(p.b, p.i, "true")
	case c == 'f':
		end = literalEnd(p.b, p.i, "false")
	case c == 'n':
		end = literalEnd(p.b, p.i, "null")
	}
	if end < 0 {
		panic(errInvalid)
	}
	p.i = end
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
		var folded map[string]struct{}
		for p.b[p.i] != '}' {
			if p.b[p.i] != '"' {
				panic(errInvalid)
			}
			key := p.str()
			if p.names && !distinct(key, members, &folded) {
				return false
			}
			p.space()
			p.want(':')
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
			if p.b[p.i] != ',' {
				break
			}
			p.i++
			p.space()
			if p.b[p.i] != '"' {
				panic(errInvalid) // {"a":1,}
			}
		}
		p.want('}')
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
			if p.b[p.i] != ',' {
				break
			}
			p.i++
			p.space()
			if p.b[p.i] == ']' {
				panic(errInvalid) // [1,]
			}
		}
		p.want(']')
	default:
		p.skip() // a number, true, false, null: nothing to read
	}
	return true
}
