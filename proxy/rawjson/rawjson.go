// Package rawjson splits JSON objects into their members without
// decoding them: each value stays byte for byte as it was sent. The
// relay edits one member of a client's params and leaves the rest alone;
// the link reads a JSON-RPC message's members. Both run on every message.
package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// Member is one member of a JSON object, its value as sent.
type Member struct {
	Key   string
	Value json.RawMessage
}

// Split splits a JSON object into its members, in order, each value
// byte for byte as it was (sharing raw's bytes); null or nothing is no
// members. It runs on every message and every request's params, so it
// validates once (json.Valid) and then splits without checks; FuzzSplit
// holds it to what a json.Decoder walking the tokens reads.
func Split(raw json.RawMessage) ([]Member, error) {
	return SplitInto(nil, raw)
}

// SplitInto is Split appending to dst: a caller that splits on every
// message gives an array of its own stack, and a message of no more
// members than it holds is split without an allocation.
func SplitInto(dst []Member, raw json.RawMessage) ([]Member, error) {
	raw = bytes.Trim(raw, " \t\r\n") // JSON's white space: bytes.TrimSpace would take \v and others too
	if len(raw) == 0 || string(raw) == "null" {
		return dst, nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("not valid JSON")
	}
	return splitValid(dst, raw)
}

// SplitValidInto is SplitInto for raw that the caller has just found
// valid (json.Valid): a line of a stdio stream, checked as it was
// framed, is not walked twice.
func SplitValidInto(dst []Member, raw json.RawMessage) ([]Member, error) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || string(raw) == "null" {
		return dst, nil
	}
	return splitValid(dst, raw)
}

// splitValid appends the members of raw, valid JSON without white space
// around it, to out.
func splitValid(out []Member, raw json.RawMessage) ([]Member, error) {
	if raw[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return out, nil
	}
	if out == nil {
		out = make([]Member, 0, 8) // a JSON-RPC message, most params: one allocation
	}
	for {
		keyEnd := stringEnd(raw, i)
		key := MemberName(raw[i:keyEnd])
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		end := valueEnd(raw, i)
		out = append(out, Member{key, raw[i:end:end]})
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return out, nil
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// Get is the value of the member named key: the last of a repeated
// name, as json.Unmarshal into a map keeps it.
func Get(ms []Member, key string) (json.RawMessage, bool) {
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i].Key == key {
			return ms[i].Value, true
		}
	}
	return nil, false
}

// Lookup is Get(Split(raw), key) without building the members: the value
// of the member of the object raw named key (the last of a repeated
// name), and false when there is none or raw is not a JSON object. The
// relay asks every request's params for one member or two (_meta, its
// progressToken), which is most often absent. FuzzLookup holds it to
// Get(Split(raw)).
func Lookup(raw json.RawMessage, key string) (json.RawMessage, bool) {
	raw = bytes.Trim(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, false
	}
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return nil, false
	}
	var value json.RawMessage
	found := false
	for {
		keyEnd := stringEnd(raw, i)
		match := keyIs(raw[i:keyEnd], key)
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		end := valueEnd(raw, i)
		if match {
			value, found = raw[i:end:end], true
		}
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return value, found
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// ValueSpan is Lookup for raw that is valid JSON already (its caller
// validated it; this does not): where the value of the member of the
// object raw named key lies in raw, raw[start:end] (the last of a
// repeated name), and false when there is none or raw is not an object.
// The results reader appends a notice to a result's content where it
// stands instead of writing the whole result again. FuzzLookup holds
// it to Lookup.
func ValueSpan(raw json.RawMessage, key string) (start, end int, found bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, 0, false
	}
	i = skipSpace(raw, i+1)
	if raw[i] == '}' {
		return 0, 0, false
	}
	for {
		keyEnd := stringEnd(raw, i)
		match := keyIs(raw[i:keyEnd], key)
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1) // past the colon
		e := valueEnd(raw, i)
		if match {
			start, end, found = i, e, true
		}
		i = skipSpace(raw, e)
		if raw[i] == '}' {
			return start, end, found
		}
		i = skipSpace(raw, i+1) // past the comma
	}
}

// keyIs reports whether the quoted member name reads as key, comparing
// in place unless it has escapes or is not ASCII.
func keyIs(quoted []byte, key string) bool {
	name := quoted[1 : len(quoted)-1]
	for _, c := range name {
		if c == '\\' || c >= utf8.RuneSelf {
			return MemberName(quoted) == key
		}
	}
	return string(name) == key
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

// MemberName is a quoted member name (its quotes included) as
// encoding/json reads it: escapes undone, invalid UTF-8 replaced; "" for
// one that does not read as a JSON string. The one reader of names: the
// link's scan of an over-long line reads them as the decoder does.
func MemberName(quoted []byte) string {
	plain := true
	for _, c := range quoted[1 : len(quoted)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain {
		return commonKey(quoted[1 : len(quoted)-1])
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // not a string: s stays ""
	return s
}

// commonKey is string(b), without allocating for the names every
// message and most params have (the switch compares in place).
func commonKey(b []byte) string {
	switch string(b) {
	case "jsonrpc":
		return "jsonrpc"
	case "id":
		return "id"
	case "method":
		return "method"
	case "params":
		return "params"
	case "result":
		return "result"
	case "error":
		return "error"
	case "name":
		return "name"
	case "arguments":
		return "arguments"
	case "_meta":
		return "_meta"
	case "progressToken":
		return "progressToken"
	case "uri":
		return "uri"
	case "content":
		return "content"
	}
	return string(b)
}

// Members is Split as a map, for reading; nil when raw is not an object.
// With duplicate keys the last one counts, as in encoding/json (and Get).
func Members(raw json.RawMessage) map[string]json.RawMessage {
	ms, err := Split(raw)
	if err != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Value
	}
	return out
}

// Set returns the object raw with key set to value (encoded unless it is
// already a json.RawMessage), in place if the key exists, else appended;
// every other member stays as it was. raw may be empty (a new object).
func Set(raw json.RawMessage, key string, value any) (json.RawMessage, error) {
	ms, err := Split(raw)
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
		if ms[i].Key == key {
			ms[i].Value, found = v, true
		}
	}
	if !found {
		ms = append(ms, Member{Key: key, Value: v})
	}
	return Encode(ms), nil
}

// Delete returns the object raw without key.
func Delete(raw json.RawMessage, key string) (json.RawMessage, error) {
	ms, err := Split(raw)
	if err != nil {
		return nil, err
	}
	out := ms[:0]
	for _, m := range ms {
		if m.Key != key {
			out = append(out, m)
		}
	}
	return Encode(out), nil
}

// Encode writes members as one JSON object, in their order.
func Encode(ms []Member) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Value)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// Marshal is json.Marshal without HTML escaping: what aqlguard writes
// for a model or a log shows "<" and "&" as they are.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
