package proxy

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/watch"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// handleEndpoint serves one call of an MCP-AQL endpoint tool: parse,
// then run the single request or the batch, then encode.
func (f *Front) handleEndpoint(ctx context.Context, tool string, cat policy.Category, raw json.RawMessage) *mcp.CallToolResult {
	env, perr := aql.Parse(raw, f.Limits)
	if perr != nil {
		return f.encode(aql.Failure(perr))
	}
	if env.Single != nil {
		return f.encode(f.execute(ctx, tool, cat, env.Single))
	}
	return f.encode(f.batch(ctx, tool, cat, env))
}

// batch runs a batch in order (operations.txt 7.3). A failure does not
// stop the rest; a CONFIRMATION_REQUIRED halts it (7.5.2), and what did
// not run is returned for continuation. halted_at and pending_operations
// travel inside data because operation-result.schema.json allows no other
// top-level members on a success.
func (f *Front) batch(ctx context.Context, tool string, cat policy.Category, env *aql.Envelope) *aql.Result {
	res := &aql.Result{Success: true, Summary: &aql.Summary{Total: len(env.Batch)}}
	for i, req := range env.Batch {
		var r *aql.Result
		if err := env.BatchErrs[i]; err != nil {
			r = aql.Failure(err)
		} else {
			r = f.execute(ctx, tool, cat, req)
		}
		if !r.Success && r.Err.Code == aql.CodeConfirmation {
			halted, pending := 1, len(env.Batch)-i-1
			res.Summary.Halted, res.Summary.Pending = &halted, &pending
			rest := make([]map[string]any, 0, pending)
			for _, p := range env.Batch[i+1:] {
				entry := map[string]any{"index": p.Index, "operation": p.Operation}
				if params, ok := p.Raw["params"]; ok {
					entry["params"] = params
				}
				rest = append(rest, entry)
			}
			res.Data = map[string]any{
				"halted_at":          aql.BatchItem{Index: i, Operation: req.Operation, Result: r},
				"pending_operations": rest,
			}
			return res
		}
		res.Results = append(res.Results, aql.BatchItem{Index: i, Operation: req.Operation, Result: r})
		if r.Success {
			res.Summary.Succeeded++
		} else {
			res.Summary.Failed++
		}
	}
	return res
}

// execute runs one request received on tool (cat is "" for the unified
// endpoint): lookup, endpoint routing, validation, then the built-in
// handler or the guard, which forwards an allowed request through the
// session's pool.
func (f *Front) execute(ctx context.Context, tool string, cat policy.Category, req *aql.Request) *aql.Result {
	op, ok := f.Catalog().Lookup(req.Operation)
	if !ok {
		if e := f.withheld(req.Operation); e != nil {
			return aql.Failure(e)
		}
		return aql.Failure(aql.NotFoundOperation(req.Operation))
	}
	if cat != "" && op.Category != cat {
		return aql.Failure(aql.EndpointMismatch(op.Name, f.ToolFor(op), tool, string(op.Category), string(cat)))
	}
	if !op.Builtin {
		var refusal *aql.Error
		if op, refusal = f.pinRefusal(ctx, op); refusal != nil {
			return aql.Failure(refusal)
		}
	}
	params, verr := validate(op, req.Params)
	if verr != nil {
		return aql.Failure(verr)
	}
	if op.Builtin {
		return f.builtin(ctx, f.Session.ID, op, params)
	}
	var sel *aql.Selection
	if fv, has := params["fields"]; has && op.Selectable {
		s, err := aql.ParseSelection(fv)
		if err != nil {
			return aql.Failure(err)
		}
		sel = s
	}
	token, _ := params[catalog.TokenParam].(string)
	out := f.Guard.Call(ctx, f.guardedCall(ctx, op, downstreamArgs(op, params), token, nil))
	if out.Refusal != nil {
		return refused(out.Refusal, f.voice())
	}
	if out.RPCErr != nil {
		return aql.Failure(rpcFailure(op, out.RPCErr))
	}
	if out.Failed != nil {
		return aql.Failure(downstreamFailure(op, out.Failed))
	}
	var tr mcp.CallToolResult
	if err := json.Unmarshal(out.Raw, &tr); err != nil {
		return aql.Failure(&aql.Error{Code: aql.CodeInternal,
			Message: "Internal error: 'the result of " + op.Tool.Name + " on " + op.Server + " does not decode'",
			Details: map[string]any{"server": op.Server, "tool": op.Tool.Name}})
	}
	res := toolResult(op, &tr)
	if res.Success && sel != nil {
		res.Data = sel.Apply(res.Data)
	}
	if w := monitoringWarning(out.Directive); w != nil {
		res.Warnings = append(res.Warnings, *w)
	}
	return res
}

