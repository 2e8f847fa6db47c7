package textfold

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFold(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"drop table", "drop table"},
		{"DROP\tTABLE", "drop table"},
		{"  drop \n\r\v\f table  ", "drop table"},
		{"drop\x00table", "drop table"},
		{"drop\x7ftable", "drop table"},
		{"drop\u0085table", "drop table"},  // NEL, a C1 control
		{"drop\u00a0table", "drop table"},  // no-break space
		{"drop\u2028table", "drop table"},  // line separator
		{"dr\u200bop table", "drop table"}, // zero-width space
		{"d\u200dr\u200co\u2060p", "drop"}, // joiners, word joiner
		{"\ufeffdrop", "drop"},             // BOM
		{"rm \u202e-rf", "rm -rf"},         // bidi override
		{"ＤＲＯＰ　ＴＡＢＬＥ", "drop table"},       // full-width letters and space
		{"ﬁle", "file"},                    // ligature
		{"rm -rf ／", "rm -rf /"},           // full-width solidus
		{"x²", "x2"},                       // superscript
		{"ÉCOLE", "école"},                 // composed stays composed
		{"E\u0301COLE", "école"},           // decomposed is composed
		{"bad\xffbyte", "bad\ufffdbyte"},   // invalid UTF-8
		{"already folded", "already folded"},
		{"trailing ", "trailing"},
		{"A\tB ÉCOLE", "a b école"}, // ASCII to fold, then beyond ASCII
		{strings.Repeat("X\n", 200), strings.TrimSpace(strings.Repeat("x ", 200))}, // past the stack buffer
	}
	for _, tt := range tests {
		if got := Fold(tt.in); got != tt.want {
			t.Errorf("Fold(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFoldIsIdempotent(t *testing.T) {
	for _, s := range []string{"A\tB", "ＡＢ", "x\u200by", "a\u0301", "\xff\xfe", "ǅ", "ﬀ"} {
		once := Fold(s)
		if twice := Fold(once); twice != once {
			t.Errorf("Fold(Fold(%q)) = %q, Fold = %q", s, twice, once)
		}
	}
}

func TestFoldFastPathDoesNotAllocate(t *testing.T) {
	s := "fs.write_file /tmp/x"
	if n := testing.AllocsPerRun(100, func() { _ = Fold(s) }); n != 0 {
		t.Errorf("Fold of folded ASCII allocates %v times", n)
	}
}

func FuzzFold(f *testing.F) {
	for _, s := range []string{"DROP\tTABLE", "ＤＲＯＰ", "x\u200by", "\xff", "  a  b  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Fold(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Fold(%q) = %q: invalid UTF-8", s, out)
		}
		if Fold(out) != out {
			t.Fatalf("Fold is not idempotent on %q: %q then %q", s, out, Fold(out))
		}
		if len(out) > 0 && (out[0] == ' ' || out[len(out)-1] == ' ') {
			t.Fatalf("Fold(%q) = %q: untrimmed", s, out)
		}
		// The ASCII fast path agrees with the Unicode definition.
		if isASCII(s) {
			want := strings.Join(strings.FieldsFunc(strings.ToLower(s), IsSpace), " ")
			if out != want {
				t.Fatalf("Fold(%q) = %q, want %q", s, out, want)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func BenchmarkFold(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"folded", "fs.write_file /home/alice/notes/todo.md"},
		{"lines", strings.Repeat("- buy milk\n", 20)},
		{"capitals", "Deploy The Production Cluster Now"},
		{"unicode", "ＤＲＯＰ　ＴＡＢＬＥ users"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.s)))
			for b.Loop() {
				_ = Fold(c.s)
			}
		})
	}
}
