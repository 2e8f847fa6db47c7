// Package confirm keeps one principal's confirmations: a request for a
// human's approval bound to exactly one action (or a check-in that lifts
// a pause of the principal), its token, its question put to the human
// through the principal's desk (proxy/desk), and the human's answer,
// recorded the moment it is given. The state is its only home: every
// process on the state reads a token there and records there what
// becomes of it, so the book keeps nothing in memory and takes no lock
// of its own.
//
// What a confirmation decides is proxy/ruling's (Answer, Unusable,
// CheckIn); the guard asks the book for the facts a decision reads
// (Human), for the token a call passed (ForCall), for a new question
// (New) and for the human's answer (Await), and spends an approval in
// the commit that decides on it.
package confirm

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/desk"
	"github.com/aqlguard/aqlguard/proxy/redact"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Confirmation is a request for a human's approval, bound to exactly one
// action: {principal, server, operation, SHA-256 of the canonical
// arguments, policy version}, with an expiry. It is used at most once.
// The book works on it as the state keeps it (only the arguments'
// redacted form is kept, for the question; the digest binds them).
type Confirmation = store.Confirmation

// Book is the principal's confirmations as the guard reaches them: its
// fields are the guard's, read at each use (a Book is a value made for
// one use; it keeps nothing).
type Book struct {
	// State is where every confirmation lives.
	State store.State
	// Desk is the principal's desk (the guard's, made on first use).
	Desk func() *desk.Desk
	// Policy is the policy in force.
	Policy *policy.Policy
	// Commit is one commit of the guard that changes none of its memory.
	Commit func(ctx context.Context, decide func(store.View) (store.Changes, error)) error
	// Record starts one of the guard's audit records.
	Record func(kind store.RecordKind, session string) store.Record
	// Now is the guard's clock (UTC).
	Now func() time.Time
	// Log receives the book's log lines.
	Log *slog.Logger
	// Process names this process on a standing approval.
	Process string
	// TTL is a confirmation's lifetime; SessionApprovalTTL bounds an
	// "allow for this session" answer (zero: none is offered).
	TTL, SessionApprovalTTL time.Duration
}

// TokenFormat is the shape of every token the book hands out.
var TokenFormat = regexp.MustCompile(`^conf_[0-9a-f]{32}$`)

// processNonce tells this process apart from an earlier one with the
// same pid (a use's id must never match a record a dead process wrote).
var processNonce = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

var useSeq atomic.Uint64

// UseID names a use of a confirmation uniquely in this process; with
// the process's id and nonce it is unique on the state.
func UseID() string {
	return strconv.Itoa(os.Getpid()) + "#" + strconv.FormatUint(useSeq.Add(1), 10) + "#" + processNonce
}

// newToken returns "conf_" and 128 bits from crypto/rand in hex
// (confirmation-tokens.md 2.2 and 3.1).
func newToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "conf_" + hex.EncodeToString(b), nil
}

