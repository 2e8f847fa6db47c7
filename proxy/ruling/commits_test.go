package ruling

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func conf(status string) *store.Confirmation {
	return &store.Confirmation{Token: "conf_1", Kind: BindAction, Principal: "agent", Status: status, ExpiresAt: now.Add(time.Minute)}
}

// TestAnswer: a human's answer is written unless the state settled the
// question meanwhile.
func TestAnswer(t *testing.T) {
	answered := *conf(StatusApproved)
	grant := &store.Approval{ID: "appr_1"}
	rec := store.Record{Decision: "approved"}
	tests := []struct {
		name        string
		cur         *store.Confirmation
		answered    store.Confirmation
		grant       *store.Approval
		settled     bool
		confs, apps int
	}{
		{"pending: the answer and its grant are written", conf(StatusPending), answered, grant, false, 1, 1},
		{"gone from the state: written all the same", nil, answered, nil, false, 1, 0},
		{"no answer came: only the record", conf(StatusPending), *conf(StatusPending), nil, false, 0, 0},
		{"approved elsewhere meanwhile: settled, nothing written", conf(StatusApproved), answered, grant, true, 0, 0},
		{"used elsewhere meanwhile: not approved again over its use", conf(StatusUsed), answered, grant, true, 0, 0},
		{"denied elsewhere meanwhile: settled", conf(StatusDenied), answered, nil, true, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, settled := Answer(tt.cur, tt.answered, tt.grant, rec)
			if (settled != nil) != tt.settled || len(ch.Confirmations) != tt.confs || len(ch.Approvals) != tt.apps {
				t.Fatalf("settled %v, %d confirmations, %d approvals", settled, len(ch.Confirmations), len(ch.Approvals))
			}
			if wantRecs := map[bool]int{true: 0, false: 1}[tt.settled]; len(ch.Records) != wantRecs {
				t.Errorf("%d records, want %d", len(ch.Records), wantRecs)
			}
		})
	}
}

// TestCheckIn: an approved check-in is used once, by one process.
func TestCheckIn(t *testing.T) {
	expired := conf(StatusApproved)
	expired.ExpiresAt = now
	tests := []struct {
		name string
		cur  *store.Confirmation
		why  string
	}{
		{"approved: used", conf(StatusApproved), ""},
		{"gone", nil, "the approval {token} is no longer in the state database"},
		{"used meanwhile", conf(StatusUsed), "the approval {token} was used meanwhile (by another aqlguard process)"},
		{"denied", conf(StatusDenied), "the approval {token} is denied in the state database"},
		{"pending", conf(StatusPending), "the approval {token} is pending in the state database"},
		{"expired", expired, "the approval {token} expired before it could be used"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used, why := CheckIn(tt.cur, now, "check#1")
			if why != tt.why {
				t.Fatalf("why %q, want %q", why, tt.why)
			}
			if (used != nil) != (why == "") {
				t.Fatalf("used %+v with why %q", used, why)
			}
			if used != nil && (used.Status != StatusUsed || used.UsedBy != "check#1" || !used.DoneAt.Equal(now) || tt.cur.Status != StatusApproved) {
				t.Errorf("used %+v (the state's copy now %q)", used, tt.cur.Status)
			}
		})
	}
	for _, tt := range []struct {
		kind             string
		steps, wantSteps int
		pause, wantPause bool
	}{
		{BindSteps, 20, 0, true, true},
		{BindFailure, 7, 7, true, false},
		{BindAction, 7, 7, true, true},
	} {
		if s, p := CheckedIn(tt.kind, tt.steps, tt.pause); s != tt.wantSteps || p != tt.wantPause {
			t.Errorf("check-in %s: %d %v, want %d %v", tt.kind, s, p, tt.wantSteps, tt.wantPause)
		}
	}
}

// TestExecutions: what becomes of an execution, as the state holds it.
func TestExecutions(t *testing.T) {
	running := &store.Execution{ID: "exec_1", Status: ExecutionRunning, Steps: 3}
	pending := &store.Execution{ID: "exec_1", Status: ExecutionPending, Steps: 0}
	done := &store.Execution{ID: "exec_1", Status: "completed", Steps: 3}
	if !Start(nil) || Start(&store.Block{}) {
		t.Error("a blocked principal starts an execution, or an unblocked one does not")
	}
	next := store.Execution{ID: "exec_1", Status: "cancelled", Steps: 1, Reason: "the MCP session ended"}
	tests := []struct {
		name     string
		cur      *store.Execution
		counted  *store.Execution
		finished *store.Execution
	}{
		{"running: a step counts, and it finishes with the state's steps", running,
			&store.Execution{ID: "exec_1", Status: ExecutionRunning, Steps: 4},
			&store.Execution{ID: "exec_1", Status: "cancelled", Steps: 3, Reason: "the MCP session ended"}},
		{"pending: no step counts, and it finishes", pending, nil,
			&store.Execution{ID: "exec_1", Status: "cancelled", Steps: 0, Reason: "the MCP session ended"}},
		{"finished elsewhere: nothing", done, nil, nil},
		{"gone from the state: nothing", nil, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Counted(tt.cur); !reflect.DeepEqual(got, tt.counted) {
				t.Errorf("counted %+v, want %+v", got, tt.counted)
			}
			if got := Finish(tt.cur, next); !reflect.DeepEqual(got, tt.finished) {
				t.Errorf("finished %+v, want %+v", got, tt.finished)
			}
		})
	}
	if running.Steps != 3 {
		t.Error("a ruling changed the state's copy")
	}
}

