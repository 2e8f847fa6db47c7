package relay

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 client (revision.Modern) is served by the same session
// as an older one; what is of that revision, its calls' input rounds
// and listen streams included, is revision.ClientSession's. The session
// is its host: it starts its servers on the client's first request and
// serves each request as it serves any.

// modernHost is the session as revision.ClientHost.
type modernHost Session

// Start starts the session's servers for a client that speaks
// 2026-07-28: they are initialized (in 2025-11-25) with the identity and
// capabilities of the session's first request.
func (h *modernHost) Start(ctx context.Context, m revision.Meta) error {
	s := (*Session)(h)
	s.initOnce.Do(func() {
		s.initStarted.Store(true)
		s.modern.Store(true)
		defer close(s.ready)
		info := m.ClientInfo
		if info == nil {
			info = json.RawMessage(`{"name":"unnamed client","version":""}`)
		}
		params, _ := json.Marshal(map[string]any{"protocolVersion": s.cfg.ProtocolVersions[0],
			"capabilities": m.Capabilities, "clientInfo": info})
		s.result, s.initErr = s.start(ctx, params)
		s.protoUsed = m.Version
	})
	if !s.modern.Load() {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: "this session began with initialize (protocol " + s.protoUsed + "); a " + revision.Modern + " request needs a session of its own"}
	}
	return s.waitReady(ctx)
}

func (h *modernHost) Serve(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	return (*Session)(h).serve(ctx, req)
}

func (h *modernHost) Initialized() json.RawMessage { return h.result }

// ToolSchemas is what a session's Tools may offer: the inputSchema of a
// tool the client sees, by the name it sees.
type ToolSchemas interface {
	ToolSchema(ctx context.Context, name string) (json.RawMessage, bool)
}

// ToolSchema is the schema a tools/call's Mcp-Param-* headers are held
// to (SEP-2243), when the mode offers one.
func (h *modernHost) ToolSchema(ctx context.Context, params json.RawMessage) (schema, arguments json.RawMessage, ok bool) {
	s := (*Session)(h)
	ts, ok := s.tools.(ToolSchemas)
	if !ok {
		return nil, nil, false
	}
	call, err := s.readToolCall(params)
	if err != nil {
		return nil, nil, false // the call itself will be refused
	}
	schema, ok = ts.ToolSchema(ctx, call.Name)
	return schema, call.Arguments, ok
}

// PassLogLevel passes a request's log level on to the servers that log.
func (h *modernHost) PassLogLevel(ctx context.Context, level string) {
	s := (*Session)(h)
	params, _ := json.Marshal(map[string]string{"level": level})
	for _, srv := range s.serversWith("logging") {
		if srv.State().Modern {
			srv.SetLogLevel(level) // its own requests carry it too
			continue
		}
		if _, err := srv.Request(ctx, mcpmethod.LoggingSetLevel, params); err != nil {
			s.log.Debug("a log level could not be passed on", "server", srv.Label(), "err", err)
		}
	}
}

func (h *modernHost) Subscribe(ctx context.Context, uri string) error {
	return (*Session)(h).subscribe(ctx, uri)
}

func (h *modernHost) Unsubscribe(uri string) { (*Session)(h).unsubscribe(uri) }

func (h *modernHost) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return h.client.Notify(ctx, method, params)
}
