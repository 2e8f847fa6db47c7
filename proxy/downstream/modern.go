package downstream

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// aqlguard speaks MCP 2026-07-28 to every server that says it does
// (server/discover). What it keeps of such a server besides its
// connection — the log level its requests carry, its listen streams and
// subscriptions — is the server's revision.ServerSession (s.modern);
// what is here hands it the connection.

// clientMeta is the client's identity and capabilities, from the
// initialize parameters the pool was given (revision.ClientMeta).
func (p *Pool) clientMeta() (info, caps json.RawMessage) {
	return revision.ClientMeta(p.opts.Initialize, p.opts.Version)
}

// modernParams completes params for a 2026-07-28 server
// (revision.Complete) with the client's capabilities, identity and the
// log level asked of this server.
func (s *Server) modernParams(params json.RawMessage) json.RawMessage { return s.modern.Params(params) }

// discover probes the server with server/discover (revision.Discover).
func (s *Server) discover(ctx context.Context, peer *link.Peer) (st State, modern bool, err error) {
	d, modern, err := s.modern.Discover(ctx, peer)
	if !modern || err != nil {
		return State{}, modern, err
	}
	st = State{Status: Ready, Protocol: revision.Modern, Modern: true, Capabilities: d.Capabilities, DiscoverRaw: d.DiscoverRaw, InitRaw: d.InitRaw}
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
func (s *Server) SetLogLevel(level string) { s.modern.SetLogLevel(level) }

// Subscribe subscribes the server to a resource's updates: a
// resources/subscribe request to a server of an older revision, a
// subscriptions/listen stream of its own at a 2026-07-28 one (kept until
// Unsubscribe, and opened again after a restart).
func (s *Server) Subscribe(ctx context.Context, uri string, params json.RawMessage) error {
	if !s.State().Modern {
		_, err := s.Request(ctx, mcpmethod.ResourcesSubscribe, params)
		return err
	}
	err := s.modern.Subscribe(ctx, uri, func() *link.Peer {
		s.mu.RLock()
		defer s.mu.RUnlock()
		return s.peer
	})
	if errors.Is(err, revision.ErrNotConnected) {
		return s.unavailable()
	}
	return err
}

// Unsubscribe ends what Subscribe started.
func (s *Server) Unsubscribe(ctx context.Context, uri string, params json.RawMessage) error {
	if !s.State().Modern {
		_, err := s.Request(ctx, mcpmethod.ResourcesUnsubscribe, params)
		return err
	}
	s.modern.Unsubscribe(uri)
	return nil
}

// modernNotification is what a 2026-07-28 server's notification says to
// the relay (revision.ServerSession.Notification); ok is false for what
// goes no further.
func (s *Server) modernNotification(req *jsonrpc.Request) (*jsonrpc.Request, bool) {
	return s.modern.Notification(req)
}
