package relay

import (
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// ToolCall is a client's tools/call as the relay read it, once: the
// tool's name and arguments by their exact names (CheckParams refused
// params that spell either another way too, which a server's decoder
// could read instead) and the params as sent. The mode judges it and
// hands the guard the session's way on for it (downstream.Pool.ToolCall,
// the session's forwarding): the relay is not entered again, and
// nothing finds the session again.
type ToolCall struct {
	// Name is the tool as the client called it.
	Name string
	// Arguments are the arguments as sent; nil when absent.
	Arguments json.RawMessage
	// Params are the whole params as sent.
	Params json.RawMessage
}

// readToolCall reads a tools/call's name and arguments (see ToolCall).
func (s *Session) readToolCall(params json.RawMessage) (ToolCall, error) {
	v, err := rawjson.Exact(params, "name", "arguments")
	if err != nil {
		return ToolCall{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: params must be an object whose name and arguments appear once each"}
	}
	c := ToolCall{Params: params, Arguments: v[1]}
	if v[0] == nil || json.Unmarshal(v[0], &c.Name) != nil {
		return ToolCall{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: name must be a string"}
	}
	return c, nil
}
