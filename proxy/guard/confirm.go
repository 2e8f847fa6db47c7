package guard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Confirmation kinds: one action, or a human check-in that lifts a pause
// of the principal (step limit, reported failure).
const (
	kindAction  = "action"
	kindSteps   = "step_limit"
	kindFailure = "previous_outcome"
)

// Confirmation statuses.
const (
	statusPending  = "pending"
	statusApproved = "approved"
	statusDenied   = "denied"
	statusUsed     = "used"
)

// Confirmation is a request for a human's approval, bound to exactly one
// action: {principal, server, operation, SHA-256 of the canonical
// arguments, policy version}, with an expiry. It is used at most once.
type Confirmation struct {
	Token         string
	Kind          string
	Principal     string
	Server        string
	Tool          string
	Operation     string
	Digest        string
	PolicyVersion string
	Session       string

	// Client is the MCP client the agent runs in, as it names itself.
	Client string
	// AllowSession says the human may answer "allow this tool for this
	// session": the decision rests on the tool, not on these arguments.
	AllowSession bool

	// Shown to the human: redacted, never the secrets.
	Action    string
	Arguments map[string]any
	Reason    string
	Tier      string
	// Category, Stage, Rule and Risk are what the question says in words
	// (verify.Request).
	Category, Stage, Rule string
	Risk                  int

	Status    string
	CreatedAt time.Time
	ExpiresAt time.Time
	DoneAt    time.Time
	// UsedBy names the check that used it (see spendFor).
	UsedBy string
}

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

// binding is what a confirmation approves.
type binding struct {
	kind, server, operation, digest string
}

func (c *Confirmation) matches(b binding, principal, version string) bool {
	return c.Kind == b.kind && c.Principal == principal && c.Server == b.server &&
		c.Operation == b.operation && c.Digest == b.digest && c.PolicyVersion == version
}

// joinable reports whether c is a question still open for binding b that
// a call of session waits on instead of raising its own: a check-in is
// the principal's, a call's question its session's.
func (c *Confirmation) joinable(b binding, principal, version, session string, now time.Time) bool {
	return c.Status == statusPending && now.Before(c.ExpiresAt) && c.matches(b, principal, version) &&
		(c.Kind != kindAction || c.Session == session)
}

// tokenFor validates a token passed explicitly with an action, in the
// order confirmation-tokens.md 4.3 gives: exists, operation, parameters,
// expiry, consumption. A pending token is fine: the check will ask the
// human for it.
func (g *Guard) tokenFor(ctx context.Context, a Action) (*Confirmation, *aql.Error) {
	c, err := g.lookupToken(ctx, a.Token)
	if err != nil {
		return nil, err
	}
	args := a.Arguments
	if a.reported() {
		args = map[string]any{"next_action_hint": a.Hint}
	}
	if c.Kind != kindAction || c.Operation != a.Operation || c.Server != a.Server {
		return nil, scopeMismatch(c, a.Operation, "it was issued for another operation")
	}
	if c.Digest != Digest(args) {
		return nil, scopeMismatch(c, a.Operation, "it was issued for other arguments")
	}
	if c.PolicyVersion != g.pol().Version {
		return nil, scopeMismatch(c, a.Operation, "the policy changed since it was issued")
	}
	return c, g.usable(c)
}

// lookupToken finds a token of this principal in the store, where every
// process on the state directory records what becomes of it. g.mu is
// held on entry and return, and let go across the read.
func (g *Guard) lookupToken(ctx context.Context, token string) (*Confirmation, *aql.Error) {
	if !tokenFormat.MatchString(token) {
		return nil, &aql.Error{Code: aql.CodeTokenInvalid, Message: "Invalid confirmation token",
			Details: map[string]any{"token": token}}
	}
	rec, aerr := g.storedConfirmation(ctx, token)
	if aerr != nil {
		return nil, aerr
	}
	if rec == nil {
		return nil, &aql.Error{Code: aql.CodeTokenInvalid, Message: "Invalid confirmation token",
			Details: map[string]any{"token": token}}
	}
	c := confirmationFrom(*rec)
	if c.Principal != g.pol().Principal {
		return nil, scopeMismatch(c, c.Operation, "it was issued for another agent")
	}
	return c, nil
}

