package rawjson

import (
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
	ms, err := Split(raw)
	if err != nil {
		return nil, ErrNotObject
	}
	out := make([]json.RawMessage, len(names))
	for i, name := range names {
		folded := FoldName(name)
		for _, m := range ms {
			switch {
			case m.Key == name:
				if out[i] != nil {
					return nil, &AmbiguousError{Name: name, Other: name}
				}
				out[i] = m.Value
			case foldedEqual(m.Key, name, folded):
				return nil, &AmbiguousError{Name: name, Other: m.Key}
			}
		}
	}
	return out, nil
}

// foldedEqual reports whether key folds to folded (FoldName(name)), key
// being another spelling than name. Most keys differ from name in length
// or in a byte no folding maps: they are told apart without folding.
func foldedEqual(key, name, folded string) bool {
	if key == name {
		return false
	}
	plain := true
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain && len(key) != len(name) {
		return false // ASCII folds to ASCII, byte for byte
	}
	return FoldName(key) == folded
}

// Unambiguous reports, for a whole JSON value, the first object (at any
// depth) that holds two members whose names fold to the same (FoldName):
// a name repeated, or spelled in two cases. raw must be valid JSON; a
// value that is not is left to the caller's decoder, which refuses it.
func Unambiguous(raw json.RawMessage) error {
	if !json.Valid(raw) {
		return nil
	}
	_, err := checkValue(raw, skipSpace(raw, 0))
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

// checkObject checks the object starting at b[i], its members' values
// included.
func checkObject(b []byte, i int) (int, error) {
	i = skipSpace(b, i+1)
	if b[i] == '}' {
		return i + 1, nil
	}
	type seen struct{ name, folded string }
	var small [8]seen // most objects are small: no allocation
	names := small[:0]
	for {
		keyEnd := stringEnd(b, i)
		key := unquoteKey(b[i:keyEnd])
		folded := FoldName(key)
		for _, s := range names {
			if s.folded == folded {
				return 0, &AmbiguousError{Name: s.name, Other: key}
			}
		}
		names = append(names, seen{key, folded})
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

// FoldName is the form under which two member names are the same member
// to some decoder. It is encoding/json's own folding (ASCII upper case;
// beyond ASCII, the smallest rune of the rune's simple folding orbit, so
// "ſ" is "S" and the Kelvin sign is "K"), widened to what upper- or
// lower-casing may also join ("ı" and "İ" are "I"): a wider fold refuses
// more spellings, never fewer.
func FoldName(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r < utf8.RuneSelf {
			if 'a' <= r && r <= 'z' {
				r -= 'a' - 'A'
			}
			out = append(out, byte(r))
			continue
		}
		out = utf8.AppendRune(out, foldRune(unicode.ToLower(unicode.ToUpper(r))))
	}
	return string(out)
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
