package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// The guard judges a request by some of its members (a tool call's name
// and arguments, a read's uri) and the server then reads the same bytes
// with a decoder of its own. Decoders disagree on two things: which of a
// repeated name counts (most keep the last, some the first, some refuse),
// and whether names match exactly (JSON.parse, Python, serde) or without
// regard to case (encoding/json matches "URI", "Uri" and "ur\u0130" to a
// field tagged "uri", folding Unicode too: "ſ" is "s" and the Kelvin sign
// "K" is "k"). A request whose judged member is spelled two ways can be
// judged by one and run by the other. Exact refuses such a request, so
// that whatever decoder a server uses, it reads what the guard read.
//
// These run on every request a client sends: they validate once and then
// compare member names in place, folding byte by byte, without building
// a string per name.

// AmbiguousError says a member the guard reads is spelled more than once
// in the same object: repeated, or differing only in case.
type AmbiguousError struct {
	// Name is the member the guard reads ("uri").
	Name string
	// Other is the other spelling found ("URI"); equal to Name when the
	// member is repeated as it is.
	Other string
}

func (e *AmbiguousError) Error() string {
	if e.Other == e.Name {
		return fmt.Sprintf("the member %q appears more than once", e.Name)
	}
	return fmt.Sprintf("the members %q and %q differ only in case; servers read one or the other", e.Name, e.Other)
}

// ErrNotObject is returned for a value that is neither an object nor
// null/absent.
var ErrNotObject = errors.New("not a JSON object")

// Exact reads the members named names from the object raw: their values
// in the order of names, nil where a member is absent. It fails with an
// *AmbiguousError when one of them appears twice, or when another member's
// name folds to the same name (FoldName), and with ErrNotObject when raw
// is not an object. Empty raw or null is an object with no members.
func Exact(raw json.RawMessage, names ...string) ([]json.RawMessage, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) > 0 && string(raw) != "null" && !json.Valid(raw) {
		return nil, ErrNotObject
	}
	return ExactValid(raw, names...)
}

// ExactValid is Exact of raw that json.Valid accepted (or that is empty
// or null), without validating it again.
func ExactValid(raw json.RawMessage, names ...string) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(names))
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || string(raw) == "null" {
		return out, nil
	}
	if raw[0] != '{' {
		return nil, ErrNotObject
	}
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return out, nil
	}
	for {
		keyEnd := stringEnd(raw, i)
		quoted := raw[i:keyEnd]
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		end := valueEnd(raw, i)
		for n, name := range names {
			switch {
			case keyIs(quoted, name):
				if out[n] != nil {
					return nil, &AmbiguousError{Name: name, Other: name}
				}
				out[n] = raw[i:end:end]
			case foldsTo(quoted, name):
				return nil, &AmbiguousError{Name: name, Other: MemberName(quoted)}
			}
		}
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return out, nil
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// foldsTo reports whether the quoted member name folds to name without
// being name itself.
func foldsTo(quoted []byte, name string) bool {
	key, plain := plainKey(quoted)
	if plain {
		if len(key) != len(name) {
			return false // ASCII folds to ASCII, byte for byte, and name is ASCII or longer
		}
		return foldEqual(string(key), name)
	}
	return foldEqual(MemberName(quoted), name)
}

// plainKey is the member name inside its quotes, and whether it needs no
// unquoting (no escape, ASCII).
func plainKey(quoted []byte) ([]byte, bool) {
	name := quoted[1 : len(quoted)-1]
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return name, false
		}
	}
	return name, true
}

// Unambiguous reports, for a whole JSON value, the first object (at any
// depth) that holds two members whose names fold to the same (FoldName):
// a name repeated, or spelled in two cases. raw must be valid JSON; a
// value that is not is left to the caller's decoder, which refuses it.
func Unambiguous(raw json.RawMessage) error {
	if !json.Valid(raw) {
		return nil
	}
	return UnambiguousValid(raw)
}

// UnambiguousValid is Unambiguous of raw that json.Valid accepted.
func UnambiguousValid(raw json.RawMessage) error {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 {
		return nil
	}
	_, err := checkValue(raw, 0)
	return err
}

