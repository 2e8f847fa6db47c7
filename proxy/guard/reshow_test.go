package guard

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/parking"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// lockedBuffer is a log sink tests read while the guard writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// windowHuman is a fakeHuman whose codes are shown in windows a person
// may close (verify.Reopener).
type windowHuman struct{ fakeHuman }

func (*windowHuman) Reopens() bool { return true }

// shownCodes are the codes h was shown, in order.
func shownCodes(h *fakeHuman) []verify.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]verify.Request(nil), h.shown...)
}

// The code can be seen again until it expires (issue 31, item 6): the
// next call refused by the block puts the same code up again once its
// window is closed (not more often than challenge.ReshowAfter), and `aqlguard
// verify show` (ShowCodeAgain) gives the block a new code, which lifts
// it where the old one no longer does. No code is ever in the log, a
// refusal or the audit log.
func TestCodeCanBeSeenAgain(t *testing.T) {
	ctx := context.Background()
	h := &windowHuman{}
	g := newGuard(t, testPolicy, h)
	log := &lockedBuffer{}
	g.Log = slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	clock := time.Now()
	var clockMu sync.Mutex
	g.Now = func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return clock }
	advance := func(d time.Duration) { clockMu.Lock(); clock = clock.Add(d); clockMu.Unlock() }
	var said []string
	check := func(a Action) Verdict {
		v := g.Check(ctx, a)
		if v.Refusal != nil {
			b, _ := json.Marshal(v.Refusal)
			said = append(said, string(b))
		}
		return v
	}
	get := call("db_get_row", map[string]any{"id": "1"})

	v := check(call("db_drop_database", map[string]any{"name": "prod"}))
	if v.Refusal == nil || v.Refusal.Kind != refusal.Blocked || !strings.Contains(v.Refusal.Say, "`aqlguard verify show`") {
		t.Fatalf("block: %+v", v.Refusal)
	}
	waitShown := func(n int) []verify.Request {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
			if s := shownCodes(&h.fakeHuman); len(s) >= n {
				return s
			}
		}
		t.Fatalf("the code was not shown %d times: %+v", n, shownCodes(&h.fakeHuman))
		return nil
	}
	first := waitShown(1)[0]
	// Its window was closed just now: the next call does not put it up
	// again at once.
	check(get)
	time.Sleep(50 * time.Millisecond)
	if n := len(shownCodes(&h.fakeHuman)); n != 1 {
		t.Fatalf("shown %d times right after the window closed", n)
	}
	advance(challenge.ReshowAfter + time.Second)
	if v := check(get); v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("still blocked: %+v", v.Refusal)
	}
	again := waitShown(2)[1]
	if again.Code != first.Code || again.Challenge != first.Challenge {
		t.Errorf("shown again: another code (%s), want the same", again.Challenge)
	}

	// From another process (or after a restart): a new code for the block.
	other := newGuard(t, testPolicy, &h.fakeHuman)
	onStoreOf(t, other, g, store.Options{})
	var announced *store.Block
	nb, err := other.ShowCodeAgain(ctx, "alice", func(b *store.Block) { announced = b })
	if err != nil || nb == nil || announced == nil || nb.VerificationID == first.Challenge || announced.VerificationID != nb.VerificationID {
		t.Fatalf("ShowCodeAgain = %+v, %v (announced %+v)", nb, err, announced)
	}
	fresh := waitShown(3)[2]
	if fresh.Challenge != nb.VerificationID || fresh.Code == "" || fresh.Code == first.Code {
		t.Fatalf("the new code: %+v", fresh.Challenge)
	}
	if res, r := g.VerifyChallenge(ctx, "s", first.Challenge, first.Code); res != nil || r == nil || r.Kind != refusal.TokenUsed {
		t.Fatalf("the replaced code: %+v %+v; want it revoked", res, r)
	}
	if res, r := g.VerifyChallenge(ctx, "s", fresh.Challenge, fresh.Code); r != nil || !res.Unblocked {
		t.Fatalf("the new code: %+v", r)
	}
	if !check(get).Proceed {
		t.Error("still blocked after the new code")
	}
	if _, err := other.ShowCodeAgain(ctx, "alice", nil); !errors.Is(err, challenge.ErrNotBlocked) {
		t.Errorf("not blocked: %v", err)
	}

	// Nothing the model or a log reads holds a code.
	export := auditText(t, g)
	recs := []string{export}
	for _, c := range []verify.Request{first, fresh} {
		for _, form := range []string{c.Code, verify.NormalizeCode(c.Code), strings.ToLower(c.Code)} {
			if strings.Contains(log.String(), form) {
				t.Errorf("a code is in the log")
			}
			for _, s := range append(said, recs...) {
				if strings.Contains(s, form) {
					t.Errorf("a code is in what the guard said or recorded: %s", s)
				}
			}
		}
	}
	if !strings.Contains(export, `"code_shown_again"`) || !strings.Contains(export, `"code_reissued"`) {
		t.Errorf("the audit log does not say the code was shown again and reissued:\n%s", export)
	}
}

// auditText is g's whole audit log, as stored.
func auditText(t *testing.T, g *Guard) string {
	t.Helper()
	var b strings.Builder
	err := storeOf(g).View(context.Background(), func(tx *store.Tx) error {
		return tx.Records(0, func(_ store.Record, raw []byte) error {
			b.Write(raw)
			b.WriteByte('\n')
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A channel that delivers codes elsewhere (the command channel) gets a
// code once: an agent's retries do not page the human again.
func TestCodeIsNotDeliveredTwice(t *testing.T) {
	ctx := context.Background()
	h := &fakeHuman{}
	g := newGuard(t, testPolicy, h)
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	g.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	if v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"})); v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
		t.Fatalf("block: %+v", v.Refusal)
	}
	time.Sleep(50 * time.Millisecond)
	clock.Add(int64(time.Minute))
	g.Check(ctx, call("db_get_row", map[string]any{"id": "1"}))
	time.Sleep(50 * time.Millisecond)
	if n := len(shownCodes(h)); n != 1 {
		t.Errorf("the code was delivered %d times", n)
	}
}

// A guard that holds a code it can put up again is not parked until the
// code expires (a dropped guard would forget it); a channel that
// delivers a code once holds nothing, and its guard parks at once.
func TestHeldCodeKeepsTheGuard(t *testing.T) {
	ctx := context.Background()
	for _, reopens := range []bool{true, false} {
		var h verify.Channel = &fakeHuman{}
		if reopens {
			h = &windowHuman{}
		}
		g := newGuard(t, testPolicy, h)
		if v := g.Check(ctx, call("db_drop_database", map[string]any{"name": "prod"})); v.Refusal == nil || v.Refusal.Kind != refusal.Blocked {
			t.Fatalf("block: %+v", v.Refusal)
		}
		if !reopens {
			park(t, g)
			continue
		}
		if err := g.Park(ctx); !errors.Is(err, parking.ErrBusy) {
			t.Fatalf("parked while the code it can show again lives: %v", err)
		}
		g.Now = func() time.Time { return time.Now().Add(g.ChallengeTTL + time.Minute) }
		park(t, g)
	}
}
