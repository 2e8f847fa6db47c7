package safety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/verify"
)

// showWait is how long a check waits to learn whether the channel could
// show a code at all (a missing display or a failing command answers at
// once; a dialog that is up keeps running in the background).
const showWait = 750 * time.Millisecond

// challenge creates a verification challenge for the action and shows its
// code out of band. The code lives only in this function and the channel:
// it is never returned, logged or stored.
func (l *Loop) challenge(ctx context.Context, a Action, d evaluator.Directive) (*verify.Challenge, []string, error) {
	action := a.Hint
	ch, code, err := verify.NewChallenge(l.Policy.Principal, action, string(d.Tier), l.now(), l.ChallengeTTL)
	if err != nil {
		return nil, nil, err
	}
	l.challenges[ch.ID] = ch
	req := verify.Request{Kind: verify.KindChallenge, Agent: l.Policy.Principal, Operation: a.Operation,
		Action: action, Reason: d.Reason, Challenge: ch.ID, Code: code, Tier: string(d.Tier), ExpiresAt: ch.ExpiresAt}
	if l.Channel == nil {
		l.Log.Error("no channel to show a verification code; the pause or block stays", "challenge", ch.ID)
		return ch, []string{"verification: no channel to a human is configured; the code could not be shown"}, nil
	}
	done := make(chan error, 1)
	// The dialog stays up until the human closes it or the code expires;
	// it must not keep the lock or the caller waiting.
	showCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), ch.ExpiresAt)
	go func() {
		defer cancel()
		done <- l.Channel.Show(showCtx, req)
	}()
	select {
	case err := <-done:
		if err != nil {
			l.Log.Error("the verification code could not be shown; the pause or block stays",
				"channel", l.Channel.Name(), "challenge", ch.ID, "err", err)
			why := "verification: the " + l.Channel.Name() + " channel could not show the code"
			if errors.Is(err, verify.ErrNoDisplay) {
				why += " (no graphical display)"
			}
			l.broadcast(l.notification("error", "A verification code could not be shown: "+why,
				map[string]any{"verificationId": ch.ID}, ""))
			return ch, []string{why + "; the pause or block stays"}, nil
		}
	case <-time.After(showWait):
	}
	l.Log.Info("verification code shown out of band", "channel", l.Channel.Name(), "challenge", ch.ID,
		"expires_at", ch.ExpiresAt)
	return ch, []string{"verification: code shown to a human through the " + l.Channel.Name() + " channel"}, nil
}

// hardBlock blocks the principal (deny match or danger_zone tier) and
// broadcasts danger_zone to every executing agent of every session.
func (l *Loop) hardBlock(ctx context.Context, a Action, d evaluator.Directive) Verdict {
	ch, factors, err := l.challenge(ctx, a, d)
	if err != nil {
		l.Log.Error("creating a challenge", "err", err)
	}
	b := &Block{Reason: d.Reason, BlockedAt: l.now()}
	if ch != nil {
		b.VerificationID = ch.ID
	}
	l.block = b
	d.Factors = append(d.Factors, factors...)
	l.Log.Warn("principal hard-blocked", "principal", l.Policy.Principal, "reason", d.Reason, "verification", b.VerificationID)
	l.broadcast(l.notification("danger_zone",
		fmt.Sprintf("Agent '%s' is hard-blocked: %s", l.Policy.Principal, d.Reason),
		map[string]any{"operation": a.Operation, "reason": d.Reason, "verificationId": b.VerificationID}, b.VerificationID))
	return Verdict{Directive: d, VerificationID: b.VerificationID, Err: blockedError(l.Policy.Principal, a.Operation, b)}
}

