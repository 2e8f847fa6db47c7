package proxy

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/trace"
)

// CodeRefused is the JSON-RPC error code of a resources/read or a
// prompts/get that aqlguard refused; the MCP-AQL error (code, message,
// details, a confirmation token) is the error's data.
const CodeRefused = -32001

// gate puts resource reads and prompt gets to the guard (guard.Read) and
// speaks JSON-RPC for it: a refusal is a CodeRefused error.
type gate struct{ guard *guard.Guard }

func (g gate) Check(ctx context.Context, sess *relay.Session, server, kind, name string, args map[string]any) (context.Context, func(error), error) {
	fwd := ctx
	ctx = guard.WithClient(ctx, sess.ClientName())
	if sess.Shared {
		ctx = guard.WithSharedSession(ctx)
	}
	span, done, refusal := g.guard.Read(ctx, sess.ID, server, kind, name, args)
	if refusal != nil {
		data, _ := json.Marshal(refusal)
		return nil, nil, &jsonrpc.Error{Code: CodeRefused, Message: "aqlguard: " + refusal.Err.Message, Data: data}
	}
	// The request goes on with the context it came with, and the
	// guard's trace span (guard.Read's context).
	return trace.ContextWithSpanContext(fwd, trace.SpanContextFromContext(span)), done, nil
}
