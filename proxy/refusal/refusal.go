// Package refusal is the guard's one answer for "no": a Refusal (a kind,
// fixed words, named factors) in the guard's own terms, never a
// protocol's error. The guard (proxy/guard) and the pins refuse with it;
// each front says it in its protocol (proxy/refusal.go). Its words are
// this package's constant phrases only: never an error's text, a
// secret or a code.
package refusal

import (
	"strings"
	"time"
)

// A Refusal is the guard saying no: it did not run a call, or could not
// do what a loop operation asked. Each front says it in its protocol
// (proxy/refusal.go: an MCP-AQL error, a CallToolResult with isError, a
// JSON-RPC error); the guard renders nothing.
//
// Say is the model-facing words, a fixed template: made of this
// package's constant phrases only, never of an error's text. {name} in
// it is the factor of that name, or one of the words the front fills
// from its mode ({shown}, {asked}: how the human was reached; {verify},
// {confirm}: how the model passes a code on or waits for an answer).
// Factors are the values the refusal rests on (strings, ints, bools;
// never an error, a secret or a code), all of them in the details.
type Refusal struct {
	Kind    Kind
	Say     string
	Factors map[string]any
}

// Kind is what a refusal says happened.
type Kind uint8

const (
	// Blocked: the agent is hard-blocked until the human's code
	// is given (a deny pattern, the danger_zone tier).
	Blocked Kind = iota + 1
	// Paused: the verify tier paused the agent until the code is
	// given or the challenge expires.
	Paused
	// Pending: a human must approve the call; the answer is picked
	// up by the retry (the factors carry the token).
	Pending
	// Denied: the human denied this call.
	Denied
	// Refused: the policy refuses this one call; the agent goes on.
	Refused
	// Checkins: one call went through more check-ins than a call may.
	Checkins
	// ToolChanged: the server changed the tool since it was
	// approved (tool pinning, the front's).
	ToolChanged
	// ToolReview: the tool's server is new and its tools wait
	// for the human's first-sight review (tool pinning, the front's).
	ToolReview
	// The token, challenge and execution refusals of the loop's own
	// operations, and the fail-closed one (Failed: the state, a
	// random source or the audit log failed; nothing more is said).
	TokenInvalid
	TokenExpired
	TokenUsed
	TokenScope
	RateLimited
	VerifyFailed
	NotFound
	Conflict
	Failed
)

// words are the kinds' names in the audit log (a decision
// record's result): the MCP-AQL code names, as the log has always said.
var words = [...]string{Blocked: "PERMISSION_AGENT_BLOCKED", Paused: "PERMISSION_VERIFICATION_REQUIRED",
	Pending: "CONFIRMATION_REQUIRED", Denied: "PERMISSION_DENIED", Refused: "PERMISSION_DENIED",
	Checkins: "PERMISSION_DENIED", ToolChanged: "PERMISSION_DENIED", ToolReview: "PERMISSION_DENIED", TokenInvalid: "TOKEN_INVALID",
	TokenExpired: "TOKEN_EXPIRED", TokenUsed: "TOKEN_ALREADY_USED", TokenScope: "TOKEN_SCOPE_MISMATCH",
	RateLimited: "RATE_LIMIT_EXCEEDED", VerifyFailed: "PERMISSION_VERIFICATION_FAILED",
	NotFound: "NOT_FOUND_RESOURCE", Conflict: "CONFLICT_INVALID_STATE", Failed: "INTERNAL_ERROR"}

// String is the kind as the audit log names it.
func (k Kind) String() string {
	if int(k) < len(words) && words[k] != "" {
		return words[k]
	}
	return "INTERNAL_ERROR"
}

// Decision is the word a decision record says of a refusal of this
// kind: the human is asked (confirm), the agent waits for a code
// (verify) or is blocked (block), the call is denied (deny); the loop's
// own and the fail-closed refusals say refuse.
func (k Kind) Decision() string {
	switch k {
	case Pending:
		return "confirm"
	case Paused:
		return "verify"
	case Blocked:
		return "block"
	case Denied, Refused, Checkins, ToolChanged, ToolReview:
		return "deny"
	}
	return "refuse"
}

// Stopped says the refusal stops the agent or waits for a human: a
// reported step gets it as a directive, not as an error.
func (r *Refusal) Stopped() bool {
	switch r.Kind {
	case Blocked, Paused, Pending, Denied, Refused, Checkins:
		return true
	}
	return false
}

// Offer is a pending confirmation's token and expiry, as the caller
// repeats them (a directive's confirmation, MCP-AQL's top-level one).
type Offer struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expires_at"`
}