// TestEndApprovals: the session's active approvals of the principal end.
func TestEndApprovals(t *testing.T) {
	ap := func(id, principal, session string, mod func(*store.Approval)) store.Approval {
		a := store.Approval{ID: id, Principal: principal, Session: session, ExpiresAt: now.Add(time.Hour)}
		if mod != nil {
			mod(&a)
		}
		return a
	}
	all := []store.Approval{
		ap("mine", "agent", "s1", nil),
		ap("other session", "agent", "s2", nil),
		ap("other agent", "other", "s1", nil),
		ap("expired", "agent", "s1", func(a *store.Approval) { a.ExpiresAt = now }),
		ap("revoked", "agent", "s1", func(a *store.Approval) { a.RevokedAt = now.Add(-time.Minute) }),
		ap("ended", "agent", "s1", func(a *store.Approval) { a.EndedAt = now.Add(-time.Minute) }),
	}
	ended := EndApprovals(all, "agent", "s1", now)
	if len(ended) != 1 || ended[0].ID != "mine" || !ended[0].EndedAt.Equal(now) {
		t.Fatalf("ended %+v", ended)
	}
	if !all[0].EndedAt.IsZero() {
		t.Error("a ruling changed the state's copy")
	}
}

// TestPark: parking writes what is owed, the stricter of two guards'.
func TestPark(t *testing.T) {
	row := func(status string, steps int) *store.Execution {
		return &store.Execution{ID: "loop_agent", Status: status, Steps: steps}
	}
	tests := []struct {
		name         string
		busy         string
		steps        int
		failurePause bool
		cur          *store.Execution
		want         Parking
		err          error
	}{
		{"busy: refused", "a question is on or waiting for the human's screen", 3, false, nil, Parking{}, ErrBusy},
		{"nothing owed: parked, nothing written", "", 0, false, nil, Parking{}, nil},
		{"steps owed", "", 3, false, nil, Parking{Write: true, Steps: 3}, nil},
		{"a failure pause owed", "", 0, true, nil, Parking{Write: true, FailurePause: true}, nil},
		{"parked by another guard, stricter here", "", 5, false, row(StatusParked, 2), Parking{Write: true, Steps: 5}, nil},
		{"parked by another guard, stricter there", "", 1, false, row(StatusParkedFailurePause, 4), Parking{}, nil},
		{"the stricter of both", "", 5, false, row(StatusParkedFailurePause, 2), Parking{Write: true, Steps: 5, FailurePause: true}, nil},
		{"taken over already: as if none", "", 0, false, row(StatusResumed, 9), Parking{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Park(tt.busy, tt.steps, tt.failurePause, tt.cur)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Fatalf("park %+v %v, want %+v %v", got, err, tt.want, tt.err)
			}
			if err != nil && err.Error() != "the guard is in use: "+tt.busy {
				t.Errorf("error %q", err)
			}
		})
	}
	if (Parking{FailurePause: true}).Status() != StatusParkedFailurePause || (Parking{}).Status() != StatusParked {
		t.Error("parked statuses")
	}
	for _, tt := range []struct {
		name                string
		steps               int
		pause               bool
		cur                 *store.Execution
		wantSteps           int
		wantPause, wantTook bool
	}{
		{"parked: taken over, the stricter", 1, false, row(StatusParked, 4), 4, false, true},
		{"parked with a pause", 6, false, row(StatusParkedFailurePause, 4), 6, true, true},
		{"taken over meanwhile", 1, false, row(StatusResumed, 4), 1, false, false},
		{"none", 1, true, nil, 1, true, false},
	} {
		if s, p, took := Resume(tt.steps, tt.pause, tt.cur); s != tt.wantSteps || p != tt.wantPause || took != tt.wantTook {
			t.Errorf("%s: resume %d %v %v", tt.name, s, p, took)
		}
	}
}

