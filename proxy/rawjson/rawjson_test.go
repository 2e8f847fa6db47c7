package rawjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// FuzzSplit: Split reads, member for member, what a json.Decoder walking
// the tokens reads (how the relay split objects before, kept here as the
// reference) on every valid input, and refuses what is not JSON.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":{"b":[1,2,{"c":null}]},"d":"\u0000"}`, `{"a":1,"a":2}`, `[1]`, `{"a":`, ` { "x" : 1e400 } `,
		`{"\u0061\"}":"}\\","b" :[ "]" , {"}":[]} ] ,"c":-0.5e+3}`, "{\"k\xff\":true}", `{"a":1} x`, `"s"`, `null`, "\t{ }\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		ms, err := Split(json.RawMessage(raw))
		if !json.Valid([]byte(raw)) {
			if err == nil && ms != nil {
				t.Fatalf("%q is not JSON, yet it was split into %q", raw, ms)
			}
			return
		}
		var stack [2]Member
		if vs, verr := SplitValidInto(stack[:0], json.RawMessage(raw)); (verr == nil) != (err == nil) || fmt.Sprint(vs) != fmt.Sprint(ms) {
			t.Fatalf("%q: SplitValidInto gave %q, %v; Split %q, %v", raw, vs, verr, ms, err)
		}
		if vs, verr := SplitInto(stack[:0], json.RawMessage(raw)); (verr == nil) != (err == nil) || fmt.Sprint(vs) != fmt.Sprint(ms) {
			t.Fatalf("%q: SplitInto gave %q, %v; Split %q, %v", raw, vs, verr, ms, err)
		}
		want, werr := splitByDecoder(json.RawMessage(raw))
		if (err == nil) != (werr == nil) || len(ms) != len(want) {
			t.Fatalf("%q: got %q, %v; a decoder reads %q, %v", raw, ms, err, want, werr)
		}
		for i := range ms {
			if ms[i].Key != want[i].Key || string(ms[i].Value) != string(want[i].Value) {
				t.Fatalf("%q: member %d is %q=%s; a decoder reads %q=%s", raw, i, ms[i].Key, ms[i].Value, want[i].Key, want[i].Value)
			}
		}
	})
}

// FuzzLookup: Lookup finds what Get finds in Split's members, for any
// input and any key (the member names of the seeds, escaped and not).
func FuzzLookup(f *testing.F) {
	for _, s := range []string{`{"_meta":{"progressToken":1}}`, `{"a":1,"a":2}`, `{"\u0061":3,"a":4}`, `{"a":1,"\u0061":2}`, "{\"k\xff\":true}", `[{"a":1}]`,
		`{"a":`, ` {"b" : "}" , "a" : [ {"a":0} ] } `, `null`, `{}`} {
		for _, key := range []string{"a", "_meta", "k\ufffd", "b", ""} {
			f.Add(s, key)
		}
	}
	f.Fuzz(func(t *testing.T, raw, key string) {
		got, ok := Lookup(json.RawMessage(raw), key)
		ms, err := Split(json.RawMessage(raw))
		var want json.RawMessage
		var wok bool
		if err == nil {
			want, wok = Get(ms, key)
		}
		if ok != wok || string(got) != string(want) {
			t.Fatalf("Lookup(%q, %q) = %s, %v; Get(Split) = %s, %v", raw, key, got, ok, want, wok)
		}
		if json.Valid([]byte(raw)) {
			start, end, found := ValueSpan(json.RawMessage(raw), key)
			if found != ok || found && raw[start:end] != string(got) {
				t.Fatalf("ValueSpan(%q, %q) = %d, %d, %v; Lookup %s, %v", raw, key, start, end, found, got, ok)
			}
		}
	})
}

// splitByDecoder is the reference FuzzSplit holds Split to.
func splitByDecoder(raw json.RawMessage) ([]Member, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []Member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("a JSON object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, Member{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}
