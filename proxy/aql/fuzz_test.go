package aql

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseValidate feeds hostile bytes through the whole untrusted-input
// path: the envelope, the limits, the encoding scan and validation. It
// must never panic, and every outcome must be a well-formed result.
func FuzzParseValidate(f *testing.F) {
	for _, s := range []string{
		`{"operation":"get","params":{"title":"x","count":2}}`,
		`{"operations":[{"operation":"a"},{"operation":"b","params":{"x":[1,2,{"y":"\ud83d\ude00"}]}}]}`,
		`{"operation":"get","title":"top","params":{"title":"inner","_meta":{}}}`,
		"{\"operation\":\"get\",\"params\":{\"s\":\"\xff\"}}",
		`{"operation":"get","params":{"s":"\ud800"}}`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[`,
		`{"operation":"x","params":{"a":{"b":{"c":{"d":{"e":{}}}}}}}`,
		``, `null`, `"str"`, `{"operation":null}`,
		`{"operation":"get","params":{"title":"a","title":"b"}}`,
		`{"operation":"get","params":{"t\u0069tle":"a","title":"b","x":[{"k":1,"k\n":2}]}}`,
	} {
		f.Add([]byte(s))
	}
	defs := []*Param{
		{Name: "title", Types: []string{"string"}, Required: true, MaxLength: ptr(8), Pattern: `^[a-z]*$`},
		{Name: "count", Types: []string{"integer"}, Minimum: ptr(0.0), Default: json.RawMessage(`1`)},
		{Name: "x", Types: []string{"array"}, ItemTypes: []string{"integer", "object"}},
		{Name: "status", Enum: []any{"a", json.Number("2")}},
	}
	for _, d := range defs {
		if err := d.Compile(); err != nil {
			f.Fatal(err)
		}
	}
	lim := DefaultLimits()
	lim.MaxNestingDepth = 8
	f.Fuzz(func(t *testing.T, raw []byte) {
		env, err := Parse(raw, lim)
		if err != nil {
			if err.Code == "" || err.Message == "" {
				t.Fatalf("malformed error %+v", err)
			}
			if _, jerr := json.Marshal(Failure(err)); jerr != nil {
				t.Fatalf("error does not encode: %v", jerr)
			}
			return
		}
		reqs := env.Batch
		if env.Single != nil {
			reqs = []*Request{env.Single}
		}
		for _, r := range reqs {
			if r == nil || r.Params == nil {
				continue
			}
			out, verr := Validate(r.Operation, defs, r.Params)
			if verr == nil {
				if _, ok := out["title"]; !ok {
					t.Fatalf("validated without required title: %v", out)
				}
			}
			res := Success(out)
			if verr != nil {
				res = Failure(verr)
			}
			if _, jerr := json.Marshal(res); jerr != nil {
				t.Fatalf("result does not encode: %v", jerr)
			}
		}
	})
}

// FuzzCheckArguments feeds hostile arguments through a transparent
// call's reading (ParseArguments, CheckArguments against a tool's
// input). It must never panic; what it accepts names no member twice
// and no undeclared argument, and every refusal is a well-formed error.
func FuzzCheckArguments(f *testing.F) {
	for _, s := range []string{
		`{"command":"ls","count":3,"tags":["a"],"options":{"depth":1}}`,
		`{"command":"ls","path":"/etc/shadow"}`,
		`{"command":"ls","p\u0430th":"/x"}`,
		`{"command":"ls","command":"rm -rf /"}`,
		`{"command":"ls","count":"5"}`,
		`{"command":"ls","opts":{"force":true,"x":1},"edits":[{"old":"a","new":1}]}`,
		`{"command":null,"maybe":null}`, ``, `[]`, `{"a":{"a":{"a":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	lim := DefaultLimits()
	lim.MaxNestingDepth = 8
	f.Fuzz(func(t *testing.T, raw []byte) {
		args, err := ParseArguments(raw, lim)
		if err == nil && namesTwice(raw) {
			t.Fatalf("read an object that names a member twice: %s", raw)
		}
		if err == nil {
			err = CheckArguments("run", toolShape(), args)
			if err == nil {
				for k := range args {
					if _, ok := toolShape().Properties[k]; !ok {
						t.Fatalf("accepted the undeclared argument %q", k)
					}
				}
			}
		}
		if err != nil {
			if err.Code == "" || err.Message == "" {
				t.Fatalf("malformed error %+v", err)
			}
			if _, jerr := json.Marshal(Failure(err)); jerr != nil {
				t.Fatalf("error does not encode: %v", jerr)
			}
		}
	})
}

// namesTwice reports whether some object in raw (valid JSON) names a
// member twice, read by encoding/json's tokenizer: the reference the
// scanner is held to.
func namesTwice(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		key    bool // the next string token is a member name
		names  map[string]bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				if top != nil && top.object {
					top.key = true
				}
				stack = append(stack, &frame{object: v == '{', key: v == '{', names: map[string]bool{}})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.key {
				if top.names[v] {
					return true
				}
				top.names[v] = true
				top.key = false
				continue
			}
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}
