package verify

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"
)

const digit = `[0-9A-HJKMNP-TV-Z]`

var (
	// 4-4-4-4-5-5 Crockford digits; the last one carries 3 random bits and
	// two zero bits, so it is one of the 8 digits whose low bits are 00.
	codeFormat = regexp.MustCompile(`^` + digit + `{4}(-` + digit + `{4}){3}-` + digit + `{5}-` + digit + `{4}[048CGMRW]$`)
	uuidV4     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func newTestChallenge(t testing.TB, now time.Time, ttl time.Duration) (*Challenge, string) {
	t.Helper()
	c, code, err := NewChallenge("agent-a", `fs.delete_file {"path":"/x"}`, "danger_zone", now, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return c, code
}

// Format, uniqueness and entropy over many draws: every code decodes to
// 16 bytes, and each of the 128 bits is set in about half of the codes
// (a stuck or biased bit is far outside the bound: 6 standard deviations).
func TestNewChallengeFormatAndEntropy(t *testing.T) {
	const draws = 3000
	now := time.Now()
	seen := map[string]bool{}
	var ones [128]int
	for i := 0; i < draws; i++ {
		c, code := newTestChallenge(t, now, 5*time.Minute)
		if !codeFormat.MatchString(code) {
			t.Fatalf("code %q does not have the grouped Crockford form", code)
		}
		if !uuidV4.MatchString(c.ID) || !ValidChallengeID(c.ID) {
			t.Fatalf("id %q is not a canonical UUIDv4", c.ID)
		}
		if seen[code] || seen[c.ID] {
			t.Fatalf("repeated code or id after %d draws", i)
		}
		seen[code], seen[c.ID] = true, true
		if !c.CreatedAt.Equal(now) || !c.ExpiresAt.Equal(now.Add(5*time.Minute)) || c.Used {
			t.Fatalf("times or state: %v", c)
		}
		if len(c.salt) != 16 || len(c.hash) != 32 {
			t.Fatalf("salt %d bytes, hash %d bytes", len(c.salt), len(c.hash))
		}
		raw, err := crockford.DecodeString(strings.ReplaceAll(code, "-", ""))
		if err != nil || len(raw) != 16 {
			t.Fatalf("code %q decodes to %d bytes: %v", code, len(raw), err)
		}
		for bit := 0; bit < 128; bit++ {
			if raw[bit/8]&(0x80>>(bit%8)) != 0 {
				ones[bit]++
			}
		}
	}
	// Binomial(3000, 1/2): sd ≈ 27.4; 6 sd ≈ 165.
	for bit, n := range ones {
		if n < draws/2-165 || n > draws/2+165 {
			t.Errorf("bit %d set in %d of %d codes", bit, n, draws)
		}
	}
}

func TestNewChallengeRejectsNoTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		if c, code, err := NewChallenge("a", "x", "verify", time.Now(), ttl); err == nil || c != nil || code != "" {
			t.Errorf("ttl %s: %v, %q, %v", ttl, c, code, err)
		}
	}
}

// Salts differ per challenge, so equal codes would not give equal hashes.
func TestSaltsDiffer(t *testing.T) {
	a, _ := newTestChallenge(t, time.Now(), time.Minute)
	b, _ := newTestChallenge(t, time.Now(), time.Minute)
	if string(a.salt) == string(b.salt) {
		t.Fatal("two challenges share a salt")
	}
	if string(digest(a.salt, "SAME")) == string(digest(b.salt, "SAME")) {
		t.Fatal("salting does not change the hash")
	}
}

