// Package proxy is aqlguard's MCP front for tools: per client session, it
// offers the servers' tools as the mode says (as they are, through the
// MCP-AQL endpoints, or as guarded passthrough tools) and routes every
// call that reaches a downstream server through the Guard. Everything
// else MCP carries is relayed by package relay.
package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/proxy/pins"
	"github.com/aqlguard/aqlguard/proxy/refusal"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mode is how the front offers the servers' tools (the config's mode,
// which policy validates).
type Mode string

// The modes.
const (
	ModeSemantic    Mode = "semantic"
	ModeSingle      Mode = "single"
	ModeAll         Mode = "all"
	ModePassthrough Mode = "passthrough"
	ModeTransparent Mode = "transparent"
)

// SingleTool is the unified endpoint's tool name.
const SingleTool = "mcp_aql"

// FrontProtocolVersions are the MCP versions the front negotiates with
// initialize, newest first. A client that speaks 2026-07-28, which has no
// initialize, is served too: see relay.ModernVersion.
var FrontProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// Shared is what the fronts of every session of one aqlguard share.
type Shared struct {
	Mode Mode
	// Config is the configuration at start; SetConfig replaces it (a
	// reload) and CurrentConfig reads it.
	Config *config.Config
	// Guard judges every call that reaches a server; each call carries
	// its own way on to its session's server (downstream.Pool.ToolCall).
	Guard  *guard.Guard
	Limits aql.Limits
	Log    *slog.Logger
	// Pins holds the approved tool definitions; nil pins nothing.
	Pins *pins.Pinner
	// Names records the names the servers offer and reports collisions
	// and imitations; nil reports nothing.
	Names *NameReport
	// Version is aqlguard's.
	Version string
	// Auth authorizes to remote servers with auth = "oauth".
	Auth *remoteauth.Manager
	// Principal is the principal of Guard when it is not the configured
	// agent (a client of serve's own); a reload compiles the policy for it.
	Principal string

	mu       sync.RWMutex
	reloaded *config.Config
	sessions sync.Map // session id → *relay.Session, for SessionClient
}

// CurrentConfig is the configuration in force.
func (sh *Shared) CurrentConfig() *config.Config {
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if sh.reloaded != nil {
		return sh.reloaded
	}
	return sh.Config
}

// SetConfig puts a reloaded configuration in force for what is derived
// from it later (catalogs, category overrides).
func (sh *Shared) SetConfig(c *config.Config) {
	sh.mu.Lock()
	sh.reloaded = c
	sh.mu.Unlock()
}

// SessionClient names the credential session authenticated with on
// serve ("" when it is not one of sh's, or over stdio).
func (sh *Shared) SessionClient(session string) string {
	if v, ok := sh.sessions.Load(session); ok {
		return v.(*relay.Session).Credential
	}
	return ""
}

// RelayConfig is the relay configuration for sh's mode.
func (sh *Shared) RelayConfig() *relay.Config {
	rc := &relay.Config{
		Servers:          sh.Config.Servers,
		Version:          sh.Version,
		Transparent:      sh.Mode == ModeTransparent,
		ProtocolVersions: FrontProtocolVersions,
		NewTools:         func(s *relay.Session) (relay.Tools, error) { return sh.NewFront(s) },
		VetTools:         sh.vetTools(),
		Gate:             gate{guard: sh.Guard, mode: sh.Mode},
		Restart:          true,
		Auth:             sh.Auth,
		Log:              sh.Log,
	}
	if sh.Guard != nil && sh.Guard.State != nil {
		rc.Sandbox = sandboxAudit{sh}
	}
	if sh.Names != nil {
		rc.PromptsListed = func(server string, list []string) { sh.Names.Listed(server, names.Prompt, list) }
	}
	if sh.Mode != ModeTransparent {
		rc.Instructions = "Every tool call passes aqlguard's safety evaluator. Discover operations with " +
			`{"operation":"introspect","params":{"query":"operations"}}.`
	}
	return rc
}

// vetTools is tool pinning as the downstream servers' vetting: every
// listing of a server's tools is checked against the pins before the
// server's state holds it, so no session ever lists, or routes a call
// to, a definition no human approved. The names the server listed are
// recorded (Names). nil without pins and names.
func (sh *Shared) vetTools() downstream.Vet {
	if sh.Pins == nil && sh.Names == nil {
		return nil
	}
	return func(ctx context.Context, server string, l downstream.Listing) (downstream.Listing, error) {
		if sh.Names != nil {
			list := make([]string, len(l.Tools))
			for i, t := range l.Tools {
				list[i] = t.Name
			}
			sh.Names.Listed(server, names.Tool, list)
		}
		if sh.Pins == nil {
			return l, nil
		}
		res, err := sh.Pins.Check(ctx, server, l.Tools, l.Raws)
		if err != nil {
			return downstream.Listing{}, err
		}
		return downstream.Listing{Tools: res.Tools, Raws: res.Raws, Withheld: res.Pending}, nil
	}
}

