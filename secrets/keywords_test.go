package secrets

import (
	"slices"
	"strings"
	"testing"
)

// naiveOccurrences finds keywords as gitleaks would in a folded text.
func naiveOccurrences(words []string, text string) []occurrence {
	return naiveIn(words, strings.ToLower(text)) // ASCII-only test texts: offsets agree
}

// naiveIn finds the keywords in a text already folded.
func naiveIn(words []string, low string) []occurrence {
	var out []occurrence
	for id, w := range words {
		for i := 0; ; {
			j := strings.Index(low[i:], w)
			if j < 0 {
				break
			}
			out = append(out, occurrence{pos: i + j, id: uint16(id)})
			i += j + 1
		}
	}
	slices.SortFunc(out, func(a, b occurrence) int {
		if a.pos != b.pos {
			return a.pos - b.pos
		}
		return int(a.id) - int(b.id)
	})
	return out
}

// asciiLower folds ASCII letters only, byte for byte.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// widened is k with its table in uint32, the form of a table too large
// for uint16, so that both loops are tested on the same automaton.
func widened(k *keywordIndex) *keywordIndex {
	w := *k
	w.row32 = make([]uint32, len(k.row16))
	for i, t := range k.row16 {
		w.row32[i] = uint32(t)
	}
	w.row16 = nil
	return &w
}

func sortOcc(o []occurrence) []occurrence {
	o = slices.Clone(o)
	slices.SortFunc(o, func(a, b occurrence) int {
		if a.pos != b.pos {
			return a.pos - b.pos
		}
		return int(a.id) - int(b.id)
	})
	return o
}

func TestKeywordIndex(t *testing.T) {
	words := []string{"api", "key", "apikey", "pi", "token", "xoxe-", "xoxe.xoxb-", "s.", "ey", "-----begin"}
	k, err := newKeywordIndex(words)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"", "API_KEY=abc", "apikeyapikey", "xoxe.xoxb-1 xoxe-2", "They say: s.key TOKEN", "-----BEGIN KEY", "aaaapiii"}
	for _, text := range texts {
		got := sortOcc(k.find(text, 0, len(text), nil))
		want := naiveOccurrences(words, text)
		if !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", text, got, want)
		}
		if k.contains(text) != (len(want) > 0) {
			t.Errorf("%q: contains %v", text, k.contains(text))
		}
	}
	// K KELVIN SIGN and ſ LONG S count as k and s, at the byte offset
	// where they start.
	text := "API_\u212aEY tokens.x"
	got := sortOcc(k.find(text, 0, len(text), nil))
	var ids []string
	for _, o := range got {
		ids = append(ids, words[o.id]+"@"+string(rune('0'+o.pos%10)))
	}
	if !slices.Contains(ids, "key@4") || !slices.Contains(ids, "ey@7") {
		t.Errorf("Kelvin: %v", ids)
	}
	if o := k.find("ſ.", 0, 3, nil); len(o) != 1 || words[o[0].id] != "s." || o[0].pos != 0 {
		t.Errorf("long s: %v", o)
	}
	if w := widened(k); !slices.Equal(sortOcc(w.find(text, 0, len(text), nil)), got) {
		t.Errorf("the uint32 table finds other keywords")
	}
	if _, err := newKeywordIndex([]string{"Upper"}); err == nil {
		t.Error("an unfolded keyword is taken")
	}
}

// TestWindows: a text of several windows, with secrets at and around
// the cuts, has every secret found once.
func TestWindows(t *testing.T) {
	f := newFakes(81)
	filler := strings.Repeat("an ordinary line of a long log, with nothing in it\n", 1+3*windowSize/50)
	var toks []string
	var b strings.Builder
	for i := 0; i < 12; i++ {
		tok := f.github("ghp")
		toks = append(toks, tok)
		// Put one just before, at and after each nominal cut.
		at := (i/3+1)*(windowSize-windowOverlap) + (i%3-1)*30
		for b.Len() < at-len("token: ") {
			b.WriteString(filler[:min(len(filler), at-len("token: ")-b.Len())])
		}
		b.WriteString("token: " + tok + "\n")
	}
	b.WriteString(filler)
	text := b.String()
	fs := Default().Scan("", text)
	seen := map[string]int{}
	for _, fd := range fs {
		seen[text[fd.Start:fd.End]]++
	}
	for _, tok := range toks {
		if seen[tok] != 1 {
			t.Errorf("token found %d times", seen[tok])
		}
	}
	if len(fs) != len(toks) {
		t.Errorf("%d findings for %d tokens", len(fs), len(toks))
	}
}

// FuzzKeywordFind wants find, which takes every byte for a symbol where
// no K or ſ is, to find what findFolding finds, over the ruleset's
// keywords, in the same order, on any text and window.
func FuzzKeywordFind(f *testing.F) {
	for _, s := range []string{"", "token=abc", "AKIA key s. ey http://x", "Authorization: Bearer", "x\u212aey s\u017fecret \xe2\x84 \xc5", "\u212a"} {
		f.Add(s, 0, len(s))
	}
	f.Fuzz(func(t *testing.T, text string, from, to int) {
		if from < 0 || to > len(text) || from > to {
			from, to = 0, len(text)
		}
		plain, err := newKeywordIndex(Default().words.words)
		if err != nil {
			t.Fatal(err)
		}
		plain.plain = true
		for _, k := range []*keywordIndex{Default().words, plain, widened(Default().words)} {
			got := k.find(text, from, to, nil)
			want := k.findFolding(text, from, to, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("find(%q, %d, %d) = %v, findFolding %v", text, from, to, got, want)
			}
			// contains folds ASCII only (the stopwords' way).
			if (k.plain || !foldsWide(text[from:to])) && k.contains(text[from:to]) != (len(k.find(text[from:to], 0, to-from, nil)) > 0) {
				t.Fatalf("contains(%q) = %v", text[from:to], !(len(got) > 0))
			}
		}
		// Where no K or ſ is, every keyword is where an ASCII fold of the
		// text has it (the automaton's table against strings.Index).
		if !foldsWide(text[from:to]) {
			got := sortOcc(Default().words.find(text, from, to, nil))
			want := naiveIn(Default().words.words, asciiLower(text[from:to]))
			for i := range want {
				want[i].pos += from
			}
			if !slices.Equal(got, want) {
				t.Fatalf("find(%q, %d, %d) = %v, strings.Index finds %v", text, from, to, got, want)
			}
		}
	})
}
