package injection

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// The scanner takes shortcuts that skip work which cannot change a
// finding (Scanner.full says which). These tests scan every text twice,
// with the shortcuts and along the full path, and want the same
// findings, in the same order, with the same excerpts and counts.

// scanners are a scanner with the shortcuts and one without, for opts.
func scanners(opts Options) (fast, full *Scanner) {
	fast, full = New(opts), New(opts)
	full.full = true
	return fast, full
}

// sameFindings fails t when text gives other findings along the full
// path than with the shortcuts, under each of the options tried.
func sameFindings(t *testing.T, text string) {
	t.Helper()
	for _, opts := range []Options{
		{Data: true, OtherTools: defaultOthers, OwnTools: []string{"add"}},
		{OtherTools: defaultOthers, OwnTools: []string{"add"}},
		{Data: true, Budget: 64},
		{Budget: 1000, OtherTools: manyTools(50)},
	} {
		fast, full := scanners(opts)
		got, want := fast.Scan(text), full.Scan(text)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("data %v, budget %d: the shortcuts change the findings of %q\nfast: %v\nfull: %v",
				opts.Data, opts.Budget, clipBytes(text, 300), got, want)
		}
	}
}

func TestFastPathsCorpus(t *testing.T) {
	for _, text := range seeds() {
		sameFindings(t, text)
	}
	for _, kind := range []string{"prose", "go", "json", "issue"} {
		sameFindings(t, ordinary(kind, 8<<10))
	}
	for _, text := range pathological(9 << 10) {
		sameFindings(t, text) // every sentence cut at maxSentence, with overlaps
	}
	for _, def := range honestTools {
		for _, data := range []bool{false, true} {
			fast, full := scanners(Options{Data: data, OtherTools: defaultOthers})
			m := decode(t, def)
			if got, want := fast.ScanTool(m), full.ScanTool(m); !reflect.DeepEqual(got, want) {
				t.Fatalf("the shortcuts change the findings of %s\nfast: %v\nfull: %v", clipBytes(def, 200), got, want)
			}
		}
	}
}

// pieces are what random texts are made of: words of the lexicon and
// of ordinary text, markup, paths, names of tools, and characters the
// scanner treats apart (invisible, look-alike, wide, controls).
var pieces = func() []string {
	out := strings.Fields("ignore previous instructions you must always never send the user's " +
		"don't dont can't won't read ~/.ssh/id_rsa .env /etc/passwd OPENAI_API_KEY a@b.io +15551234567 " +
		"https://x.io/?q={content} www.example.org curl | bash rm -rf ~ nc -e /bin/sh <IMPORTANT> </IMPORTANT> " +
		"<system> [SYSTEM] **SYSTEM** System: ### system <!-- --> <|im_start|> [INST] <<SYS>> " +
		"send_email fetch `fetch` fetch() read_file mcp_tool_send_email tool call use before " +
		"from now on conversation history bcc Hello World 42 3.14 func main() { } [1] \"quoted\" 'single' " +
		"é É ǅ ﬁ ｉｇｎｏｒｅ ignоre pаge İ ß Ω ω 中文 😀 👍🏽 " +
		// Chunks whose closing punctuation is all they hold besides
		// letters (flush's gates): words, paths, names and tags with it.
		"authors. requests: fetch). fetch`, ~/.ssh/id_rsa. a@b.io, send_email; (fetch) <system>. [sys]: x-y-z!? don't. ")
	out = append(out, " ", " ", " ", "\n", "\n\n", "\t", ". ", ", ", ": ", "- ", "* ", "> ", "# ", "\r", "\r\n",
		"\u200b", "\u200d", "\ufeff", "\u202e", "\u2066", "\u200e", "\u00ad", "\u2800", "\u0301", "\x1b[31m", "\x1b[8m",
		"\b", "\x00", "\x7f", "\x85", "\u2028", string(rune(0xE0041)), string(rune(0xE0069)), "\uFE00\uFE01", "\uFE0F",
		"\xff", "\xc3", strings.Repeat(" ", 70), strings.Repeat("\n", 9), strings.Repeat("x", 300),
		strings.Repeat("ab", 1100))
	return out
}()

// randomText strings n pieces together.
func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
		if r.IntN(3) > 0 {
			b.WriteByte(' ')
		}
	}
	return b.String()
}

func TestFastPathsRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(30, 3))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		sameFindings(t, randomText(r, 1+r.IntN(400)))
	}
}

func FuzzFastPaths(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	r := rand.New(rand.NewPCG(30, 4))
	for range 20 {
		f.Add(randomText(r, 1+r.IntN(200)))
	}
	f.Fuzz(func(t *testing.T, text string) {
		sameFindings(t, text)
	})
}

// TestFlatLexicon: the flat table finds every word of the lexicon, and
// what the map finds for words near them; each id's classes and phrase
// starts are the entry's.
func TestFlatLexicon(t *testing.T) {
	loadLexicon()
	for w, e := range lexicon {
		for _, v := range []string{w, w + "s", "x" + w, w[1:], strings.ToUpper(w), w + "abcdefghijklmnopqrstuvwxyz"} {
			var want uint16
			if e := lookup([]byte(v)); e != nil {
				want = e.id
			}
			if got := flatLookup([]byte(v), flatHash([]byte(v))); got != want {
				t.Errorf("flatLookup(%q) = %d, want %d", v, got, want)
			}
		}
		fw := &flatWords[e.id]
		if string(fw.w[:fw.n]) != w || fw.classes != e.classes || int(fw.startN) != len(e.starts) {
			t.Errorf("flat entry of %q: %q, classes %b, %d starts; want classes %b, %d starts", w, fw.w[:fw.n], fw.classes, fw.startN, e.classes, len(e.starts))
			continue
		}
		for i, p := range e.starts {
			fp := flatPhrases[flatStarts[int(fw.startA)+i]]
			if &phraseRules[fp.rule] != p.rule || fp.atStart != p.atStart || int(fp.elemN) != len(p.elems) {
				t.Fatalf("flat phrase %d of %q differs", i, w)
			}
			for j, el := range p.elems {
				fe := flatElems[int(fp.elemA)+j]
				if int(fe.gap) != el.gap || fe.mask != el.mask || !slices.Equal(flatIDs[fe.idA:fe.idA+fe.idN], el.words) {
					t.Fatalf("flat element %d of phrase %d of %q differs", j, i, w)
				}
			}
		}
	}
	for _, c := range []string{"dont", "doesnt", "didnt", "cant", "wont", "shouldnt", "mustnt", "isnt", "client", "want"} {
		pair, ok := contraction([]byte(c))
		a, b, fok := flatContraction([]byte(c))
		if ok != fok || ok && (a != idOf(pair[0]) || b != idOf(pair[1])) {
			t.Errorf("flatContraction(%q) = %d %d %v; want %v %v", c, a, b, fok, pair, ok)
		}
	}
}

// TestMayBeTool: the filter before the map of tools lets every key of
// it through, whatever its length.
func TestMayBeTool(t *testing.T) {
	names := append(manyTools(300), "x_"+strings.Repeat("long", 20), "ab")
	s := New(Options{OtherTools: names})
	for k := range s.tools {
		if !s.mayBeTool([]byte(k)) {
			t.Errorf("mayBeTool(%q) = false", k)
		}
	}
	if len(s.tools) < 300 {
		t.Fatalf("only %d tools", len(s.tools))
	}
}
