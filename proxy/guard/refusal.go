package guard

import (
	"time"

	"github.com/aqlguard/aqlguard/proxy/refusal"
)

// The guard refuses in proxy/refusal's words; these are its names as the
// fronts know them.
type (
	Refusal     = refusal.Refusal
	RefusalKind = refusal.Kind
	Offer       = refusal.Offer
)

// The kinds of refusal (proxy/refusal).
const (
	RefusalBlocked      = refusal.Blocked
	RefusalPaused       = refusal.Paused
	RefusalPending      = refusal.Pending
	RefusalDenied       = refusal.Denied
	RefusalRefused      = refusal.Refused
	RefusalCheckins     = refusal.Checkins
	RefusalToolChanged  = refusal.ToolChanged
	RefusalToolReview   = refusal.ToolReview
	RefusalTokenInvalid = refusal.TokenInvalid
	RefusalTokenExpired = refusal.TokenExpired
	RefusalTokenUsed    = refusal.TokenUsed
	RefusalTokenScope   = refusal.TokenScope
	RefusalRateLimited  = refusal.RateLimited
	RefusalVerifyFailed = refusal.VerifyFailed
	RefusalNotFound     = refusal.NotFound
	RefusalConflict     = refusal.Conflict
	RefusalFailed       = refusal.Failed
)

// Stop is refusal.Stop: the refusal of kind k that stops the agent or
// waits for a human.
func Stop(k RefusalKind, why string, factors map[string]any, at, expires time.Time) *Refusal {
	return refusal.Stop(k, why, factors, at, expires)
}

// failed is refusal.Fail, the fail-closed refusal.
func failed(what string, factors map[string]any) *Refusal { return refusal.Fail(what, factors) }
