package verify

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// Failed verifications are limited per principal (spec 8.8.5): a token
// bucket of FailureBurst failures refilled at FailureBurst per
// FailureWindow, through golang.org/x/time/rate. An attempt while the
// bucket is empty is a violation: it is refused, and each violation locks
// the principal out for twice as long as the one before (FailureWindow,
// 2×, 4×, … up to MaxLockout). A success ends the series.
const (
	FailureBurst  = 10
	FailureWindow = 60 * time.Second
	MaxLockout    = 24 * time.Hour
)

var failureRate = rate.Every(FailureWindow / FailureBurst)

// FailureState is one principal's limiter and lockout, as persisted. The
// zero value is a principal that never failed.
type FailureState struct {
	Tokens      float64   // tokens in the bucket at At
	At          time.Time // when Tokens was taken; zero for a full bucket
	Violations  int       // violations since the last success
	LockedUntil time.Time // no attempt is looked at before this
}

// limiter rebuilds the x/time/rate limiter the state describes. A new
// limiter is full; spending burst-floor(Tokens) at a moment chosen so
// that the refill brings it to exactly Tokens at At restores the bucket
// without rounding in anyone's favour.
func (s FailureState) limiter() *rate.Limiter {
	lim := rate.NewLimiter(failureRate, FailureBurst)
	if s.At.IsZero() {
		return lim
	}
	whole := math.Floor(s.Tokens)
	frac := s.Tokens - whole
	at := s.At.Add(-time.Duration(frac / float64(failureRate) * float64(time.Second)))
	lim.AllowN(at, FailureBurst-int(whole))
	return lim
}

// Admit says whether a verification attempt may be looked at now. If not,
// the attempt is a violation: the state records it (extending the
// lockout) and retryAfter says when to try again. The caller persists the
// state either way.
func (s *FailureState) Admit(now time.Time) (ok bool, retryAfter time.Duration) {
	if now.Before(s.LockedUntil) {
		s.violate(now)
		return false, s.LockedUntil.Sub(now)
	}
	if s.limiter().TokensAt(now) >= 1 {
		return true, 0
	}
	s.violate(now)
	return false, s.LockedUntil.Sub(now)
}

func (s *FailureState) violate(now time.Time) {
	s.Violations++
	lock := MaxLockout
	if s.Violations <= 20 { // 2^20 minutes is past MaxLockout already
		lock = min(FailureWindow<<(s.Violations-1), MaxLockout)
	}
	s.LockedUntil = now.Add(lock)
}

// Fail records a failed attempt (a wrong code or an unknown challenge).
func (s *FailureState) Fail(now time.Time) {
	lim := s.limiter()
	lim.AllowN(now, 1)
	s.Tokens, s.At = lim.TokensAt(now), now
}

// Succeed ends a series of violations. The bucket keeps refilling on its
// own: a success does not buy more guesses.
func (s *FailureState) Succeed() {
	s.Violations = 0
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
