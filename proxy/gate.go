package proxy

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// gate puts resource reads and prompt gets to the guard, through the
// same Call as tool calls, and speaks JSON-RPC for it: a refusal is a
// CodeRefused error (refusedRPC).
type gate struct {
	guard *guard.Guard
	mode  Mode
}

func (g gate) Forward(ctx context.Context, sess *relay.Session, server, kind, name string, args map[string]any,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	ctx = guard.WithClient(ctx, sess.ClientName())
	if sess.Shared {
		ctx = guard.WithSharedSession(ctx)
	}
	method := guard.MethodPromptsGet
	if kind == "resource" {
		method = guard.MethodResourcesRead
	}
	out := g.guard.Call(ctx, guard.Request{Method: method, Action: guard.Action{Session: sess.ID, Server: server, Arguments: args},
		Name: name, Forward: forward})
	switch {
	case out.Refusal != nil:
		return nil, refusedRPC(out.Refusal, VoiceFor(g.mode, g.guard.Channel))
	case out.RPCErr != nil:
		return nil, out.RPCErr
	case out.Failed != nil:
		return nil, out.Failed
	}
	return out.Raw, nil
}
