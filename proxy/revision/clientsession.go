package revision

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.opentelemetry.io/otel/propagation"
)

// A 2026-07-28 client is served by the same relay session as an older
// one: the session starts its servers on the first request, and a
// ClientSession turns a server's request to the client into an
// input_required answer to the client's call (Exchanges), hands the
// retry's answers back to the server, whose call never stopped, and
// keeps the client's listen streams (listenStreams). The session does what
// any session does for it (ClientHost).

// ClientHost is what a relay session does for its 2026-07-28 client.
type ClientHost interface {
	ListenHost
	// Start starts the session's servers for the client of the first
	// request, whose _meta is m; it fails for a session that began with
	// initialize.
	Start(ctx context.Context, m Meta) error
	// Serve serves a request as the session serves any: its route, the
	// guard, the servers.
	Serve(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error)
	// Initialized is the session's initialize result, once started.
	Initialized() json.RawMessage
	// PassLogLevel passes a log level on to the servers that log.
	PassLogLevel(ctx context.Context, level string)
	// ToolSchema is the inputSchema of the tool a tools/call's params
	// name, and the call's arguments; ok is false when there is nothing
	// to check them against (the call itself will be refused, or the
	// mode offers no schemas).
	ToolSchema(ctx context.Context, params json.RawMessage) (schema, arguments json.RawMessage, ok bool)
}

// ClientSession is the state a relay session keeps for a 2026-07-28
// client: its calls that may need its input and its listen streams, each
// behind its own lock.
type ClientSession struct {
	host      ClientHost
	versions  []string // the older revisions the session speaks, newest first
	exchanges *Exchanges
	listens   *listenStreams
}

// NewClientSession keeps the 2026-07-28 state of a session that lives as
// long as life and speaks versions besides 2026-07-28.
func NewClientSession(life context.Context, host ClientHost, versions []string, log *slog.Logger) *ClientSession {
	return &ClientSession{host: host, versions: versions,
		exchanges: NewExchanges(life, host.Serve, log), listens: newListeners(life, host, log)}
}

// Request serves a request of a 2026-07-28 client whose _meta is m.
func (c *ClientSession) Request(ctx context.Context, req *jsonrpc.Request, m Meta) (json.RawMessage, error) {
	// A method 2026-07-28 took out is answered method not found.
	method := mcpmethod.Lookup(req.Method)
	if !method.Since2026 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf("%q is not part of protocol %s", req.Method, Modern)}
	}
	if err := c.host.Start(ctx, m); err != nil {
		return nil, err
	}
	if m.LogLevel != "" && c.listens.SetLogLevel(m.LogLevel) {
		// Once per change; from then on the servers' log messages reach
		// the client.
		c.host.PassLogLevel(ctx, m.LogLevel)
	}
	if h, ok := req.Extra.(*HTTPHeaders); ok && method.ParamHeaders {
		if err := c.checkParamHeaders(ctx, h.Header, req.Params); err != nil {
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
		res, err = Discover(c.host.Initialized(), c.versions)
	case req.Method == mcpmethod.SubscriptionsListen:
		res, err = c.listens.Listen(ctx, &clean, rawjson.Members(rawjson.Members(c.host.Initialized())["capabilities"]))
	case method.Guarded:
		res, err = c.exchanges.Call(ctx, &clean, rawjson.Members(m.Capabilities))
	default:
		res, err = c.host.Serve(ctx, &clean)
	}
	if err != nil {
		return nil, err
	}
	// aqlguard's or the server's serverInfo, as the session's initialize
	// result says.
	return Result(req.Method, res, rawjson.Members(c.host.Initialized())["serverInfo"]), nil
}

// Notify delivers a notification to the client (listenStreams.Notify).
func (c *ClientSession) Notify(method string, params json.RawMessage) {
	c.listens.Notify(method, params)
}

// Ask carries a server's request to the client in one of its calls to
// that server (Exchanges.Ask).
func (c *ClientSession) Ask(ctx context.Context, srv any, req *jsonrpc.Request) (json.RawMessage, error) {
	return c.exchanges.Ask(ctx, srv, req)
}

// AskInCall puts req to the client in the call ctx belongs to
// (Exchanges.AskInCall).
func (c *ClientSession) AskInCall(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, bool, error) {
	return c.exchanges.AskInCall(ctx, req)
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

// checkParamHeaders holds a tools/call's Mcp-Param-* headers to its
// arguments, as the tool's x-mcp-header annotations bind them (SEP-2243):
// a header that says another value than the body, or one missing for an
// annotated argument, is a HeaderMismatch. What routes on the header must
// see the call the guard judges.
func (c *ClientSession) checkParamHeaders(ctx context.Context, h http.Header, params json.RawMessage) error {
	schema, arguments, ok := c.host.ToolSchema(ctx, params)
	if !ok {
		return nil
	}
	bindings, err := mcpheader.Bindings(schema)
	if err == nil {
		err = mcpheader.Check(h, bindings, arguments)
	}
	if err != nil {
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: err.Error()}
	}
	return nil
}

// AskAsRequests puts one round of a 2026-07-28 server's input requests
// to a client of an older revision as the server would have asked it:
// each request in turn (call asks one, on the stream of the client's
// request the call belongs to), its answers by the server's names.
func AskAsRequests(ctx context.Context, asked []rawjson.Member, call func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)) (map[string]json.RawMessage, error) {
	out := make(map[string]json.RawMessage, len(asked))
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, m := range asked {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(m.Value, &r) != nil || r.Method == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("aqlguard: the server's input request %q names no method", m.Key)}
		}
		wg.Go(func() {
			res, err := call(ctx, r.Method, r.Params)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			out[m.Key] = res
		})
	}
	wg.Wait()
	if first != nil {
		if werr, ok := first.(*jsonrpc.Error); ok {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard could not put the server's request to the client: " + first.Error()}
	}
	return out, nil
}