// checkValue checks the value starting at b[i] and returns the index
// just past it.
func checkValue(b []byte, i int) (int, error) {
	switch b[i] {
	case '{':
		return checkObject(b, i)
	case '[':
		i = skipSpace(b, i+1)
		if b[i] == ']' {
			return i + 1, nil
		}
		for {
			end, err := checkValue(b, i)
			if err != nil {
				return 0, err
			}
			i = skipSpace(b, end)
			if b[i] == ']' {
				return i + 1, nil
			}
			i = skipSpace(b, i+1) // past the comma
		}
	}
	return valueEnd(b, i), nil
}

// member is a name seen in an object: its quoted bytes and its fold hash.
type member struct {
	quoted []byte
	hash   uint64
}

// checkObject checks the object starting at b[i], its members' values
// included. Names are compared by fold hash first, so an object of many
// members costs a hash per name, not a comparison per pair.
func checkObject(b []byte, i int) (int, error) {
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return i + 1, nil
	}
	var small [8]member // most objects are small: no allocation
	seen := small[:0]
	var byHash map[uint64][]int // for objects past the small array
	for {
		keyEnd := stringEnd(b, i)
		m := member{quoted: b[i:keyEnd]}
		m.hash = foldHash(m.quoted)
		if byHash == nil {
			for _, s := range seen {
				if s.hash == m.hash && sameFolded(s.quoted, m.quoted) {
					return 0, ambiguity(s.quoted, m.quoted)
				}
			}
			if len(seen) == len(small) {
				byHash = make(map[uint64][]int, 2*len(small))
				for j, s := range seen {
					byHash[s.hash] = append(byHash[s.hash], j)
				}
			}
		} else {
			for _, j := range byHash[m.hash] {
				if sameFolded(seen[j].quoted, m.quoted) {
					return 0, ambiguity(seen[j].quoted, m.quoted)
				}
			}
			byHash[m.hash] = append(byHash[m.hash], len(seen))
		}
		seen = append(seen, m)
		i = skipSpace(b, skipSpace(b, keyEnd)+1) // past the colon
		end, err := checkValue(b, i)
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, end)
		if b[i] == '}' {
			return i + 1, nil
		}
		i = skipSpace(b, i+1) // past the comma
	}
}

func ambiguity(first, second []byte) error {
	return &AmbiguousError{Name: MemberName(first), Other: MemberName(second)}
}

// sameFolded reports whether two quoted member names fold to the same.
func sameFolded(a, b []byte) bool {
	ka, pa := plainKey(a)
	kb, pb := plainKey(b)
	if pa && pb {
		if len(ka) != len(kb) {
			return false
		}
		for i := range ka {
			if upperASCII(ka[i]) != upperASCII(kb[i]) {
				return false
			}
		}
		return true
	}
	return foldEqual(MemberName(a), MemberName(b))
}

// foldHash is FNV-1a over a quoted member name's folded runes.
func foldHash(quoted []byte) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	if key, plain := plainKey(quoted); plain {
		for _, c := range key {
			h = (h ^ uint64(upperASCII(c))) * prime
		}
		return h
	}
	for _, r := range MemberName(quoted) {
		r = fold(r)
		for r > 0 {
			h = (h ^ uint64(r&0xff)) * prime
			r >>= 8
		}
	}
	return h
}

func upperASCII(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// foldEqual reports whether a and b fold to the same (FoldName(a) ==
// FoldName(b)), rune by rune.
func foldEqual(a, b string) bool {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if fold(ra) != fold(rb) {
			return false
		}
		a, b = a[na:], b[nb:]
	}
	return a == "" && b == ""
}

// FoldName is the form under which two member names are the same member
// to some decoder. It is encoding/json's own folding (ASCII upper case;
// beyond ASCII, the smallest rune of the rune's simple folding orbit, so
// "ſ" is "S" and the Kelvin sign is "K"), widened to what upper- or
// lower-casing may also join ("ı" and "İ" are "I"): a wider fold refuses
// more spellings, never fewer.
func FoldName(s string) string {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		out = utf8.AppendRune(out, fold(r))
	}
	return string(out)
}

// fold is one rune of FoldName.
func fold(r rune) rune {
	if r < utf8.RuneSelf {
		return rune(upperASCII(byte(r)))
	}
	return foldRune(unicode.ToLower(unicode.ToUpper(r)))
}

// foldRune is the smallest rune of r's simple folding orbit.
func foldRune(r rune) rune {
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}
