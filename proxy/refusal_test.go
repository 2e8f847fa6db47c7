package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/verify"
)

// maxRefusal caps a refusal as the model reads it (the whole result, as
// the tool's text): what the model loads every time it is refused.
const maxRefusal = 640

type namedChannel string

func (c namedChannel) Name() string { return string(c) }
func (namedChannel) Ask(context.Context, verify.Request) (verify.Answer, error) {
	return verify.None, errors.New("not asked")
}
func (namedChannel) Show(context.Context, verify.Request) error { return errors.New("not shown") }

// voices are the modes' voices through both channels.
func voices() map[string]Voice {
	out := map[string]Voice{}
	for _, ch := range []string{"dialog", "command"} {
		out["transparent/"+ch] = VoiceFor(ModeTransparent, namedChannel(ch))
		out["semantic/"+ch] = VoiceFor(ModeSemantic, namedChannel(ch))
		out["single/"+ch] = VoiceFor(ModeSingle, namedChannel(ch))
	}
	return out
}

// stopKinds are the refusals that stop the agent or wait for a human.
var stopKinds = []refusal.Kind{refusal.Blocked, refusal.Paused, refusal.Pending, refusal.Denied,
	refusal.Refused, refusal.Checkins, refusal.ToolChanged, refusal.ToolReview}

// sampleParts are a refusal's parts, as long as real ones.
type sampleParts struct{ reason, verification, token, why string }

// sample is a refusal of kind k with parts as long as real ones.
func sample(k refusal.Kind, why string) (*refusal.Refusal, sampleParts) {
	at := time.Date(2026, 11, 25, 16, 41, 40, 0, time.UTC)
	p := sampleParts{reason: `Action matches deny pattern "*rm -rf /" & <risk> 100`, why: why}
	f := map[string]any{"operation": "filesystem_write_file", "reason": p.reason}
	var when, until time.Time
	switch k {
	case refusal.Blocked:
		p.verification = "ce9c414e-c7b2-43c3-af80-81507c27b3bb"
		f["agent"], f["verification_id"], when = "claude-desktop", p.verification, at
	case refusal.Paused:
		p.verification = "ce9c414e-c7b2-43c3-af80-81507c27b3bb"
		f["verification_id"], until = p.verification, at
	case refusal.Pending:
		p.token = "conf_9fa74cbe4437888fe1c958cd0c41d631"
		f["confirmation_token"], f["danger_level"], until = p.token, "destructive", at
	case refusal.Denied:
		when, until = at, at.Add(5*time.Minute)
	case refusal.ToolChanged, refusal.ToolReview:
		f["server"], f["tool"] = "filesystem", "write_file"
	}
	return refusal.Stop(k, why, f, when, until), p
}

// TestRefusalsAreTerse: every refusal the model can get, in every voice,
// reached or not: under maxRefusal bytes, each reason and each id once,
// no sentence twice, nothing HTML-escaped, and the words match the
// channel (no window where the human is reached otherwise).
func TestRefusalsAreTerse(t *testing.T) {
	for _, kind := range stopKinds {
		for name, v := range voices() {
			for _, why := range []string{"", "no graphical display"} {
				r, p := sample(kind, why)
				res := refused(r, v)
				b, err := res.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				label := fmt.Sprintf("%s, %s, why %q", kind, name, why)
				if len(b) > maxRefusal {
					t.Errorf("%s: %d bytes, more than %d:\n%s", label, len(b), maxRefusal, b)
				}
				if bytes.Contains(b, []byte(`\u00`)) {
					t.Errorf("%s: escaped: %s", label, b)
				}
				text := string(b)
				for _, part := range []string{p.reason, p.verification, p.token, p.why} {
					if part == "" {
						continue
					}
					want := 1
					if part == p.token {
						want = 2 // error.details and the confirmation object, as the spec has it
					}
					quoted, _ := aql.Marshal(part)
					n := strings.Count(text, strings.Trim(string(quoted), `"`))
					if part == p.why && (kind == refusal.Denied || kind == refusal.Refused ||
						kind == refusal.Checkins || kind == refusal.ToolChanged || kind == refusal.ToolReview) {
						want = 0 // no human is reached in these: why has nothing to say
					}
					if n != want {
						t.Errorf("%s: %q appears %d times, want %d:\n%s", label, part, n, want, b)
					}
				}
				msg := res.Err.Message
				if strings.Contains(msg, "{") {
					t.Errorf("%s: a name left unfilled: %s", label, msg)
				}
				seen := map[string]bool{}
				for _, s := range strings.Split(msg, ". ") {
					if seen[s] {
						t.Errorf("%s: %q said twice: %s", label, s, msg)
					}
					seen[s] = true
				}
				if strings.Contains(msg, "window") != (v.Channel == "dialog" && why == "" &&
					(kind == refusal.Blocked || kind == refusal.Paused || kind == refusal.Pending)) {
					t.Errorf("%s: a window where there is none, or none where there is: %s", label, msg)
				}
				if kind == refusal.Blocked && why == "" && !strings.Contains(msg, v.Verify) {
					t.Errorf("%s: does not say how to pass the code on: %s", label, msg)
				}
				if res.Confirmation != nil && (res.Confirmation.Message != "" || len(res.Confirmation.Reasons) > 0) {
					t.Errorf("%s: the confirmation object repeats the error: %+v", label, res.Confirmation)
				}
			}
		}
	}
}

