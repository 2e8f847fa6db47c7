package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
)

// A 2026-07-28 client (revision.Modern) is served by the same session
// as an older one: the session starts its servers on the first request,
// turns a server's request to the client into an input_required answer
// to the client's call, and hands the retry's answers back to the server,
// whose call never stopped. What is pure of the translation is package
// revision's.

// startModern starts the session's servers for a client that speaks
// 2026-07-28: they are initialized (in 2025-11-25) with the identity and
// capabilities of the session's first request.
func (s *Session) startModern(ctx context.Context, m revision.Meta) error {
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

// modernRequest serves a request of a 2026-07-28 client.
func (s *Session) modernRequest(ctx context.Context, req *jsonrpc.Request, m revision.Meta) (json.RawMessage, error) {
	// A method 2026-07-28 took out is answered method not found.
	method := mcpmethod.Lookup(req.Method)
	if !method.Since2026 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q is not part of protocol %s", req.Method, revision.Modern)}
	}
	if err := s.startModern(ctx, m); err != nil {
		return nil, err
	}
	if m.LogLevel != "" {
		s.setLogLevel(ctx, m.LogLevel)
	}
	if h, ok := req.Extra.(*HTTPHeaders); ok && method.ParamHeaders {
		if err := s.checkParamHeaders(ctx, h.Header, req.Params); err != nil {
			return nil, err
		}
	}
	// The request goes on with its _meta as the client sent it: each
	// server gets it completed for 2026-07-28, or without that
	// revision's keys (downstream.Server.Request).
	clean := *req
	var res json.RawMessage
	var err error
	switch {
	case req.Method == mcpmethod.ServerDiscover:
		res, err = s.discover()
	case req.Method == mcpmethod.SubscriptionsListen:
		res, err = s.listens.Listen(ctx, &clean, members(members(s.result)["capabilities"]))
	case method.Guarded:
		res, err = s.exchanges.Call(ctx, &clean, members(m.Capabilities))
	default:
		res, err = s.serve(ctx, &clean)
	}
	if err != nil {
		return nil, err
	}
	return s.modernResult(req.Method, res), nil
}

// HTTPHeaders are the headers of the POST that carried a 2026-07-28
// request (the HTTP front puts them in the request's Extra), for what
// only the session can check: Mcp-Param-* against the tool's schema.
type HTTPHeaders struct{ Header http.Header }

// RequestContext carries the POST's W3C trace context (traceparent,
// tracestate) to the request's handler: the guard's span continues the
// client's trace (link.Contexter).
func (h *HTTPHeaders) RequestContext(ctx context.Context) context.Context {
	return propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(h.Header))
}

// ToolSchemas is what a session's Tools may offer: the inputSchema of a
// tool the client sees, by the name it sees.
type ToolSchemas interface {
	ToolSchema(ctx context.Context, name string) (json.RawMessage, bool)
}

// checkParamHeaders holds a tools/call's Mcp-Param-* headers to its
// arguments, as the tool's x-mcp-header annotations bind them (SEP-2243):
// a header that says another value than the body, or one missing for an
// annotated argument, is a HeaderMismatch. What routes on the header must
// see the call the guard judges.
func (s *Session) checkParamHeaders(ctx context.Context, h http.Header, params json.RawMessage) error {
	ts, ok := s.tools.(ToolSchemas)
	if !ok {
		return nil
	}
	call, err := s.readToolCall(params)
	if err != nil {
		return nil // the call itself will be refused
	}
	schema, ok := ts.ToolSchema(ctx, call.Name)
	if !ok {
		return nil
	}
	bindings, err := mcpheader.Bindings(schema)
	if err == nil {
		err = mcpheader.Check(h, bindings, call.Arguments)
	}
	if err != nil {
		return &jsonrpc.Error{Code: revision.CodeHeaderMismatch, Message: err.Error()}
	}
	return nil
}

// discover answers server/discover: what initialize would have said.
func (s *Session) discover() (json.RawMessage, error) {
	return revision.Discover(s.result, s.cfg.ProtocolVersions)
}

// modernResult completes a result for a 2026-07-28 client
// (revision.Result), aqlguard's or the server's serverInfo as the
// session's initialize result says.
func (s *Session) modernResult(method string, res json.RawMessage) json.RawMessage {
	return revision.Result(method, res, members(s.result)["serverInfo"])
}

// setLogLevel passes a request's log level on to the servers that log,
// once per change; from then on their log messages reach the client.
func (s *Session) setLogLevel(ctx context.Context, level string) {
	if !s.listens.SetLogLevel(level) {
		return
	}
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

// listenHost is what the session does for its client's listen streams
// (revision.ListenHost).
type listenHost Session

func (h *listenHost) Subscribe(ctx context.Context, uri string) error {
	return (*Session)(h).subscribe(ctx, uri)
}

func (h *listenHost) Unsubscribe(uri string) { (*Session)(h).unsubscribe(uri) }

func (h *listenHost) Notify(ctx context.Context, method string, params json.RawMessage) error {
	return h.client.Notify(ctx, method, params)
}
