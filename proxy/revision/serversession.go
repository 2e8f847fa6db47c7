package revision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aqlguard speaks MCP 2026-07-28 (without a handshake: SEP-2575) to
// every server that says it does (server/discover): each request carries
// the client's version, identity and capabilities in _meta, a server
// that needs the client answers input_required (Rounds fulfils it and
// retries), and what a server announces on its own (list changes,
// resource updates) comes on subscriptions/listen streams aqlguard keeps
// open for it. A ServerSession is what the downstream side keeps of one
// such server besides its connection.

// discoverTimeout bounds the probe: a server of an older revision may
// answer nothing to a request before initialize (2026-07-28 says to fall
// back then).
const discoverTimeout = 5 * time.Second

// ServerSession is the 2026-07-28 state of one downstream server: the
// log level its requests carry, its open listen streams and subscribed
// resources, behind its own lock. The connection is the downstream
// side's: each method that needs it is handed it.
type ServerSession struct {
	name       string
	log        *slog.Logger
	clientMeta func() (info, caps json.RawMessage)
	retryAfter func(attempt int) time.Duration

	mu         sync.RWMutex
	logLevel   string                   // sent with requests that name none
	listens    map[string]*serverStream // open subscriptions/listen streams, by request id
	subscribed map[string]*serverStream // resource uri → its stream (nil until it is open)
}

// A serverStream is one subscriptions/listen request kept open at a
// 2026-07-28 server.
type serverStream struct {
	notifications map[string]any
	cancel        context.CancelFunc
	acked         chan json.RawMessage // the agreed notifications, once
}

// NewServerSession keeps the 2026-07-28 state of the server name: its
// requests carry the client's identity and capabilities (clientMeta),
// and a listen stream the server ends is opened again after
// retryAfter(attempt).
func NewServerSession(name string, clientMeta func() (info, caps json.RawMessage), retryAfter func(attempt int) time.Duration, log *slog.Logger) *ServerSession {
	return &ServerSession{name: name, log: log, clientMeta: clientMeta, retryAfter: retryAfter,
		listens: map[string]*serverStream{}, subscribed: map[string]*serverStream{}}
}

// ClientMeta is the client's identity and capabilities, from the
// initialize parameters of the client's session (the client's own, or,
// for a 2026-07-28 client, made from its first request's _meta);
// aqlguard's own name and version when it gave none.
func ClientMeta(initialize json.RawMessage, version string) (info, caps json.RawMessage) {
	ms := rawjson.Members(initialize)
	info, caps = ms["clientInfo"], ms["capabilities"]
	if info == nil {
		info, _ = json.Marshal(map[string]string{"name": "aqlguard", "version": version})
	}
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	return info, caps
}

// Params completes params for the server (Complete) with the client's
// capabilities, identity and the log level asked of this server.
func (ss *ServerSession) Params(params json.RawMessage) json.RawMessage {
	info, caps := ss.clientMeta()
	ss.mu.RLock()
	level := ss.logLevel
	ss.mu.RUnlock()
	return Complete(params, info, caps, level)
}

// SetLogLevel sets the level of the log messages the server sends: it
// goes with every request that does not name its own.
func (ss *ServerSession) SetLogLevel(level string) {
	ss.mu.Lock()
	ss.logLevel = level
	ss.mu.Unlock()
}

// Discovered is what a 2026-07-28 server said of itself, as an older
// server's initialize would have said it.
type Discovered struct {
	Capabilities map[string]json.RawMessage
	InitRaw      json.RawMessage // an initialize result: the revision, capabilities, serverInfo, instructions
	DiscoverRaw  json.RawMessage // the server/discover result as the server sent it
}

