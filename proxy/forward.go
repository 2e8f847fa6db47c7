package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
)

// downstreamFailure is what the model is told of a call the server did
// not answer (guard.Outcome.Failed): fixed sentences naming the server
// and what to do, never a Go error chain (that goes to the log).
func downstreamFailure(op *catalog.Operation, err error) *aql.Error {
	d := map[string]any{"server": op.Server, "tool": op.Tool.Name}
	var unavailable *downstream.UnavailableError
	var timeout *downstream.CallTimeoutError
	switch {
	case errors.As(err, &unavailable):
		d["status"] = string(unavailable.Status)
		if unavailable.Attempt > 0 && unavailable.During == "" {
			d["restart_attempt"] = unavailable.Attempt
			d["retry_after_seconds"] = int(max(time.Until(unavailable.Next), 0).Seconds()) + 1
		}
		return &aql.Error{Code: aql.CodeInternal, Details: d,
			Message: fmt.Sprintf("Internal error: '%s'", unavailable.Message(time.Now()))}
	case errors.Is(err, downstream.ErrUnavailable), errors.Is(err, guard.ErrNoDownstream):
		return &aql.Error{Code: aql.CodeInternal, Details: d,
			Message: fmt.Sprintf("Internal error: 'server %s is not available; check aqlguard's log'", op.Server)}
	case errors.As(err, &timeout):
		return &aql.Error{Code: aql.CodeInternal, Details: d,
			Message: fmt.Sprintf("Internal error: '%s'", timeout.Error())}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &aql.Error{Code: aql.CodeInternal, Details: d,
			Message: fmt.Sprintf("Internal error: 'the call to %s on %s was cancelled or timed out'", op.Tool.Name, op.Server)}
	}
	return &aql.Error{Code: aql.CodeInternal, Details: d,
		Message: fmt.Sprintf("Internal error: 'the call to %s on %s did not complete'", op.Tool.Name, op.Server)}
}