// storedConfirmation reads a token's confirmation from the store, the
// truth when another process may have answered or used it. g.mu is held
// on entry and return, and let go across the read.
func (g *Guard) storedConfirmation(ctx context.Context, token string) (*store.Confirmation, *aql.Error) {
	rec, err := loadUnlocked(g, ctx, func(st store.View) (*store.Confirmation, error) { return st.Confirmation(token) })
	if err != nil {
		g.log().Error("reading a confirmation token", "token", token, "err", err)
		return nil, stateUnavailable(err, "the token could not be checked")
	}
	return rec, nil
}

// usable rejects expired and spent tokens.
func (g *Guard) usable(c *Confirmation) *aql.Error {
	now := g.now()
	if !now.Before(c.ExpiresAt) {
		return &aql.Error{Code: aql.CodeTokenExpired, Message: "Confirmation token has expired",
			Details: map[string]any{"token": c.Token, "expired_at": c.ExpiresAt.Format(time.RFC3339),
				"current_time": now.Format(time.RFC3339)}}
	}
	switch c.Status {
	case statusUsed, statusDenied:
		d := map[string]any{"token": c.Token, "consumed_at": c.DoneAt.Format(time.RFC3339)}
		if c.Status == statusDenied {
			d["denied"] = true
		}
		return &aql.Error{Code: aql.CodeTokenUsed, Message: "Confirmation token has already been used", Details: d}
	}
	return nil
}

func scopeMismatch(c *Confirmation, requested, why string) *aql.Error {
	return &aql.Error{Code: aql.CodeTokenScope, Message: "Confirmation token scope mismatch: " + why,
		Details: map[string]any{"token": c.Token, "token_operation": c.Operation, "requested_operation": requested}}
}

// spentRetention is how long a used, denied or expired token is kept
// after its expiry so a replay gets TOKEN_ALREADY_USED or TOKEN_EXPIRED
// rather than TOKEN_INVALID.
const spentRetention = time.Hour

// spendFor reserves an approved confirmation for the check writing w: no
// other check of this process uses it while the check commits; the
// commit writes it as used by this check (so it can tell its own use
// from another process's), and the reservation ends with the commit.
func (g *Guard) spendFor(c *Confirmation, w *writes) {
	g.spending[c.Token] = true
	w.spentConfs = append(w.spentConfs, c)
}

// with is a copy of c in another status: what this process learned of it
// (an answer it recorded), without touching the copy others hold.
func (c *Confirmation) with(status string) *Confirmation {
	out := *c
	out.Status = status
	return &out
}

// record is the confirmation as stored: the digest binds the arguments;
// only their redacted form is kept, for the question.
func (c *Confirmation) record() store.Confirmation {
	var args json.RawMessage
	if len(c.Arguments) > 0 {
		args, _ = canonicalJSON(c.Arguments) // decoded JSON re-encodes
	}
	return store.Confirmation{Arguments: args, Token: c.Token, Kind: c.Kind, Principal: c.Principal, Server: c.Server, Tool: c.Tool,
		AllowSession: c.AllowSession, Operation: c.Operation, Digest: c.Digest, PolicyVersion: c.PolicyVersion, Session: c.Session,
		Action: c.Action, Reason: c.Reason, Tier: c.Tier, Status: c.Status, UsedBy: c.UsedBy,
		Client: c.Client, Category: c.Category, Stage: c.Stage, Rule: c.Rule, Risk: c.Risk,
		CreatedAt: c.CreatedAt, ExpiresAt: c.ExpiresAt, DoneAt: c.DoneAt}
}

