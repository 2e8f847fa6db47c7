package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

func TestExact(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		names []string
		want  []string // "" for absent
		err   string   // the other spelling of an ambiguous member
	}{
		{`{"uri":"file:///tmp/ok"}`, []string{"uri"}, []string{`"file:///tmp/ok"`}, ""},
		{`{}`, []string{"uri"}, []string{""}, ""},
		{``, []string{"uri"}, []string{""}, ""},
		{`null`, []string{"name"}, []string{""}, ""},
		{`{"name":"a","arguments":{"x":1},"_meta":{}}`, []string{"name", "arguments"}, []string{`"a"`, `{"x":1}`}, ""},
		{`{"uri":"file:///etc/shadow","URI":"file:///tmp/ok"}`, []string{"uri"}, nil, "URI"},
		{`{"Uri":"a"}`, []string{"uri"}, nil, "Uri"},
		{`{"uri":"a","uri":"b"}`, []string{"uri"}, nil, "uri"},
		{`{"\u0075ri":"a","uri":"b"}`, []string{"uri"}, nil, "uri"},
		{`{"name":"a","NAME":"b"}`, []string{"name"}, nil, "NAME"},
		{`{"argument\u017f":{}}`, []string{"arguments"}, nil, "argumentſ"}, // long s: encoding/json reads it as arguments
		{"{\"\u212aey\":1}", []string{"key"}, nil, "\u212aey"},             // Kelvin sign
		{`{"nameX":"a","nam":"b"}`, []string{"name"}, []string{""}, ""},
		{`{"name":1,"other":{"NAME":2,"name":3}}`, []string{"name"}, []string{`1`}, ""}, // only the top level is read
	} {
		got, err := Exact(json.RawMessage(tc.raw), tc.names...)
		var amb *AmbiguousError
		if tc.err != "" {
			if !errors.As(err, &amb) || amb.Other != tc.err {
				t.Errorf("Exact(%s, %q) = %q, %v; want the ambiguity %q", tc.raw, tc.names, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Exact(%s, %q): %v", tc.raw, tc.names, err)
			continue
		}
		for i := range tc.want {
			if string(got[i]) != tc.want[i] {
				t.Errorf("Exact(%s, %q)[%d] = %s, want %s", tc.raw, tc.names, i, got[i], tc.want[i])
			}
		}
	}
	if _, err := Exact(json.RawMessage(`[1]`), "uri"); !errors.Is(err, ErrNotObject) {
		t.Errorf("an array: %v, want ErrNotObject", err)
	}
}

func TestUnambiguous(t *testing.T) {
	for raw, bad := range map[string]bool{
		`{"a":1,"b":{"c":[{"d":1,"e":2}]}}`: false,
		`{"path":"/tmp","PATH":"/etc"}`:     true,
		`{"a":{"b":[{"x":1,"X":2}]}}`:       true,
		`[{"a":1},{"a":2}]`:                 false, // two objects, one member each
		`{"a":1,"a":1}`:                     true,
		`"text {\"a\":1,\"a\":2}"`:          false, // inside a string
		`{"dryRun":true,"dryrun":false}`:    true,
		`{}`:                                false,
		`{"a":`:                             false, // not JSON: the decoder refuses it
	} {
		err := Unambiguous(json.RawMessage(raw))
		if (err != nil) != bad {
			t.Errorf("Unambiguous(%s) = %v, want ambiguous %v", raw, err, bad)
		}
	}
}

// The decoders a server may read a member with: exact names, last wins
// (JSON.parse, Python, Go into a map); exact, first wins; and
// encoding/json into a struct (case-insensitive, Unicode folding).
type (
	uriStruct struct {
		V json.RawMessage `json:"uri"`
	}
	nameStruct struct {
		V json.RawMessage `json:"name"`
	}
	argumentsStruct struct {
		V json.RawMessage `json:"arguments"`
	}
	sStruct struct {
		V json.RawMessage `json:"s"`
	}
	kStruct struct {
		V json.RawMessage `json:"k"`
	}
)

func decodeFolding(raw []byte, name string) (json.RawMessage, bool) {
	var v json.RawMessage
	var err error
	switch name {
	case "uri":
		var s uriStruct
		err, v = json.Unmarshal(raw, &s), s.V
	case "name":
		var s nameStruct
		err, v = json.Unmarshal(raw, &s), s.V
	case "arguments":
		var s argumentsStruct
		err, v = json.Unmarshal(raw, &s), s.V
	case "s":
		var s sStruct
		err, v = json.Unmarshal(raw, &s), s.V
	case "k":
		var s kStruct
		err, v = json.Unmarshal(raw, &s), s.V
	default:
		return nil, false
	}
	return v, err == nil
}

func firstExact(ms []Member, name string) json.RawMessage {
	for _, m := range ms {
		if m.Key == name {
			return m.Value
		}
	}
	return nil
}

// FuzzExactMembers: a request whose judged member is duplicated or
// case-varied is refused; one that Exact accepts is read the same by
// every decoder a server may use (exact last-wins, exact first-wins,
// encoding/json's case-insensitive struct decode), and that is the
// value Exact returned.
func FuzzExactMembers(f *testing.F) {
	for _, s := range []string{`{"uri":"file:///etc/shadow","URI":"file:///tmp/ok"}`, `{"uri":"a"}`, `{"name":"x","NAME":"y"}`,
		`{"arguments":{},"argument\u017f":{"a":1}}`, "{\"\u212a\":1,\"k\":2}", `{"\u0053":1}`, `{"s":1,"s":2}`, `{"ur\u0130":1}`,
		`{"Name":"a"}`, `{}`, `null`, `{"uri":null}`, `{"a":{"uri":1,"URI":2}}`} {
		for _, name := range []string{"uri", "name", "arguments", "s", "k"} {
			f.Add(s, name)
		}
	}
	f.Fuzz(func(t *testing.T, raw, name string) {
		if _, ok := decodeFolding([]byte(`{}`), name); !ok || !json.Valid([]byte(raw)) {
			return
		}
		got, err := Exact(json.RawMessage(raw), name)
		ms, serr := Split(json.RawMessage(raw))
		if serr != nil {
			if err == nil {
				t.Fatalf("Exact(%q) accepted what is not an object", raw)
			}
			return
		}
		if err != nil {
			var amb *AmbiguousError
			if !errors.As(err, &amb) {
				t.Fatalf("Exact(%q, %q): %v", raw, name, err)
			}
			return
		}
		last, _ := Get(ms, name)
		folding, ok := decodeFolding([]byte(raw), name)
		if !ok {
			return // a type the struct decode refuses (not an object); no server reads it either
		}
		if string(got[0]) != string(last) || string(got[0]) != string(firstExact(ms, name)) || string(got[0]) != string(folding) {
			t.Fatalf("Exact(%q, %q) = %s; last-wins %s, first-wins %s, encoding/json %s",
				raw, name, got[0], last, firstExact(ms, name), folding)
		}
	})
}

// unambiguousByDecoder is Unambiguous the slow way: a json.Decoder walks
// the tokens, and each object's names are compared by FoldName.
func unambiguousByDecoder(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		names  map[string]bool
		key    bool // the next token of this object is a name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return true
		}
		top := (*frame)(nil)
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].key = true
				}
				continue
			}
			name := FoldName(tok.(string))
			if top.names[name] {
				return false
			}
			top.names[name] = true
			top.key = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, names: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

// FuzzUnambiguous holds UnambiguousValid (fold hashes, names compared in
// place) to the slow reading above on every valid input.
func FuzzUnambiguous(f *testing.F) {
	for _, s := range []string{`{"a":1,"A":2}`, `{"a":{"b":[{"x":1,"X":2}]}}`, `[{"a":1},{"a":2}]`, `{"\u0061":1,"a":2}`,
		`{"k":1,"\u212a":2}`, `{"s":1,"\u017f":2}`, `{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"A":10}`,
		`{"é":1,"É":2}`, `"x"`, `{}`, `{"ı":1,"I":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		got := UnambiguousValid(json.RawMessage(raw)) == nil
		if want := unambiguousByDecoder([]byte(raw)); got != want {
			t.Fatalf("UnambiguousValid(%q) unambiguous = %v; the decoder's walk says %v", raw, got, want)
		}
	})
}
