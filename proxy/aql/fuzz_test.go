package aql

import (
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
