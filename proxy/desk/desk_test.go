package desk

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/verify"
)

// person is a verify.Channel that answers after a release (or at once),
// counting the questions it sees and how many are up at once.
type person struct {
	answer  verify.Answer
	err     error
	release chan struct{} // nil: answer at once
	window  bool          // a Reopener

	mu       sync.Mutex
	asked    []verify.Request
	up, most int
	shown    []verify.Request
}

func (p *person) Name() string { return "test" }

func (p *person) Ask(ctx context.Context, r verify.Request) (verify.Answer, error) {
	p.mu.Lock()
	p.asked = append(p.asked, r)
	p.up++
	p.most = max(p.most, p.up)
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.up--; p.mu.Unlock() }()
	if p.err != nil {
		return verify.None, p.err
	}
	if p.release != nil {
		select {
		case <-p.release:
		case <-ctx.Done():
			return verify.None, nil
		}
	}
	return p.answer, nil
}

func (p *person) Show(ctx context.Context, r verify.Request) error {
	p.mu.Lock()
	p.shown = append(p.shown, r)
	p.mu.Unlock()
	return p.err
}

func (p *person) Reopens() bool { return p.window }

func (p *person) questions() []verify.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]verify.Request(nil), p.asked...)
}

func newDesk(t *testing.T, ch verify.Channel) *Desk {
	t.Helper()
	d := New(Config{Channel: ch, Principal: func() string { return "claude" }})
	t.Cleanup(func() {
		if !d.Close(5 * time.Second) {
			t.Error("the questions did not end at Close")
		}
	})
	return d
}

// recorder is a Question.Answered that keeps what it was handed.
type recorder struct {
	mu    sync.Mutex
	calls int
	why   []string
}

func (r *recorder) answered(a verify.Answer, why string) (verify.Answer, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	r.why = append(r.why, why)
	return a, why
}

func asking(key, session string, r *recorder) Question {
	return Question{Key: key, Session: session, Until: time.Now().Add(time.Minute), Shows: true,
		Request: verify.Request{Token: key, Operation: "op " + key}, Answered: r.answered}
}

