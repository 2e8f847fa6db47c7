package proxy

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/challenge"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transparent mode puts the servers behind the guard as they are: the
// client sees each tool under its own name with its own title,
// description, schemas, annotations, _meta and icons, and, with one
// server, that server's name, version and instructions. Only a call the
// policy stops is answered by aqlguard.
//
// Names stay the server's own. When two servers offer a tool of the same
// name, those tools (and only those) are exposed as <server>__<tool>;
// the result depends only on the configured servers, so the same config
// always gives the same names.
//
// The confirmation token of an earlier CONFIRMATION_REQUIRED travels in
// the request's _meta (TokenMeta), so no tool's schema changes; without
// it, the identical call is matched to its approval by its binding.
//
// verify_challenge has to be reachable when a human gives the model a
// verification code, but it is not one of the server's tools: it is
// listed as VerifyTool only while the agent is blocked or paused for
// verification (the client is told through tools/list_changed).

// TokenMeta is the request _meta key that carries a confirmation token in
// transparent mode.
const TokenMeta = "aqlguard/confirmation_token"

// VerifyTool is the tool that carries verify_challenge in transparent
// mode, listed only while a verification is pending.
const VerifyTool = challenge.TransparentVerifyTool

// transparentNames gives each downstream operation the name the client
// sees in transparent mode: the tool's own, or <server>__<tool> where two
// operations would share one, or where it is VerifyTool (names.Shown,
// the rule prompts follow too).
func transparentNames(ops []*catalog.Operation) map[*catalog.Operation]string {
	items := make([]names.Item, len(ops))
	for i, op := range ops {
		items[i] = names.Item{Server: op.Server, Name: op.Tool.Name}
	}
	shown := names.Shown(items, func(name string) bool { return name == VerifyTool })
	out := make(map[*catalog.Operation]string, len(ops))
	for i, op := range ops {
		out[op] = shown[i]
	}
	return out
}

// transparentIndex maps the names transparent mode shows to operations.
// Built with the catalog, so a call does not derive every name again.
func transparentIndex(cat *catalog.Catalog) map[string]*catalog.Operation {
	ops := cat.Downstream()
	shown := transparentNames(ops)
	index := make(map[string]*catalog.Operation, len(ops))
	for _, op := range ops {
		if _, taken := index[shown[op]]; !taken { // a server listing one tool twice: its first
			index[shown[op]] = op
		}
	}
	return index
}

// transparentTools lists each server's tools as the server sent them,
// renamed only where two servers collide, and VerifyTool while a
// verification is pending.
func (f *Front) transparentTools(ctx context.Context) []json.RawMessage {
	ops := f.Catalog().Downstream()
	shown := map[[2]string]string{} // server, tool → the name the client sees
	for op, name := range transparentNames(ops) {
		shown[[2]string{op.Server, op.Tool.Name}] = name
	}
	// In the servers' order, each server's tools in its own order.
	var out []json.RawMessage
	for _, srv := range f.Pool.Servers() {
		st := srv.State()
		for i, t := range st.Tools {
			name, ok := shown[[2]string{srv.Name, t.Name}]
			if !ok {
				continue
			}
			raw := st.ToolsRaw[i]
			if name != t.Name {
				renamed, err := relay.SetMember(raw, "name", name)
				if err != nil {
					continue
				}
				raw = renamed
			}
			out = append(out, raw)
		}
	}
	if f.syncVerifyTool(ctx, false) {
		b, _ := json.Marshal(verifyToolDef)
		out = append(out, b)
	}
	return out
}