// The tool the model passes a code to is the one it has: transparent
// mode's own tool, the semantic endpoint, or the single one.
func TestVoiceNamesTheModelsTools(t *testing.T) {
	v := voices()
	say := func(k refusal.Kind, voice string) string {
		r, _ := sample(k, "")
		return refusalError(r, v[voice]).Message
	}
	for name, want := range map[string]string{
		"transparent/dialog": "call the tool aqlguard_verify_challenge", "semantic/dialog": "call mcp_aql_create with operation verify_challenge",
		"single/command": "call mcp_aql with operation verify_challenge",
	} {
		if got := say(refusal.Blocked, name); !strings.Contains(got, want) {
			t.Errorf("%s: %q does not say %q", name, got, want)
		}
	}
	if got := say(refusal.Pending, "transparent/dialog"); strings.Contains(got, "confirm_operation") {
		t.Errorf("transparent mode has no confirm_operation: %q", got)
	}
	if got := say(refusal.Pending, "semantic/command"); !strings.Contains(got, "mcp_aql_execute with operation confirm_operation") ||
		!strings.Contains(got, "approval channel") {
		t.Errorf("semantic, command channel: %q", got)
	}
}

// TestRefusalWords pins what the model reads of a refusal, byte for byte,
// as aqlguard said it before the guard had a language of its own: the
// words of each kind, with the voice's and the factors' parts.
func TestRefusalWords(t *testing.T) {
	v := VoiceFor(ModeSemantic, namedChannel("dialog"))
	blocked, _ := sample(refusal.Blocked, "")
	pending, _ := sample(refusal.Pending, "")
	unheard, _ := sample(refusal.Pending, "the dialog channel could not reach a human (no graphical display); nothing was approved.")
	for _, tc := range []struct {
		r    *refusal.Refusal
		want string
	}{
		{blocked, `{"success":false,"error":{"code":"PERMISSION_AGENT_BLOCKED","message":"aqlguard stopped this agent until the user gives you the verification code aqlguard showed them in a window. Ask them for it, then call mcp_aql_create with operation verify_challenge, params challenge_id and code. If they lost it, ` + "`aqlguard verify show`" + ` gives them a new one. You cannot see codes; never guess one.","details":{"agent":"claude-desktop","blocked_at":"2026-11-25T16:41:40Z","operation":"filesystem_write_file","reason":"Action matches deny pattern \"*rm -rf /\" & <risk> 100","verification_id":"ce9c414e-c7b2-43c3-af80-81507c27b3bb"}}}`},
		{pending, `{"success":false,"error":{"code":"CONFIRMATION_REQUIRED","message":"A human must approve this call; aqlguard asked them in a window. Nothing ran. Repeat the same call to get their answer. Or call mcp_aql_execute with operation confirm_operation and the token to wait for it.","details":{"confirmation_token":"conf_9fa74cbe4437888fe1c958cd0c41d631","danger_level":"destructive","expires_at":"2026-11-25T16:41:40Z","operation":"filesystem_write_file","reason":"Action matches deny pattern \"*rm -rf /\" & <risk> 100"}},"confirmation":{"token":"conf_9fa74cbe4437888fe1c958cd0c41d631","expires_at":"2026-11-25T16:41:40Z"}}`},
		{unheard, `{"success":false,"error":{"code":"CONFIRMATION_REQUIRED","message":"A human must approve this call, but none could be asked (the dialog channel could not reach a human (no graphical display)), so nothing ran: tell the user to run ` + "`aqlguard doctor`" + `, which says how to fix this, then repeat the call.","details":{"confirmation_token":"conf_9fa74cbe4437888fe1c958cd0c41d631","danger_level":"destructive","expires_at":"2026-11-25T16:41:40Z","operation":"filesystem_write_file","reason":"Action matches deny pattern \"*rm -rf /\" & <risk> 100"}},"confirmation":{"token":"conf_9fa74cbe4437888fe1c958cd0c41d631","expires_at":"2026-11-25T16:41:40Z"}}`},
	} {
		b, err := refused(tc.r, v).MarshalJSON()
		if err != nil || string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
}

// TestRefusalCodes: each kind is said with the MCP-AQL code the audit
// log names it by (refusal.Kind.String), and every kind has one.
func TestRefusalCodes(t *testing.T) {
	for k := refusal.Blocked; k <= refusal.Failed; k++ {
		code, ok := refusalCodes[k]
		if !ok || string(code) != k.String() {
			t.Errorf("kind %d: code %q, the audit log says %q", k, code, k)
		}
	}
}

// TestRefusalSaysNoGoError: a factor that is not a plain value (an
// error, which could carry a path, a DSN or a secret) is never said: the
// refusal becomes the one internal error. A factor's value that looks
// like a name is said as it is, never filled.
func TestRefusalSaysNoGoError(t *testing.T) {
	secret := errors.New("open /var/lib/aqlguard/state.db: postgres://u:hunter2@db")
	r := &refusal.Refusal{Kind: refusal.Failed, Say: "Internal error: '{why}'", Factors: map[string]any{"why": secret}}
	e := refusalError(r, Voice{})
	b, _ := json.Marshal(e)
	if e.Code != aql.CodeInternal || strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "/var/lib") {
		t.Fatalf("a Go error reached the model: %s", b)
	}
	r = &refusal.Refusal{Kind: refusal.NotFound, Say: "Resource 'challenge' not found: '{resource_id}'",
		Factors: map[string]any{"resource_id": "{verify}{token}"}}
	if got := refusalError(r, VoiceFor(ModeSingle, nil)).Message; got != "Resource 'challenge' not found: '{verify}{token}'" {
		t.Fatalf("a factor's value was read as a name: %q", got)
	}
}
