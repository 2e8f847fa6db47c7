package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Confirmation kinds: one action, or a human check-in that lifts a pause
// of the principal (step limit, reported failure).
const (
	kindAction  = ruling.BindAction
	kindSteps   = ruling.BindSteps
	kindFailure = ruling.BindFailure
)

// Confirmation statuses.
const (
	statusPending  = ruling.StatusPending
	statusApproved = ruling.StatusApproved
	statusDenied   = ruling.StatusDenied
	statusUsed     = ruling.StatusUsed
)

// Confirmation is a request for a human's approval, bound to exactly one
// action: {principal, server, operation, SHA-256 of the canonical
// arguments, policy version}, with an expiry. It is used at most once.
// The guard works on it as the state keeps it (only the arguments'
// redacted form is kept, for the question; the digest binds them).
type Confirmation = store.Confirmation

var tokenFormat = regexp.MustCompile(`^conf_[0-9a-f]{32}$`)

// processNonce tells this process apart from an earlier one with the
// same pid (a check id must never match a record a dead process wrote).
var processNonce = func() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

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

// tokenFor validates a token passed explicitly with an action, in the
// order confirmation-tokens.md 4.3 gives: exists, operation, parameters,
// expiry, consumption. A pending token is fine: the check will ask the
// human for it.
func (g *Guard) tokenFor(v store.View, a Action, pol *policy.Policy) (*Confirmation, *Refusal) {
	c, err := g.lookupToken(v, a.Token, pol.Principal)
	if err != nil {
		return nil, err
	}
	if c.Kind != kindAction || c.Operation != a.Operation || c.Server != a.Server {
		return nil, scopeMismatch(c, a.Operation, "it was issued for another operation")
	}
	if c.Digest != a.argsDigest() {
		return nil, scopeMismatch(c, a.Operation, "it was issued for other arguments")
	}
	if c.PolicyVersion != pol.Version {
		return nil, scopeMismatch(c, a.Operation, "the policy changed since it was issued")
	}
	return c, g.usable(c)
}

// lookupToken finds a token of principal in the state, where every
// process records what becomes of it.
func (g *Guard) lookupToken(v store.View, token, principal string) (*Confirmation, *Refusal) {
	invalid := refusal.New(RefusalTokenInvalid, "Invalid confirmation token", map[string]any{"token": token})
	if !tokenFormat.MatchString(token) {
		return nil, invalid
	}
	rec, err := v.Confirmation(token)
	if err != nil {
		g.log().Error("reading a confirmation token", "token", token, "err", err)
		return nil, stateUnavailable(err, "the token could not be checked")
	}
	if rec == nil {
		return nil, invalid
	}
	c := rec
	if c.Principal != principal {
		return nil, scopeMismatch(c, c.Operation, "it was issued for another agent")
	}
	return c, nil
}

// loadToken is lookupToken on a snapshot of its own.
func (g *Guard) loadToken(ctx context.Context, token string) (*Confirmation, *Refusal) {
	var c *Confirmation
	var aerr *Refusal
	if err := g.State.Load(ctx, func(v store.View) error {
		c, aerr = g.lookupToken(v, token, g.pol().Principal)
		return nil
	}); err != nil {
		g.log().Error("reading a confirmation token", "token", token, "err", err)
		return nil, stateUnavailable(err, "the token could not be checked")
	}
	return c, aerr
}

// usable rejects expired and spent tokens.
func (g *Guard) usable(c *Confirmation) *Refusal {
	now := g.now()
	if !now.Before(c.ExpiresAt) {
		return refusal.New(RefusalTokenExpired, "Confirmation token has expired", map[string]any{"token": c.Token,
			"expired_at": c.ExpiresAt.Format(time.RFC3339), "current_time": now.Format(time.RFC3339)})
	}
	switch c.Status {
	case statusUsed, statusDenied:
		d := map[string]any{"token": c.Token, "consumed_at": c.DoneAt.Format(time.RFC3339)}
		if c.Status == statusDenied {
			d["denied"] = true
		}
		return refusal.New(RefusalTokenUsed, "Confirmation token has already been used", d)
	}
	return nil
}

