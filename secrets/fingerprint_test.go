package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

func newPrintKey(t testing.TB) *PrintKey {
	t.Helper()
	key := make([]byte, PrintKeyLen)
	rand.Read(key)
	k, err := NewPrintKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The reference vector of SipHash-2-4 for the 8-byte message 00..07
// under the key 00..0f (the paper's appendix; vectors_sip64[8]).
func TestSipHash8(t *testing.T) {
	var key, msg [16]byte
	for i := range key {
		key[i] = byte(i)
		msg[i] = byte(i)
	}
	got := sipHash8(binary.LittleEndian.Uint64(key[0:8]), binary.LittleEndian.Uint64(key[8:16]), binary.LittleEndian.Uint64(msg[0:8]))
	want := binary.LittleEndian.Uint64([]byte{0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93})
	if got != want {
		t.Fatalf("sipHash8 = %#x, want %#x", got, want)
	}
}

func TestNewPrintKey(t *testing.T) {
	if _, err := NewPrintKey(make([]byte, 16)); err == nil {
		t.Error("a 16-byte key taken")
	}
	a, b := newPrintKey(t), newPrintKey(t)
	if a.KeyID() == b.KeyID() {
		t.Error("two keys, one id")
	}
}

// printSetOf returns a PrintSet under k holding the secrets of text, as
// another process would print them.
func printSetOf(t testing.TB, k *PrintKey, text string) *PrintSet {
	t.Helper()
	p := NewPrintSet(k)
	for _, f := range Default().Scan("result", text) {
		p.Add(f.Rule, f.Digest, "the result of fs.read_file at 17:04", k.Prints(text, f))
	}
	if p.Len() == 0 {
		t.Fatalf("no secret in %q", text)
	}
	return p
}

// TestPrintSetCarried: a PrintSet sees each family's secret in each
// outgoing form Seen sees it in, and says so as Seen does, with where
// it was read.
func TestPrintSetCarried(t *testing.T) {
	k := newPrintKey(t)
	f := newFakes(41)
	for _, fam := range families {
		text := "here it is:\n" + fam.make(f, t) + "\n"
		s, p := seenOf(t, text), printSetOf(t, k, text)
		for _, form := range carriedForms {
			var want Finding
			for _, fd := range Default().Scan("", text) {
				if fd.Rule == fam.rule {
					want = fd
				}
			}
			out := "before " + form.form(text[want.Start:want.End]) + " after"
			sc, sok := s.Carried(out)
			pc, pok := p.Carried(out)
			if !pok {
				t.Errorf("%s as %s: not found by its prints in %.120q", fam.name, form.name, out)
				continue
			}
			if !sok || pc.Encoding != sc.Encoding || pc.Rule != sc.Rule || pc.Digest != sc.Digest {
				t.Errorf("%s as %s: prints %+v, Seen %+v", fam.name, form.name, pc, sc)
			}
			if pc.From != "the result of fs.read_file at 17:04" {
				t.Errorf("%s as %s: From %q", fam.name, form.name, pc.From)
			}
		}
	}
}

// TestPrintSetNot: no prefix, suffix, near miss, other case, other
// secret or other key is taken for a printed secret.
func TestPrintSetNot(t *testing.T) {
	k := newPrintKey(t)
	f := newFakes(42)
	tok := f.github("ghp")
	p := printSetOf(t, k, "GITHUB_TOKEN="+tok+"\n")
	near := []byte(tok)
	near[len(near)/2] ^= 1
	others := append(corpusTexts(t), f.github("ghp"), tok[:20], tok[:len(tok)-1], tok[1:], strings.ToUpper(tok), string(near),
		hex.EncodeToString([]byte(tok[:30])), hex.EncodeToString(near), base64.StdEncoding.EncodeToString([]byte(tok[:12])),
		base64.StdEncoding.EncodeToString(near))
	for _, o := range others {
		if c, ok := p.Carried(o); ok {
			t.Errorf("Carried(%.60q) = %+v", o, c)
		}
	}
	// Under another key the same secret's prints are not the same.
	if c, ok := printSetOf(t, newPrintKey(t), "x "+f.github("ghp")).Carried(tok); ok {
		t.Errorf("another key's set: %+v", c)
	}
	q := NewPrintSet(k)
	q.Add("github-pat", "", "elsewhere", k.Prints("GITHUB_TOKEN="+tok, Finding{Start: 13, End: 13 + len(tok)}))
	if _, ok := q.Carried(tok); !ok {
		t.Error("printed under the same key in another set: not found")
	}
	// A secret Seen would not remember is not printed.
	if ps := k.Prints("Zq8!xw2", Finding{Start: 0, End: 7}); ps != nil {
		t.Errorf("a 7-byte secret printed: %d", len(ps))
	}
	if ps := k.Prints("abc", Finding{Start: 0, End: 40}); ps != nil {
		t.Error("a finding outside its text printed")
	}
}

// TestPrintsHoldNoSecret: a Print holds the secret in no form Seen
// knows, and a PrintSet prints none.
func TestPrintsHoldNoSecret(t *testing.T) {
	k := newPrintKey(t)
	tok := newFakes(43).github("ghp")
	ps := k.Prints(tok, Finding{Rule: "github-pat", Start: 0, End: len(tok)})
	if len(ps) < 4 || ps[0].Encoding != "plain" {
		t.Fatalf("prints: %d, first %q", len(ps), ps[0].Encoding)
	}
	dump := fmt.Sprintf("%+v %x", ps, ps)
	for _, n := range encodings(tok) {
		if strings.Contains(dump, n.text) || strings.Contains(strings.ToLower(dump), n.text) {
			t.Errorf("the prints hold the %s form", n.enc)
		}
	}
	p := NewPrintSet(k)
	p.Add("github-pat", "", "x", ps)
	p.Add("github-pat", "", "x", ps) // again: one secret
	if p.Len() != 1 || p.String() != "secrets.PrintSet{1 secrets}" || fmt.Sprintf("%#v", p) != p.String() {
		t.Errorf("Len %d, %s", p.Len(), p)
	}
	var nilSet *PrintSet
	if _, ok := nilSet.Carried(tok); ok || nilSet.Len() != 0 {
		t.Error("a nil set found something")
	}
}

// FuzzPrintSetCarried: what Seen sees of a secret its prints see too,
// in the same encoding, with anything around it.
func FuzzPrintSetCarried(f *testing.F) {
	fk := newFakes(44)
	for i, fam := range families {
		f.Add(fam.make(fk, f), "before ", " after", uint8(i))
	}
	f.Add("0123456789", "", "", uint8(3))
	f.Add("p@ss w%rd+/=\n\x00é", "%%", "+", uint8(12))
	k := newPrintKey(f)
	f.Fuzz(func(t *testing.T, secret, prefix, suffix string, form uint8) {
		if len(secret) < MinSeenLen || len(secret) > 4096 {
			return
		}
		var s Seen
		fd := Finding{Rule: "fuzz", Start: 0, End: len(secret)}
		s.Add(secret, fd)
		p := NewPrintSet(k)
		p.Add("fuzz", "d", "there", k.Prints(secret, fd))
		cf := carriedForms[int(form)%len(carriedForms)]
		out := prefix + cf.form(secret) + suffix
		sc, _ := s.Carried(out)
		pc, ok := p.Carried(out)
		if !ok {
			t.Fatalf("%s of %q not found by its prints in %q", cf.name, secret, out)
		}
		if pc.Encoding != sc.Encoding || pc.Rule != "fuzz" || pc.From != "there" {
			t.Fatalf("prints %+v, Seen %+v", pc, sc)
		}
	})
}

func BenchmarkPrintSetCarried(b *testing.B) {
	k := newPrintKey(b)
	f := newFakes(45)
	p := NewPrintSet(k)
	for i := 0; i < 16; i++ {
		tok := f.github("ghp")
		p.Add("github-pat", "", "x", k.Prints(tok, Finding{Start: 0, End: len(tok)}))
	}
	arg := strings.Repeat("https://example.com/some/path?query=value&other=thing ", 20)[:1024]
	b.SetBytes(int64(len(arg)))
	for b.Loop() {
		if _, ok := p.Carried(arg); ok {
			b.Fatal("found")
		}
	}
}