// Front is the tools of one client session in the configured mode.
type Front struct {
	Mode   Mode
	Guard  *guard.Guard
	Limits aql.Limits
	Log    *slog.Logger
	// Session is the client session; Pool its servers.
	Session *relay.Session
	Pool    *downstream.Pool
	Version string
	shared  *Shared

	mu      sync.RWMutex
	catalog *catalog.Catalog
	// transparent finds an operation by the name transparent mode shows;
	// derived from catalog, with it.
	transparent map[string]*catalog.Operation
	// places are what reading each server's paths takes from its entry
	// (placesOf), kept with the catalog.
	places  map[string]serverPlaces
	pins    *pins.Pinner
	unwatch func()

	verifyMu     sync.Mutex
	verifyListed bool

	scanMu sync.Mutex
	scanState
}

// NewFront builds the front of one session, once its servers are up.
func (sh *Shared) NewFront(s *relay.Session) (*Front, error) {
	f := &Front{Mode: sh.Mode, Limits: sh.Limits, Log: sh.Log.With("session", s.ID), Session: s, Pool: s.Pool(),
		Version: sh.Version, shared: sh}
	f.Guard = sh.Guard
	sh.sessions.Store(s.ID, s)
	f.pins = sh.Pins
	if err := f.rebuild(); err != nil {
		return nil, err
	}
	if f.pins != nil {
		f.unwatch = f.pins.Watch(func(server, _ string) { f.refreshServer(server) })
	}
	return f, nil
}

