package aql

import (
	"strconv"
	"unicode/utf8"
)

// scanRaw walks the raw request bytes once, before any decoding, and
// rejects what encoding/json would silently repair or choke on: bytes that
// are not UTF-8 (including overlong forms and UTF-8-encoded surrogates),
// \u escapes that leave a lone surrogate, nesting deeper than maxDepth,
// and an object that names a member twice (encoding/json keeps the last
// one; the server behind may read the first: one request must not say
// two things, RFC 8259 4, RFC 7493 2.3). It does not validate JSON
// syntax; the decoder does that afterwards.
func scanRaw(raw []byte, maxDepth int) *Error {
	type frame struct {
		object    bool
		expectKey bool
		key       string
		index     int
		keys      memberNames
	}
	var stack []frame
	path := func() string {
		p := ""
		for _, f := range stack {
			if f.object {
				if f.key != "" {
					p = keyPath(p, f.key)
				}
			} else {
				p = indexPath(p, f.index)
			}
		}
		return p
	}
	for i := 0; i < len(raw); {
		c := raw[i]
		switch c {
		case '{', '[':
			stack = append(stack, frame{object: c == '{', expectKey: c == '{'})
			if len(stack) > maxDepth {
				return TooLarge(LimitNestingDepth, int64(maxDepth), int64(depthOf(raw[i:], len(stack))), path())
			}
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].expectKey = true
				} else {
					stack[n-1].index++
				}
			}
			i++
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
			i++
		case '"':
			s, next, bad := scanString(raw, i+1)
			if bad >= 0 {
				loc := path()
				if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
					loc = keyPath(loc, "<key>")
				}
				return InvalidEncoding(loc, bad)
			}
			if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].expectKey {
				if stack[n-1].keys.add(s) {
					stack[n-1].key = "" // path() is then the object's own
					return DuplicateMember(keyPath(path(), s))
				}
				stack[n-1].key = s
			}
			i = next
		default:
			if c >= utf8.RuneSelf {
				// Non-ASCII outside a string is a syntax error, but if it
				// is not even UTF-8 the encoding error is the truer one.
				if r, size := utf8.DecodeRune(raw[i:]); r == utf8.RuneError && size <= 1 {
					return InvalidEncoding(path(), i)
				}
			}
			i++
		}
	}
	return nil
}

// memberNames are the member names an object has shown so far: a list
// while it is short (the usual arguments), a set beyond.
type memberNames struct {
	list []string
	set  map[string]struct{}
}

// add records name and reports whether the object named it already.
func (m *memberNames) add(name string) bool {
	if m.set != nil {
		if _, dup := m.set[name]; dup {
			return true
		}
		m.set[name] = struct{}{}
		return false
	}
	for _, k := range m.list {
		if k == name {
			return true
		}
	}
	m.list = append(m.list, name)
	if len(m.list) > 16 {
		m.set = make(map[string]struct{}, 2*len(m.list))
		for _, k := range m.list {
			m.set[k] = struct{}{}
		}
		m.list = nil
	}
	return false
}

// scanString reads a JSON string body starting after its opening quote. It
// returns the decoded text (as encoding/json decodes it, for a string that
// is valid JSON: member names are compared in it), the index after the
// closing quote, and the byte offset of the first invalid sequence or -1.
func scanString(raw []byte, i int) (string, int, int) {
	var buf []byte
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			return string(buf), i + 1, -1
		case c == '\\':
			if i+1 >= len(raw) {
				return string(buf), len(raw), -1
			}
			if raw[i+1] != 'u' {
				buf = append(buf, unescape(raw[i+1]))
				i += 2
				continue
			}
			r, ok := hex4(raw, i+2)
			if !ok {
				return string(buf), i + 2, -1 // syntax error; the decoder reports it
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				lo, ok := -1, false
				if i+7 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
					lo, ok = hex4(raw, i+8)
				}
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return string(buf), i, i
				}
				buf = utf8.AppendRune(buf, utf16Pair(r, lo))
				i += 12
			case r >= 0xDC00 && r <= 0xDFFF:
				return string(buf), i, i
			default:
				buf = utf8.AppendRune(buf, rune(r))
				i += 6
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size <= 1 {
				return string(buf), i, i
			}
			buf = append(buf, raw[i:i+size]...)
			i += size
		}
	}
	return string(buf), len(raw), -1
}

// unescape is the byte a one-character escape stands for (\n, \t, ...);
// an invalid escape is left to the decoder to report.
func unescape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // " \\ / stand for themselves
}

func hex4(raw []byte, i int) (int, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return int(v), true
}

func utf16Pair(hi, lo int) rune {
	return rune((hi-0xD800)<<10|(lo-0xDC00)) + 0x10000
}

// depthOf measures how deep nesting goes from the container opening at
// raw[0], given the depth already reached, so the error can report the
// actual depth and not just "more than the limit".
func depthOf(raw []byte, base int) int {
	depth, maxDepth, inString := base, base, false
	for i := 1; i < len(raw); i++ {
		c := raw[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		case '}', ']':
			depth--
			if depth < base {
				return maxDepth
			}
		}
	}
	return maxDepth
}

func keyPath(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

func indexPath(base string, i int) string {
	return base + "[" + strconv.Itoa(i) + "]"
}