// Digest is the SHA-256 of the canonical JSON of arguments: encoding/json
// sorts object keys at every level and numbers keep their decoded text,
// so the same arguments always give the same digest.
func Digest(args map[string]any) string {
	if args == nil {
		args = map[string]any{}
	}
	b, err := json.Marshal(args)
	if err != nil {
		// Decoded JSON always re-encodes; anything else binds to nothing.
		return "unencodable"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// SpentRetention is how long a used, denied or expired token is kept
// after its expiry so a replay gets TOKEN_ALREADY_USED or TOKEN_EXPIRED
// rather than TOKEN_INVALID.
const SpentRetention = time.Hour

// Call is what a new confirmation says of the call it asks about.
type Call struct {
	Session, Tool, Client string
	// Reported says the call is a reported step (its preview is the
	// step's hint).
	Reported bool
	// SharedSession says the session has no client of its own to bind a
	// session-wide approval to.
	SharedSession bool
	// Preview and Arguments are what may be shown of the call (the
	// arguments redacted).
	Preview   string
	Arguments map[string]any
	Category  string
	Does      string
	// Carried is what of the session's flows the call carries already
	// (evaluator.Flow.Carried).
	Carried string
}

// New is a confirmation for binding b of call, as directive d asks.
func (k Book) New(call Call, b ruling.Binding, d evaluator.Directive) (*Confirmation, error) {
	token, err := newToken()
	if err != nil {
		return nil, err
	}
	now := k.Now()
	var args json.RawMessage
	if len(call.Arguments) > 0 {
		args, _ = redact.Canonical(call.Arguments) // decoded JSON re-encodes
	}
	action := b.Kind == ruling.BindAction
	c := &Confirmation{
		Token: token, Kind: b.Kind, Principal: k.Policy.Principal, Server: b.Server, Tool: call.Tool, Operation: b.Operation, Client: call.Client,
		AllowSession: action && !call.Reported && !d.ArgumentBound && call.Session != "" && !call.SharedSession && k.SessionApprovalTTL > 0,
		Forget:       action && d.Matched == "flow" && call.Carried == "" && call.Session != "" && !call.SharedSession,
		Digest:       b.Digest, PolicyVersion: k.Policy.Version, Session: call.Session,
		Action: call.Preview, Arguments: args, Reason: d.Reason, Tier: string(d.Tier),
		Category: call.Category, Does: call.Does, Stage: string(d.Stage), Rule: d.Matched, Risk: d.Risk,
		Status: ruling.StatusPending, CreatedAt: now, ExpiresAt: now.Add(k.TTL),
	}
	if !action {
		c.Action = b.Operation + " (next action: " + call.Preview + ")"
	}
	return c, nil
}

// Human reads what humans said that may bear on a decision, in the
// commit's view, where every process on the state writes it: standing
// approvals (only when approvals says one could apply) and the
// principal's confirmations.
func (k Book) Human(v store.View, approvals bool) (*ruling.Human, error) {
	h := &ruling.Human{}
	if approvals && k.SessionApprovalTTL > 0 {
		var err error
		if h.Approvals, err = v.Approvals(); err != nil {
			return nil, err
		}
	}
	stored, err := v.Confirmations(k.Policy.Principal, "")
	if err != nil {
		return nil, err
	}
	for i := range stored {
		c := &stored[i]
		if c.Status == ruling.StatusPending || c.Status == ruling.StatusApproved {
			h.Open = append(h.Open, c)
		} else {
			h.Spent = append(h.Spent, c)
		}
	}
	return h, nil
}

// ForCall validates a token passed explicitly with a call (operation on
// server, its arguments' digest), in the order confirmation-tokens.md
// 4.3 gives: exists, operation, parameters, expiry, consumption. A
// pending token is fine: the check will ask the human for it.
func (k Book) ForCall(v store.View, token, operation, server, digest string) (*Confirmation, *refusal.Refusal) {
	c, err := k.Lookup(v, token)
	if err != nil {
		return nil, err
	}
	if c.Kind != ruling.BindAction || c.Operation != operation || c.Server != server {
		return nil, scopeMismatch(c, operation, "it was issued for another operation")
	}
	if c.Digest != digest {
		return nil, scopeMismatch(c, operation, "it was issued for other arguments")
	}
	if c.PolicyVersion != k.Policy.Version {
		return nil, scopeMismatch(c, operation, "the policy changed since it was issued")
	}
	return c, k.Usable(c)
}

// Lookup finds a token of the principal in the state, where every
// process records what becomes of it.
func (k Book) Lookup(v store.View, token string) (*Confirmation, *refusal.Refusal) {
	invalid := refusal.New(refusal.TokenInvalid, "Invalid confirmation token", map[string]any{"token": token})
	if !TokenFormat.MatchString(token) {
		return nil, invalid
	}
	c, err := v.Confirmation(token)
	if err != nil {
		k.Log.Error("reading a confirmation token", "token", token, "err", err)
		return nil, refusal.StateUnavailable(err, "the token could not be checked")
	}
	if c == nil {
		return nil, invalid
	}
	if c.Principal != k.Policy.Principal {
		return nil, scopeMismatch(c, c.Operation, "it was issued for another agent")
	}
	return c, nil
}

// Load is Lookup on a snapshot of its own.
func (k Book) Load(ctx context.Context, token string) (*Confirmation, *refusal.Refusal) {
	var c *Confirmation
	var aerr *refusal.Refusal
	if err := k.State.Load(ctx, func(v store.View) error {
		c, aerr = k.Lookup(v, token)
		return nil
	}); err != nil {
		k.Log.Error("reading a confirmation token", "token", token, "err", err)
		return nil, refusal.StateUnavailable(err, "the token could not be checked")
	}
	return c, aerr
}

// Usable rejects expired and spent tokens.
func (k Book) Usable(c *Confirmation) *refusal.Refusal {
	now := k.Now()
	if !now.Before(c.ExpiresAt) {
		return refusal.New(refusal.TokenExpired, "Confirmation token has expired", map[string]any{"token": c.Token,
			"expired_at": c.ExpiresAt.Format(time.RFC3339), "current_time": now.Format(time.RFC3339)})
	}
	switch c.Status {
	case ruling.StatusUsed, ruling.StatusDenied:
		d := map[string]any{"token": c.Token, "consumed_at": c.DoneAt.Format(time.RFC3339)}
		if c.Status == ruling.StatusDenied {
			d["denied"] = true
		}
		return refusal.New(refusal.TokenUsed, "Confirmation token has already been used", d)
	}
	return nil
}

func scopeMismatch(c *Confirmation, requested, why string) *refusal.Refusal {
	return refusal.New(refusal.TokenScope, "Confirmation token scope mismatch: "+why,
		map[string]any{"token": c.Token, "token_operation": c.Operation, "requested_operation": requested})
}

// Denied is the refusal of an action a human denied; dc is the earlier
// denial a retry ran into (nil: denied just now).
func Denied(operation string, dc *Confirmation) *refusal.Refusal {
	var at, until time.Time
	if dc != nil {
		at, until = dc.DoneAt, dc.ExpiresAt
	}
	return refusal.Stop(refusal.Denied, "", map[string]any{"operation": operation}, at, until)
}

// Result is what confirm_operation answers on approval.
type Result struct {
	Token     string `json:"token"`
	Status    string `json:"status"`
	Operation string `json:"operation"`
	Next      string `json:"next"`
}

// Operation is confirm_operation: it asks the human again about the
// token's action (or waits for the answer to the question already on
// their screen). The caller's request is only a request: approval comes
// from the human's answer on the channel, never from this call. The
// answer and its audit record are durable before the reply. lift uses
// an approved check-in (its pause lifts once that is written); answered
// is told of every answer, by token.
func (k Book) Operation(ctx context.Context, token string, wait time.Duration, lift func(context.Context, *Confirmation) *refusal.Refusal, answered func(token string)) (*Result, *refusal.Refusal) {
	c, err := k.Load(ctx, token)
	if err == nil {
		err = k.Usable(c)
	}
	if err != nil {
		return nil, err
	}
	if c.Status == ruling.StatusApproved && c.Kind == ruling.BindAction {
		return confirmed(c), nil
	}
	answer, why := k.Await(ctx, c, wait, nil)
	switch {
	case Approves(answer):
		if c.Kind != ruling.BindAction {
			// A check-in is lifted now: it is not tied to one action. It
			// is written as used unless another process used it first
			// (one approval lifts one pause), and the pause lifts only
			// once that is written.
			if res := lift(ctx, c); res != nil {
				return nil, res
			}
		}
		answered(c.Token)
		return confirmed(c), nil
	case answer == verify.Deny:
		answered(c.Token)
		return nil, refusal.Stop(refusal.Denied, "", map[string]any{"operation": c.Operation, "confirmation_token": c.Token}, time.Time{}, time.Time{})
	}
	// Expired, or used by a call, while we waited?
	cur, aerr := k.Load(ctx, token)
	if aerr == nil {
		aerr = k.Usable(cur)
	}
	if aerr != nil {
		return nil, aerr
	}
	return nil, refusal.Stop(refusal.Pending, strings.TrimPrefix(why, "confirmation: "), map[string]any{"operation": c.Operation,
		"reason": c.Reason, "confirmation_token": c.Token}, time.Time{}, c.ExpiresAt)
}

// UsedElsewhere is the refusal of a check-in another process used first
// (why: ruling.CheckIn's).
func UsedElsewhere(c *Confirmation, why string) *refusal.Refusal {
	return refusal.New(refusal.TokenUsed, "Confirmation token has already been used: "+why,
		map[string]any{"token": c.Token, "operation": c.Operation})
}

func confirmed(c *Confirmation) *Result {
	next := "Repeat the same call (same operation, same arguments); the approval is used once."
	if c.Kind != ruling.BindAction {
		next = "The pause is lifted; continue."
	}
	return &Result{Token: c.Token, Status: ruling.StatusApproved, Operation: c.Operation, Next: next}
}
