package refusal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/aqlguard/aqlguard/store"
)

type phrased struct{}

func (phrased) Error() string  { return "dropped at /home/u/.local/state" }
func (phrased) Phrase() string { return "a phrase of its own" }

// TestStateProblemIsAFixedPhrase: what the model is told of a store
// failure is one of the fixed phrases, never the Go error's text.
func TestStateProblemIsAFixedPhrase(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{errors.Join(errors.New("/home/u/aqlguard.db"), store.ErrBusy), "busy"},
		{fmt.Errorf("writing /home/u/audit.jsonl: %w", syscall.ENOSPC), "disk under the state directory is full"},
		{&store.ReadOnlyError{Dir: "/home/u", Err: syscall.EROFS}, "read-only"},
		{fmt.Errorf("committing: %w", context.DeadlineExceeded), "request ended"},
		{fmt.Errorf("committing: %w", phrased{}), "a phrase of its own"},
		{errors.New("/home/u: something else"), "the state database is unavailable"},
	} {
		got := StateUnavailable(tt.err, "nothing was done")
		if !strings.Contains(got.Say, tt.want) || strings.Contains(got.Say, "/home/u") || got.Kind != Failed {
			t.Errorf("%v: %+v, want %q", tt.err, got, tt.want)
		}
	}
}