// Discover probes the server with server/discover. modern is true when
// it speaks 2026-07-28; then d holds what it said. Any other answer, an
// error or silence, is a server of an older revision (2026-07-28's
// backward compatibility: the fallback is not keyed to one error).
func (ss *ServerSession) Discover(ctx context.Context, peer *link.Peer) (d Discovered, modern bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	raw, err := peer.Call(pctx, mcpmethod.ServerDiscover, ss.Params(nil))
	if err != nil {
		switch {
		case errors.Is(err, link.ErrClosed):
			return Discovered{}, false, err
		case ctx.Err() != nil:
			return Discovered{}, false, ctx.Err()
		}
		ss.log.Debug("server/discover failed: the server is spoken to in 2025-11-25", "err", err)
		return Discovered{}, false, nil
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw, &res) != nil || !slices.Contains(res.SupportedVersions, Modern) {
		ss.log.Debug("server/discover does not offer 2026-07-28: the server is spoken to in 2025-11-25", "versions", res.SupportedVersions)
		return Discovered{}, false, nil
	}
	info := res.Meta[MetaServerInfo]
	if rawjson.Members(info) == nil {
		info, _ = json.Marshal(map[string]string{"name": ss.name, "version": ""})
	}
	caps, _ := json.Marshal(res.Capabilities)
	if res.Capabilities == nil {
		caps = json.RawMessage(`{}`)
	}
	init := map[string]any{"protocolVersion": Modern, "capabilities": json.RawMessage(caps), "serverInfo": info}
	if res.Instructions != "" {
		init["instructions"] = res.Instructions
	}
	d = Discovered{Capabilities: res.Capabilities, DiscoverRaw: raw}
	d.InitRaw, _ = json.Marshal(init)
	return d, true, nil
}

// OpenListens opens, on a new connection, the streams the server's
// announcements come on: list changes (for what it can announce: caps
// are its capabilities) and each subscribed resource.
func (ss *ServerSession) OpenListens(peer *link.Peer, caps map[string]json.RawMessage) {
	lists := map[string]any{}
	for feature, flag := range map[string]string{"tools": "toolsListChanged", "prompts": "promptsListChanged", "resources": "resourcesListChanged"} {
		var f struct {
			ListChanged bool `json:"listChanged"`
		}
		if json.Unmarshal(caps[feature], &f) == nil && f.ListChanged {
			lists[flag] = true
		}
	}
	if len(lists) > 0 {
		ss.listen(peer, lists)
	}
	ss.mu.Lock()
	uris := make([]string, 0, len(ss.subscribed))
	for uri := range ss.subscribed {
		uris = append(uris, uri)
	}
	ss.mu.Unlock()
	for _, uri := range uris {
		ls := ss.listen(peer, map[string]any{"resourceSubscriptions": []string{uri}})
		ss.mu.Lock()
		if _, still := ss.subscribed[uri]; still {
			ss.subscribed[uri] = ls
		} else {
			ls.cancel()
		}
		ss.mu.Unlock()
	}
}

// listen keeps one subscriptions/listen request open on peer until it is
// cancelled or the connection ends; a stream the server ends is opened
// again (with backoff).
func (ss *ServerSession) listen(peer *link.Peer, notifications map[string]any) *serverStream {
	ctx, cancel := context.WithCancel(context.Background())
	ls := &serverStream{notifications: notifications, cancel: cancel, acked: make(chan json.RawMessage, 1)}
	go func() {
		defer cancel()
		for attempt := 0; ; attempt++ {
			id := peer.NewID()
			ss.mu.Lock()
			ss.listens[link.IDKey(id)] = ls
			ss.mu.Unlock()
			params, _ := json.Marshal(map[string]any{"notifications": notifications})
			_, err := peer.CallAs(ctx, id, mcpmethod.SubscriptionsListen, ss.Params(params))
			ss.mu.Lock()
			delete(ss.listens, link.IDKey(id))
			ss.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-peer.Done():
				return
			case <-time.After(ss.retryAfter(min(attempt, 6))):
			}
			ss.log.Debug("a subscriptions/listen stream ended; opening it again", "err", err)
		}
	}()
	return ls
}

// acknowledged takes a server's notifications/subscriptions/acknowledged.
func (ss *ServerSession) acknowledged(params json.RawMessage) {
	meta := rawjson.Members(rawjson.Members(params)["_meta"])
	var id any
	if json.Unmarshal(meta[MetaSubscriptionID], &id) != nil {
		return
	}
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		return
	}
	ss.mu.Lock()
	ls := ss.listens[link.IDKey(rid)]
	ss.mu.Unlock()
	if ls == nil {
		return
	}
	select {
	case ls.acked <- rawjson.Members(params)["notifications"]:
	default:
	}
}