// builtin answers aqlguard's own operations.
func (f *Front) builtin(ctx context.Context, session string, op *catalog.Operation, params map[string]any) *aql.Result {
	if op.Name == "introspect" {
		query, _ := params["query"].(string)
		name, _ := params["name"].(string)
		return aql.Success(f.Catalog().Introspect(query, name, f.ToolFor, f.protocol()))
	}
	return f.loopOperation(ctx, session, op, params)
}

// toolCall is a downstream tool call as the guard judges it: the
// operation in the guard's terms, from the catalog.
func toolCall(session string, op *catalog.Operation, args map[string]any, token string, base json.RawMessage) guard.Request {
	return guard.Request{Method: watch.MethodToolsCall, Base: base, Action: guard.Action{Session: session, Operation: op.Name,
		Server: op.Server, Tool: op.Tool.Name, Category: op.Category, ManagedCategory: op.ManagedCategory,
		Annotations: toolAnnotations(op.Tool.Annotations), Arguments: args, Token: token,
		Secrets: op.SecretArguments(), Roles: op.Model.Roles, Modeled: true,
		Effects: op.Model.Effects, EffectSource: op.Model.Source, EffectWhy: op.Model.Why, Confined: op.Model.Confined,
		PrivateSource: op.Model.Private, UntrustedSource: op.Model.Untrusted, Unresolved: revealsUnresolved(op)}}
}

// guardedCall is toolCall with what the front adds: the session's
// client (its name for the human, whether the session is shared), the
// paths read (readPlaces), the scanner for the result, and the way on:
// the session's own forwarding (its pool), with args, the map the
// guard judges, as the arguments sent.
func (f *Front) guardedCall(ctx context.Context, op *catalog.Operation, args map[string]any, token string, base json.RawMessage) guard.Request {
	req := toolCall(f.Session.ID, op, args, token, base)
	req.Client, req.SharedSession = f.Session.ClientName(), f.Session.Shared
	req.Forward = f.Pool.ToolCall(op.Server, op.Tool.Name, args, base)
	f.readPlaces(ctx, &req, op)
	req.Scanner = f.resultScanner
	req.Remote = !f.placesOf(op.Server, op.Model.Profile).local
	return req
}

// validate checks an operation's parameters (aql.Validate); on a server
// whose entry allows undeclared arguments, those are kept as sent.
func validate(op *catalog.Operation, params map[string]any) (map[string]any, *aql.Error) {
	if op.AllowUndeclared {
		return aql.ValidateAllowingUnknown(op.Name, op.Params, params)
	}
	return aql.Validate(op.Name, op.Params, params)
}

// downstreamArgs drops what aqlguard consumed and restores the
// downstream tool's own argument names; on a server whose entry allows
// undeclared arguments, those are forwarded as sent.
func downstreamArgs(op *catalog.Operation, params map[string]any) map[string]any {
	out := make(map[string]any, len(params))
	defined := 0
	for _, p := range op.Params {
		v, ok := params[p.Name]
		if !ok {
			continue
		}
		defined++
		if !p.Consumed {
			out[p.ServerName()] = v
		}
	}
	if op.AllowUndeclared && defined < len(params) {
		for k, v := range params {
			if _, taken := out[k]; !taken && !definedParam(op, k) {
				out[k] = v
			}
		}
	}
	return out
}

