package secrets

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	text := "a=SECRET1xyz b=SECRET2xyz c"
	d1, d2 := Digest("SECRET1xyz"), Digest("SECRET2xyz")
	cases := []struct {
		name string
		fs   []Finding
		want string
	}{
		{"none", nil, text},
		{"one", []Finding{{Rule: "r1", Start: 2, End: 12}}, "a=[secret redacted: r1 " + d1 + "] b=SECRET2xyz c"},
		{"two, out of order", []Finding{{Rule: "r2", Start: 15, End: 25, Digest: d2}, {Rule: "r1", Start: 2, End: 12, Digest: d1}},
			"a=[secret redacted: r1 " + d1 + "] b=[secret redacted: r2 " + d2 + "] c"},
		{"overlapping: the first names them", []Finding{{Rule: "r1", Start: 2, End: 12, Digest: d1}, {Rule: "g", Start: 0, End: 14, Digest: "hmac:x"}},
			"[secret redacted: g hmac:x]=SECRET2xyz c"},
		{"outside the text", []Finding{{Rule: "r", Start: -1, End: 3}, {Rule: "r", Start: 20, End: 99}, {Rule: "r", Start: 5, End: 5}}, text},
	}
	for _, c := range cases {
		if got := Redact(text, c.fs); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRedactScan: a Scan's findings are all gone from Redact's text.
func TestRedactScan(t *testing.T) {
	f := newFakes(71)
	var b strings.Builder
	var secrets []string
	for _, fam := range families {
		made := fam.make(f, t)
		b.WriteString("line: " + made + "\n")
	}
	text := b.String()
	fs := Default().Scan("", text)
	for _, fd := range fs {
		secrets = append(secrets, text[fd.Start:fd.End])
	}
	out := Redact(text, fs)
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Errorf("%.30q still in the redacted text", s)
		}
	}
	if n := strings.Count(out, "[secret redacted: "); n < len(families)-2 {
		t.Errorf("%d placeholders for %d families", n, len(families))
	}
}
