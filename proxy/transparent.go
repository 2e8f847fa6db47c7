package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/safety"
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
const VerifyTool = safety.TransparentVerifyTool

// transparentNames gives each downstream operation the name the client
// sees: the tool's own, or <server>__<tool> where two servers collide.
func transparentNames(ops []*catalog.Operation) map[*catalog.Operation]string {
	count := map[string]int{}
	for _, op := range ops {
		count[op.Tool.Name]++
	}
	out := make(map[*catalog.Operation]string, len(ops))
	for _, op := range ops {
		name := op.Tool.Name
		if count[name] > 1 || name == VerifyTool {
			name = op.Server + "__" + name
		}
		out[op] = name
	}
	return out
}

// transparentServer builds the front for transparent mode.
func (f *Front) transparentServer() *mcp.Server {
	impl := &mcp.Implementation{Name: "aqlguard", Version: f.Version}
	var instructions []string
	ready := 0
	for _, s := range f.Servers {
		if s.Status != downstream.Ready || s.Init == nil {
			continue
		}
		ready++
		if s.Init.Instructions != "" {
			instructions = append(instructions, s.Init.Instructions)
		}
	}
	if ready == 1 {
		for _, s := range f.Servers {
			if s.Status == downstream.Ready && s.Init != nil && s.Init.ServerInfo != nil {
				si := *s.Init.ServerInfo
				impl = &si
			}
		}
	}
	srv := mcp.NewServer(impl, &mcp.ServerOptions{
		Logger:                    f.Log,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		SupportedProtocolVersions: FrontProtocolVersions,
		Instructions:              strings.Join(instructions, "\n\n"),
	})
	ops := f.Catalog.Downstream()
	for op, name := range transparentNames(ops) {
		t := *op.Tool // the server's own definition
		t.Name = name
		if err := addTool(srv, &t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return f.handleTransparent(withClient(ctx, req.Session), f.session(req.Session), op, req.Params), nil
		}); err != nil {
			f.Log.Warn("transparent mode: a tool cannot be offered as the server defines it; it is left out",
				"server", op.Server, "tool", op.Tool.Name, "err", err)
		}
	}
	f.transparent = srv
	f.syncVerifyTool(context.Background())
	return srv
}

// addTool registers t, turning the SDK's panic on a schema it refuses (a
// server's own bug) into an error.
func addTool(s *mcp.Server, t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	s.AddTool(t, h)
	return nil
}

// handleTransparent serves one tool call in transparent mode: the
// arguments as the client sent them (within the payload limits), the
// guard, then the server's own result, untouched.
func (f *Front) handleTransparent(ctx context.Context, session string, op *catalog.Operation, p *mcp.CallToolParamsRaw) *mcp.CallToolResult {
	args, perr := aql.ParseArguments(p.Arguments, f.Limits)
	if perr != nil {
		return f.encode(aql.Failure(perr))
	}
	token, _ := p.Meta[TokenMeta].(string)
	out := f.Guard.Call(ctx, session, op, args, token)
	if out.Err != nil {
		defer f.syncVerifyTool(context.Background())
		return f.encode(&aql.Result{Err: out.Err, Confirmation: out.Confirmation})
	}
	if b, err := json.Marshal(out.Result); err == nil && int64(len(b)) > f.Limits.MaxResponseSize {
		return f.encode(aql.Failure(aql.TooLarge(aql.LimitResponseSize, f.Limits.MaxResponseSize, int64(len(b)), "")))
	}
	return out.Result
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

// syncVerifyTool lists VerifyTool while a verification is pending for the
// principal, and only then.
func (f *Front) syncVerifyTool(ctx context.Context) {
	if f.transparent == nil {
		return
	}
	pending := f.Guard.Loop.VerificationPending(ctx)
	f.verifyMu.Lock()
	defer f.verifyMu.Unlock()
	switch {
	case pending && !f.verifyListed:
		f.transparent.AddTool(verifyToolDef, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			defer f.syncVerifyTool(context.Background())
			op, _ := f.Catalog.Lookup("verify_challenge")
			args, perr := aql.ParseArguments(req.Params.Arguments, f.Limits)
			if perr != nil {
				return f.encode(aql.Failure(perr)), nil
			}
			params, verr := aql.Validate(op.Name, op.Params, args)
			if verr != nil {
				return f.encode(aql.Failure(verr)), nil
			}
			return f.encode(f.loopOperation(ctx, f.session(req.Session), op, params)), nil
		})
		f.verifyListed = true
	case !pending && f.verifyListed:
		f.transparent.RemoveTools(VerifyTool)
		f.verifyListed = false
	}
}