// definedParam reports whether op defines a parameter named name.
func definedParam(op *catalog.Operation, name string) bool {
	for _, p := range op.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

// toolResult turns a downstream CallToolResult into an OperationResult:
// structuredContent if the tool sent it; else one text block, parsed when
// it is JSON; else the content blocks. A tool error becomes INTERNAL_ERROR
// with the tool's own text under details.upstream_error: it is the
// downstream server's message about the request, not aqlguard's internals.
func toolResult(op *catalog.Operation, r *mcp.CallToolResult) *aql.Result {
	if r.IsError {
		return aql.Failure(&aql.Error{Code: aql.CodeInternal,
			Message: "Internal error: 'the tool " + op.Tool.Name + " on " + op.Server + " reported an error'",
			Details: map[string]any{"server": op.Server, "tool": op.Tool.Name, "upstream_error": contentText(r.Content)}})
	}
	if r.StructuredContent != nil {
		return aql.Success(r.StructuredContent)
	}
	if len(r.Content) == 1 {
		if t, ok := r.Content[0].(*mcp.TextContent); ok {
			trimmed := strings.TrimSpace(t.Text)
			if strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, "[") {
				var v any
				dec := json.NewDecoder(strings.NewReader(trimmed))
				dec.UseNumber()
				if dec.Decode(&v) == nil && !dec.More() {
					return aql.Success(v)
				}
			}
			return aql.Success(t.Text)
		}
	}
	return aql.Success(map[string]any{"content": r.Content})
}

func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func monitoringWarning(d evaluator.Directive) *aql.Warning {
	if d.Enforced || d.Decision == evaluator.Allow || d.Decision == "" {
		return nil
	}
	return &aql.Warning{Code: "SAFETY_MONITORING_ONLY", Severity: "high",
		Message: "Forwarded in monitoring mode; enforcing mode would have refused it (" + string(d.Decision) + ")",
		Details: map[string]any{"decision": string(d.Decision), "reason": d.Reason, "tier": string(d.Tier), "risk": d.Risk}}
}

// handlePassthrough serves a passthrough tool: the client sends the
// downstream tool's own arguments; the same limits, validation and guard
// apply; an allowed call returns the server's answer as it sent it.
func (f *Front) handlePassthrough(ctx context.Context, call relay.ToolCall, op *catalog.Operation) (json.RawMessage, error) {
	op, refusal := f.pinRefusal(ctx, op)
	if refusal != nil {
		return f.wire(aql.Failure(refusal))
	}
	args, perr := aql.ParseArguments(call.Arguments, f.Limits)
	if perr != nil {
		return f.wire(aql.Failure(perr))
	}
	params, verr := validate(op, args)
	if verr != nil {
		return f.wire(aql.Failure(verr))
	}
	token, _ := params[catalog.TokenParam].(string)
	base, _ := relay.DeleteMember(call.Params, "arguments")
	req := f.guardedCall(ctx, op, downstreamArgs(op, params), token, base)
	return f.onTheWire(op, f.Guard.Call(ctx, req))
}

// onTheWire is a guarded call's answer as the client gets it in
// transparent and passthrough modes: the server's result or JSON-RPC
// error as it sent them, or aqlguard's refusal as a tool error.
func (f *Front) onTheWire(op *catalog.Operation, out guard.Outcome) (json.RawMessage, error) {
	switch {
	case out.Refusal != nil:
		return f.wire(refused(out.Refusal, f.voice()))
	case out.RPCErr != nil:
		return nil, out.RPCErr
	case out.Failed != nil:
		return f.wire(aql.Failure(downstreamFailure(op, out.Failed)))
	case int64(len(out.Raw)) > f.Limits.MaxResponseSize:
		return f.wire(aql.Failure(aql.TooLarge(aql.LimitResponseSize, f.Limits.MaxResponseSize, int64(len(out.Raw)), "")))
	}
	return out.Raw, nil
}

