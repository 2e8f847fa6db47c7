//lint:file-ignore SA1019 roots, logging and resource capabilities are what a shared server must keep per session; deprecated as of 2026-07-28, served in 2025-11-25
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessionOptions are the server options of -session-tools: resource
// subscriptions, which the SDK keeps per session.
func sessionOptions() *mcp.ServerOptions {
	return &mcp.ServerOptions{
		HasResources:       true,
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
}

// addSessionTools adds the tools of what MCP scopes to a session, for
// the tests of servers shared among sessions (-session-tools):
//
//	ask    elicits `question` from the client, naming the call's progress
//	       token in the request's _meta, and returns the answer's content
//	log    sends a log message at `level` (the SDK drops it below the
//	       level the client set)
//	touch  says resource `uri` was updated (to the sessions subscribed)
//	roots  asks the client for its roots and returns their uris, sorted
//	pid    returns the server's process id
func addSessionTools(s *mcp.Server, calls *callLog) {
	addTool(s, calls, toolDef{"ask", "Ask the client (elicitation) and return its answer.",
		`{"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}`, nil, ask})
	addTool(s, calls, toolDef{"log", "Send a log message.",
		`{"type":"object","properties":{"level":{"type":"string"},"text":{"type":"string"}},"required":["level","text"]}`, nil,
		func(ctx context.Context, a map[string]any) *mcp.CallToolResult {
			req := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
			err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(str(a, "level")), Data: str(a, "text")})
			if err != nil {
				return errorResult(err.Error())
			}
			return textResult("logged")
		}})
	addTool(s, calls, toolDef{"touch", "Say a resource was updated.",
		`{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`, nil,
		func(ctx context.Context, a map[string]any) *mcp.CallToolResult {
			if err := s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: str(a, "uri")}); err != nil {
				return errorResult(err.Error())
			}
			return textResult("touched")
		}})
	addTool(s, calls, toolDef{"roots", "Return the client's roots.", `{"type":"object","properties":{}}`, readOnly,
		func(ctx context.Context, a map[string]any) *mcp.CallToolResult {
			req := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
			res, err := req.Session.ListRoots(ctx, nil)
			if err != nil {
				return errorResult("roots/list: " + err.Error())
			}
			var uris []string
			for _, r := range res.Roots {
				uris = append(uris, r.URI)
			}
			sort.Strings(uris)
			return textResult(strings.Join(uris, " "))
		}})
	addTool(s, calls, toolDef{"pid", "Return the server's process id.", `{"type":"object","properties":{}}`, readOnly,
		func(context.Context, map[string]any) *mcp.CallToolResult { return textResult(fmt.Sprint(os.Getpid())) }})
}

func ask(ctx context.Context, a map[string]any) *mcp.CallToolResult {
	req := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	params := &mcp.ElicitParams{Message: str(a, "question"),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"answer":{"type":"string"}}}`)}
	if tok := req.Params.GetProgressToken(); tok != nil {
		params.Meta = mcp.Meta{"progressToken": tok}
	}
	res, err := req.Session.Elicit(ctx, params)
	if err != nil {
		return errorResult("elicitation/create: " + err.Error())
	}
	out, _ := json.Marshal(res.Content)
	return textResult(res.Action + " " + string(out))
}
