package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// CallTool implements guard.Caller: a call the guard allowed goes to the
// server of the session it came from, through that session (which maps
// progress tokens), with the params built from the arguments the guard
// judged (toolCallParams).
func (sh *Shared) CallTool(ctx context.Context, session, server, tool string, args map[string]any, base json.RawMessage) (json.RawMessage, error) {
	v, ok := sh.sessions.Load(session)
	if !ok {
		return nil, fmt.Errorf("%w: session %s has ended", downstream.ErrUnavailable, session)
	}
	s := v.(*relay.Session)
	srv, ok := s.Pool().Server(server)
	if !ok {
		return nil, fmt.Errorf("%w: no server %s", downstream.ErrUnavailable, server)
	}
	params, err := toolCallParams(base, tool, args)
	if err != nil {
		return nil, fmt.Errorf("encoding the call to %s on %s: %w", tool, server, err)
	}
	return s.Forward(ctx, srv, "tools/call", params)
}

// toolCallParams builds the tools/call params: base's members, the tool's
// name and the arguments.
func toolCallParams(base json.RawMessage, tool string, args map[string]any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	if len(base) == 0 {
		base = json.RawMessage(`{}`)
	}
	p, err := relay.SetMember(base, "name", tool)
	if err != nil {
		return nil, err
	}
	return relay.SetMember(p, "arguments", args)
}

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
