package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// member is one member of a JSON object, its value as sent.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers splits a JSON object into its members, in order, each
// value byte for byte as it was (and sharing raw's bytes). A relay that
// changes one member of an object leaves every other member, and their
// order, alone. It runs on every request's params: one validating pass
// (json.Valid), then a split that needs no checks, where a json.Decoder
// walking the tokens allocated a decoder, a buffer and a copy of every
// value (FuzzObjectMembers holds the two to the same results).
func objectMembers(raw json.RawMessage) ([]member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	if raw[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []member
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return nil, nil
	}
	for {
		keyEnd := stringEnd(raw, i)
		key := unquoteKey(raw[i:keyEnd])
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		end := valueEnd(raw, i)
		out = append(out, member{key, raw[i:end:end]})
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return out, nil
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// The helpers below walk JSON that json.Valid accepted.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index just past the string that starts at b[i].
func stringEnd(b []byte, i int) int {
	for j := i + 1; ; j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
}

// valueEnd is the index just past the value that starts at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; ; j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j
}

// unquoteKey is a member name as encoding/json reads it: escapes undone,
// invalid UTF-8 replaced.
func unquoteKey(quoted []byte) string {
	plain := true
	for _, c := range quoted[1 : len(quoted)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return string(quoted[1 : len(quoted)-1])
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid: json.Valid accepted the object
	return s
}

// members is objectMembers as a map, for reading; nil when raw is not an
// object. With duplicate keys the last one counts, as in encoding/json.
func members(raw json.RawMessage) map[string]json.RawMessage {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.key] = m.value
	}
	return out
}

// setMember returns the object raw with key set to value (encoded unless
// it is already a json.RawMessage), in place if the key exists, else
// appended; every other member stays as it was. raw may be empty (a new
// object).
func setMember(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	v, ok := value.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(value)
		if err != nil {
			return nil, err
		}
		v = b
	}
	found := false
	for i := range ms {
		if ms[i].key == key {
			ms[i].value, found = v, true
		}
	}
	if !found {
		ms = append(ms, member{key, v})
	}
	return encodeMembers(ms), nil
}

// deleteMember returns the object raw without key.
func deleteMember(raw json.RawMessage, key string) (json.RawMessage, error) {
	ms, err := objectMembers(raw)
	if err != nil {
		return nil, err
	}
	out := ms[:0]
	for _, m := range ms {
		if m.key != key {
			out = append(out, m)
		}
	}
	return encodeMembers(out), nil
}

func encodeMembers(ms []member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// SetMember and DeleteMember are setMember and deleteMember for the
// modes' tool handlers (package proxy).
func SetMember(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	return setMember(raw, key, value)
}

func DeleteMember(raw json.RawMessage, key string) (json.RawMessage, error) {
	return deleteMember(raw, key)
}

// Members is members for package proxy.
func Members(raw json.RawMessage) map[string]json.RawMessage { return members(raw) }