// Offer is r's token offer (nil unless r is Pending).
func (r *Refusal) Offer() *Offer {
	if r == nil || r.Kind != Pending {
		return nil
	}
	token, _ := r.Factors["confirmation_token"].(string)
	expires, _ := r.Factors["expires_at"].(string)
	return &Offer{Token: token, ExpiresAt: expires}
}

// The words of the refusals that stop the agent or wait for a human: as
// said when the human was reached, and (unheard) when not, {why} then
// being why not (a fixed phrase).
var (
	sayWords = map[Kind]string{
		Blocked: "aqlguard stopped this agent until the user gives you the verification code {shown}. " +
			"Ask them for it, then {verify}. If they lost it, `aqlguard verify show` gives them a new one. " +
			"You cannot see codes; never guess one.",
		Paused: "aqlguard paused this agent until the user gives you the verification code {shown}. " +
			"Ask them for it, then {verify}; if they closed it, your next call shows it again. " +
			"You cannot see the code; do not guess it.",
		Pending:     "A human must approve this call; {asked}. Nothing ran. Repeat the same call to get their answer.{confirm}",
		Denied:      "The user denied this call. Nothing ran; do not repeat it unchanged.",
		Refused:     "The policy does not allow this call. Nothing ran; you may go on with other work.",
		Checkins:    "This call needed more human check-ins than one call may. Nothing ran; try it again.",
		ToolChanged: "The server changed this tool since the user approved it; it cannot be used until they approve the change. Nothing ran.",
		ToolReview:  "This tool's server {server} is new to aqlguard and the user has not reviewed its tools yet; they cannot be used until the user approves them (aqlguard asks them, or they run `aqlguard pins approve {server}`). Nothing ran; try again once they have.",
	}
	unheardWords = map[Kind]string{
		Blocked: "aqlguard stopped this agent, and could not show the user a verification code ({why}). " +
			"Tell the user the agent is stopped and that `aqlguard doctor` says how to fix this. Do not guess a code.",
		Paused: "aqlguard paused this agent, and could not show the user a verification code ({why}). " +
			"Tell the user the agent is paused and that `aqlguard doctor` says how to fix this. Do not guess a code.",
		Pending: "A human must approve this call, but none could be asked ({why}), so nothing ran: " +
			"tell the user to run `aqlguard doctor`, which says how to fix this, then repeat the call.",
	}
)

// Stop is the refusal of kind k (one of those that stop the agent or
// wait for a human) with factors: operation, agent, reason,
// danger_level, verification_id, confirmation_token, server, tool (""
// left out) and its times (zero left out). why says why the human could
// not be reached ("": they were).
func Stop(k Kind, why string, factors map[string]any, at, expires time.Time) *Refusal {
	r := &Refusal{Kind: k, Say: sayWords[k], Factors: map[string]any{}}
	if w, ok := unheardWords[k]; ok && why != "" {
		// The words say that nothing ran or was approved; the why need not.
		why = strings.TrimSuffix(strings.TrimSuffix(why, "."), "; nothing was approved")
		r.Say = strings.ReplaceAll(w, "{why}", why)
	}
	for name, v := range factors {
		if v != "" {
			r.Factors[name] = v
		}
	}
	stamp := func(name string, t time.Time) {
		if !t.IsZero() {
			r.Factors[name] = t.UTC().Format(time.RFC3339)
		}
	}
	switch k {
	case Blocked:
		stamp("blocked_at", at)
	case Denied:
		stamp("denied_at", at)
		stamp("ask_again_after", expires)
	default:
		stamp("expires_at", expires)
	}
	return r
}

// Fail is the fail-closed refusal: "Internal error: '<what>'", what a
// fixed phrase, with factors (nil for none).
func Fail(what string, factors map[string]any) *Refusal {
	return &Refusal{Kind: Failed, Say: "Internal error: '" + what + "'", Factors: factors}
}

// New is a refusal of kind k in the words say, with factors.
func New(k Kind, say string, factors map[string]any) *Refusal {
	return &Refusal{Kind: k, Say: say, Factors: factors}
}

// Unheard is r (a block, pause or pending refusal) for a human who could
// not be reached: why says why, in a fixed phrase.
func (r *Refusal) Unheard(why string) *Refusal {
	if _, ok := unheardWords[r.Kind]; !ok {
		return r
	}
	out := Stop(r.Kind, why, nil, time.Time{}, time.Time{})
	out.Factors = r.Factors
	return out
}
