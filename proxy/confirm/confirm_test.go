package confirm

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
	"github.com/aqlguard/aqlguard/verify"
)

// bookOn is a Book on a fresh state, under a policy of principal
// "agent", at now.
func bookOn(t *testing.T, now time.Time) Book {
	t.Helper()
	cfg, err := policy.Parse([]byte("agent = \"agent\"\n"), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	st := statetest.Open(t)
	return Book{State: st, Policy: pol, Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		TTL: time.Minute, SessionApprovalTTL: time.Hour, Process: "test",
		Record: func(kind store.RecordKind, session string) store.Record {
			return store.NewRecord(now, kind, pol.Principal, "test", session)
		},
		Commit: func(ctx context.Context, decide func(store.View) (store.Changes, error)) error {
			_, err := st.Commit(ctx, decide)
			return err
		}}
}

// write commits c as the state's.
func write(t *testing.T, k Book, c Confirmation) {
	t.Helper()
	if err := k.Commit(context.Background(), func(store.View) (store.Changes, error) {
		return store.Changes{Confirmations: []store.Confirmation{c}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestTokenForCall: a token passed with a call is checked in the order
// confirmation-tokens.md 4.3 gives, each failure its own code.
func TestTokenForCall(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	k := bookOn(t, now)
	args := map[string]any{"path": "/tmp/x"}
	q, err := k.New(Call{Session: "s1", Tool: "write", Preview: "write /tmp/x"},
		ruling.Binding{Kind: ruling.BindAction, Server: "fs", Operation: "fs.write", Digest: Digest(args)},
		evaluator.Directive{Reason: "writes a file"})
	if err != nil {
		t.Fatal(err)
	}
	if !TokenFormat.MatchString(q.Token) {
		t.Fatalf("token %q is not of the format", q.Token)
	}
	write(t, k, *q)
	other := *q
	other.Token, other.Principal = "conf_"+strings.Repeat("ab", 16), "someone-else"
	write(t, k, other)
	used := *q
	used.Token, used.Status, used.DoneAt = "conf_"+strings.Repeat("cd", 16), ruling.StatusUsed, now
	write(t, k, used)
	expired := *q
	expired.Token, expired.ExpiresAt = "conf_"+strings.Repeat("ef", 16), now
	write(t, k, expired)
	for _, tt := range []struct {
		name, token, operation, server string
		args                           map[string]any
		want                           refusal.Kind
	}{
		{"good", q.Token, "fs.write", "fs", args, 0},
		{"malformed", "conf_nothex", "fs.write", "fs", args, refusal.TokenInvalid},
		{"unknown", "conf_" + strings.Repeat("00", 16), "fs.write", "fs", args, refusal.TokenInvalid},
		{"another agent's", other.Token, "fs.write", "fs", args, refusal.TokenScope},
		{"another operation", q.Token, "fs.delete", "fs", args, refusal.TokenScope},
		{"another server", q.Token, "fs.write", "git", args, refusal.TokenScope},
		{"other arguments", q.Token, "fs.write", "fs", map[string]any{"path": "/etc/passwd"}, refusal.TokenScope},
		{"used", used.Token, "fs.write", "fs", args, refusal.TokenUsed},
		{"expired", expired.Token, "fs.write", "fs", args, refusal.TokenExpired},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got *refusal.Refusal
			if err := k.State.Load(context.Background(), func(v store.View) error {
				_, got = k.ForCall(v, tt.token, tt.operation, tt.server, Digest(tt.args))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			switch {
			case tt.want == 0 && got != nil:
				t.Fatalf("refused: %v", got.Say)
			case tt.want != 0 && (got == nil || got.Kind != tt.want):
				t.Fatalf("got %+v, want %v", got, tt.want)
			}
		})
	}
}

// TestNewOffersWhatMayBeOffered: "allow for this session" and "allow
// and forget" are offered only where they can bind to something.
func TestNewOffersWhatMayBeOffered(t *testing.T) {
	k := bookOn(t, time.Now())
	action := ruling.Binding{Kind: ruling.BindAction, Server: "fs", Operation: "fs.write"}
	for _, tt := range []struct {
		name                 string
		call                 Call
		b                    ruling.Binding
		d                    evaluator.Directive
		allowSession, forget bool
	}{
		{"a session's call", Call{Session: "s1"}, action, evaluator.Directive{}, true, false},
		{"a shared session", Call{Session: "s1", SharedSession: true}, action, evaluator.Directive{}, false, false},
		{"no session", Call{}, action, evaluator.Directive{}, false, false},
		{"bound to its arguments", Call{Session: "s1"}, action, evaluator.Directive{ArgumentBound: true}, false, false},
		{"a reported step", Call{Session: "s1", Reported: true}, action, evaluator.Directive{}, false, false},
		{"a flow", Call{Session: "s1"}, action, evaluator.Directive{Matched: "flow"}, true, true},
		{"a flow the call carries", Call{Session: "s1", Carried: "secret"}, action, evaluator.Directive{Matched: "flow"}, true, false},
		{"a check-in", Call{Session: "s1", Preview: "next"}, ruling.Binding{Kind: ruling.BindSteps, Operation: "steps"}, evaluator.Directive{}, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := k.New(tt.call, tt.b, tt.d)
			if err != nil {
				t.Fatal(err)
			}
			if c.AllowSession != tt.allowSession || c.Forget != tt.forget {
				t.Fatalf("AllowSession %v, Forget %v; want %v, %v", c.AllowSession, c.Forget, tt.allowSession, tt.forget)
			}
			if tt.b.Kind != ruling.BindAction && c.Action != "steps (next action: next)" {
				t.Fatalf("a check-in asks %q", c.Action)
			}
		})
	}
}

// TestAnswerIsRecordedOnce: an answer is written with its record; one
// given after the question was settled is not written over it.
func TestAnswerIsRecordedOnce(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stored string // the status the state holds when the answer comes
		answer verify.Answer
		want   verify.Answer
		status string
	}{
		{"allowed", ruling.StatusPending, verify.Allow, verify.Allow, ruling.StatusApproved},
		{"denied", ruling.StatusPending, verify.Deny, verify.Deny, ruling.StatusDenied},
		{"allowed after it was used", ruling.StatusUsed, verify.Allow, verify.None, ruling.StatusUsed},
		{"denied after it was approved", ruling.StatusApproved, verify.Deny, verify.Allow, ruling.StatusApproved},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := bookOn(t, time.Now())
			c, err := k.New(Call{Session: "s1"}, ruling.Binding{Kind: ruling.BindAction, Server: "fs", Operation: "fs.write"}, evaluator.Directive{})
			if err != nil {
				t.Fatal(err)
			}
			stored := *c
			stored.Status = tt.stored
			write(t, k, stored)
			if got, _ := k.RecordAnswer(c, tt.answer, ""); got != tt.want {
				t.Fatalf("RecordAnswer: %v, want %v", got, tt.want)
			}
			cur, aerr := k.Load(context.Background(), c.Token)
			if aerr != nil || cur.Status != tt.status {
				t.Fatalf("the state holds %+v (%v), want status %s", cur, aerr, tt.status)
			}
		})
	}
}

// TestDigestIsCanonical: the same arguments give the same digest
// whatever their order; nil and empty are the same arguments.
func TestDigestIsCanonical(t *testing.T) {
	for _, tt := range []struct {
		a, b map[string]any
		same bool
	}{
		{map[string]any{"a": 1, "b": map[string]any{"x": "1", "y": 2}}, map[string]any{"b": map[string]any{"y": 2, "x": "1"}, "a": 1}, true},
		{nil, map[string]any{}, true},
		{map[string]any{"a": "1"}, map[string]any{"a": 1}, false},
	} {
		if got := Digest(tt.a) == Digest(tt.b); got != tt.same {
			t.Errorf("Digest(%v) == Digest(%v): %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
	if a, b := UseID(), UseID(); a == b {
		t.Fatalf("two uses share the id %q", a)
	}
}
