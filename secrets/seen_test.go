package secrets

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// seenOf returns a Seen that has seen the secrets of text.
func seenOf(t testing.TB, text string) *Seen {
	t.Helper()
	var s Seen
	fs := Default().Scan("result", text)
	if len(fs) == 0 {
		t.Fatalf("no finding in %q", text)
	}
	for _, f := range fs {
		s.Add(text, f)
	}
	return &s
}

// percentAll percent-encodes every byte, in upper or lower case hex.
func percentAll(s string, lower bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if lower {
			fmt.Fprintf(&b, "%%%02x", s[i])
		} else {
			fmt.Fprintf(&b, "%%%02X", s[i])
		}
	}
	return b.String()
}

// percentSome percent-encodes every third byte.
func percentSome(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if i%3 == 0 {
			fmt.Fprintf(&b, "%%%02X", s[i])
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func mixedCase(s string) string {
	b := []byte(s)
	for i := range b {
		if i%2 == 0 {
			b[i] = strings.ToUpper(string(b[i]))[0]
		}
	}
	return string(b)
}

// The ways a secret goes out that Carried sees.
var carriedForms = []struct {
	name, enc string
	form      func(secret string) string
}{
	{"plain", "plain", func(s string) string { return s }},
	{"plain in a URL", "plain", func(s string) string { return "https://paste.example/new?text=" + s + "&lang=txt" }},
	{"base64", "base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
	{"base64 without padding", "base64", func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }},
	{"base64url", "", func(s string) string { return base64.URLEncoding.EncodeToString([]byte(s)) }},
	{"base64 of 'key=' + secret", "base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("key=" + s)) }},
	{"base64 of 'k=' + secret + newline", "base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte("k=" + s + "\n")) }},
	{"base64 of a JSON body", "base64", func(s string) string {
		return base64.StdEncoding.EncodeToString([]byte(`{"user":"alice","note":"` + s + `","n":3}`))
	}},
	{"base64url of a longer text, no padding", "", func(s string) string {
		return base64.RawURLEncoding.EncodeToString([]byte("xy" + s + "trailing data"))
	}},
	{"hex", "hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
	{"HEX", "hex", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }},
	{"mixed-case hex in a longer hex", "hex", func(s string) string { return "00ff" + mixedCase(hex.EncodeToString([]byte(s))) + "0a" }},
	{"percent-encoded, upper", "url", func(s string) string { return "q=" + percentAll(s, false) }},
	{"percent-encoded, lower", "url", func(s string) string { return "q=" + percentAll(s, true) }},
	{"percent-encoded in part", "url", func(s string) string { return "https://x.example/?d=" + percentSome(s) }},
	{"query escaping", "", func(s string) string { return "https://x.example/?d=" + url.QueryEscape("note: "+s) }},
	{"percent-encoded twice", "url", func(s string) string { return strings.ReplaceAll(percentAll(s, false), "%", "%25") }},
	{"base64 in a URL, percent-encoded", "url+base64", func(s string) string {
		return "https://x.example/c?b=" + percentAll(base64.StdEncoding.EncodeToString([]byte("::"+s)), false)
	}},
	{"hex in a URL, percent-encoded", "url+hex", func(s string) string { return "d=" + percentAll(hex.EncodeToString([]byte(s)), true) }},
}

// TestCarried finds each family's secret in each outgoing form.
func TestCarried(t *testing.T) {
	f := newFakes(11)
	for _, fam := range families {
		made := fam.make(f, t)
		text := "here it is:\n" + made + "\n"
		s := seenOf(t, text)
		var want Finding
		for _, fd := range Default().Scan("", text) {
			if fd.Rule == fam.rule {
				want = fd
			}
		}
		secret := text[want.Start:want.End]
		for _, form := range carriedForms {
			out := "before " + form.form(secret) + " after"
			c, ok := s.Carried(out)
			if !ok {
				t.Errorf("%s as %s: not seen in %.120q", fam.name, form.name, out)
				continue
			}
			if c.Rule != fam.rule || c.Digest != Digest(secret) {
				t.Errorf("%s as %s: %+v", fam.name, form.name, c)
			}
			if form.enc != "" && c.Encoding != form.enc {
				t.Errorf("%s as %s: encoding %q, want %q", fam.name, form.name, c.Encoding, form.enc)
			}
		}
	}
}

// TestCarriedNot: what Seen must not claim.
func TestCarriedNot(t *testing.T) {
	f := newFakes(12)
	tok := f.github("ghp")
	s := seenOf(t, "GITHUB_TOKEN="+tok+"\n")
	others := append(corpusTexts(t), f.github("ghp"), tok[:20], tok[5:], strings.ToUpper(tok), hex.EncodeToString([]byte(tok[:30])),
		base64.StdEncoding.EncodeToString([]byte(tok[:12])))
	for _, o := range others {
		if c, ok := s.Carried(o); ok {
			t.Errorf("Carried(%.60q) = %+v", o, c)
		}
	}

	// Short secrets are not remembered: a seven-letter password.
	var short Seen
	text := "postgres://app:Zq8!xw2@db:5432/app"
	for _, fd := range Default().Scan("", text) {
		short.Add(text, fd)
	}
	if short.Len() != 0 {
		t.Errorf("a 7-byte secret remembered")
	}
	// Findings outside the text are ignored.
	short.Add("abc", Finding{Rule: "x", Start: -1, End: 40})
	short.Add("abc", Finding{Rule: "x", Start: 0, End: 40})
	if short.Len() != 0 {
		t.Errorf("a finding outside its text remembered")
	}
}

func TestSeenLenClearDropped(t *testing.T) {
	var s Seen
	if _, ok := s.Carried("anything at all here"); ok || s.Len() != 0 {
		t.Fatal("zero Seen")
	}
	f := newFakes(13)
	var toks []string
	for i := 0; i < MaxSeen+5; i++ {
		tok := f.github("ghp")
		toks = append(toks, tok)
		s.Add(tok, Finding{Rule: "github-pat", Start: 0, End: len(tok)})
	}
	s.Add(toks[0], Finding{Rule: "github-pat", Start: 0, End: len(toks[0])}) // again: no change
	if s.Len() != MaxSeen || s.Dropped() != 5 {
		t.Errorf("Len %d Dropped %d", s.Len(), s.Dropped())
	}
	if _, ok := s.Carried("x " + toks[MaxSeen-1]); !ok {
		t.Errorf("the last remembered secret is not seen")
	}
	if _, ok := s.Carried("x " + toks[MaxSeen]); ok {
		t.Errorf("a dropped secret is seen")
	}
	s.Clear()
	if s.Len() != 0 || s.Dropped() != 0 {
		t.Errorf("after Clear: Len %d Dropped %d", s.Len(), s.Dropped())
	}
	if _, ok := s.Carried("x " + toks[0]); ok {
		t.Errorf("seen after Clear")
	}
}

// TestSeenConcurrent: Add, Carried, Len and Clear from many goroutines
// (go test -race).
func TestSeenConcurrent(t *testing.T) {
	var s Seen
	f := newFakes(14)
	var toks []string
	for i := 0; i < 64; i++ {
		toks = append(toks, f.npm())
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i, tok := range toks {
				if (i+g)%2 == 0 {
					s.Add(tok, Finding{Rule: "npm-access-token", Start: 0, End: len(tok)})
				} else {
					s.Carried("send " + tok)
					s.Len()
				}
				if g == 0 && i == 32 {
					s.Clear()
				}
			}
		}(g)
	}
	wg.Wait()
}
