package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/safety"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// CodeRefused is the JSON-RPC error code of a resources/read or a
// prompts/get that aqlguard refused; the MCP-AQL error (code, message,
// details, a confirmation token) is the error's data.
const CodeRefused = -32001

// gate puts resource reads and prompt gets to the safety loop, as READ
// steps named resource:<uri> and prompt:<name> (policy.IsReadSubject).
type gate struct {
	loop *safety.Loop
	log  *slog.Logger
}

func (g *gate) Check(ctx context.Context, sess *relay.Session, server, kind, name string, args map[string]any) (func(error), error) {
	tool := policy.ResourcePrefix + name
	if kind == "prompt" {
		tool = policy.PromptPrefix + name
	}
	if args == nil {
		args = map[string]any{}
	}
	if kind == "resource" {
		args = map[string]any{"uri": name}
	}
	a := safety.Action{Session: sess.ID, Operation: server + "." + tool, Server: server, Tool: tool,
		Category: policy.Read, Arguments: args, Client: sess.ClientName()}
	v := g.loop.Check(ctx, a)
	d := v.Directive
	g.log.Info("safety decision", "principal", g.loop.CurrentPolicy().Principal, "session", sess.ID, "operation", a.Operation,
		"proceed", v.Proceed, "decision", d.Decision, "stage", d.Stage, "tier", d.Tier, "risk", d.Risk, "matched", d.Matched)
	if !v.Proceed {
		e := withFactors(v.Err, d.Factors)
		data, _ := json.Marshal(&aql.Result{Err: e, Confirmation: v.Confirmation})
		return nil, &jsonrpc.Error{Code: CodeRefused, Message: "aqlguard: " + e.Message, Data: data}
	}
	began := time.Now()
	return func(err error) {
		result := "ok"
		if err != nil {
			result = "error"
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if rerr := g.loop.Outcome(rctx, a, v, result, time.Since(began)); rerr != nil {
			g.log.Error("the outcome of a read could not be recorded", "operation", a.Operation, "err", rerr)
		}
	}, nil
}