func confirmationFrom(r store.Confirmation) *Confirmation {
	var args map[string]any
	if len(r.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Arguments))
		dec.UseNumber()
		_ = dec.Decode(&args) // damaged: the question shows the preview alone
	}
	return &Confirmation{Arguments: args, Token: r.Token, Kind: r.Kind, Principal: r.Principal, Server: r.Server, Tool: r.Tool,
		AllowSession: r.AllowSession, Operation: r.Operation, Digest: r.Digest, PolicyVersion: r.PolicyVersion, Session: r.Session,
		Action: r.Action, Reason: r.Reason, Tier: r.Tier, Status: r.Status, UsedBy: r.UsedBy,
		Client: r.Client, Category: r.Category, Stage: r.Stage, Rule: r.Rule, Risk: r.Risk,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, DoneAt: r.DoneAt}
}

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
func (g *Guard) ConfirmOperation(ctx context.Context, session, token string) (*ConfirmResult, *aql.Result) {
	g.mu.Lock()
	g.init()
	c, err := g.lookupToken(ctx, token)
	if err == nil {
		err = g.usable(c)
	}
	if err != nil {
		g.mu.Unlock()
		return nil, aql.Failure(err)
	}
	if c.Status == statusApproved && c.Kind == kindAction {
		g.mu.Unlock()
		return g.confirmed(c), nil
	}
	g.mu.Unlock()
	answer, why := g.await(ctx, c, g.AskTimeout)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case approves(answer) && !g.spending[c.Token]:
		c = c.with(statusApproved)
		if c.Kind != kindAction {
			// A check-in is lifted now: it is not tied to one action. It
			// is reserved, written as used unless another process used it
			// first (one approval lifts one pause), and applied only once
			// written: a check-in that was not recorded leaves the pause
			// and the token as they were.
			w := &writes{}
			g.spendFor(c, w)
			g.checkinFor(c.Kind, w)
			spent := g.spentRecords(w)
			g.mu.Unlock()
			var why string
			err := g.commitState(ctx, func(st store.View) (store.Changes, error) {
				var err error
				if why, err = g.spendsHold(st, w); err != nil || why != "" {
					return store.Changes{}, err
				}
				return store.Changes{Confirmations: spent}, nil
			})
			g.mu.Lock()
			if err != nil {
				g.release(w)
				g.log().Error("recording a check-in", "token", c.Token, "err", err)
				return nil, aql.Failure(stateUnavailable(err, "the check-in was not recorded; nothing is approved"))
			}
			if why != "" {
				g.release(w)
				return nil, aql.Failure(&aql.Error{Code: aql.CodeTokenUsed, Message: "Confirmation token has already been used: " + why,
					Details: map[string]any{"token": c.Token, "operation": c.Operation}})
			}
			g.apply(w)
		}
		g.clearNotifications(c.Token)
		return g.confirmed(c), nil
	case answer == verify.Deny:
		g.clearNotifications(c.Token)
		return nil, aql.Failure(aql.Refusal{Kind: aql.RefusalDenied, Operation: c.Operation, Token: c.Token}.Error(g.voice()))
	}
	// Expired, or used by a call, while we waited?
	cur, aerr := g.lookupToken(ctx, token)
	if aerr == nil {
		aerr = g.usable(cur)
	}
	if aerr != nil {
		return nil, aql.Failure(aerr)
	}
	return nil, aql.Refusal{Kind: aql.RefusalPending, Operation: c.Operation, Reason: c.Reason, Token: c.Token,
		ExpiresAt: c.ExpiresAt, Why: strings.TrimPrefix(why, "confirmation: ")}.Pending(g.voice())
}

func (g *Guard) confirmed(c *Confirmation) *ConfirmResult {
	next := "Repeat the same call (same operation, same arguments); the approval is used once."
	if c.Kind != kindAction {
		next = "The pause is lifted; continue."
	}
	return &ConfirmResult{Token: c.Token, Status: statusApproved, Operation: c.Operation, Next: next}
}
