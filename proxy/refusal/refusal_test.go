package refusal

import (
	"strings"
	"testing"
	"time"
)

// TestRefusal: the kinds' audit names, which refusals stop the agent,
// the words said when the human could not be reached, and the offer a
// pending refusal carries.
func TestRefusal(t *testing.T) {
	at := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		r       *Refusal
		word    string
		stopped bool
		says    string
		factors map[string]any
	}{
		{"a block", Stop(Blocked, "", map[string]any{"operation": "op", "agent": ""}, at, time.Time{}), "PERMISSION_AGENT_BLOCKED", true,
			"aqlguard stopped this agent until", map[string]any{"operation": "op", "blocked_at": "2026-11-29T08:00:00Z"}},
		{"a block nobody saw the code of", Stop(Blocked, "no graphical display; nothing was approved.", nil, time.Time{}, time.Time{}),
			"PERMISSION_AGENT_BLOCKED", true, "could not show the user a verification code (no graphical display)", map[string]any{}},
		{"a denial", Stop(Denied, "", nil, at, at.Add(time.Minute)), "PERMISSION_DENIED", true, "The user denied this call",
			map[string]any{"denied_at": "2026-11-29T08:00:00Z", "ask_again_after": "2026-11-29T08:01:00Z"}},
		{"a pending question", Stop(Pending, "", map[string]any{"confirmation_token": "conf_1"}, time.Time{}, at), "CONFIRMATION_REQUIRED", true,
			"A human must approve this call", map[string]any{"confirmation_token": "conf_1", "expires_at": "2026-11-29T08:00:00Z"}},
		{"a token", New(TokenUsed, "Confirmation token has already been used", nil), "TOKEN_ALREADY_USED", false, "already been used", nil},
		{"fail closed", Fail("the state database is unavailable", nil), "INTERNAL_ERROR", false,
			"Internal error: 'the state database is unavailable'", nil},
		{"an unknown kind", New(Kind(200), "x", nil), "INTERNAL_ERROR", false, "x", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Kind.String(); got != tt.word {
				t.Errorf("word %q, want %q", got, tt.word)
			}
			if tt.r.Stopped() != tt.stopped {
				t.Errorf("stopped %v", !tt.stopped)
			}
			if !strings.Contains(tt.r.Say, tt.says) {
				t.Errorf("says %q, want it to hold %q", tt.r.Say, tt.says)
			}
			if tt.factors != nil && len(tt.r.Factors) != len(tt.factors) {
				t.Errorf("factors %v, want %v", tt.r.Factors, tt.factors)
			}
			for k, v := range tt.factors {
				if tt.r.Factors[k] != v {
					t.Errorf("factor %s = %v, want %v", k, tt.r.Factors[k], v)
				}
			}
		})
	}
	p := Stop(Paused, "", map[string]any{"verification_id": "ver_1"}, time.Time{}, at)
	if u := p.Unheard("no graphical display"); !strings.Contains(u.Say, "(no graphical display)") || u.Factors["verification_id"] != "ver_1" {
		t.Errorf("unheard pause %+v", u)
	}
	if d := Stop(Denied, "", nil, time.Time{}, time.Time{}); d.Unheard("x") != d {
		t.Error("a denial has no unheard words, and stays as it is")
	}
	if o := Stop(Pending, "", map[string]any{"confirmation_token": "conf_1"}, time.Time{}, at).Offer(); o == nil || o.Token != "conf_1" || o.ExpiresAt != "2026-11-29T08:00:00Z" {
		t.Errorf("offer %+v", o)
	}
	if (*Refusal)(nil).Offer() != nil || Fail("x", nil).Offer() != nil {
		t.Error("an offer from a refusal that is not pending")
	}
}

// TestDecision: what a decision record says of each kind of refusal.
func TestDecision(t *testing.T) {
	want := map[Kind]string{Pending: "confirm", Paused: "verify", Blocked: "block", Denied: "deny", Refused: "deny",
		Checkins: "deny", ToolChanged: "deny", ToolReview: "deny", TokenInvalid: "refuse", RateLimited: "refuse", Failed: "refuse", 0: "refuse"}
	for k, w := range want {
		if got := k.Decision(); got != w {
			t.Errorf("%v.Decision() = %q, want %q", k, got, w)
		}
	}
}
