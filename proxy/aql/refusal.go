package aql

import (
	"strings"
	"time"
)

// A refusal is aqlguard telling the model that it did not run a call, or
// that it stopped the agent. The model reads every refusal in full, so
// each is short: fixed sentences, one template per kind, say what
// happened and what to do; the parts that vary (the rule, the ids, the
// times) are in details, each once. What differs by mode and by channel
// (which tools the model has, how the human was reached) comes from the
// Voice, so the words match what the model and the human see.
//
// One more kind of refusal is one more row of refusalTemplates.

// RefusalKind names a refusal's template.
type RefusalKind string

const (
	// RefusalBlocked: a hard block of the agent (a deny pattern, the
	// danger_zone tier) until the human's code is given.
	RefusalBlocked RefusalKind = "blocked"
	// RefusalPaused: the verify tier paused the agent until the code is
	// given or the challenge expires.
	RefusalPaused RefusalKind = "paused"
	// RefusalPending: a human must approve the call and was asked; their
	// answer is picked up by the retry.
	RefusalPending RefusalKind = "pending"
	// RefusalDenied: the human denied this call.
	RefusalDenied RefusalKind = "denied"
	// RefusalRefused: the policy rejects this one call (the Gatekeeper's
	// deny); the agent goes on.
	RefusalRefused RefusalKind = "refused"
	// RefusalCheckins: one call went through more human check-ins than
	// a call may.
	RefusalCheckins RefusalKind = "checkins"
	// RefusalToolChanged: the server changed the tool since it was
	// approved; calls wait for a human to approve the change.
	RefusalToolChanged RefusalKind = "tool_changed"
)

// Voice is how a refusal addresses the model: the calls it can make and
// how the human was reached.
type Voice struct {
	// Verify says how the model passes a verification code on, as an
	// instruction ("call the tool aqlguard_verify_challenge with
	// challenge_id and code").
	Verify string
	// Confirm says how it asks the human again about a confirmation
	// token; "" where it has no confirm_operation (transparent mode).
	Confirm string
	// Channel is how the human is reached: "dialog" or "command".
	Channel string
	// VerifyTool names, for the human, where the model passes a code
	// ("aqlguard_verify_challenge", "mcp_aql_create, operation
	// verify_challenge").
	VerifyTool string
}

// VoiceFor is the Voice of a mode: the tool that carries verify_challenge
// and confirm_operation ("" for the mode's own endpoints: transparent's
// aqlguard_verify_challenge tool, or mcp_aql_create / mcp_aql_execute),
// and the channel's name.
func VoiceFor(transparent bool, endpoint func(op string) string, channel string) Voice {
	if transparent {
		return Voice{Verify: "call the tool aqlguard_verify_challenge with challenge_id and code", Channel: channel,
			VerifyTool: "aqlguard_verify_challenge"}
	}
	return Voice{
		Verify:     "call " + endpoint("verify_challenge") + " with operation verify_challenge, params challenge_id and code",
		Confirm:    "call " + endpoint("confirm_operation") + " with operation confirm_operation and the token",
		Channel:    channel,
		VerifyTool: endpoint("verify_challenge") + ", operation verify_challenge",
	}
}

// reached says how aqlguard reached the human: "aqlguard showed them
// in a window" (did, the verb for a dialog), "aqlguard sent them through
// its approval channel" (sent, the verb for a command).
func (v Voice) reached(did, sent string) string {
	switch v.Channel {
	case "dialog":
		return "aqlguard " + did + " them in a window"
	case "command":
		return "aqlguard " + sent + " them through its approval channel"
	}
	return "aqlguard " + did + " them"
}

func (v Voice) verify() string {
	if v.Verify == "" {
		return "call verify_challenge with challenge_id and code"
	}
	return v.Verify
}

// Refusal is one refusal: its kind and the parts its template does not
// fix. Zero fields are left out of the details.
type Refusal struct {
	Kind      RefusalKind
	Operation string
	// Agent is the principal a block stops.
	Agent string
	// Reason is the rule or tier that decided, said once, in details.
	Reason string
	// DangerLevel is danger-levels.md's name for the call's risk.
	DangerLevel string
	// VerificationID is the challenge of a block or pause.
	VerificationID string
	// Token is a confirmation token.
	Token string
	// At is when a block was set or a human denied; ExpiresAt when a
	// token or challenge expires, or a denial stops standing.
	At, ExpiresAt time.Time
	// Why says why no human could be asked, or the code not shown; ""
	// when the human was reached.
	Why string
	// Server and Tool name a changed tool.
	Server, Tool string
}

