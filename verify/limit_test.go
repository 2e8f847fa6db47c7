package verify

import (
	"testing"
	"time"
)

func TestFailureLimit(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var s FailureState
	for i := range FailureBurst {
		if ok, _ := s.Admit(t0.Add(time.Duration(i) * time.Millisecond)); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		s.Fail(t0.Add(time.Duration(i) * time.Millisecond))
	}
	ok, retry := s.Admit(t0.Add(10 * time.Millisecond))
	if ok || retry != FailureWindow {
		t.Fatalf("11th attempt: ok=%v retry=%s; want refused for %s", ok, retry, FailureWindow)
	}
	// Attempts during a lockout double it.
	ok, retry = s.Admit(t0.Add(20 * time.Millisecond))
	if ok || retry != 2*FailureWindow {
		t.Fatalf("attempt during lockout: ok=%v retry=%s; want %s", ok, retry, 2*FailureWindow)
	}
	// After the lockout the bucket has refilled: an attempt is looked at.
	later := t0.Add(20*time.Millisecond + 2*FailureWindow)
	if ok, _ := s.Admit(later); !ok {
		t.Fatal("attempt after the lockout refused")
	}
	s.Succeed()
	if s.Violations != 0 {
		t.Errorf("violations after success = %d", s.Violations)
	}
}

// TestFailureStateRestoresExactly: persisting and restoring the bucket
// (as the store does, between processes) neither gives nor takes guesses.
func TestFailureStateRestoresExactly(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var s FailureState
	at := t0
	for range 7 {
		s.Fail(at)
		at = at.Add(1500 * time.Millisecond) // a quarter token refills between failures
	}
	copied := s // what a restart would read back
	for _, d := range []time.Duration{0, time.Second, 3700 * time.Millisecond, time.Minute} {
		got, want := copied.limiter().TokensAt(at.Add(d)), s.limiter().TokensAt(at.Add(d))
		if diff := got - want; diff > 1e-6 || diff < -1e-6 {
			t.Errorf("tokens %s later: restored %f, original %f", d, got, want)
		}
	}
	if tok := s.limiter().TokensAt(s.At); tok < s.Tokens-1e-6 || tok > s.Tokens+1e-6 {
		t.Errorf("limiter rebuilt with %f tokens, state says %f", tok, s.Tokens)
	}
}

func TestLockoutIsCapped(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	s := FailureState{Violations: 40}
	s.violate(t0)
	if got := s.LockedUntil.Sub(t0); got != MaxLockout {
		t.Errorf("lockout after 41 violations = %s, want %s", got, MaxLockout)
	}
}
