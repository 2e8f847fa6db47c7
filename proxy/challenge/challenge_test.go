package challenge

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
	"github.com/aqlguard/aqlguard/verify"
)

// TestVerifyACode: a code lifts the block it was made for, once; every
// other answer is its own refusal and echoes no code.
func TestVerifyACode(t *testing.T) {
	now := time.Now().UTC()
	for _, tt := range []struct {
		name   string
		id     func(c *Code) string
		code   func(c *Code) string
		at     time.Duration // after the challenge was made
		twice  bool
		want   refusal.Kind
		lifted bool
	}{
		{name: "the code", lifted: true},
		{name: "a wrong code", code: func(*Code) string { return "000000" }, want: refusal.VerifyFailed},
		{name: "another challenge", id: func(*Code) string { return "ver_unknown" }, want: refusal.NotFound},
		{name: "too late", at: time.Hour, want: refusal.TokenExpired},
		{name: "used already", twice: true, want: refusal.TokenUsed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := statetest.Open(t)
			c, err := New(verify.Request{Agent: "agent", Action: "rm -rf /", Tier: "danger_zone"}, now, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := st.Commit(ctx, func(store.View) (store.Changes, error) {
				return store.Changes{Challenges: []store.Challenge{c.Challenge},
					Blocks: []store.Block{{Principal: "agent", VerificationID: c.Challenge.ID, BlockedAt: now}}}, nil
			}); err != nil {
				t.Fatal(err)
			}
			codes := Codes{State: st, Principal: "agent", Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			id, code := c.Challenge.ID, c.Request.Code
			if tt.id != nil {
				id = tt.id(c)
			}
			if tt.code != nil {
				code = tt.code(c)
			}
			var res *Result
			var aerr *refusal.Refusal
			for range 1 + btoi(tt.twice) {
				if _, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
					var ch store.Changes
					var err error
					ch, res, aerr, err = codes.Verify(v, id, code, now.Add(tt.at), store.NewRecord(now, store.KindVerification, "agent", "test", ""))
					return ch, err
				}); err != nil {
					t.Fatal(err)
				}
			}
			if tt.want == 0 {
				if aerr != nil || res == nil || res.Unblocked != tt.lifted {
					t.Fatalf("got %+v, %+v; want lifted %v", res, aerr, tt.lifted)
				}
				return
			}
			if aerr == nil || aerr.Kind != tt.want {
				t.Fatalf("got %+v, %+v; want %v", res, aerr, tt.want)
			}
			if strings.Contains(aerr.Say, c.Request.Code) {
				t.Fatalf("a refusal echoes the code: %q", aerr.Say)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestBlockedSaysAnUnshownCode: a block whose code was not shown says
// so; the refusal never names the code.
func TestBlockedSaysAnUnshownCode(t *testing.T) {
	for _, tt := range []struct {
		notShown bool
	}{{false}, {true}} {
		r := Blocked("fs.write", "agent", &store.Block{Principal: "agent", VerificationID: "ver_1", CodeNotShown: tt.notShown})
		if r.Kind != refusal.Blocked || strings.Contains(r.Say, "it was not shown") != tt.notShown {
			t.Errorf("not shown %v: %+v", tt.notShown, r)
		}
	}
}

// TestShowWithoutAChannel: with no channel the code is not shown, and
// the factor and the model's words say so.
func TestShowWithoutAChannel(t *testing.T) {
	codes := Codes{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	factor, unshown := codes.Show(&verify.Request{Challenge: "ver_1", Code: "123456"})
	if unshown == "" || !strings.Contains(factor, "could not be shown") || strings.Contains(factor+unshown, "123456") {
		t.Fatalf("factor %q, unshown %q", factor, unshown)
	}
}
