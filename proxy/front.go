// Package proxy is aqlguard's MCP front: it exposes the catalog through
// the MCP-AQL endpoints (or as guarded passthrough tools) and routes every
// call that reaches a downstream server through the Guard.
package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Modes.
const (
	ModeSemantic    = "semantic"
	ModeSingle      = "single"
	ModeAll         = "all"
	ModePassthrough = "passthrough"
	ModeTransparent = "transparent"
)

// SingleTool is the unified endpoint's tool name.
const SingleTool = "mcp_aql"

// FrontProtocolVersions are the MCP versions the front speaks. 2026-07-28
// is left out on purpose: with it the SDK never fires the initialized
// handshake and server-to-client requests (the confirmation dialogs'
// elicitation fallback among them) need the multi-round-trip form, and no
// MCP client we front (Claude Desktop, Claude Code, Cursor, VS Code) asks
// for it yet. Clients that do fall back to initialize with 2025-11-25.
var FrontProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Front is the MCP server aqlguard presents to its client.
type Front struct {
	Mode    string
	Catalog *catalog.Catalog
	Guard   *Guard
	Limits  aql.Limits
	Log     *slog.Logger
	// Servers are the downstream servers, reported in _protocol.
	Servers []*downstream.Server
	Version string

	sessions sync.Map // *mcp.ServerSession → session label

	// transparent is the server of transparent mode, whose tool list
	// changes while a verification is pending (verifyListed).
	transparent  *mcp.Server
	verifyMu     sync.Mutex
	verifyListed bool
}

// Server builds the go-sdk server with the tools of the configured mode.
func (f *Front) Server() *mcp.Server {
	if f.Mode == ModeTransparent {
		return f.transparentServer()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "aqlguard", Version: f.Version}, &mcp.ServerOptions{
		Logger:                    f.Log,
		Capabilities:              &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SupportedProtocolVersions: FrontProtocolVersions,
		Instructions: "Every tool call passes aqlguard's safety evaluator. Discover operations with " +
			`{"operation":"introspect","params":{"query":"operations"}}.`,
	})
	if f.Mode == ModeSemantic || f.Mode == ModeAll {
		for _, cat := range policy.Categories {
			f.addEndpoint(s, semanticTool(cat), cat)
		}
	}
	if f.Mode == ModeSingle || f.Mode == ModeAll || f.Mode == ModePassthrough {
		f.addEndpoint(s, SingleTool, "")
	}
	if f.Mode == ModePassthrough {
		for _, op := range f.Catalog.Downstream() {
			f.addPassthrough(s, op)
		}
	}
	return s
}

func semanticTool(cat policy.Category) string {
	return "mcp_aql_" + strings.ToLower(string(cat))
}

// ToolFor names the MCP tool that carries op in this mode.
func (f *Front) ToolFor(op *catalog.Operation) string {
	switch f.Mode {
	case ModeSingle:
		return SingleTool
	case ModePassthrough:
		if !op.Builtin {
			return op.Name
		}
		return SingleTool
	}
	return semanticTool(op.Category)
}

// endpointSchema is the spec's base input schema (mcp-integration.md 3.1)
// plus the batch member.
var endpointSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"operation":{"type":"string","description":"Operation name (\"batch\" for a batch)"},` +
	`"params":{"type":"object","description":"Operation parameters","additionalProperties":true},` +
	`"operations":{"type":"array","items":{"type":"object"},"description":"Batch: [{operation, params}, ...]"}` +
	`},"required":["operation"]}`)

func (f *Front) addEndpoint(s *mcp.Server, name string, cat policy.Category) {
	t := &mcp.Tool{Name: name, InputSchema: endpointSchema, Description: f.endpointDescription(cat),
		Annotations: endpointAnnotations(cat)}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.handleEndpoint(withClient(ctx, req.Session), f.session(req.Session), name, cat, req.Params.Arguments), nil
	})
}

// endpointAnnotations follow mcp-integration.md 2.3: only READ is
// read-only; UPDATE, DELETE, EXECUTE and the unified endpoint are
// destructive.
func endpointAnnotations(cat policy.Category) *mcp.ToolAnnotations {
	readOnly := cat == policy.Read
	destructive := !(cat == policy.Read || cat == policy.Create)
	return &mcp.ToolAnnotations{ReadOnlyHint: readOnly, DestructiveHint: &destructive}
}

// endpointDescription is short on purpose (token efficiency is the point
// of AQL): the family's purpose, a few operation names, and how to
// introspect for the rest.
func (f *Front) endpointDescription(cat policy.Category) string {
	var b strings.Builder
	var names []string
	if cat == "" {
		b.WriteString("Unified MCP-AQL endpoint for all operations, routed by operation name. ")
		for _, op := range f.Catalog.Operations() {
			names = append(names, op.Name)
		}
	} else {
		b.WriteString(map[policy.Category]string{
			policy.Create:  "Additive operations (create, add, upload). ",
			policy.Read:    "Read-only operations (get, list, search) and introspect. ",
			policy.Update:  "Modifying operations (update, edit, move). ",
			policy.Delete:  "Removing operations (delete, remove, purge). ",
			policy.Execute: "Runtime operations and tools with external effects (run, start, stop). ",
		}[cat])
		names = f.Catalog.ByCategory(cat)
	}
	const shown = 6
	if len(names) > 0 {
		b.WriteString("Operations: ")
		if len(names) > shown {
			fmt.Fprintf(&b, "%s (+%d more). ", strings.Join(names[:shown], ", "), len(names)-shown)
		} else {
			b.WriteString(strings.Join(names, ", ") + ". ")
		}
	}
	where := map[string]string{ModeSemantic: " on mcp_aql_read", ModeAll: " on mcp_aql_read or mcp_aql"}[f.Mode]
	b.WriteString(`Discover: {"operation":"introspect","params":{"query":"operations"}}` + where + `; add "name" for parameters.`)
	return b.String()
}

func (f *Front) addPassthrough(s *mcp.Server, op *catalog.Operation) {
	schema := withTokenProperty(op.Tool.InputSchema)
	t := &mcp.Tool{Name: op.Name, Title: op.Tool.Title, Description: op.Tool.Description,
		InputSchema: schema, OutputSchema: op.Tool.OutputSchema, Annotations: op.Tool.Annotations}
	s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return f.handlePassthrough(withClient(ctx, req.Session), f.session(req.Session), op, req.Params.Arguments), nil
	})
}

// withTokenProperty copies a tool's input schema and declares the
// confirmation_token property aqlguard accepts on every guarded call, so
// nothing accepted is undocumented.
func withTokenProperty(schema any) map[string]any {
	out := map[string]any{"type": "object"}
	if m, ok := schema.(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	props := map[string]any{}
	if m, ok := out["properties"].(map[string]any); ok {
		for k, v := range m {
			props[k] = v
		}
	}
	if _, taken := props[catalog.TokenParam]; !taken {
		props[catalog.TokenParam] = map[string]any{"type": "string",
			"description": catalog.ConfirmationTokenParam().Description}
	}
	out["properties"] = props
	return out
}

// session labels an MCP session for logs and audit. The label is ours,
// never client-supplied (spec 2.3.5).
func (f *Front) session(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	if v, ok := f.sessions.Load(ss); ok {
		return v.(string)
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	label := "s-" + hex.EncodeToString(b)
	v, _ := f.sessions.LoadOrStore(ss, label)
	return v.(string)
}
