package results

import (
	"encoding/binary"
	"math/bits"
)

// Every result is validated before it is read (fast.go walks bytes it
// trusts to be valid JSON, and rawjson.UnambiguousValid panics on any
// other). encoding/json.Valid takes a step of its state machine per
// byte; a result is mostly the bodies of long strings, which valid
// passes eight bytes at a time. valid reports exactly what json.Valid
// reports (TestValidAsJSON, FuzzValid).

// maxNesting is encoding/json's bound on nesting: deeper is invalid.
const maxNesting = 10000

// valid reports whether b is one JSON value, as json.Valid does.
func valid(b []byte) bool {
	var small [32]byte
	stack := small[:0] // '{' or '[' of each open container
	i := space(b, 0)
	for {
		// A value starts at b[i].
		if i >= len(b) {
			return false
		}
		closed := false
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxNesting {
				return false
			}
			stack = append(stack, c)
			i = space(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i = member(b, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			i, _ = stringEnd(b, i)
		case c == '-' || c >= '0' && c <= '9':
			i = numberEnd(b, i)
		case c == 't':
			i = literalEnd(b, i, "true")
		case c == 'f':
			i = literalEnd(b, i, "false")
		case c == 'n':
			i = literalEnd(b, i, "null")
		default:
			return false
		}
		if i < 0 {
			return false
		}
		// After a value: close containers, or go on to the next value.
		for !closed {
			i = space(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			switch b[i] {
			case ',':
				i = space(b, i+1)
				if top == '{' {
					if i = member(b, i); i < 0 {
						return false
					}
				}
				closed = true
			case top + 2:
				stack = stack[:len(stack)-1]
				i++
			default:
				return false
			}
		}
	}
}

// member passes over a member's name and colon at b[i], returning the
// index of its value (-1: invalid).
func member(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i, _ = stringEnd(b, i); i < 0 {
		return -1
	}
	i = space(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	return space(b, i+1)
}

func space(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 marks, in the high bit of each of the eight bytes of x (the
// first eight bytes from a string's body on, little-endian), a byte
// that is a control character, '"' or '\\': where a string's body stops
// being plain. The lowest mark is exact (the classic "has a zero byte"
// test borrows only into the bytes above a true one), so
// bits.TrailingZeros64(m)/8 is the first such byte.
func special8(x uint64) uint64 {
	quote := x ^ (lows * '"')
	backslash := x ^ (lows * '\\')
	return ((quote-lows)&^quote | (backslash-lows)&^backslash | (x-lows*0x20)&^x) & highs
}

// stringEnd is the index just past the string that starts at b[i] (-1:
// invalid), and whether it holds an escape.
func stringEnd(b []byte, i int) (end int, escaped bool) {
	i++ // the opening quote
	for {
		for i+8 <= len(b) {
			if m := special8(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(b) {
			return -1, escaped
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return -1, escaped
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return -1, escaped
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1, escaped
					}
				}
				i += 6
			default:
				return -1, escaped
			}
		case c < 0x20:
			return -1, escaped
		default:
			i++
		}
	}
}

// numberEnd is the index just past the number that starts at b[i] (-1:
// invalid): -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func numberEnd(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func literalEnd(b []byte, i int, lit string) int {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
