package downstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aqlguard speaks MCP 2026-07-28 (revision.Modern, without a handshake:
// SEP-2575) to every server that says it does (server/discover):
// each request carries the client's version, identity and capabilities
// in _meta, a server that needs the client answers input_required (the
// relay fulfils it and retries), and what a server announces on its own
// (list changes, resource updates) comes on subscriptions/listen streams
// aqlguard keeps open for it.

// discoverTimeout bounds the probe: a server of an older revision may
// answer nothing to a request before initialize (2026-07-28 says to fall
// back then).
const discoverTimeout = 5 * time.Second

// clientMeta is the client's identity and capabilities, from the
// initialize parameters the pool was given (the client's own, or, for a
// 2026-07-28 client, made from its first request's _meta).
func (p *Pool) clientMeta() (info, caps json.RawMessage) {
	ms := rawjson.Members(p.opts.Initialize)
	info, caps = ms["clientInfo"], ms["capabilities"]
	if info == nil {
		info, _ = json.Marshal(map[string]string{"name": "aqlguard", "version": p.opts.Version})
	}
	if caps == nil {
		caps = json.RawMessage(`{}`)
	}
	return info, caps
}

// modernParams completes params for a 2026-07-28 server
// (revision.Complete) with the client's capabilities, identity and the
// log level asked of this server.
func (s *Server) modernParams(params json.RawMessage) json.RawMessage {
	info, caps := s.pool.clientMeta()
	s.mu.RLock()
	level := s.logLevel
	s.mu.RUnlock()
	return revision.Complete(params, info, caps, level)
}

// discover probes the server with server/discover. modern is true when it
// speaks 2026-07-28; then st holds what it said. Any other answer, an
// error or silence, is a server of an older revision (2026-07-28's
// backward compatibility: the fallback is not keyed to one error).
func (s *Server) discover(ctx context.Context, peer *link.Peer) (st State, modern bool, err error) {
	pctx, cancel := context.WithTimeout(ctx, discoverTimeout)
	defer cancel()
	raw, err := peer.Call(pctx, mcpmethod.ServerDiscover, s.modernParams(nil))
	if err != nil {
		switch {
		case errors.Is(err, link.ErrClosed):
			return State{}, false, err
		case ctx.Err() != nil:
			return State{}, false, ctx.Err()
		}
		s.log.Debug("server/discover failed: the server is spoken to in 2025-11-25", "err", err)
		return State{}, false, nil
	}
	var res struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      map[string]json.RawMessage `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw, &res) != nil || !slices.Contains(res.SupportedVersions, revision.Modern) {
		s.log.Debug("server/discover does not offer 2026-07-28: the server is spoken to in 2025-11-25", "versions", res.SupportedVersions)
		return State{}, false, nil
	}
	info := res.Meta[revision.MetaServerInfo]
	if rawjson.Members(info) == nil {
		info, _ = json.Marshal(map[string]string{"name": s.Name, "version": ""})
	}
	caps, _ := json.Marshal(res.Capabilities)
	if res.Capabilities == nil {
		caps = json.RawMessage(`{}`)
	}
	init := map[string]any{"protocolVersion": revision.Modern, "capabilities": json.RawMessage(caps), "serverInfo": info}
	if res.Instructions != "" {
		init["instructions"] = res.Instructions
	}
	st = State{Status: Ready, Protocol: revision.Modern, Modern: true, Capabilities: res.Capabilities, DiscoverRaw: raw}
	st.InitRaw, _ = json.Marshal(init)
	var decoded mcp.InitializeResult
	_ = json.Unmarshal(st.InitRaw, &decoded)
	st.Init = &decoded
	return st, true, nil
}

// validForHTTP drops the tools whose x-mcp-header annotations 2026-07-28
// forbids: a client of a Streamable HTTP server must not offer them.
func (s *Server) validForHTTP(tools []*mcp.Tool, raws []json.RawMessage) ([]*mcp.Tool, []json.RawMessage) {
	var keptTools []*mcp.Tool
	var keptRaws []json.RawMessage
	for i, raw := range raws {
		if _, err := mcpheader.Bindings(rawjson.Members(raw)["inputSchema"]); err != nil {
			s.log.Warn("a tool is left out: its x-mcp-header annotations are invalid", "tool", tools[i].Name, "err", err)
			continue
		}
		keptTools, keptRaws = append(keptTools, tools[i]), append(keptRaws, raw)
	}
	return keptTools, keptRaws
}

// paramBindings are the x-mcp-header bindings of one of the server's
// tools, for the headers of a call to it.
func (s *Server) paramBindings(tool string) []mcpheader.Binding {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, t := range s.state.Tools {
		if t.Name == tool {
			b, _ := mcpheader.Bindings(rawjson.Members(s.state.ToolsRaw[i])["inputSchema"])
			return b
		}
	}
	return nil
}

// SetLogLevel sets the level of the log messages a 2026-07-28 server
// sends: it goes with every request that does not name its own.
func (s *Server) SetLogLevel(level string) {
	s.mu.Lock()
	s.logLevel = level
	s.mu.Unlock()
}

// A listenStream is one subscriptions/listen request kept open at a
// 2026-07-28 server.
type listenStream struct {
	notifications map[string]any
	cancel        context.CancelFunc
	acked         chan json.RawMessage // the agreed notifications, once
}

// openListens opens, on a new connection, the streams the server's
// announcements come on: list changes (for what it can announce) and
// each subscribed resource.
func (s *Server) openListens(peer *link.Peer, caps map[string]json.RawMessage) {
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
		s.listen(peer, lists)
	}
	s.mu.Lock()
	uris := make([]string, 0, len(s.subscribed))
	for uri := range s.subscribed {
		uris = append(uris, uri)
	}
	s.mu.Unlock()
	for _, uri := range uris {
		ls := s.listen(peer, map[string]any{"resourceSubscriptions": []string{uri}})
		s.mu.Lock()
		if _, still := s.subscribed[uri]; still {
			s.subscribed[uri] = ls
		} else {
			ls.cancel()
		}
		s.mu.Unlock()
	}
}

// listen keeps one subscriptions/listen request open on peer until it is
// cancelled or the connection ends; a stream the server ends is opened
// again (with backoff).
func (s *Server) listen(peer *link.Peer, notifications map[string]any) *listenStream {
	ctx, cancel := context.WithCancel(context.Background())
	ls := &listenStream{notifications: notifications, cancel: cancel, acked: make(chan json.RawMessage, 1)}
	go func() {
		defer cancel()
		for attempt := 0; ; attempt++ {
			id := peer.NewID()
			s.mu.Lock()
			s.listens[link.IDKey(id)] = ls
			s.mu.Unlock()
			params, _ := json.Marshal(map[string]any{"notifications": notifications})
			_, err := peer.CallAs(ctx, id, mcpmethod.SubscriptionsListen, s.modernParams(params))
			s.mu.Lock()
			delete(s.listens, link.IDKey(id))
			s.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-peer.Done():
				return
			case <-time.After(restartDelay(min(attempt, 6))):
			}
			s.log.Debug("a subscriptions/listen stream ended; opening it again", "err", err)
		}
	}()
	return ls
}

// acknowledged takes a server's notifications/subscriptions/acknowledged.
func (s *Server) acknowledged(params json.RawMessage) {
	meta := rawjson.Members(rawjson.Members(params)["_meta"])
	var id any
	if json.Unmarshal(meta[revision.MetaSubscriptionID], &id) != nil {
		return
	}
	rid, err := jsonrpc.MakeID(id)
	if err != nil {
		return
	}
	s.mu.Lock()
	ls := s.listens[link.IDKey(rid)]
	s.mu.Unlock()
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
func (s *Server) listenEnded(params json.RawMessage) bool {
	id, ok := link.CancelledID(params)
	if !ok {
		return false
	}
	s.mu.Lock()
	_, ours := s.listens[link.IDKey(id)]
	s.mu.Unlock()
	return ours
}

// Subscribe subscribes the server to a resource's updates: a
// resources/subscribe request to a server of an older revision, a
// subscriptions/listen stream of its own at a 2026-07-28 one (kept until
// Unsubscribe, and opened again after a restart).
func (s *Server) Subscribe(ctx context.Context, uri string, params json.RawMessage) error {
	st := s.State()
	if !st.Modern {
		_, err := s.Request(ctx, mcpmethod.ResourcesSubscribe, params)
		return err
	}
	s.mu.Lock()
	if _, ok := s.subscribed[uri]; ok {
		s.mu.Unlock()
		return nil
	}
	peer := s.peer
	s.subscribed[uri] = nil
	s.mu.Unlock()
	if peer == nil {
		return s.unavailable()
	}
	ls := s.listen(peer, map[string]any{"resourceSubscriptions": []string{uri}})
	s.mu.Lock()
	s.subscribed[uri] = ls
	s.mu.Unlock()
	select {
	case agreed := <-ls.acked:
		var n struct {
			URIs []string `json:"resourceSubscriptions"`
		}
		_ = json.Unmarshal(agreed, &n)
		if !slices.Contains(n.URIs, uri) {
			s.Unsubscribe(context.Background(), uri, nil)
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("the server does not offer updates of %s", uri)}
		}
		return nil
	case <-ctx.Done():
		s.Unsubscribe(context.Background(), uri, nil)
		return ctx.Err()
	}
}

// Unsubscribe ends what Subscribe started.
func (s *Server) Unsubscribe(ctx context.Context, uri string, params json.RawMessage) error {
	if !s.State().Modern {
		_, err := s.Request(ctx, mcpmethod.ResourcesUnsubscribe, params)
		return err
	}
	s.mu.Lock()
	ls := s.subscribed[uri]
	delete(s.subscribed, uri)
	s.mu.Unlock()
	if ls != nil {
		ls.cancel()
	}
	return nil
}

// modernNotification is what a 2026-07-28 server's notification says to
// the relay: the stream ids are aqlguard's own business (the relay tags
// what it sends its client with the client's), acknowledgements and a
// stream's end are handled here. ok is false for what goes no further.
func (s *Server) modernNotification(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	switch req.Method {
	case "notifications/subscriptions/acknowledged":
		s.acknowledged(req.Params)
		return nil, false
	case link.MethodCancelled:
		if s.listenEnded(req.Params) {
			return nil, false
		}
	}
	params, tagged := revision.Untagged(req.Params)
	if !tagged {
		return req, true
	}
	return &jsonrpc.Request{Method: req.Method, Params: params}, true
}
