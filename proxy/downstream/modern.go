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
// forbids (revision.ToolsForHTTP).
func (s *Server) validForHTTP(tools []*mcp.Tool, raws []json.RawMessage) ([]*mcp.Tool, []json.RawMessage) {
	return revision.ToolsForHTTP(tools, raws, s.log)
}

// paramBindings are the x-mcp-header bindings of one of the server's
// tools, for the headers of a call to it.
func (s *Server) paramBindings(tool string) []mcpheader.Binding {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for i, t := range s.state.Tools {
		if t.Name == tool {
			return revision.ToolBindings(s.state.ToolsRaw[i])
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

// rounds carries a 2026-07-28 server's input_required answers to the
// client and the client's answers back (revision.Rounds): each retry is
// the call again to srv, each round put to the client through the pool's
// Client; a pool without one (no client session behind it) cannot carry
// a question, and the call fails.
func (p *Pool) rounds(ctx context.Context, srv *Server, method string, params, res json.RawMessage) (json.RawMessage, error) {
	retry := func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		return srv.Request(ctx, method, params)
	}
	var ask func(context.Context, []rawjson.Member) (map[string]json.RawMessage, error)
	if p.opts.Client != nil {
		ask = func(ctx context.Context, asked []rawjson.Member) (map[string]json.RawMessage, error) {
			return p.opts.Client.Answer(ctx, srv, asked)
		}
	}
	return revision.Rounds(ctx, srv.Name, params, res, retry, ask)
}
