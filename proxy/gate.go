package proxy

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy/paths"

	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/watch"
)

// gate puts resource reads and prompt gets to the guard, through the
// same Call as tool calls, and speaks JSON-RPC for it: a refusal is a
// CodeRefused error (refusedRPC).
type gate struct {
	guard *guard.Guard
	mode  Mode
}

func (g gate) Forward(ctx context.Context, sess *relay.Session, server, method, name string, args map[string]any,
	forward func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	action := guard.Action{Session: sess.ID, Server: server, Arguments: args, Client: sess.ClientName(), SharedSession: sess.Shared}
	if method == watch.MethodResourcesRead {
		readFilePlace(&action, sess, name)
	}
	out := g.guard.Call(ctx, guard.Request{Method: method, Action: action, Name: name, Forward: forward})
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

// readFilePlace reads a resources/read of a file: URI as the place it
// names, for the guard to judge as any path a tool is handed: a
// sensitive place, one that is not one place, a climb out of the
// client's roots ask. Other URIs name no local place.
func readFilePlace(a *guard.Action, sess *relay.Session, uri string) {
	if len(uri) < 5 || !strings.EqualFold(uri[:5], "file:") {
		return
	}
	home := ownHome()
	lex := paths.Canonical(uri, home, "")
	a.Home = home
	a.Places = []evaluator.Place{{Arg: "uri", Lexical: lex, Resolved: ResolvePlace(lex)}}
	if roots, known := sess.ClientRoots(); known && len(roots) > 0 {
		a.Roots, a.RootsKnown = resolvedRoots(roots), true
	}
}