func TestValidChallengeID(t *testing.T) {
	for _, s := range []string{
		"123e4567-e89b-42d3-a456-426614174000",
		"00000000-0000-4000-8000-000000000000",
		"ffffffff-ffff-4fff-bfff-ffffffffffff",
	} {
		if !ValidChallengeID(s) {
			t.Errorf("%q should be valid", s)
		}
	}
	for _, s := range []string{
		"",
		"not-a-uuid",
		"123E4567-E89B-42D3-A456-426614174000",  // upper case: not the generated form
		"123e4567-e89b-12d3-a456-426614174000",  // version 1
		"123e4567-e89b-42d3-c456-426614174000",  // variant 110x
		"123e4567-e89b-42d3-7456-426614174000",  // variant 0xxx
		"123e4567e89b42d3a456426614174000",      // no hyphens
		"123e4567-e89b-42d3-a456-42661417400",   // short
		"123e4567-e89b-42d3-a456-4266141740000", // long
		"123e4567-e89b-42d3-a456_426614174000",
		"123e4567-e89b-42d3-a456-42661417400g",
		"{123e4567-e89b-42d3-a456-426614174000}",
	} {
		if ValidChallengeID(s) {
			t.Errorf("%q should be invalid", s)
		}
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"abcd-efgh":         "ABCDEFGH",
		"ab cd\tef":         "ABCDEF",
		" -x-y- ":           "XY",
		"o0Oo":              "0000",
		"iIlL1":             "11111",
		"7k3m-0qz8":         "7K3M0QZ8",
		"ABCD\r\nEFGH":      "ABCDEFGH", // pasted across lines
		"ab\u00a0cd":        "ABCD",     // no-break space from a rich-text paste
		"uU":                "UU",       // U is no alias: it stays and cannot match
		"ı":                 "ı",        // dotless i is not I (no Unicode case folding)
		"ſ":                 "ſ",        // nor is long s an S
		"é-ß":               "éß",
		"already-NORMAL-01": "A1READYN0RMA101",
	} {
		if got := NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	now := time.Now()
	c, code := newTestChallenge(t, now, time.Minute)
	last := code[len(code)-1]
	flipped := code[:len(code)-1] + string("04"[btoi(last == '0')])
	for _, wrong := range []string{"", "WRONG", flipped, code + "0", code[:len(code)-1], strings.Repeat("A", 10_000)} {
		if err := c.Check(wrong, now); !errors.Is(err, ErrWrongCode) {
			t.Errorf("Check(%.30q) = %v, want ErrWrongCode", wrong, err)
		}
	}
	if c.Used {
		t.Fatal("a wrong code used the challenge up (it must only cost the failure budget)")
	}
	if err := c.Check(code, now.Add(time.Minute)); !errors.Is(err, ErrExpired) {
		t.Errorf("at the expiry: %v, want ErrExpired", err)
	}
	if err := c.Check(code, now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Errorf("after the expiry: %v, want ErrExpired", err)
	}
	mangled := " " + strings.ToLower(strings.ReplaceAll(code, "-", " ")) + " "
	if err := c.Check(mangled, now.Add(time.Minute-time.Nanosecond)); err != nil {
		t.Fatalf("the right code, mangled, just before the expiry: %v", err)
	}
	if !c.Used {
		t.Fatal("success did not mark the challenge used")
	}
	if err := c.Check(code, now); !errors.Is(err, ErrUsed) {
		t.Errorf("second use: %v, want ErrUsed", err)
	}
	// Used wins over expired: the caller can tell "already done" apart.
	if err := c.Check(code, now.Add(time.Hour)); !errors.Is(err, ErrUsed) {
		t.Errorf("used and expired: %v, want ErrUsed", err)
	}
	for _, err := range []error{ErrExpired, ErrUsed, ErrWrongCode} {
		if strings.Contains(err.Error(), code) {
			t.Errorf("error %q carries the code", err)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Check compares in constant time. Timing cannot be measured reliably in
// a unit test, so this test reads the source: Check must call
// subtle.ConstantTimeCompare and must not compare bytes any other way
// (bytes.Equal, bytes.Compare, string conversion with ==, reflect).
// The behaviour that goes with it: a guess right in all but its last
// digit fails exactly like a guess wrong everywhere.
func TestCheckComparesInConstantTime(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "challenge.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var check *ast.FuncDecl
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Check" && fn.Recv != nil {
			check = fn
		}
	}
	if check == nil {
		t.Fatal("no method Check in challenge.go")
	}
	var calls []string
	ast.Inspect(check.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				if pkg, ok := sel.X.(*ast.Ident); ok {
					calls = append(calls, pkg.Name+"."+sel.Sel.Name)
				}
			}
		case *ast.BinaryExpr:
			// Comparing the digest by converting it to a string would be a
			// variable-time compare.
			for _, side := range []ast.Expr{n.X, n.Y} {
				if call, ok := side.(*ast.CallExpr); ok {
					if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "string" {
						t.Errorf("Check compares with %s on a string conversion", n.Op)
					}
				}
			}
		}
		return true
	})
	joined := strings.Join(calls, " ")
	if !strings.Contains(joined, "subtle.ConstantTimeCompare") {
		t.Errorf("Check does not call subtle.ConstantTimeCompare (calls: %s)", joined)
	}
	for _, bad := range []string{"bytes.Equal", "bytes.Compare", "reflect.DeepEqual", "slices.Equal", "hmac.Equal"} {
		if strings.Contains(joined, bad) {
			t.Errorf("Check calls %s", bad)
		}
	}

	now := time.Now()
	c, code := newTestChallenge(t, now, time.Minute)
	plain := NormalizeCode(code)
	nearly := plain[:len(plain)-1] + map[bool]string{true: "4", false: "0"}[plain[len(plain)-1] == '0']
	far := strings.Repeat("Z", len(plain))
	for _, guess := range []string{nearly, far, plain[:1]} {
		if err := c.Check(guess, now); err != ErrWrongCode {
			t.Errorf("guess %q: %v", guess, err)
		}
	}
}

