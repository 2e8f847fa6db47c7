package secrets

import (
	"slices"
	"testing"
)

// TestPlans: which rules run gitleaks' way over windows, and why. An
// update of the ruleset that changes the list shows here.
func TestPlans(t *testing.T) {
	want := []string{
		"azure-ad-client-secret", "cisco-meraki-api-key", "cohere-api-token", "facebook-access-token",
		"hashicorp-tf-api-token", "maxmind-license-key", "okta-access-token", "privateai-api-token",
		"sumologic-access-id",
	}
	s := compileDefault(t, nil)
	var whole []string
	anchored := 0
	for _, r := range s.compiledRules() {
		if r.plan.kind == planWhole {
			whole = append(whole, r.id)
			t.Logf("%s runs over windows: %s", r.id, r.plan.why)
			continue
		}
		anchored++
		for _, b := range r.plan.branches {
			if len(b.anchors) == 0 {
				t.Errorf("%s: a branch without anchors", r.id)
			}
			b.at0() // compiled on first use in a scan: must not panic there
			b.at1()
		}
	}
	slices.Sort(whole)
	if !slices.Equal(whole, want) {
		t.Errorf("rules run over windows: %q, want %q", whole, want)
	}
	t.Logf("%d rules anchored, %d over windows, %d set aside", anchored, len(whole), len(s.skipped))
}

// TestPrefixes checks the analysis the anchored plans rest on.
func TestPrefixes(t *testing.T) {
	cases := []struct {
		expr  string
		want  []string
		exact bool
	}{
		{`ghp_[0-9a-zA-Z]{36}`, []string{"ghp_"}, false},
		{`(?i)xoxb-`, []string{"xoxb-"}, true},
		{`\b(AKIA|ASIA)[A-Z2-7]{16}`, []string{"akia", "asia"}, false},
		{`(?i)(?:access|auth)x`, []string{"accessx", "authx"}, true},
		{`(?-i:[Aa]pi|API)`, []string{"api"}, true},
		{`passw(?:or)?d`, []string{"passwd", "password"}, true},
		{`a*b`, []string{""}, false},
		{`(?i)k`, []string{"k"}, true},
	}
	for _, c := range cases {
		re := mustParse(t, c.expr)
		got, exact := prefixes(re)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) || exact != c.exact {
			t.Errorf("prefixes(%s) = %q %v, want %q %v", c.expr, got, exact, c.want, c.exact)
		}
	}
}

func TestFactors(t *testing.T) {
	cases := []struct {
		expr string
		want []string
	}{
		{`(?i)[a-z0-9-]*?api[a-z0-9-]*?:jar:`, []string{":jar:"}},
		{`(?i)\bapi\b`, []string{"api"}},
		{`(?i)key[_.-]?(?:alias|board)`, []string{"key-alias", "key-board", "key.alias", "key.board", "key_alias", "key_board", "keyalias", "keyboard"}},
		{`(?i)(?:idempotency|cache)[_.-]?(?:key|token)`, []string{"cache-key", "cache-token", "cache.key", "cache.token", "cache_key", "cache_token", "cachekey", "cachetoken",
			"idempotency-key", "idempotency-token", "idempotency.key", "idempotency.token", "idempotency_key", "idempotency_token", "idempotencykey", "idempotencytoken"}},
		{`x+`, nil},
		{`ab|cde`, nil}, // "ab" is shorter than minAnchorLen
		{`\A\$\d\z`, nil},
	}
	for _, c := range cases {
		got := factors(mustParse(t, c.expr))
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("factors(%s) = %q, want %q", c.expr, got, c.want)
		}
	}
}