// TestBlockCodes: a block's code noted as not shown, a replaced code
// revoked, an unwritten block written only when none is in force.
func TestBlockCodes(t *testing.T) {
	b := &store.Block{Principal: "agent", VerificationID: "ver_1"}
	if got := CodeNotShown(b, "ver_1"); got == nil || !got.CodeNotShown || b.CodeNotShown {
		t.Errorf("not shown: %+v (the state's copy %+v)", got, b)
	}
	if CodeNotShown(b, "ver_0") != nil || CodeNotShown(nil, "ver_1") != nil {
		t.Error("a block replaced or lifted meanwhile was marked")
	}
	old := &store.Challenge{ID: "ver_1"}
	if got := Revoked(old); got == nil || !got.Revoked || old.Revoked {
		t.Errorf("revoked %+v", got)
	}
	if Revoked(nil) != nil {
		t.Error("a gone challenge revoked")
	}
	if !Unwritten(nil) || Unwritten(b) {
		t.Error("an unwritten block is written over a block in force, or not when none is")
	}
}

// TestVerify: a code within the failure budget lifts its block or pause.
func TestVerify(t *testing.T) {
	ch, code, err := verify.NewChallenge("agent", "db.drop {}", "danger_zone", now.Add(-time.Minute), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sealed := ch.Seal()
	stored := func(mod func(*store.Challenge)) *store.Challenge {
		sc := &store.Challenge{ID: ch.ID, Principal: "agent", Action: ch.Action, Tier: ch.Tier, Salt: sealed.Salt, Hash: sealed.Hash,
			CreatedAt: ch.CreatedAt, ExpiresAt: ch.ExpiresAt}
		if mod != nil {
			mod(sc)
		}
		return sc
	}
	block := &store.Block{Principal: "agent", VerificationID: ch.ID}
	locked := store.Failures{LockedUntil: now.Add(time.Minute), Violations: 1}
	tests := []struct {
		name    string
		f       func(f *VerifyFacts)
		want    VerifyOutcome
		result  string
		used    bool
		unblock bool
		failed  bool
	}{
		{"the code lifts its block", nil, Verified, "unblocked", true, true, false},
		{"the code of a pause lifts no block", func(f *VerifyFacts) { f.Block = nil }, Verified, "verified", true, false, false},
		{"another block stays", func(f *VerifyFacts) { f.Block = &store.Block{VerificationID: "ver_0"} }, Verified, "verified", true, false, false},
		{"locked out: not looked at", func(f *VerifyFacts) { f.Failures = locked }, RateLimited, "rate_limited", false, false, false},
		{"a wrong code", func(f *VerifyFacts) { f.Code = "000000" }, WrongCode, "wrong_code", false, false, true},
		{"an unknown challenge", func(f *VerifyFacts) { f.Challenge = nil }, NotFound, "unknown_challenge", false, false, true},
		{"another agent's challenge", func(f *VerifyFacts) { f.Principal = "other" }, NotFound, "unknown_challenge", false, false, true},
		{"a used challenge", func(f *VerifyFacts) { f.Challenge = stored(func(c *store.Challenge) { c.Used = true }) }, AlreadyUsed, "already_used", false, false, true},
		{"a revoked challenge answers as used", func(f *VerifyFacts) { f.Challenge = stored(func(c *store.Challenge) { c.Revoked = true }) }, AlreadyUsed, "already_used", false, false, true},
		{"an expired challenge", func(f *VerifyFacts) { f.Now = ch.ExpiresAt }, Expired, "expired", false, false, true},
		{"a challenge that cannot be read", func(f *VerifyFacts) { f.ChallengeUnreadable = true }, Unreadable, "damaged", false, false, true},
		{"a damaged challenge", func(f *VerifyFacts) { f.Challenge = stored(func(c *store.Challenge) { c.Hash = nil }) }, Unreadable, "damaged", false, false, true},
		{"the block cannot be read: the code is used, nothing lifted", func(f *VerifyFacts) { f.BlockUnreadable = true }, Unliftable, "damaged", true, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := VerifyFacts{Now: now, Principal: "agent", ID: ch.ID, Code: code, Challenge: stored(nil), Block: block}
			if tt.f != nil {
				tt.f(&f)
			}
			v := Verify(f)
			if v.Outcome != tt.want || v.Result != tt.result || (v.Used != nil) != tt.used || v.Unblock != tt.unblock {
				t.Fatalf("verify %+v", v)
			}
			if v.Used != nil && (!v.Used.Used || !v.Used.UsedAt.Equal(f.Now)) {
				t.Errorf("used %+v", v.Used)
			}
			// Every failure spends from the budget; a lockout counts a
			// violation; a success ends the violations.
			switch {
			case tt.want == RateLimited:
				if v.Failures.Violations != 2 || v.RetryAfter <= 0 {
					t.Errorf("rate limited: %+v retry %v", v.Failures, v.RetryAfter)
				}
			case tt.failed:
				if v.Failures.At != f.Now {
					t.Errorf("a failure not counted: %+v", v.Failures)
				}
			default:
				if v.Failures.Violations != 0 || !v.Failures.At.IsZero() {
					t.Errorf("a success spent the budget: %+v", v.Failures)
				}
			}
			if again := Verify(f); !reflect.DeepEqual(again, v) {
				t.Errorf("verified %+v, then %+v", v, again)
			}
		})
	}
}
