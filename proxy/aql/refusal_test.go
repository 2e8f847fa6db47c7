package aql

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// maxRefusal caps a refusal as the model reads it (the whole result, as
// the tool's text): what the model loads every time it is refused.
const maxRefusal = 640

// voices are the modes' voices through both channels.
func voices() map[string]Voice {
	out := map[string]Voice{}
	for _, ch := range []string{"dialog", "command"} {
		out["transparent/"+ch] = VoiceFor(true, nil, ch)
		out["semantic/"+ch] = VoiceFor(false, func(op string) string {
			if op == "verify_challenge" {
				return "mcp_aql_create"
			}
			return "mcp_aql_execute"
		}, ch)
		out["single/"+ch] = VoiceFor(false, func(string) string { return "mcp_aql" }, ch)
	}
	return out
}

// sample is a refusal of kind k with parts as long as real ones.
func sample(k RefusalKind, why string) Refusal {
	at := time.Date(2026, 11, 25, 16, 41, 40, 0, time.UTC)
	r := Refusal{Kind: k, Operation: "filesystem_write_file", Reason: `Action matches deny pattern "*rm -rf /" & <risk> 100`, Why: why}
	switch k {
	case RefusalBlocked:
		r.Agent, r.VerificationID, r.At = "claude-desktop", "ce9c414e-c7b2-43c3-af80-81507c27b3bb", at
	case RefusalPaused:
		r.VerificationID, r.ExpiresAt = "ce9c414e-c7b2-43c3-af80-81507c27b3bb", at
	case RefusalPending:
		r.Token, r.ExpiresAt, r.DangerLevel = "conf_9fa74cbe4437888fe1c958cd0c41d631", at, "destructive"
	case RefusalDenied:
		r.At, r.ExpiresAt = at, at.Add(5*time.Minute)
	case RefusalToolChanged:
		r.Server, r.Tool = "filesystem", "write_file"
	}
	return r
}

// TestRefusalsAreTerse: every refusal the model can get, in every voice,
// reached or not: under maxRefusal bytes, each reason and each id once,
// no sentence twice, nothing HTML-escaped, and the words match the
// channel (no window where the human is reached otherwise).
func TestRefusalsAreTerse(t *testing.T) {
	for kind := range refusalTemplates {
		for name, v := range voices() {
			for _, why := range []string{"", "no graphical display"} {
				r := sample(kind, why)
				res := Failure(r.Error(v))
				if kind == RefusalPending {
					res = r.Pending(v)
				}
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
				for _, part := range []string{r.Reason, r.VerificationID, r.Token, r.Why} {
					if part == "" {
						continue
					}
					want := 1
					if part == r.Token {
						want = 2 // error.details and the confirmation object, as the spec has it
					}
					quoted, _ := Marshal(part)
					n := strings.Count(text, strings.Trim(string(quoted), `"`))
					if part == r.Why && (kind == RefusalDenied || kind == RefusalRefused || kind == RefusalCheckins || kind == RefusalToolChanged) {
						want = 0 // no human is reached in these: why has nothing to say
					}
					if n != want {
						t.Errorf("%s: %q appears %d times, want %d:\n%s", label, part, n, want, b)
					}
				}
				msg := res.Err.Message
				seen := map[string]bool{}
				for _, s := range strings.Split(msg, ". ") {
					if seen[s] {
						t.Errorf("%s: %q said twice: %s", label, s, msg)
					}
					seen[s] = true
				}
				if strings.Contains(msg, "window") != (v.Channel == "dialog" && why == "" &&
					(kind == RefusalBlocked || kind == RefusalPaused || kind == RefusalPending)) {
					t.Errorf("%s: a window where there is none, or none where there is: %s", label, msg)
				}
				if kind == RefusalBlocked && why == "" && !strings.Contains(msg, v.verify()) {
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
	for name, want := range map[string]string{
		"transparent/dialog": "call the tool aqlguard_verify_challenge", "semantic/dialog": "call mcp_aql_create with operation verify_challenge",
		"single/command": "call mcp_aql with operation verify_challenge",
	} {
		if got := sample(RefusalBlocked, "").Error(v[name]).Message; !strings.Contains(got, want) {
			t.Errorf("%s: %q does not say %q", name, got, want)
		}
	}
	if got := sample(RefusalPending, "").Error(v["transparent/dialog"]).Message; strings.Contains(got, "confirm_operation") {
		t.Errorf("transparent mode has no confirm_operation: %q", got)
	}
	if got := sample(RefusalPending, "").Error(v["semantic/command"]).Message; !strings.Contains(got, "mcp_aql_execute with operation confirm_operation") ||
		!strings.Contains(got, "approval channel") {
		t.Errorf("semantic, command channel: %q", got)
	}
}

// A refusal re-rendered from its Error is the same refusal: the guard
// re-renders a block whose code could not be shown.
func TestRefusalRoundTrip(t *testing.T) {
	r := sample(RefusalBlocked, "")
	e := r.Error(Voice{})
	back := e.Refusal()
	if back == nil || *back != r {
		t.Fatalf("Refusal() = %+v, want %+v", back, r)
	}
	if (&Error{Code: CodeInternal}).Refusal() != nil {
		t.Error("a plain error has a refusal")
	}
}
