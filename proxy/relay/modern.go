package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

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
		res, err = s.listen(ctx, &clean)
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
	s.mu.Lock()
	same := s.logLevel == level
	s.logLevel = level
	s.mu.Unlock()
	if same {
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

// listener is one open subscriptions/listen stream.
type listener struct {
	id                        json.RawMessage
	tools, prompts, resources bool
	uris                      map[string]bool
}

// listen serves subscriptions/listen: it acknowledges what it will send
// (what the client asked for and the servers can do), subscribes the
// servers to the resources named, and keeps the stream open until the
// client cancels it or the session ends.
func (s *Session) listen(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	if !req.ID.IsValid() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscriptions/listen needs a request id"}
	}
	p, err := revision.Listen(req.Params)
	if err != nil {
		return nil, err
	}
	id, _ := json.Marshal(req.ID.Raw())
	caps := members(members(s.result)["capabilities"])
	flag := func(feature, name string) bool {
		var f map[string]any
		_ = json.Unmarshal(caps[feature], &f)
		b, _ := f[name].(bool)
		return b
	}
	l := &listener{id: id, uris: map[string]bool{},
		tools:     p.Notifications.Tools && flag("tools", "listChanged"),
		prompts:   p.Notifications.Prompts && flag("prompts", "listChanged"),
		resources: p.Notifications.Resources && flag("resources", "listChanged")}
	if flag("resources", "subscribe") {
		for _, uri := range p.Notifications.URIs {
			if l.uris[uri] {
				continue // named twice: one subscription, ended once
			}
			if err := s.subscribe(ctx, uri); err != nil {
				s.unsubscribeAll(l)
				return nil, err
			}
			l.uris[uri] = true
		}
	}
	agreed := map[string]any{}
	if l.tools {
		agreed["toolsListChanged"] = true
	}
	if l.prompts {
		agreed["promptsListChanged"] = true
	}
	if l.resources {
		agreed["resourcesListChanged"] = true
	}
	if len(l.uris) > 0 {
		uris := make([]string, 0, len(l.uris))
		for _, u := range p.Notifications.URIs {
			if l.uris[u] && !slices.Contains(uris, u) {
				uris = append(uris, u)
			}
		}
		agreed["resourceSubscriptions"] = uris
	}
	s.mu.Lock()
	s.listeners = append(s.listeners, l)
	s.mu.Unlock()
	ack, _ := json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{revision.MetaSubscriptionID: id}, "notifications": agreed})
	if err := s.client.Notify(ctx, "notifications/subscriptions/acknowledged", ack); err != nil {
		s.log.Debug("a subscription could not be acknowledged", "err", err)
	}
	if len(agreed) > 0 {
		select {
		case <-ctx.Done():
		case <-s.life.Done():
		}
	}
	s.mu.Lock()
	s.listeners = slices.DeleteFunc(s.listeners, func(x *listener) bool { return x == l })
	s.mu.Unlock()
	s.unsubscribeAll(l)
	return json.Marshal(map[string]any{"_meta": map[string]json.RawMessage{revision.MetaSubscriptionID: id}})
}

// unsubscribeAll ends a stream's subscriptions.
func (s *Session) unsubscribeAll(l *listener) {
	for uri := range l.uris {
		s.unsubscribe(uri)
	}
}

// notifyModern delivers a notification to a 2026-07-28 client: list
// changes and resource updates only on the listen streams that asked for
// them, tagged with the stream's id; log messages only once a request
// asked for a log level; everything else (progress) as it is.
func (s *Session) notifyModern(method string, params json.RawMessage) {
	var wants func(l *listener) bool
	switch method {
	case "notifications/tools/list_changed":
		wants = func(l *listener) bool { return l.tools }
	case "notifications/prompts/list_changed":
		wants = func(l *listener) bool { return l.prompts }
	case "notifications/resources/list_changed":
		wants = func(l *listener) bool { return l.resources }
	case "notifications/resources/updated":
		uri, _ := exactString(params, "uri")
		wants = func(l *listener) bool { return l.uris[uri] }
	case "notifications/message":
		s.mu.Lock()
		on := s.logLevel != ""
		s.mu.Unlock()
		if on {
			s.sendClient(context.Background(), method, params)
		}
		return
	default:
		s.sendClient(context.Background(), method, params)
		return
	}
	s.mu.Lock()
	var to []*listener
	for _, l := range s.listeners {
		if wants(l) {
			to = append(to, l)
		}
	}
	s.mu.Unlock()
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	for _, l := range to {
		meta := members(params)["_meta"]
		if meta == nil {
			meta = json.RawMessage(`{}`)
		}
		meta, err := setMember(meta, revision.MetaSubscriptionID, l.id)
		if err != nil {
			continue
		}
		tagged, err := setMember(params, "_meta", meta)
		if err != nil {
			continue
		}
		s.sendClient(context.Background(), method, tagged)
	}
}