// Close implements the relay's optional session-end hook.
func (f *Front) Close() {
	if f.unwatch != nil {
		f.unwatch()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	f.shared.sessions.Delete(f.Session.ID)
	f.Guard.EndSession(ctx, f.Session.ID)
}

// refreshServer lists a server's tools again (a change was approved)
// and tells the client.
func (f *Front) refreshServer(server string) {
	srv, ok := f.Pool.Server(server)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	if _, err := srv.RefreshTools(ctx); err != nil {
		f.Log.Warn("refreshing a server's tools after an approved change", "server", server, "err", err)
		return
	}
	if f.ToolsChanged(ctx, srv) {
		f.Session.NotifyClient("notifications/tools/list_changed", json.RawMessage(`{}`))
	}
}

// refreshTimeout bounds a refresh aqlguard makes itself (after an
// approval): the listing, and the wait for one in progress.
const refreshTimeout = 30 * time.Second

// pinRefusal refuses a call to a tool whose change, or whose new
// server's first-sight review, waits for a human. It reads the pin again
// first: the change may have been approved since (at the command line,
// in another process); then the tools are refreshed and op is the tool
// as it is now. A call to a tool under review brings the review question
// back if it is not on screen, and waits for the answer as long as a
// call waits for a human (inline_wait).
func (f *Front) pinRefusal(ctx context.Context, op *catalog.Operation) (*catalog.Operation, *aql.Error) {
	srv, ok := f.Pool.Server(op.Server)
	if !ok || !srv.State().Withheld[op.Tool.Name] {
		return op, nil
	}
	still, review, err := f.pins.Waiting(ctx, op.Server, op.Tool.Name)
	if err == nil && still && review {
		f.pins.RemindReview(ctx, op.Server)
		if f.pins.WaitApproved(ctx, op.Server, op.Tool.Name, f.shared.CurrentConfig().Verify.InlineWait.Duration) {
			still = false
		}
	}
	if err == nil && !still {
		f.refreshServer(op.Server)
		if srv.State().Withheld[op.Tool.Name] {
			still = true // changed again since
		}
	}
	if err == nil && !still {
		for _, o := range f.Catalog().Downstream() {
			if o.Server == op.Server && o.Tool.Name == op.Tool.Name {
				return o, nil
			}
		}
	}
	kind := refusal.ToolChanged
	if review {
		kind = refusal.ToolReview
	}
	return nil, refusalError(refusal.Stop(kind, "", map[string]any{"operation": op.Name, "server": op.Server,
		"tool": op.Tool.Name}, time.Time{}, time.Time{}), f.voice())
}

// rebuild derives the catalog from what the servers offer now.
func (f *Front) rebuild() error {
	var reviewed func(server, tool string) bool
	if f.pins != nil {
		reviewed = f.pins.Reviewed
	}
	cat, err := BuildCatalog(f.shared.CurrentConfig(), f.Guard.CurrentPolicy(), f.Pool.Servers(), reviewed)
	if err != nil {
		return fmt.Errorf("building the operation catalog: %w", err)
	}
	for _, n := range cat.Notes {
		f.Log.Warn("catalog", "note", n)
	}
	index := transparentIndex(cat)
	f.mu.Lock()
	f.catalog, f.transparent, f.places = cat, index, nil
	f.mu.Unlock()
	return nil
}

// Catalog is the session's operation catalog now.
func (f *Front) Catalog() *catalog.Catalog {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.catalog
}

// ToolsChanged implements relay.Tools: a server's tools changed (they
// were vetted before its state took them), so the catalog is derived
// again and the client told.
func (f *Front) ToolsChanged(ctx context.Context, srv *downstream.Server) bool {
	if err := f.rebuild(); err != nil {
		f.Log.Error("the tools changed, but the catalog could not be rebuilt; the old one stays", "err", err)
		return false
	}
	return true
}

// ListTools implements relay.Tools.
func (f *Front) ListTools(ctx context.Context) ([]json.RawMessage, error) {
	if f.Mode == ModeTransparent {
		return f.transparentTools(ctx), nil
	}
	var tools []any
	if f.Mode == ModeSemantic || f.Mode == ModeAll {
		for _, cat := range policy.Categories {
			tools = append(tools, f.endpointTool(semanticTool(cat), cat))
		}
	}
	if f.Mode == ModeSingle || f.Mode == ModeAll || f.Mode == ModePassthrough {
		tools = append(tools, f.endpointTool(SingleTool, ""))
	}
	if f.Mode == ModePassthrough {
		for _, op := range f.Catalog().Downstream() {
			tools = append(tools, passthroughTool(op))
		}
	}
	out := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// ToolSchema implements relay.ToolSchemas: the inputSchema of a tool as
// the client sees it (for the HTTP front's Mcp-Param-* check).
func (f *Front) ToolSchema(ctx context.Context, name string) (json.RawMessage, bool) {
	if f.Mode == ModeTransparent {
		f.mu.RLock()
		op := f.transparent[name]
		f.mu.RUnlock()
		if op == nil {
			return nil, false
		}
		if srv, ok := f.Pool.Server(op.Server); ok {
			st := srv.State()
			for i, t := range st.Tools {
				if t.Name == op.Tool.Name {
					return relay.Members(st.ToolsRaw[i])["inputSchema"], true
				}
			}
		}
		return nil, false
	}
	tools, err := f.ListTools(ctx)
	if err != nil {
		return nil, false
	}
	for _, raw := range tools {
		ms := relay.Members(raw)
		var n string
		if json.Unmarshal(ms["name"], &n) == nil && n == name {
			return ms["inputSchema"], true
		}
	}
	return nil, false
}

// CallTool implements relay.Tools: the call, as the relay read it, in
// the session's mode; an allowed one goes on through the session's pool
// (downstream.Pool.ToolCall).
func (f *Front) CallTool(ctx context.Context, call relay.ToolCall) (json.RawMessage, error) {
	if f.Mode == ModeTransparent {
		return f.callTransparent(ctx, call)
	}
	if call.Name == SingleTool && f.Mode != ModeSemantic {
		return f.encodeRaw(f.handleEndpoint(ctx, SingleTool, "", call.Arguments))
	}
	if f.Mode == ModeSemantic || f.Mode == ModeAll {
		for _, cat := range policy.Categories {
			if call.Name == semanticTool(cat) {
				return f.encodeRaw(f.handleEndpoint(ctx, call.Name, cat, call.Arguments))
			}
		}
	}
	if f.Mode == ModePassthrough {
		if op, ok := f.Catalog().Lookup(call.Name); ok && !op.Builtin {
			return f.handlePassthrough(ctx, call, op)
		}
	}
	if e := f.withheld(call.Name); e != nil {
		return f.wire(aql.Failure(e))
	}
	return nil, unknownTool(call.Name)
}

// withheld is the refusal of a call naming no tool of the session while
// a server's tools are withheld because their pins could not be read:
// the name may be one of them, so the caller is told the state is
// unavailable and nothing ran (fail closed), not that the tool does not
// exist. nil when no server's tools are withheld.
func (f *Front) withheld(name string) *aql.Error {
	if f.Pool == nil {
		return nil
	}
	var servers []string
	for _, s := range f.Pool.Servers() {
		if s.ToolsWithheld() {
			servers = append(servers, s.Name)
		}
	}
	if len(servers) == 0 {
		return nil
	}
	return &aql.Error{Code: aql.CodeInternal,
		Message: fmt.Sprintf("Internal error: '%q is not listed: the tools of %s could not be checked against their pins "+
			"(the state database is unavailable) and are withheld until they can be; nothing ran'", name, strings.Join(servers, ", ")),
		Details: map[string]any{"operation": name, "servers": servers, "reason": "state database unavailable", "fail_closed": true}}
}

func unknownTool(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + fmt.Sprintf("%q", name)}
}

// encodeRaw is a tool result on the wire.
func (f *Front) encodeRaw(r *mcp.CallToolResult) (json.RawMessage, error) {
	return json.Marshal(r)
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

// endpointSchema is the spec's base input schema (mcp-integration.md
// 3.1), pared down. Every client loads it once per endpoint before its first call, so it
// says no more than it must, as 3.4's family schema does: params is an
// object (open, JSON Schema's default); a batch ({"operations": [...]})
// is not declared (members are open too; introspection describes
// batches).
var endpointSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"operation":{"type":"string","description":"Operation name"},"params":{"type":"object"}` +
	`},"required":["operation"]}`)

// endpoint is an MCP-AQL endpoint as tools/list carries it. Its
// annotations say only what differs from MCP's defaults (readOnlyHint
// and idempotentHint false, destructiveHint true), and destructiveHint
// always, as mcp-integration.md 2.3's examples do.
type endpoint struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Annotations map[string]bool `json:"annotations"`
}

func (f *Front) endpointTool(name string, cat policy.Category) endpoint {
	return endpoint{Name: name, InputSchema: endpointSchema, Description: f.endpointDescription(cat),
		Annotations: endpointAnnotations(cat)}
}

// endpointAnnotations follow mcp-integration.md 2.3: only READ is
// read-only; UPDATE, DELETE, EXECUTE and the unified endpoint are
// destructive.
func endpointAnnotations(cat policy.Category) map[string]bool {
	if cat == policy.Read {
		return map[string]bool{"readOnlyHint": true, "destructiveHint": false}
	}
	return map[string]bool{"destructiveHint": cat != policy.Create}
}

// endpointDescription is short on purpose (token efficiency is the point
// of AQL): the family's purpose, a few operation names, and how to
// introspect for the rest.
func (f *Front) endpointDescription(cat policy.Category) string {
	var b strings.Builder
	// The servers' own operations first: they are what the model came
	// for; the safety loop's are named in introspection.
	var names, loop []string
	for _, op := range f.Catalog().Operations() {
		switch {
		case cat != "" && op.Category != cat:
		case op.Builtin:
			loop = append(loop, op.Name)
		default:
			names = append(names, op.Name)
		}
	}
	names = append(names, loop...)
	if cat == "" {
		b.WriteString("Every operation: ")
	} else {
		b.WriteString(map[policy.Category]string{
			policy.Create:  "Operations that add. ",
			policy.Read:    "Read-only operations, and introspect. ",
			policy.Update:  "Operations that change. ",
			policy.Delete:  "Operations that remove. ",
			policy.Execute: "Operations that run things or act outside. ",
		}[cat])
	}
	const shown = 4
	if len(names) > 0 {
		if len(names) > shown {
			fmt.Fprintf(&b, "%s (+%d more). ", strings.Join(names[:shown], ", "), len(names)-shown)
		} else {
			b.WriteString(strings.Join(names, ", ") + ". ")
		}
	}
	// How to learn the rest is said once, where introspect runs; the
	// other endpoints point there.
	if cat == "" || cat == policy.Read {
		b.WriteString(`All: {"operation":"introspect","params":{"query":"operations"}}, "name" for one's parameters.`)
	} else {
		b.WriteString("All, with parameters: introspect on mcp_aql_read.")
	}
	return b.String()
}

func passthroughTool(op *catalog.Operation) *mcp.Tool {
	return &mcp.Tool{Name: op.Name, Title: op.Tool.Title, Description: op.Tool.Description,
		InputSchema: withTokenProperty(op.Tool.InputSchema), OutputSchema: op.Tool.OutputSchema,
		Annotations: op.Tool.Annotations}
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
