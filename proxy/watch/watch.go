// Package watch is what the people who run aqlguard see of each call the
// guard handles (proxy/guard's Watch field; package telemetry watches
// with it): the call as it reaches the guard, and how it ended. It is the
// guard's one hook for operators; nothing in it decides anything.
package watch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
)

// Watcher sees every guarded call (tool calls, resource reads, prompt
// gets), for the people who run aqlguard (metrics, traces: package
// telemetry). It must be cheap: it runs on every call.
type Watcher interface {
	// CallBegins is called as a call reaches the guard. The context it
	// returns is the call's from then on, down to the server (a trace
	// span in it goes to an HTTP server as traceparent).
	CallBegins(ctx context.Context, c Call) context.Context
	// CallEnded is called once the call was refused, or forwarded and
	// its outcome recorded, with the context CallBegins returned.
	CallEnded(ctx context.Context, c Call, end End)
}

// Call names a call for a Watcher. Method is tools/call,
// resources/read or prompts/get; Server comes from the configuration;
// Tool is the tool's or the prompt's name from the server's catalog ("" for
// a read: a URI is the client's); Params are the client's params besides
// name and arguments (its _meta), as sent (tool calls only).
type Call struct {
	Method, Server, Operation, Tool string
	Params                          json.RawMessage
}

// The methods a Watcher sees.
const (
	MethodToolsCall     = mcpmethod.ToolsCall
	MethodResourcesRead = mcpmethod.ResourcesRead
	MethodPromptsGet    = mcpmethod.PromptsGet
)

// End is how a watched call ended.
type End struct {
	Directive evaluator.Directive
	// Outcome is one of the Outcome constants: a fixed set.
	Outcome string
	// Took is the whole call, the human's answer included; Downstream
	// the server's part of it (zero when it was not forwarded).
	Took, Downstream time.Duration
}

// The outcomes of a watched call.
const (
	OutcomeRefused    = "refused"    // not forwarded: refused, or waiting for a human
	OutcomeOK         = "ok"         // forwarded and answered
	OutcomeToolError  = "tool_error" // answered with isError
	OutcomeRPCError   = "rpc_error"  // answered with a JSON-RPC error
	OutcomeFailed     = "failed"     // not answered (the server unavailable, timed out, cancelled)
	OutcomeUnrecorded = "unrecorded" // answered, but the outcome could not be audited: withheld
)