// wire is an MCP-AQL result as a tool result on the wire.
func (f *Front) wire(r *aql.Result) (json.RawMessage, error) { return f.encodeRaw(f.encode(r)) }

// rpcFailure is a server's JSON-RPC error in an MCP-AQL envelope, with
// the server's code, message and data.
func rpcFailure(op *catalog.Operation, e *jsonrpc.Error) *aql.Error {
	d := map[string]any{"server": op.Server, "tool": op.Tool.Name,
		"upstream_error": map[string]any{"code": e.Code, "message": e.Message}}
	if len(e.Data) > 0 {
		d["upstream_error"].(map[string]any)["data"] = e.Data
	}
	return &aql.Error{Code: aql.CodeInternal, Details: d,
		Message: "Internal error: 'the server " + op.Server + " refused the call to " + op.Tool.Name + ": " + e.Message + "'"}
}

// encode renders a result as the tool's single text block, enforcing the
// response size limit.
func (f *Front) encode(r *aql.Result) *mcp.CallToolResult {
	// MarshalJSON directly: json.Marshal would HTML-escape its output.
	b, err := r.MarshalJSON()
	if err != nil {
		f.Log.Error("encoding a result failed", "err", err)
		r = aql.Failure(aql.Internal("the result could not be encoded"))
		b, _ = r.MarshalJSON()
	}
	if int64(len(b)) > f.Limits.MaxResponseSize {
		r = aql.Failure(aql.TooLarge(aql.LimitResponseSize, f.Limits.MaxResponseSize, int64(len(b)), ""))
		b, _ = r.MarshalJSON()
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: !r.Success}
}

// protocol is the _protocol object of operation lists.
func (f *Front) protocol() map[string]any {
	mode := f.Mode
	if mode == ModePassthrough {
		mode = ModeSingle // the schema's enum has no passthrough; aqlguard_mode says it
	}
	servers := make([]map[string]any, 0, len(f.Pool.Servers()))
	for _, s := range f.Pool.Servers() {
		st := s.State()
		e := map[string]any{"name": s.Name, "status": string(st.Status), "transport": s.Transport, "tools": len(st.Tools)}
		if st.Status != downstream.Ready && st.Problem != "" {
			e["problem"] = st.Problem
		}
		if st.Restarts > 0 {
			e["restarts"] = st.Restarts
		}
		servers = append(servers, e)
	}
	return map[string]any{
		"version":       catalog.SpecVersion,
		"conformance":   "level-1",
		"mode":          mode,
		"aqlguard_mode": f.Mode,
		"capabilities": map[string]any{
			"batch":                 true,
			"field_selection":       true,
			"warnings":              true,
			"confirmation":          true,
			"dangerous_operations":  true,
			"execution_safety_loop": string(f.Guard.CurrentPolicy().Loop),
		},
		"limits":      f.Limits,
		"concurrency": "fully-concurrent",
		"servers":     servers,
		"principal":   f.Guard.CurrentPolicy().Principal,
		"safety": map[string]any{
			"max_autonomous_steps": f.Guard.CurrentPolicy().MaxSteps,
			"risk_tolerance":       f.Guard.CurrentPolicy().Tolerance,
			"human_channel":        f.channelName(),
		},
	}
}

// revealsUnresolved is the question a tool's own name raises: one whose
// name says it hands out secrets (effects.Model.Reveals) asks a human,
// as a read of a sensitive place does.
func revealsUnresolved(op *catalog.Operation) string {
	if op.Model.Reveals == "" {
		return ""
	}
	return "its name " + strconv.Quote(op.Tool.Name) + " says it hands out " + op.Model.Reveals
}