func scopeMismatch(c *Confirmation, requested, why string) *Refusal {
	return refusal.New(RefusalTokenScope, "Confirmation token scope mismatch: "+why,
		map[string]any{"token": c.Token, "token_operation": c.Operation, "requested_operation": requested})
}

// spentRetention is how long a used, denied or expired token is kept
// after its expiry so a replay gets TOKEN_ALREADY_USED or TOKEN_EXPIRED
// rather than TOKEN_INVALID.
const spentRetention = time.Hour

// ConfirmResult is what confirm_operation answers on approval.
type ConfirmResult struct {
	Token     string `json:"token"`
	Status    string `json:"status"`
	Operation string `json:"operation"`
	Next      string `json:"next"`
}

// ConfirmOperation is confirm_operation: it asks the human again about
// the token's action (or waits for the answer to the question already on
// their screen). The caller's request is only a request: approval comes
// from the human's answer on the channel, never from this call. The
// answer and its audit record are durable before the reply.
func (g *Guard) ConfirmOperation(ctx context.Context, session, token string) (*ConfirmResult, *Refusal) {
	g.mu.Lock()
	g.init()
	g.mu.Unlock()
	c, err := g.loadToken(ctx, token)
	if err == nil {
		err = g.usable(c)
	}
	if err != nil {
		return nil, err
	}
	if c.Status == statusApproved && c.Kind == kindAction {
		return g.confirmed(c), nil
	}
	answer, why := g.await(ctx, c, g.AskTimeout, nil)
	switch {
	case approves(answer):
		if c.Kind != kindAction {
			// A check-in is lifted now: it is not tied to one action. It
			// is written as used unless another process used it first
			// (one approval lifts one pause), and the pause lifts only
			// once that is written.
			if res := g.liftCheckin(ctx, c); res != nil {
				return nil, res
			}
		}
		g.mu.Lock()
		g.clearNotifications(c.Token)
		g.mu.Unlock()
		return g.confirmed(c), nil
	case answer == verify.Deny:
		g.mu.Lock()
		g.clearNotifications(c.Token)
		g.mu.Unlock()
		return nil, Stop(RefusalDenied, "", map[string]any{"operation": c.Operation, "confirmation_token": c.Token}, time.Time{}, time.Time{})
	}
	// Expired, or used by a call, while we waited?
	cur, aerr := g.loadToken(ctx, token)
	if aerr == nil {
		aerr = g.usable(cur)
	}
	if aerr != nil {
		return nil, aerr
	}
	return nil, Stop(RefusalPending, strings.TrimPrefix(why, "confirmation: "), map[string]any{"operation": c.Operation,
		"reason": c.Reason, "confirmation_token": c.Token}, time.Time{}, c.ExpiresAt)
}

// liftCheckin uses an approved check-in: written as used, in the commit
// that reads it approved, and the pause it lifts follows that commit.
func (g *Guard) liftCheckin(ctx context.Context, c *Confirmation) *Refusal {
	var why string
	err := g.commit(ctx, func(v store.View, m *memory) (store.Changes, error) {
		cur, err := v.Confirmation(c.Token)
		if err != nil {
			return store.Changes{}, err
		}
		var used *store.Confirmation
		if used, why = ruling.CheckIn(cur, g.now(), checkID()); used == nil {
			return store.Changes{}, nil
		}
		m.steps, m.failurePause = ruling.CheckedIn(c.Kind, m.steps, m.failurePause)
		return store.Changes{Confirmations: []store.Confirmation{*used}}, nil
	})
	if err != nil {
		g.log().Error("recording a check-in", "token", c.Token, "err", err)
		return stateUnavailable(err, "the check-in was not recorded; nothing is approved")
	}
	if why != "" {
		return refusal.New(RefusalTokenUsed, "Confirmation token has already been used: "+why,
			map[string]any{"token": c.Token, "operation": c.Operation})
	}
	return nil
}

func (g *Guard) confirmed(c *Confirmation) *ConfirmResult {
	next := "Repeat the same call (same operation, same arguments); the approval is used once."
	if c.Kind != kindAction {
		next = "The pause is lifted; continue."
	}
	return &ConfirmResult{Token: c.Token, Status: statusApproved, Operation: c.Operation, Next: next}
}