// Nothing printable or serialisable about a challenge carries its code,
// its normalised form, its hash or its salt: not fmt with any verb, on
// the value or the pointer, not json.Marshal, not slog.
func TestChallengeNeverPrintsTheCode(t *testing.T) {
	c, code := newTestChallenge(t, time.Now(), time.Minute)
	secrets := map[string]string{
		"code":            code,
		"normalised code": NormalizeCode(code),
		"hash (hex)":      fmt.Sprintf("%x", c.hash),
		"salt (hex)":      fmt.Sprintf("%x", c.salt),
		"hash (bytes)":    fmt.Sprint(c.hash),
		"salt (bytes)":    fmt.Sprint(c.salt),
	}
	var outputs []string
	for _, v := range []any{c, *c} {
		outputs = append(outputs, fmt.Sprintf("%v %+v %#v %s %q %x %X %d", v, v, v, v, v, v, v, v))
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outputs = append(outputs, string(b))
		var logged strings.Builder
		slog.New(slog.NewTextHandler(&logged, nil)).Info("x", "challenge", v)
		slog.New(slog.NewJSONHandler(&logged, nil)).Info("x", "challenge", v)
		outputs = append(outputs, logged.String())
	}
	outputs = append(outputs, fmt.Sprintf("%v", []*Challenge{c}), fmt.Sprintf("%+v", map[string]Challenge{"k": *c}))
	for _, out := range outputs {
		for name, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s visible in %q", name, out)
			}
		}
		if !strings.Contains(out, c.ID) {
			t.Errorf("the id should be there (it is public): %q", out)
		}
	}
	var back map[string]any
	b, _ := json.Marshal(c)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "agent", "action", "tier", "created_at", "expires_at", "used"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if len(back) != 7 {
		t.Errorf("JSON has unexpected fields: %s", b)
	}
}

func FuzzNormalizeCode(f *testing.F) {
	for _, s := range []string{"", "abcd-efgh", "o0Il1", " \t-\r\n", "ı ſ é", "\xff\xfe", strings.Repeat("-", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := NormalizeCode(s)
		if NormalizeCode(n) != n {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, n, NormalizeCode(n))
		}
		if strings.ContainsAny(n, "- \t\r\nabcdefghijklmnopqrstuvwxyzOIL") {
			t.Fatalf("%q -> %q keeps a separator, a lower-case letter or an alias", s, n)
		}
		// Case and separators never change the result.
		if m := NormalizeCode(strings.ToLower(s) + " - "); m != NormalizeCode(strings.ToUpper(s)) && isASCII(s) {
			t.Fatalf("case or separators matter for %q: %q vs %q", s, m, NormalizeCode(strings.ToUpper(s)))
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// FuzzCheck: Check never panics on any input; a guess that does not
// normalise to the code never matches; the code matches itself after any
// mangling of case, hyphens and spaces (the mangling is driven by the
// fuzzer's bytes).
func FuzzCheck(f *testing.F) {
	f.Add("", []byte{})
	f.Add("ab-cd", []byte{1, 2, 3})
	f.Add("\x00\xff", []byte{255, 0, 7, 8, 9})
	f.Fuzz(func(t *testing.T, guess string, mangle []byte) {
		now := time.Now()
		c, code, err := NewChallenge("a", "act", "verify", now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if NormalizeCode(guess) != NormalizeCode(code) {
			if err := c.Check(guess, now); err != ErrWrongCode {
				t.Fatalf("guess %q: %v", guess, err)
			}
		}
		var m strings.Builder
		plain := strings.ReplaceAll(code, "-", "")
		for i := 0; i < len(plain); i++ {
			op := byte(0)
			if i < len(mangle) {
				op = mangle[i]
			}
			ch := plain[i]
			if op&1 != 0 {
				ch = strings.ToLower(string(ch))[0]
			}
			switch op >> 1 & 3 {
			case 1:
				m.WriteByte('-')
			case 2:
				m.WriteByte(' ')
			case 3:
				m.WriteString(" -- ")
			}
			m.WriteByte(ch)
		}
		if err := c.Check(m.String(), now); err != nil {
			t.Fatalf("mangled %q of %q: %v", m.String(), code, err)
		}
		if err := c.Check(code, now); err != ErrUsed {
			t.Fatalf("second use: %v", err)
		}
	})
}
