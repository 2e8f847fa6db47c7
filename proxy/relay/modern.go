package relay

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
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

// A 2026-07-28 server's input_required answers are carried by the
// session's forwarding (downstream: Pool.Forward's rounds); what the
// client side does for them is here: a round is put to the client (Answer)
// and the servers a call reaches are noted (Reaches), so that a server's
// own request goes with the call it belongs to. Both are revision's.

// Answer implements downstream.Client: one round of a 2026-07-28
// server's input requests, put to the client of ctx's call: a
// 2026-07-28 client's as its call's next input_required round, an older
// client's as the server would have asked it, on the stream of the
// request the call belongs to.
func (u *upstream) Answer(ctx context.Context, _ *downstream.Server, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	s := (*Session)(u)
	if s.modern.Load() {
		return revision.Round(ctx, asked)
	}
	request, _ := link.Related(ctx)
	return revision.AskAsRequests(ctx, asked, func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		gen := s.roots.generation()
		res, err := s.client.Call(link.WithRelated(ctx, request), method, params)
		if err == nil {
			s.noteRoots(method, gen, res)
		}
		return res, err
	})
}

// Reaches implements downstream.Client: the work of a 2026-07-28
// client's call that reaches srv carries srv's requests (revision.Used).
func (u *upstream) Reaches(ctx context.Context, srv *downstream.Server) { revision.Used(ctx, srv) }