// template is one kind's fixed words: for a human that was reached, and
// for one that was not (Why set). {shown}, {asked}, {verify}, {confirm}
// and {why} are filled from the Voice and the refusal.
type template struct {
	code     Code
	say      string
	notHeard string
	// confirm is added to say when the Voice has a confirm call.
	confirm string
}

var refusalTemplates = map[RefusalKind]template{
	RefusalBlocked: {code: CodeAgentBlocked,
		say: "aqlguard stopped this agent: no call runs until the user gives you the verification code {shown}. " +
			"Ask the user for it, then {verify}. You cannot see the code; do not guess it.",
		notHeard: "aqlguard stopped this agent, and could not show the user a verification code ({why}). " +
			"Tell the user the agent is stopped; aqlguard's log says more. Do not guess a code."},
	RefusalPaused: {code: CodeVerification,
		say: "aqlguard paused this agent until the user gives you the verification code {shown}. " +
			"Ask the user for it, then {verify}. You cannot see the code; do not guess it.",
		notHeard: "aqlguard paused this agent, and could not show the user a verification code ({why}). " +
			"Tell the user the agent is paused; aqlguard's log says more. Do not guess a code."},
	RefusalPending: {code: CodeConfirmation,
		say:      "A human must approve this call; {asked}. Nothing ran. Repeat the same call to get their answer.",
		confirm:  " Or {confirm} to wait for it.",
		notHeard: "A human must approve this call, but none could be asked ({why}). Nothing ran; the same call asks again."},
	RefusalDenied: {code: CodePermissionDenied,
		say: "The user denied this call. Nothing ran; do not repeat it unchanged."},
	RefusalRefused: {code: CodePermissionDenied,
		say: "The policy does not allow this call. Nothing ran; you may go on with other work."},
	RefusalCheckins: {code: CodePermissionDenied,
		say: "This call needed more human check-ins than one call may. Nothing ran; try it again."},
	RefusalToolChanged: {code: CodePermissionDenied,
		say: "The server changed this tool since the user approved it; it cannot be used until they approve the change. Nothing ran."},
}

// Error renders the refusal in voice v.
func (r Refusal) Error(v Voice) *Error {
	t, ok := refusalTemplates[r.Kind]
	if !ok {
		return Internal("a refusal of an unknown kind")
	}
	msg := t.say
	if r.Why != "" && t.notHeard != "" {
		msg = t.notHeard
	} else if v.Confirm != "" && r.Token != "" {
		msg += t.confirm
	}
	// The template says that nothing ran or was approved; the why need not.
	why := strings.TrimSuffix(strings.TrimSuffix(r.Why, "."), "; nothing was approved")
	msg = strings.NewReplacer("{shown}", v.reached("showed", "sent"), "{asked}", v.reached("asked", "asked"), "{verify}", v.verify(),
		"{confirm}", v.Confirm, "{why}", why).Replace(msg)
	d := map[string]any{}
	set := func(k, val string) {
		if val != "" {
			d[k] = val
		}
	}
	setTime := func(k string, at time.Time) {
		if !at.IsZero() {
			d[k] = at.UTC().Format(time.RFC3339)
		}
	}
	set("operation", r.Operation)
	set("agent", r.Agent)
	set("reason", r.Reason)
	set("danger_level", r.DangerLevel)
	set("verification_id", r.VerificationID)
	set("confirmation_token", r.Token)
	set("server", r.Server)
	set("tool", r.Tool)
	switch r.Kind {
	case RefusalBlocked:
		setTime("blocked_at", r.At)
	case RefusalDenied:
		setTime("denied_at", r.At)
		setTime("ask_again_after", r.ExpiresAt)
	default:
		setTime("expires_at", r.ExpiresAt)
	}
	e := &Error{Code: t.code, Message: msg, Details: d, refusal: &r}
	if len(d) == 0 {
		e.Details = nil
	}
	return e
}

// Refusal returns the refusal e was rendered from, or nil for an error
// that is not one.
func (e *Error) Refusal() *Refusal {
	if e == nil || e.refusal == nil {
		return nil
	}
	r := *e.refusal
	return &r
}

// Pending is the CONFIRMATION_REQUIRED result of r (RefusalPending): the
// error, whose details carry the token (confirmation-tokens.md), and the
// result's top-level confirmation, which repeats the token and its
// expiry and nothing else.
func (r Refusal) Pending(v Voice) *Result {
	e := r.Error(v)
	return &Result{Err: e, Confirmation: &Confirmation{Token: r.Token, ExpiresAt: r.ExpiresAt.UTC().Format(time.RFC3339)}}
}
