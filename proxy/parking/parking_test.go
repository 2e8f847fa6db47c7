package parking

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/store/statetest"
)

// loopOn is a Loop on st whose memory is mem and whose busy reason is
// busy, committing as the guard does (the memory follows the commit).
func loopOn(st store.State, mem *Memory, busy string) Loop {
	return Loop{State: st, Principal: "agent", Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Within: time.Minute,
		Record: func(kind store.RecordKind, session string) store.Record {
			return store.NewRecord(time.Now(), kind, "agent", "test", session)
		},
		Commit: func(ctx context.Context, decide func(store.View, *Memory, func() string) (store.Changes, error)) error {
			m := *mem
			_, err := st.Commit(ctx, func(v store.View) (store.Changes, error) {
				m = *mem
				ch, err := decide(v, &m, func() string { return busy })
				if err != nil {
					return ch, err
				}
				then := ch.Then
				ch.Then = func(gen uint64) {
					*mem = m
					if then != nil {
						then(gen)
					}
				}
				return ch, nil
			})
			return err
		}}
}

// TestParkAndResume: what a guard parks, its next guard takes over; a
// busy guard parks nothing and stays open; nothing owed writes no row.
func TestParkAndResume(t *testing.T) {
	for _, tt := range []struct {
		name      string
		mem       Memory
		busy      string
		wantErr   error
		wantRow   bool
		wantAfter Memory
	}{
		{name: "steps", mem: Memory{Steps: 7}, wantRow: true, wantAfter: Memory{Steps: 7}},
		{name: "failure pause", mem: Memory{Steps: 2, FailurePause: true}, wantRow: true, wantAfter: Memory{Steps: 2, FailurePause: true}},
		{name: "nothing owed", mem: Memory{}, wantRow: false},
		{name: "busy", mem: Memory{Steps: 3}, busy: "a question is on the human's screen", wantErr: ErrBusy},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := statetest.Open(t)
			mem := tt.mem
			var lot Lot
			err := lot.Park(context.Background(), loopOn(st, &mem, tt.busy))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Park: %v, want %v", err, tt.wantErr)
			}
			if lot.Parked() != (tt.wantErr == nil) {
				t.Fatalf("Parked() = %v after Park returned %v", lot.Parked(), err)
			}
			var row *store.Execution
			if err := st.Load(context.Background(), func(v store.View) (err error) { row, err = v.Execution(ID("agent")); return }); err != nil {
				t.Fatal(err)
			}
			if (row != nil) != tt.wantRow {
				t.Fatalf("parked row %+v, want one: %v", row, tt.wantRow)
			}
			next := Memory{}
			if err := Resume(context.Background(), loopOn(st, &next, "")); err != nil {
				t.Fatal(err)
			}
			if next != tt.wantAfter {
				t.Fatalf("the next guard took over %+v, want %+v", next, tt.wantAfter)
			}
			again := Memory{}
			if err := Resume(context.Background(), loopOn(st, &again, "")); err != nil || again != (Memory{}) {
				t.Fatalf("a row is taken over twice: %+v, %v", again, err)
			}
		})
	}
}

// TestParkedRowIDs: the parked row's id is no execution's.
func TestParkedRowIDs(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want bool
	}{{ID("agent"), true}, {"exec_0123456789abcdef01234567", false}, {"", false}} {
		if got := IsID(tt.id); got != tt.want {
			t.Errorf("IsID(%q) = %v, want %v", tt.id, got, tt.want)
		}
	}
}

// TestParkedSaysAFixedPhrase: the model is told a parked guard's
// refusal in its own words, never the Go error's.
func TestParkedSaysAFixedPhrase(t *testing.T) {
	if got := refusal.StateProblem(ErrParked); got != "this principal's guard was dropped while idle; retry the call" {
		t.Fatalf("StateProblem(ErrParked) = %q", got)
	}
}
