package link

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// maxScannedID bounds the id an over-long line is answered under, as
// sent (quotes and escapes included). A longer id is not read.
const maxScannedID = 1024

// maxScannedKey bounds the member names kept while scanning: "method"
// written with every letter escaped is 38 bytes; a longer name is none
// of the names the scan looks for.
const maxScannedKey = 64

// idScanner reads, from a message too long to keep, the one thing its
// answer needs: the id of a request. It is fed the line in pieces as
// they are read, keeps a few hundred bytes whatever the line's length,
// and follows the top-level object only: a nested value is skipped by
// counting brackets outside strings. The id is found wherever it is in
// the object: the go-sdk writes it first (`{"jsonrpc":"2.0","id":7,
// "method":…`), the TypeScript SDK last, after the params
// (`{"method":…,"params":{…},"jsonrpc":"2.0","id":7}`).
//
// It does not validate what it skips: a line that is not JSON may still
// yield an id, which is then answered as an over-long line (which it is).
// The id it yields is always a valid one, a JSON string or number as
// sent, read as json.Unmarshal reads it.
type idScanner struct {
	st    scanState
	depth int  // nesting inside a skipped value
	esc   bool // after a backslash in a string
	// key is the name of the member being read, as sent (quoted);
	// keyLong says it was longer than maxScannedKey.
	key     []byte
	keyLong bool
	// val collects the value of an "id" member, as sent; valLong says it
	// was longer than maxScannedID.
	val     []byte
	valLong bool
	isID    bool // the member being read is "id"

	id        json.RawMessage // the last "id" member's value, if valid
	hasMethod bool
}

type scanState uint8

const (
	scanStart  scanState = iota // before the object
	scanKey                     // before a member name (or the end, if first)
	scanKeyStr                  // inside a member name
	scanColon                   // after a member name
	scanValue                   // before a member's value
	scanString                  // inside a string value
	scanScalar                  // inside a number, true, false or null
	scanNested                  // inside an object or array value
	scanComma                   // after a value
	scanEnd                     // after the object
	scanDead                    // not an object this scan can read
)

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// feed scans the next piece of the line.
func (s *idScanner) feed(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch s.st {
		case scanStart:
			switch {
			case c == '{':
				s.st = scanKey
			case !isSpace(c):
				s.st = scanDead
			}
		case scanKey:
			switch {
			case c == '"':
				s.key, s.keyLong, s.esc = append(s.key[:0], c), false, false
				s.st = scanKeyStr
			case c == '}':
				s.st = scanEnd
			case !isSpace(c):
				s.st = scanDead
			}
		case scanKeyStr:
			if len(s.key) < maxScannedKey {
				s.key = append(s.key, c)
			} else {
				s.keyLong = true
			}
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.st = scanColon
			}
		case scanColon:
			switch {
			case c == ':':
				s.st = scanValue
				name := ""
				if !s.keyLong {
					name = rawjson.MemberName(s.key)
				}
				s.isID = name == "id"
				if name == "method" {
					s.hasMethod = true
				}
				s.val, s.valLong = s.val[:0], false
			case !isSpace(c):
				s.st = scanDead
			}
		case scanValue:
			if isSpace(c) {
				continue
			}
			switch c {
			case '"':
				s.st, s.esc = scanString, false
			case '{', '[':
				s.st, s.depth, s.esc = scanNested, 1, false
			case ',', '}', ']', ':':
				s.st = scanDead
				continue
			default:
				s.st = scanScalar
			}
			s.keep(c)
		case scanString:
			s.keep(c)
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.endValue()
				s.st = scanComma
			}
		case scanScalar:
			if isSpace(c) || c == ',' || c == '}' {
				s.endValue()
				s.st = scanComma
				i-- // the delimiter is the comma state's
				continue
			}
			s.keep(c)
		case scanNested:
			s.keep(c)
			switch {
			case s.esc:
				s.esc = false
			case s.depth < 0: // inside a string within the value
				switch c {
				case '\\':
					s.esc = true
				case '"':
					s.depth = -s.depth
				}
			case c == '"':
				s.depth = -s.depth
			case c == '{' || c == '[':
				s.depth++
			case c == '}' || c == ']':
				s.depth--
				if s.depth == 0 {
					s.endValue()
					s.st = scanComma
				}
			}
		case scanComma:
			switch {
			case c == ',':
				s.st = scanKey
			case c == '}':
				s.st = scanEnd
			case !isSpace(c):
				s.st = scanDead
			}
		case scanEnd:
			if !isSpace(c) {
				s.st = scanDead
			}
		case scanDead:
			return
		}
	}
}

// keep adds c to an "id" member's value.
func (s *idScanner) keep(c byte) {
	if !s.isID || s.valLong {
		return
	}
	if len(s.val) >= maxScannedID {
		s.valLong = true
		return
	}
	s.val = append(s.val, c)
}

// endValue ends a member's value: an "id" member's becomes the id when
// it is a valid one (the last of a repeated name counts, as
// DecodeMessage reads it).
func (s *idScanner) endValue() {
	if !s.isID {
		return
	}
	s.id = nil
	if !s.valLong {
		s.id = validID(s.val)
	}
}

// requestID is the id of the request the scanned line is: nil unless the
// line was one object with a "method" and a valid "id".
func (s *idScanner) requestID() json.RawMessage {
	if s.st != scanEnd || !s.hasMethod {
		return nil
	}
	return s.id
}

// validID is raw, copied, when it is a valid id (a string or a number
// json.Unmarshal reads as one); nil otherwise.
func validID(raw []byte) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return nil
	}
	switch v.(type) {
	case string, float64:
		return append(json.RawMessage(nil), raw...)
	}
	return nil
}
