package results

import (
	"encoding/json"
	"strings"
	"testing"
)

// validCases are JSON texts valid and not, around every rule of the
// grammar.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{`, `}`, `[`, `]`, `{]`, `[}`, `{}}`, `[]]`, `{} {}`, `[] x`,
	`"a"`, `"`, `"a`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\a"`, `"\u0041"`, `"\u004"`, `"\u00G1"`, `"\uABCDx"`, `"\uabcd"`,
	"\"a\x00b\"", "\"a\x1fb\"", "\"a\x7fb\"", "\"\xff\xfe\"", "\"é€😀\"", `"abcdefgh"`, `"abcdefghijklmnop\"q"`,
	"\"abcdefgh\x01ijkl\"", `"abcdefg\`, `"abcdefgh\u12"`,
	`0`, `-0`, `-`, `01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-05`, `-1.5e3`, `+1`, `1.5.5`, `123456789`, `1 2`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `nulll`, `True`,
	`{"a":1}`, `{"a" : 1 , "b" : [ 1 , 2 ] }`, `{"a":1,}`, `{,"a":1}`, `{"a"}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{1:2}`,
	`[1,]`, `[,1]`, `[1 2]`, `[[[]]]`, `[[[]]`, `[{"a":[{"b":null}]}]`, `{"a":{"b":{"c":[true,false,null]}}}`,
	"\t\n\r {\"a\"\t:\n1}\r\n", "\v{}", "{}\x00",
}

func TestValidAsJSON(t *testing.T) {
	cases := append([]string(nil), validCases...)
	for _, n := range []int{9999, 10000, 10001} {
		cases = append(cases, strings.Repeat("[", n)+strings.Repeat("]", n), strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n))
	}
	for _, c := range cases {
		if got, want := valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("valid(%.80q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

// FuzzValid wants valid to agree with json.Valid on every input.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Fatalf("valid(%q) = %v, json.Valid says %v", s, got, want)
		}
	})
}
