package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A Pool forwards its client session's requests (Forward): the session's
// own forwarding state lives here, beside the servers it reaches, so a
// judged call goes from the guard straight to the downstream side:
//
//   - progress tokens: a request's _meta.progressToken is replaced by one
//     of ours for the time of the request, so a server's progress reaches
//     that request and no other (two calls may send the same token; two
//     clients sharing a server may too);
//   - calls in flight: what a server sends while it serves a request (its
//     own requests, its log messages) goes with the oldest client request
//     being forwarded to it (Server.Related);
//   - a 2026-07-28 server's input rounds (rounds.go);
//   - task ids: a tools/call's result names its task as the client sees
//     it (tasks.go).
//
// What only the client side knows (which of a 2026-07-28 client's calls
// a server's question belongs to, how the client is asked) it is asked
// through the Pool's Client.

// Client is the client side of the requests a Pool forwards (a relay
// session). The Pool asks it only about what a server does during a
// request; the request's params never go through it.
type Client interface {
	// Reaches is told, before each request goes to s, that the work of
	// ctx's call reaches s: a 2026-07-28 client's call carries what s
	// asks meanwhile.
	Reaches(ctx context.Context, s *Server)
	// Answer puts one round of a 2026-07-28 server's input requests (the
	// server's names for them, each as it sent it) to the client of
	// ctx's call and returns the answers by the server's names; a
	// request left unanswered is the server's to ask again.
	Answer(ctx context.Context, s *Server, asked []rawjson.Member) (map[string]json.RawMessage, error)
}

// progressRoute is where a server's progress for one of our tokens goes.
type progressRoute struct {
	token json.RawMessage // the client's token, as sent
	// call is the context of the request the token came with: the client
	// side names the request its progress goes to now (link.Related, or
	// the request a 2026-07-28 client's call is waiting on).
	call context.Context
}

// serverCall is a client's request being forwarded to a server: what
// that server sends meanwhile belongs to it (Server.Related).
type serverCall struct {
	srv     *Server
	request jsonrpc.ID
}

// ToolCall is the way on of a tools/call judged as tool with args on
// server: the function the guard calls once it allowed the call
// (guard.Request.Forward). The params are the call's other members
// (base: the client's _meta, members aqlguard does not know; nil for
// none) with the tool's name and the very arguments judged, re-encoded,
// so nothing the guard did not see (a duplicate key, another spelling of
// a number) reaches the server. The server is found by its name when the
// call goes, so a reload in between reaches the server that now has it.
// The result comes back as the server sent it, its task named as the
// client sees it.
func (p *Pool) ToolCall(server, tool string, args map[string]any, base json.RawMessage) func(context.Context) (json.RawMessage, error) {
	return func(ctx context.Context) (json.RawMessage, error) {
		if p == nil {
			return nil, fmt.Errorf("%w: no session to forward %s to", ErrUnavailable, tool)
		}
		srv, ok := p.Server(server)
		if !ok {
			return nil, fmt.Errorf("%w: no server %s", ErrUnavailable, server)
		}
		params, err := toolCallParams(base, tool, args)
		if err != nil {
			return nil, fmt.Errorf("encoding the call to %s on %s: %w", tool, server, err)
		}
		return p.Forward(ctx, srv, mcpmethod.ToolsCall, params)
	}
}

// Forwarder is the way on of a request to srv as the client sent it
// (a resource read, a prompt get): the function the guard calls once it
// allowed it.
func (p *Pool) Forwarder(srv *Server, method string, params json.RawMessage) func(context.Context) (json.RawMessage, error) {
	return func(ctx context.Context) (json.RawMessage, error) {
		return p.Forward(ctx, srv, method, params)
	}
}

// toolCallParams builds the tools/call params: base's members, the tool's
// name and the arguments.
func toolCallParams(base json.RawMessage, tool string, args map[string]any) (json.RawMessage, error) {
	if args == nil {
		args = map[string]any{}
	}
	if len(base) == 0 {
		base = json.RawMessage(`{}`)
	}
	p, err := rawjson.Set(base, "name", tool)
	if err != nil {
		return nil, err
	}
	return rawjson.Set(p, "arguments", args)
}

