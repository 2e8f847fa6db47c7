package refusal

import (
	"context"
	"errors"
	"syscall"

	"github.com/aqlguard/aqlguard/store"
)

// StateUnavailable is the fail-closed refusal when the state database
// (or its audit log) cannot be read or written; what says what was not
// done.
func StateUnavailable(err error, what string) *Refusal {
	return Fail(StateProblem(err)+"; "+what, map[string]any{"reason": "state database unavailable", "fail_closed": true})
}

// Phrased is an error that says itself, in a fixed phrase, what the
// model may be told of it (a guard dropped while idle: proxy/park).
type Phrased interface {
	error
	Phrase() string
}

// StateProblem is what the model may be told of a store failure: a
// fixed phrase, never the Go error (which names files and processes; it
// goes to the log).
func StateProblem(err error) string {
	var damaged *store.DamagedError
	var phrased Phrased
	switch {
	case errors.Is(err, store.ErrBusy):
		return "the state database is busy (another aqlguard process holds it)"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the request ended before its decision could be read or recorded"
	case errors.As(err, &damaged):
		return "the state database is damaged; the operator must restore it"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "the disk under the state directory is full; the operator must free space"
	case errors.Is(err, store.ErrReadOnly):
		return "the state directory cannot be written (read-only); the operator must make it writable"
	case errors.As(err, &phrased):
		return phrased.Phrase()
	}
	return "the state database is unavailable"
}