// callTransparent serves one tool call in transparent mode: the
// arguments as the client sent them, if they are within the payload
// limits and what the tool's schema declares (catalog.InputShape: no
// argument it does not declare, each of its declared type), the guard,
// then the server's own answer, result or JSON-RPC error, as the server
// sent it. What the guard judges is what is forwarded: the arguments as
// decoded once, re-encoded.
func (f *Front) callTransparent(ctx context.Context, call relay.ToolCall) (json.RawMessage, error) {
	if call.Name == VerifyTool {
		return f.callVerify(ctx, f.Session.ID, call.Arguments)
	}
	f.mu.RLock()
	op := f.transparent[call.Name]
	f.mu.RUnlock()
	if op == nil {
		if e := f.withheld(call.Name); e != nil {
			return f.wire(aql.Failure(e))
		}
		return nil, unknownTool(call.Name)
	}
	op, refusal := f.pinRefusal(ctx, op)
	if refusal != nil {
		return f.wire(aql.Failure(refusal))
	}
	args, perr := transparentArguments(call.Name, op, call.Arguments, f.Limits)
	if perr != nil {
		return f.encodeRaw(argumentsRefused(call.Name, perr))
	}
	base, token := withoutToken(call.Params)
	req := f.guardedCall(ctx, op, args, token, base)
	out := f.Guard.Call(ctx, req)
	if out.Refusal != nil {
		defer f.syncVerifyTool(context.Background(), true)
	}
	return f.onTheWire(op, out)
}

// transparentArguments reads a transparent call's arguments once
// (aql.ParseArguments: the payload limits, UTF-8, no member named twice)
// and checks them against what the tool declares (aql.CheckArguments);
// name is the tool as the client calls it. The map returned is what the
// guard judges and the server receives.
func transparentArguments(name string, op *catalog.Operation, raw json.RawMessage, lim aql.Limits) (map[string]any, *aql.Error) {
	args, err := aql.ParseArguments(raw, lim)
	if err != nil {
		return nil, err
	}
	if err := aql.CheckArguments(name, op.Input, args); err != nil {
		return nil, err
	}
	return args, nil
}

// withoutToken returns the call's params without the members aqlguard
// sets itself (name, arguments) and without aqlguard's token in _meta,
// and the token.
func withoutToken(params json.RawMessage) (json.RawMessage, string) {
	base, _ := relay.DeleteMember(params, "arguments")
	meta, ok := rawjson.Lookup(base, "_meta")
	if !ok {
		return base, ""
	}
	var token string
	if raw, ok := rawjson.Lookup(meta, TokenMeta); ok {
		_ = json.Unmarshal(raw, &token)
	}
	if token == "" {
		return base, ""
	}
	meta, _ = relay.DeleteMember(meta, TokenMeta)
	if string(meta) == "{}" {
		base, _ = relay.DeleteMember(base, "_meta")
	} else {
		base, _ = relay.SetMember(base, "_meta", meta)
	}
	return base, token
}

// verifyToolDef is verify_challenge as a tool of its own.
var verifyToolDef = &mcp.Tool{
	Name: VerifyTool,
	Description: "aqlguard stopped this agent and showed the human a verification code in a window of its own. " +
		"Ask the user for that code, then call this tool with the challenge_id from the refusal and the code. " +
		"You never see the code otherwise.",
	InputSchema: json.RawMessage(`{"type":"object","properties":{` +
		`"challenge_id":{"type":"string","description":"The verification_id from the refusal (a UUID)"},` +
		`"code":{"type":"string","description":"The code as the user read it; case, spaces and hyphens do not matter"}},` +
		`"required":["challenge_id","code"],"additionalProperties":false}`),
}

// callVerify serves VerifyTool.
func (f *Front) callVerify(ctx context.Context, session string, raw json.RawMessage) (json.RawMessage, error) {
	defer f.syncVerifyTool(context.Background(), true)
	op, _ := f.Catalog().Lookup("verify_challenge")
	args, perr := aql.ParseArguments(raw, f.Limits)
	if perr != nil {
		return f.wire(aql.Failure(perr))
	}
	params, verr := aql.Validate(op.Name, op.Params, args)
	if verr != nil {
		return f.wire(aql.Failure(verr))
	}
	return f.wire(f.loopOperation(ctx, session, op, params))
}

// syncVerifyTool reports whether VerifyTool is to be listed: while a
// verification is pending for the principal, and only then. With
// notify, a change since the last list is told to the client
// (tools/list_changed).
func (f *Front) syncVerifyTool(ctx context.Context, notify bool) bool {
	pending := f.Guard.VerificationPending(ctx)
	f.verifyMu.Lock()
	changed := pending != f.verifyListed
	f.verifyListed = pending
	f.verifyMu.Unlock()
	if changed && notify {
		f.Session.NotifyClient("notifications/tools/list_changed", json.RawMessage(`{}`))
	}
	return pending
}