// TestDesk: the desk's lifecycle, case by case.
func TestDesk(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"every waiter joins one question and hears its one answer", func(t *testing.T) {
			p := &person{answer: verify.Allow, release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			var wg sync.WaitGroup
			answers := make(chan verify.Answer, 10)
			for range 10 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					a, _ := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second)
					answers <- a
				}()
			}
			waitFor(t, func() bool { return len(p.questions()) == 1 && d.waiters("conf_1") == 10 })
			close(p.release)
			wg.Wait()
			close(answers)
			for a := range answers {
				if a != verify.Allow {
					t.Errorf("a waiter heard %v", a)
				}
			}
			if n := len(p.questions()); n != 1 || rec.calls != 1 {
				t.Errorf("%d questions asked, the answer recorded %d times; want 1 and 1", n, rec.calls)
			}
		}},
		{"one question per principal on the screen", func(t *testing.T) {
			p := &person{answer: verify.Deny, release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			var wg sync.WaitGroup
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d.Ask(context.Background(), asking("conf_"+string(rune('a'+i)), "s1", &rec), 5*time.Second)
				}()
			}
			waitFor(t, func() bool { return d.Waiting() == 3 && len(p.questions()) == 1 })
			close(p.release)
			wg.Wait()
			if p.most != 1 || len(p.questions()) != 3 {
				t.Errorf("%d questions up at once, %d asked; want 1 and 3", p.most, len(p.questions()))
			}
		}},
		{"withdrawn when its last caller is cancelled", func(t *testing.T) {
			p := &person{release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				waitFor(t, func() bool { return len(p.questions()) == 1 })
				cancel()
			}()
			if a, _ := d.Ask(ctx, asking("conf_1", "s1", &rec), 5*time.Second); a != verify.None {
				t.Fatalf("a cancelled call heard %v", a)
			}
			waitFor(t, func() bool { return d.Waiting() == 0 })
			if rec.calls != 1 || !strings.Contains(rec.why[0], "the call was cancelled") {
				t.Errorf("recorded %d times, why %q", rec.calls, rec.why)
			}
		}},
		{"not withdrawn while another caller waits", func(t *testing.T) {
			p := &person{answer: verify.Allow, release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan verify.Answer)
			go func() { a, _ := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second); done <- a }()
			waitFor(t, func() bool { return len(p.questions()) == 1 })
			go func() { waitFor(t, func() bool { return d.waiters("conf_1") == 2 }); cancel() }()
			d.Ask(ctx, asking("conf_1", "s1", &rec), 5*time.Second)
			close(p.release)
			if a := <-done; a != verify.Allow {
				t.Errorf("the remaining waiter heard %v", a)
			}
		}},
		{"a waiter that stops waiting leaves the question up", func(t *testing.T) {
			p := &person{answer: verify.Allow, release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			if a, why := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 10*time.Millisecond); a != verify.None || why != "" {
				t.Fatalf("heard %v %q before any answer", a, why)
			}
			if d.Waiting() != 1 || d.Busy() == "" {
				t.Fatalf("the question went with its waiter: %d waiting, busy %q", d.Waiting(), d.Busy())
			}
			close(p.release)
			if a, _ := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second); a != verify.Allow {
				t.Errorf("the retry heard %v", a)
			}
		}},
		{"withdrawn when its session ends", func(t *testing.T) {
			p := &person{release: make(chan struct{})}
			d := newDesk(t, p)
			var rec recorder
			go func() { waitFor(t, func() bool { return len(p.questions()) == 1 }); d.WithdrawSession("s1") }()
			d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second)
			waitFor(t, func() bool { return d.Waiting() == 0 })
			if !strings.Contains(rec.why[0], "session ended") {
				t.Errorf("why %q", rec.why)
			}
		}},
		{"settled elsewhere: the human is not asked", func(t *testing.T) {
			p := &person{answer: verify.Deny}
			d := newDesk(t, p)
			var rec recorder
			q := asking("conf_1", "s1", &rec)
			q.Settled = func(context.Context) (verify.Answer, string, bool) { return verify.Allow, "", true }
			if a, _ := d.Ask(context.Background(), q, 5*time.Second); a != verify.Allow || len(p.questions()) != 0 {
				t.Errorf("heard %v after %d questions", a, len(p.questions()))
			}
		}},
		{"no channel: nothing approved, and why", func(t *testing.T) {
			d := newDesk(t, nil)
			var rec recorder
			if a, why := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second); a != verify.None || !strings.Contains(why, "no channel") {
				t.Errorf("heard %v %q", a, why)
			}
			if _, err := d.AskAbout(context.Background(), verify.Request{}, nil); err == nil {
				t.Error("AskAbout without a channel")
			}
		}},
		{"a channel that fails approves nothing", func(t *testing.T) {
			d := newDesk(t, &person{err: verify.ErrNoDisplay})
			var rec recorder
			if a, why := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second); a != verify.None || !strings.Contains(why, "no graphical display") {
				t.Errorf("heard %v %q", a, why)
			}
		}},
		{"an answer not offered is at most allow", func(t *testing.T) {
			d := newDesk(t, &person{answer: verify.AllowSession})
			var rec recorder
			if a, _ := d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second); a != verify.Allow {
				t.Errorf("heard %v", a)
			}
		}},
		{"asked again under its key alone, it shows what it showed", func(t *testing.T) {
			p := &person{}
			d := newDesk(t, p)
			var rec recorder
			q := asking("conf_1", "s1", &rec)
			q.Request.Action = "the call itself"
			d.Ask(context.Background(), q, 5*time.Second)
			q.Shows, q.Request.Action = false, "as the state keeps it"
			d.Ask(context.Background(), q, 5*time.Second)
			if got := p.questions(); len(got) != 2 || got[1].Action != "the call itself" {
				t.Errorf("asked %+v", got)
			}
		}},
		{"a question about a tool waits for the turn and is told settled", func(t *testing.T) {
			p := &person{answer: verify.AllowSession}
			d := newDesk(t, p)
			if a, err := d.AskAbout(context.Background(), verify.Request{Operation: "pin"}, func() bool { return true }); a != verify.None || err != nil || len(p.questions()) != 0 {
				t.Errorf("settled: %v %v after %d questions", a, err, len(p.questions()))
			}
			if a, err := d.AskAbout(context.Background(), verify.Request{Operation: "pin"}, nil); a != verify.Allow || err != nil {
				t.Errorf("asked: %v %v", a, err)
			}
		}},
		{"the turn across processes is taken and given back", func(t *testing.T) {
			var held atomic.Int32
			d := New(Config{Channel: &person{answer: verify.Allow}, Principal: func() string { return "claude" },
				Turn: func(ctx context.Context, principal string) (func(), error) {
					if principal != "claude" {
						t.Errorf("turn of %q", principal)
					}
					held.Add(1)
					return func() { held.Add(-1) }, nil
				}})
			defer d.Close(time.Second)
			var rec recorder
			d.Ask(context.Background(), asking("conf_1", "s1", &rec), 5*time.Second)
			if held.Load() != 0 {
				t.Error("the turn was not given back")
			}
			d2 := New(Config{Channel: &person{answer: verify.Allow},
				Turn: func(context.Context, string) (func(), error) { return nil, errors.New("database down") }})
			defer d2.Close(time.Second)
			if a, why := d2.Ask(context.Background(), asking("conf_2", "s1", &rec), 5*time.Second); a != verify.None || !strings.Contains(why, "could not take a turn") {
				t.Errorf("without a turn: %v %q", a, why)
			}
		}},
		{"a code shown is kept until used, and shown again once its window closed", func(t *testing.T) {
			p := &person{window: true}
			d := newDesk(t, p)
			req := verify.Request{Challenge: "ch_1", ExpiresAt: time.Now().Add(time.Minute)}
			if err := d.Show(req, time.Second); err != nil {
				t.Fatal(err)
			}
			if why := d.Busy(); !strings.Contains(why, "code") {
				t.Errorf("busy %q with a code it can show again", why)
			}
			if _, ok := d.ShowAgain("ch_1", 0); !ok {
				t.Error("a closed window is not shown again")
			}
			if _, ok := d.ShowAgain("ch_1", time.Hour); ok {
				t.Error("shown again too soon")
			}
			d.Forget("ch_1")
			if _, ok := d.ShowAgain("ch_1", 0); ok {
				t.Error("a used code is shown again")
			}
			waitFor(t, func() bool { return d.Busy() == "" }) // the window's goroutine ends just after Show returns
		}},
		{"a code a channel could not show is not kept", func(t *testing.T) {
			d := newDesk(t, &person{window: true, err: verify.ErrNoDisplay})
			req := verify.Request{Challenge: "ch_1", ExpiresAt: time.Now().Add(time.Minute)}
			if err := d.Show(req, time.Second); !errors.Is(err, verify.ErrNoDisplay) {
				t.Fatalf("show: %v", err)
			}
			if _, ok := d.ShowAgain("ch_1", 0); ok {
				t.Error("a code never seen is shown again")
			}
			if err := New(Config{}).Show(req, time.Second); !errors.Is(err, ErrNoChannel) {
				t.Errorf("no channel: %v", err)
			}
		}},
		{"Close withdraws what is on the screen and hands it to its callback", func(t *testing.T) {
			p := &person{release: make(chan struct{})}
			d := New(Config{Channel: p})
			var rec recorder
			d.Ask(context.Background(), asking("conf_1", "s1", &rec), 10*time.Millisecond)
			if !d.Close(5 * time.Second) {
				t.Fatal("Close timed out")
			}
			if rec.calls != 1 {
				t.Errorf("recorded %d times", rec.calls)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// waiters is how many calls wait on the question under key.
func (d *Desk) waiters(key string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if q := d.questions[key]; q != nil {
		return q.waiting
	}
	return 0
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Error("timed out")
			return
		}
		time.Sleep(time.Millisecond)
	}
}
