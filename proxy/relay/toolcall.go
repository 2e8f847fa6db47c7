package relay

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ToolCall is a client's tools/call as the relay read it, once: the
// tool's name and arguments by their exact names (CheckParams refused
// params that spell either another way too, which a server's decoder
// could read instead), the params as sent, and the way back to this
// session's servers. The mode judges it and the guard sends it on, if it
// is allowed, through Forward: nothing finds the session again.
type ToolCall struct {
	// Name is the tool as the client called it.
	Name string
	// Arguments are the arguments as sent; nil when absent.
	Arguments json.RawMessage
	// Params are the whole params as sent.
	Params json.RawMessage

	session *Session
}

// readToolCall reads a tools/call's name and arguments (see ToolCall).
func (s *Session) readToolCall(params json.RawMessage) (ToolCall, error) {
	v, err := rawjson.Exact(params, "name", "arguments")
	if err != nil {
		return ToolCall{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: params must be an object whose name and arguments appear once each"}
	}
	c := ToolCall{Params: params, Arguments: v[1], session: s}
	if v[0] == nil || json.Unmarshal(v[0], &c.Name) != nil {
		return ToolCall{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: name must be a string"}
	}
	return c, nil
}

// Forward is how the call, once allowed, goes to server of the call's
// own session as tool with args, the very values the mode judged,
// re-encoded, so nothing it did not see (a duplicate key, another
// spelling of a number) reaches the server; base holds the params' other
// members (the client's _meta, members aqlguard does not know; nil for
// none). The mode hands it to the guard (guard.Request.Forward) as it is.
// It goes through the session (Session.Forward: progress tokens, a
// 2026-07-28 server's rounds, task ids); the result comes back as the
// server sent it.
func (c ToolCall) Forward(server, tool string, args map[string]any, base json.RawMessage) func(context.Context) (json.RawMessage, error) {
	return func(ctx context.Context) (json.RawMessage, error) {
		if c.session == nil || c.session.pool == nil {
			return nil, fmt.Errorf("%w: no session to forward %s to", downstream.ErrUnavailable, tool)
		}
		srv, ok := c.session.pool.Server(server)
		if !ok {
			return nil, fmt.Errorf("%w: no server %s", downstream.ErrUnavailable, server)
		}
		params, err := toolCallParams(base, tool, args)
		if err != nil {
			return nil, fmt.Errorf("encoding the call to %s on %s: %w", tool, server, err)
		}
		return c.session.Forward(ctx, srv, mcpmethod.ToolsCall, params)
	}
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
	p, err := setMember(base, "name", tool)
	if err != nil {
		return nil, err
	}
	return setMember(p, "arguments", args)
}
