package secrets

import (
	"regexp/syntax"
	"testing"
)

// TestAnchorFollow: the follow set of an anchor holds the bytes that may
// come next in a match, in any case of the anchor, and more where the
// regex cannot say (past ASCII, a match that may end, any character).
func TestAnchorFollow(t *testing.T) {
	for _, c := range []struct {
		expr, anchor string
		in, out      string
	}{
		{`\b(?:hvs\.[\w-]{90,120}|s\.(?i:[a-z0-9]{24}))(?:['"\s;]|$)`, "s.", "aZ09", " \n.\"-_"},
		{`\b(ey[a-zA-Z0-9]{17,}\.ey[a-zA-Z0-9\/\\_-]{17,})`, "ey", "aZ9", " \"'.-"},
		{`(?i)(?:key|auth)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|:)`, "key", " \t_a.-'\"=:", "{}("},
		{`(?i)token\b`, "token", " x", ""},          // \b taken as holding, and then a match may end: every byte
		{`abc.def`, "abc", "x \"\xff", ""},          // any character
		{`(?i)abc[0-9]`, "abc", "09\x80\xff", "a "}, // past ASCII: let through
		{`k(?:ey)*[0-9]`, "key", "e0", "yk "},       // a loop met again after the anchor
	} {
		re, err := syntax.Parse(c.expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		f := anchorFollow(compileFollow(re), c.anchor)
		for i := 0; i < len(c.in); i++ {
			if !f.has(c.in[i]) {
				t.Errorf("%s after %q: %q may follow, not in the set", c.expr, c.anchor, c.in[i])
			}
		}
		for i := 0; i < len(c.out); i++ {
			if f.has(c.out[i]) {
				t.Errorf("%s after %q: %q cannot follow, in the set", c.expr, c.anchor, c.out[i])
			}
		}
	}
}

// TestFollowsProse: the keywords of ordinary prose that cannot begin a
// match ("s." ending a sentence, "ey" in "they") make no candidate of
// the default ruleset's Vault and JWT rules, and a token's do; the
// findings stay gitleaks' either way (TestPlansAgreeWithGitleaks,
// FuzzScan).
func TestFollowsProse(t *testing.T) {
	s := Default()
	cands := func(text string) map[string]bool {
		out := map[string]bool{}
		for _, o := range s.words.find(text, 0, len(text), nil) {
			for i := range s.anchorOf[o.id] {
				if br := &s.anchorOf[o.id][i]; br.follows(text, o.pos) {
					out[s.specs[br.r].id] = true
				}
			}
		}
		return out
	}
	prose := "Copyright 2011 The Go Authors. All rights reserved. They said the secret API docs are tokens of access here."
	if c := cands(prose); len(c) > 0 {
		t.Errorf("prose makes candidates %v", c)
	}
	for text, rule := range map[string]string{
		"token s.Abcdefghijklmnopqrstuvwx;":             "vault-service-token",
		"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3": "jwt",
		"x S.ABCDEFGHIJKLMNOPQRSTUVWX ":                 "vault-service-token",
		"auth_token = abcdefghijklmnop":                 "generic-api-key",
		"the API key, abcdefghijklmnop":                 "generic-api-key",
		`"key": {"Value"}`:                              "generic-api-key",
		"KEY : abcdefghijklmnop":                        "generic-api-key", // a byte past ASCII lets it through
	} {
		if !cands(text)[rule] {
			t.Errorf("%q makes no candidate of %s", text, rule)
		}
	}
}

// TestAnchorNeeds: an operator (= : > | ? ,) is proven needed within
// the runes a semi-generic rule's regex allows before it, and not where
// a match may end or go on without one.
func TestAnchorNeeds(t *testing.T) {
	for _, c := range []struct {
		expr, anchor string
		want         int
	}{
		{`(?i)(?:key|auth)(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}([\w.=-]{10,150})`, "key", 24},
		{`(?i)key[a-z]{0,3}=x`, "key", 4},
		{`(?i)key[a-z]*=x`, "key", 0},       // unbounded before it
		{`(?i)key(?:=|[a-z]{8})`, "key", 0}, // not needed
		{`(?i)key\b`, "key", 0},             // may end
		{`(?i)key.{0,3}=`, "key", 0},        // any character
		{`(?i)key[^a]{0,3}=`, "key", 4},     // past ASCII counts as not one
	} {
		re, err := syntax.Parse(c.expr, syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if got := anchorNeeds(compileFollow(re), c.anchor); got != c.want {
			t.Errorf("anchorNeeds(%s, %q) = %d, want %d", c.expr, c.anchor, got, c.want)
		}
	}
}