// Forward sends a client's request to srv, one of the pool's servers,
// with any progress token replaced by one of ours for the time of the
// request, carries a 2026-07-28 server's input rounds for a guarded
// method, and returns the server's answer (a tools/call's task named as
// the client sees it). ctx is the client's request's (link.Related names
// it) or its call's work.
func (p *Pool) Forward(ctx context.Context, srv *Server, method string, params json.RawMessage) (json.RawMessage, error) {
	if p == nil || srv == nil {
		return nil, fmt.Errorf("%w: no session's server to forward %s to", ErrUnavailable, method)
	}
	if p.opts.Client != nil {
		p.opts.Client.Reaches(ctx, srv)
	}
	params, ours := p.mapProgress(ctx, params)
	if ours != "" {
		defer func() {
			p.fmu.Lock()
			delete(p.progress, ours)
			p.fmu.Unlock()
		}()
	}
	if request, _ := link.Related(ctx); request.IsValid() {
		call := serverCall{srv: srv, request: request}
		p.fmu.Lock()
		p.calling = append(p.calling, call)
		p.fmu.Unlock()
		defer func() {
			p.fmu.Lock()
			if i := slices.Index(p.calling, call); i >= 0 {
				p.calling = slices.Delete(p.calling, i, i+1)
			}
			p.fmu.Unlock()
		}()
	}
	res, err := srv.Request(ctx, method, params)
	// A guarded request is the one a 2026-07-28 server may answer
	// input_required (SEP-2322).
	if err == nil && mcpmethod.Lookup(method).Guarded && srv.State().Modern {
		res, err = p.rounds(ctx, srv, method, params, res)
	}
	if err == nil && method == mcpmethod.ToolsCall {
		// A task the client names back by <server>:<id>; every result
		// is read, so that a "Task" is not left for a client to take
		// for a task of another server's.
		if res, err = VisibleTaskIDs(srv.Name, res); err != nil {
			err = TaskSpellingError(srv, err)
		}
	}
	return res, err
}

// mapProgress replaces _meta.progressToken, if any, with a token of ours.
func (p *Pool) mapProgress(ctx context.Context, params json.RawMessage) (json.RawMessage, string) {
	meta, ok := rawjson.Lookup(params, "_meta")
	if !ok {
		return params, ""
	}
	token, ok := rawjson.Lookup(meta, "progressToken")
	if !ok {
		return params, ""
	}
	ours := "aqlguard-p-" + strconv.FormatInt(p.progressN.Add(1), 10)
	newMeta, err := rawjson.Set(meta, "progressToken", ours)
	if err != nil {
		return params, ""
	}
	out, err := rawjson.Set(params, "_meta", newMeta)
	if err != nil {
		return params, ""
	}
	p.fmu.Lock()
	if p.progress == nil {
		p.progress = map[string]progressRoute{}
	}
	p.progress[ours] = progressRoute{token: append(json.RawMessage(nil), token...), call: ctx}
	p.fmu.Unlock()
	return out, ours
}

// Progress maps a progress notification s sent back to the client's own
// token: the params as the client may see them and the context of the
// request that sent the token (whose client side names the request the
// progress goes to). false: the token is none of a request in flight.
func (s *Server) Progress(params json.RawMessage) (json.RawMessage, context.Context, bool) {
	// Read exactly: a token spelled twice may be read either way.
	v, err := rawjson.Exact(params, "progressToken")
	var ours string
	if err != nil || v[0] == nil || json.Unmarshal(v[0], &ours) != nil || ours == "" {
		return nil, nil, false
	}
	p := s.pool
	p.fmu.Lock()
	route, ok := p.progress[ours]
	p.fmu.Unlock()
	if !ok {
		return nil, nil, false
	}
	out, err := rawjson.Set(params, "progressToken", route.token)
	if err != nil {
		return nil, nil, false
	}
	return out, route.call, true
}

// Related names the client's request that what s sends now belongs to:
// a server's request or log message says nothing of the call it is part
// of (2025-11-25 over stdio has no field for it), so it goes with the
// oldest of the client's requests being forwarded to s, as a direct
// server's would go with the request it is serving. An invalid id (no
// such request) sends it on the client's unrelated stream.
func (s *Server) Related() jsonrpc.ID {
	p := s.pool
	p.fmu.Lock()
	defer p.fmu.Unlock()
	for _, c := range p.calling {
		if c.srv == s {
			return c.request
		}
	}
	return jsonrpc.ID{}
}