// verifyPauseFor pauses the principal until the code is entered or expires.
func (l *Loop) verifyPauseFor(ctx context.Context, a Action, d evaluator.Directive) Verdict {
	ch, factors, err := l.challenge(ctx, a, d)
	if err != nil {
		l.Log.Error("creating a challenge", "err", err)
		return Verdict{Directive: d, Err: aql.Internal("a verification challenge could not be created")}
	}
	l.verifyPause = ch
	d.Factors = append(d.Factors, factors...)
	d.Reason = d.Reason + "; verification " + ch.ID + " pending"
	n := l.notification("autonomy_pause", "Paused for out-of-band verification: "+d.Reason,
		map[string]any{"operation": a.Operation, "reason": d.Reason, "verificationId": ch.ID}, ch.ID)
	v := Verdict{Directive: d, VerificationID: ch.ID, Err: verificationError(a.Operation, ch)}
	if a.reported() {
		v.Notifications = append(v.Notifications, n)
	} else {
		l.broadcast(n)
	}
	return v
}

func blockedError(agent, op string, b *Block) *aql.Error {
	return &aql.Error{Code: aql.CodeAgentBlocked,
		Message: fmt.Sprintf("Agent '%s' is blocked: %s. A human must clear the block out of band (verification %s).", agent, b.Reason, b.VerificationID),
		Details: map[string]any{"agent": agent, "operation": op, "reason": b.Reason,
			"verification_id": b.VerificationID, "blocked_at": b.BlockedAt.Format(time.RFC3339)}}
}

func verificationError(op string, ch *verify.Challenge) *aql.Error {
	return &aql.Error{Code: aql.CodeVerification,
		Message: "Paused: out-of-band verification " + ch.ID + " is pending; a human must enter the code shown to them",
		Details: map[string]any{"operation": op, "verification_id": ch.ID, "expires_at": ch.ExpiresAt.Format(time.RFC3339)}}
}

// VerifyResult is verify_challenge's success.
type VerifyResult struct {
	Verified  bool   `json:"verified"`
	Challenge string `json:"challenge_id"`
	Unblocked bool   `json:"unblocked"`
	Resumed   bool   `json:"resumed"`
}

// VerifyChallenge checks a code against a challenge. Success lifts the
// block or the verify pause the challenge belongs to. Errors never echo
// the code.
func (l *Loop) VerifyChallenge(id, code string) (*VerifyResult, *aql.Error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	ch, ok := l.challenges[id]
	if !ok || ch.Agent != l.Policy.Principal {
		return nil, &aql.Error{Code: aql.CodeNotFoundResource, Message: fmt.Sprintf("Resource 'challenge' not found: '%s'", id),
			Details: map[string]any{"resource_type": "challenge", "resource_id": id}}
	}
	now := l.now()
	switch err := ch.Check(code, now); {
	case errors.Is(err, verify.ErrExpired):
		return nil, &aql.Error{Code: aql.CodeTokenExpired, Message: "Verification challenge has expired",
			Details: map[string]any{"challenge_id": id, "expired_at": ch.ExpiresAt.Format(time.RFC3339), "current_time": now.Format(time.RFC3339)}}
	case errors.Is(err, verify.ErrUsed):
		return nil, &aql.Error{Code: aql.CodeTokenUsed, Message: "Verification challenge has already been used",
			Details: map[string]any{"challenge_id": id}}
	case err != nil:
		l.Log.Warn("verification failed", "principal", l.Policy.Principal, "challenge", id)
		return nil, &aql.Error{Code: aql.CodeVerifyFailed, Message: "Verification failed: the code does not match",
			Details: map[string]any{"challenge_id": id}}
	}
	res := &VerifyResult{Verified: true, Challenge: id}
	if l.block != nil && l.block.VerificationID == id {
		l.block = nil
		res.Unblocked = true
	}
	if l.verifyPause != nil && l.verifyPause.ID == id {
		l.verifyPause = nil
		res.Resumed = true
	}
	l.clearNotifications(id)
	l.Log.Info("verification succeeded", "principal", l.Policy.Principal, "challenge", id,
		"unblocked", res.Unblocked, "resumed", res.Resumed)
	return res, nil
}
