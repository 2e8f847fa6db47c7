package verify

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	codeFormat = regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){4}-[0-9A-HJKMNP-TV-Z]$`)
	uuidV4     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

func TestNewChallenge(t *testing.T) {
	now := time.Now()
	seen := map[string]bool{}
	for i := 0; i < 2000; i++ {
		c, code, err := NewChallenge("a", "act", "verify", now, 5*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// 26 Crockford digits carry 130 bits, of which 128 are random.
		if !codeFormat.MatchString(code) || !uuidV4.MatchString(c.ID) {
			t.Fatalf("format: code %q id %q", code, c.ID)
		}
		if seen[code] || seen[c.ID] {
			t.Fatal("repeated code or id")
		}
		seen[code], seen[c.ID] = true, true
		if !c.ExpiresAt.Equal(now.Add(5 * time.Minute)) {
			t.Fatal("expiry")
		}
	}
}

func TestCheck(t *testing.T) {
	now := time.Now()
	c, code, _ := NewChallenge("a", "act", "verify", now, time.Minute)
	mangled := strings.ToLower(strings.ReplaceAll(code, "-", " "))
	if err := c.Check("WRONG", now); err != ErrWrongCode {
		t.Errorf("wrong: %v", err)
	}
	if err := c.Check(code, now.Add(time.Minute)); err != ErrExpired {
		t.Errorf("expired: %v", err)
	}
	if err := c.Check(mangled, now); err != nil {
		t.Errorf("case, hyphens and spaces must not matter: %v", err)
	}
	if err := c.Check(code, now); err != ErrUsed {
		t.Errorf("one-time use: %v", err)
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{"ab-cd ef": "ABCDEF", "o0Il1": "00111", " x-y ": "XY"} {
		if got := NormalizeCode(in); got != want {
			t.Errorf("NormalizeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

// The code is not stored: nothing printable or serialisable about a
// challenge contains it (or its hash).
func TestChallengeKeepsNoCode(t *testing.T) {
	c, code, _ := NewChallenge("a", "act", "verify", time.Now(), time.Minute)
	b, _ := json.Marshal(c)
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", c, c, c, c), string(b)} {
		if strings.Contains(s, code) || strings.Contains(s, NormalizeCode(code)) {
			t.Fatalf("code visible in %q", s)
		}
		if strings.Contains(s, fmt.Sprintf("%x", c.hash)) {
			t.Fatalf("hash visible in %q", s)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add("", uint8(0))
	f.Add("ab-cd", uint8(3))
	f.Fuzz(func(t *testing.T, guess string, mangle uint8) {
		now := time.Now()
		c, code, err := NewChallenge("a", "act", "verify", now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if guess != "" && NormalizeCode(guess) != NormalizeCode(code) && c.Check(guess, now) == nil {
			t.Fatalf("guess %q matched", guess)
		}
		// Any mangling of case, hyphens and spaces still matches.
		m := code
		if mangle&1 != 0 {
			m = strings.ToLower(m)
		}
		if mangle&2 != 0 {
			m = strings.ReplaceAll(m, "-", " ")
		}
		if mangle&4 != 0 {
			m = " " + strings.ReplaceAll(m, "-", "") + " "
		}
		if err := c.Check(m, now); err != nil {
			t.Fatalf("mangled %q of %q: %v", m, code, err)
		}
	})
}