// listenEnded takes a server's notifications/cancelled for a listen
// stream of ours: the server tore it down, so it is opened again.
func (ss *ServerSession) listenEnded(params json.RawMessage) bool {
	id, ok := link.CancelledID(params)
	if !ok {
		return false
	}
	ss.mu.Lock()
	_, ours := ss.listens[link.IDKey(id)]
	ss.mu.Unlock()
	return ours
}

// ErrNotConnected: the server has no connection now; a subscription
// asked meanwhile is opened with its next one.
var ErrNotConnected = errors.New("the server is not connected")

// Subscribe subscribes the server to a resource's updates on a
// subscriptions/listen stream of its own, kept until Unsubscribe and
// opened again on each new connection; peer is the server's connection
// now (nil: ErrNotConnected).
func (ss *ServerSession) Subscribe(ctx context.Context, uri string, peer func() *link.Peer) error {
	ss.mu.Lock()
	if _, ok := ss.subscribed[uri]; ok {
		ss.mu.Unlock()
		return nil
	}
	ss.subscribed[uri] = nil
	ss.mu.Unlock()
	p := peer()
	if p == nil {
		return ErrNotConnected
	}
	ls := ss.listen(p, map[string]any{"resourceSubscriptions": []string{uri}})
	ss.mu.Lock()
	ss.subscribed[uri] = ls
	ss.mu.Unlock()
	select {
	case agreed := <-ls.acked:
		var n struct {
			URIs []string `json:"resourceSubscriptions"`
		}
		_ = json.Unmarshal(agreed, &n)
		if !slices.Contains(n.URIs, uri) {
			ss.Unsubscribe(uri)
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the server does not offer updates of %s", uri)}
		}
		return nil
	case <-ctx.Done():
		ss.Unsubscribe(uri)
		return ctx.Err()
	}
}

// Unsubscribe ends what Subscribe started.
func (ss *ServerSession) Unsubscribe(uri string) {
	ss.mu.Lock()
	ls := ss.subscribed[uri]
	delete(ss.subscribed, uri)
	ss.mu.Unlock()
	if ls != nil {
		ls.cancel()
	}
}

// Notification is what a 2026-07-28 server's notification says to the
// relay: the stream ids are aqlguard's own business (the relay tags what
// it sends its client with the client's), acknowledgements and a
// stream's end are handled here. ok is false for what goes no further.
func (ss *ServerSession) Notification(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	switch req.Method {
	case "notifications/subscriptions/acknowledged":
		ss.acknowledged(req.Params)
		return nil, false
	case link.MethodCancelled:
		if ss.listenEnded(req.Params) {
			return nil, false
		}
	}
	params, tagged := Untagged(req.Params)
	if !tagged {
		return req, true
	}
	return &jsonrpc.Request{Method: req.Method, Params: params}, true
}

// RequestVersion is the 2026-07-28 (or later) revision a request's _meta
// names, or "" for a message of an older one.
func RequestVersion(call *jsonrpc.Request) string {
	if call == nil {
		return ""
	}
	meta, _ := rawjson.Lookup(call.Params, "_meta")
	raw, ok := rawjson.Lookup(meta, MetaProtocolVersion)
	var v string
	if !ok || json.Unmarshal(raw, &v) != nil || v < Modern {
		return ""
	}
	return v
}

// ToolsForHTTP drops the tools whose x-mcp-header annotations 2026-07-28
// forbids: a client of a Streamable HTTP server must not offer them.
// raws are the tools as the server sent them, tools the same decoded.
func ToolsForHTTP(tools []*mcp.Tool, raws []json.RawMessage, log *slog.Logger) ([]*mcp.Tool, []json.RawMessage) {
	var keptTools []*mcp.Tool
	var keptRaws []json.RawMessage
	for i, raw := range raws {
		if _, err := mcpheader.Bindings(rawjson.Members(raw)["inputSchema"]); err != nil {
			log.Warn("a tool is left out: its x-mcp-header annotations are invalid", "tool", tools[i].Name, "err", err)
			continue
		}
		keptTools, keptRaws = append(keptTools, tools[i]), append(keptRaws, raw)
	}
	return keptTools, keptRaws
}

// ToolBindings are the x-mcp-header bindings of a tool as the server
// sent it, for the headers of a call to it (SetHeaders).
func ToolBindings(raw json.RawMessage) []mcpheader.Binding {
	b, _ := mcpheader.Bindings(rawjson.Members(raw)["inputSchema"])
	return b
}
