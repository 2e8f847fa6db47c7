package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"":                      "",
		"drop_table":            "drop_table",
		"DROP  TABLE":           "drop table",
		"drop\t\n TABLE":        "drop table",
		"  rm   -rf  /  ":       "rm -rf /",
		"drop\u00a0table":       "drop table", // no-break space
		"drop\u2003\u3000table": "drop table", // em space, ideographic space
		"ÉCOLE":                 "école",
		"a\xffb":                "a\ufffdb",
		"   ":                   "",
		"already normal, fine":  "already normal, fine",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNormalizeIdempotent(t *testing.T) {
	for _, s := range []string{"A  b", " x", "x ", "\u00a0y", "ÀB\tc", "a\xffb", "\u0130"} {
		once := Normalize(s)
		if twice := Normalize(once); twice != once {
			t.Errorf("Normalize not idempotent on %q: %q then %q", s, once, twice)
		}
	}
}

func TestNormalizeNoAllocWhenNormal(t *testing.T) {
	s := "fs_write_file calling write on /tmp/x"
	if n := testing.AllocsPerRun(100, func() { _ = Normalize(s) }); n != 0 {
		t.Errorf("Normalize allocates %v times on a normal string", n)
	}
}

func TestPatternMatch(t *testing.T) {
	tests := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"drop_*", []string{"drop_table", "DROP_TABLE", "drop_", "drop_a.b/c d"}, []string{"db_drop_table", "xdrop_"}},
		{"*drop table*", []string{"DROP  TABLE users", "please\tdrop\ntable x", "drop table"}, []string{"droptable", "drop_table"}},
		{"*DROP   Table*", []string{"drop table users"}, nil},
		{"  rm -rf*  ", []string{"rm -rf /", "  RM  -RF  ~"}, []string{"sudo rm -rf /"}},
		{"*rm -rf /", []string{"sudo rm -rf /", "rm -rf /"}, []string{"rm -rf /tmp"}},
		{`*rm -rf /\*`, []string{"rm -rf /*"}, []string{"rm -rf /x"}},
		{"fs.{write,delete}_*", []string{"fs.write_file", "FS.Delete_Dir"}, []string{"fs.read_file", "fsXwrite_file"}},
		{"[a-c]at", []string{"cat", "Bat"}, []string{"dat"}},
		{"get_?", []string{"get_x"}, []string{"get_xy"}},
		{"*", []string{"", "anything at all"}, nil},
		{"école*", []string{"ÉCOLE normale"}, nil},
	}
	for _, tt := range tests {
		p, err := CompilePattern(tt.pattern)
		if err != nil {
			t.Errorf("CompilePattern(%q): %v", tt.pattern, err)
			continue
		}
		if p.Source != tt.pattern || p.String() != tt.pattern {
			t.Errorf("Source = %q", p.Source)
		}
		for _, s := range tt.yes {
			if !p.Match(s) {
				t.Errorf("%q should match %q", tt.pattern, s)
			}
			if !p.MatchNormalized(Normalize(s)) {
				t.Errorf("%q should match normalized %q", tt.pattern, s)
			}
		}
		for _, s := range tt.no {
			if p.Match(s) {
				t.Errorf("%q should not match %q", tt.pattern, s)
			}
		}
	}
}

func TestCompilePatternErrors(t *testing.T) {
	for src, want := range map[string]string{
		"":                                      "pattern is empty",
		" \t ":                                  "pattern is empty",
		"{a,b":                                  "unclosed",
		"[abc":                                  "unexpected end of input",
		"[c-a]":                                 "range hi character is less than lo",
		`a\`:                                    "trailing backslash",
		"[]":                                    "could not parse range",
		"a\xffb":                                "not valid UTF-8",
		strings.Repeat("a", MaxPatternLength+1): "limit is 1024",
	} {
		_, err := CompilePattern(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CompilePattern(%q) = %v, want error containing %q", src, err, want)
		}
	}
}

func TestZeroPatternMatchesNothing(t *testing.T) {
	var p Pattern
	if p.Match("") || p.Match("x") || p.MatchNormalized("") {
		t.Error("zero Pattern matched")
	}
}

// A pathological glob must still match in reasonable time on a long subject.
func TestPatternBacktrackingBounded(t *testing.T) {
	p, err := CompilePattern(strings.Repeat("*a", 20) + "*b")
	if err != nil {
		t.Fatal(err)
	}
	subject := strings.Repeat("a", 100_000)
	if p.Match(subject) {
		t.Error("matched without a b")
	}
}

func FuzzCompilePattern(f *testing.F) {
	for _, s := range []string{
		"drop_*", "*rm -rf*", "fs.{write,delete}_*", "[a-z]at", "[!x]", `\*lit\*`, "{a,{b,c}}", "{a,",
		"[", "[]", "[a-]", `a\`, "?*?*", "{}", "**", "***a***", "\u00a0x", "A\tB", "\xff",
	} {
		f.Add(s, "subject DROP  table drop_x")
	}
	f.Fuzz(func(t *testing.T, src, subject string) {
		p, err := CompilePattern(src)
		if err != nil {
			if p.g != nil {
				t.Fatal("error with a compiled pattern")
			}
			return
		}
		if !utf8.ValidString(src) {
			t.Fatal("invalid UTF-8 pattern compiled")
		}
		got := p.Match(subject)
		if got != p.MatchNormalized(Normalize(subject)) {
			t.Fatal("Match and MatchNormalized disagree")
		}
		// Normalisation makes matching blind to case and spacing.
		upper := strings.ToUpper(subject)
		if Normalize(upper) == Normalize(subject) && p.Match(upper) != got {
			t.Fatalf("case changed the result for %q", subject)
		}
		if got != p.Match("  "+strings.ReplaceAll(subject, " ", "\t \n")+" ") {
			t.Fatalf("white space changed the result for %q", subject)
		}
		// A pattern compiled from its own normalised form behaves the same.
		q, err := CompilePattern(p.Normalized())
		if err != nil || q.Match(subject) != got {
			t.Fatalf("re-compiling normalised %q: %v", p.Normalized(), err)
		}
	})
}

func TestCanonicalNumber(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"120", "120", true}, {"-5", "-5", true}, {"0", "0", true}, {"-0", "0", true},
		{"1e2", "100", true}, {"1E+2", "100", true}, {"100.0", "100", true}, {"0.50", "0.5", true},
		{"-0.0", "0", true}, {"1.25e-1", "0.125", true},
		{"01", "", false}, {"+1", "", false}, {".5", "", false}, {"1.", "", false}, {"-", "", false}, {"", "", false}, {"0x1f", "", false},
		{strings.Repeat("9", 400), strings.Repeat("9", 400), true},
		{strings.Repeat("9", 401), "+Inf", true}, // too long to render exactly: float64, which overflows
		{strings.Repeat("9", 411), "+Inf", true},
	} {
		got, ok := CanonicalNumber(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzCanonicalNumber: the integer fast path agrees with the exact
// rational on every input.
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"120", "-0", "0", "01", "-", "1e2", strings.Repeat("9", 513), "-12345678901234567890"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := CanonicalNumber(s)
		want, wantOK := exactNumber(s)
		if got != want || ok != wantOK {
			t.Fatalf("CanonicalNumber(%q) = %q, %v; exactNumber %q, %v", s, got, ok, want, wantOK)
		}
	})
}
