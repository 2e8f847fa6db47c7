package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// clientHandler serves the client's requests and notifications.
type clientHandler Session

// Arrived implements link.Arrivals: initialize is counted in the order
// the client sent it.
func (h *clientHandler) Arrived(req *jsonrpc.Request) {
	if req.Method == mcpmethod.Initialize {
		(*Session)(h).initArrived()
	}
}

func (h *clientHandler) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	s := (*Session)(h)
	if req.Method == mcpmethod.Initialize {
		defer s.initReturned()
	}
	if werr := CheckParams(req.Method, req.Params); werr != nil {
		return nil, werr
	}
	m, modern, err := revision.ParseMeta(req.Params, s.cfg.ProtocolVersions)
	if err != nil {
		return nil, err
	}
	if modern {
		return s.modernClient.Request(ctx, req, m)
	}
	if s.modern.Load() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: "missing _meta field " + revision.MetaProtocolVersion + ": this session speaks " + revision.Modern}
	}
	if !mcpmethod.Lookup(req.Method).Before2026 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound,
			Message: req.Method + " is part of protocol " + revision.Modern + "; send its _meta, or initialize"}
	}
	switch req.Method {
	case mcpmethod.Initialize:
		return s.initialize(ctx, req.Params)
	case mcpmethod.Ping:
		return json.RawMessage(`{}`), nil
	}
	if !s.started() {
		if err := s.awaitInitialize(ctx); err != nil {
			return nil, err
		}
		if !s.started() {
			return nil, errNotReady
		}
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	return s.serve(ctx, req)
}

// serve serves a request of a running session, of either revision, by
// its route in the method table.
func (s *Session) serve(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	m := mcpmethod.Lookup(req.Method)
	switch m.Route {
	case mcpmethod.ModeList:
		tools, err := s.tools.ListTools(ctx)
		if err != nil {
			return nil, err
		}
		if tools == nil {
			tools = []json.RawMessage{}
		}
		return json.Marshal(map[string]any{"tools": tools})
	case mcpmethod.ModeCall:
		call, err := s.readToolCall(req.Params)
		if err != nil {
			return nil, err
		}
		return s.tools.CallTool(ctx, call)
	case mcpmethod.Merged:
		return s.list(ctx, m.Items, req)
	case mcpmethod.PromptList:
		return s.listPrompts(ctx, req)
	case mcpmethod.ByURI:
		return s.readResource(ctx, req)
	case mcpmethod.Subscription:
		uri, err := uriOf(req)
		if err != nil {
			return nil, err
		}
		return s.subscribeOnce(ctx, req, uri)
	case mcpmethod.ByPrompt:
		return s.getPrompt(ctx, req)
	case mcpmethod.ByRef:
		return s.complete(ctx, req)
	case mcpmethod.EveryServer:
		return s.setLevel(ctx, req)
	case mcpmethod.TaskList, mcpmethod.ByTask:
		if s.tasksServed() {
			if m.Route == mcpmethod.TaskList {
				return s.listTasks(ctx, req)
			}
			return s.taskRequest(ctx, req)
		}
		// No server does tasks: the method is as unknown as it is to them.
	}
	// A method aqlguard does not know: with one server it is the server's
	// business (a newer revision, an extension); with several, nobody's.
	if servers := s.pool.Servers(); len(servers) == 1 {
		return s.pool.Forward(ctx, servers[0], req.Method, req.Params)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

func (h *clientHandler) Notification(ctx context.Context, req *jsonrpc.Request) {
	s := (*Session)(h)
	switch req.Method {
	case "notifications/initialized":
		return // each server got its own when its handshake ended
	case link.MethodCancelled:
		return // the link cancelled the request; our own cancellation follows downstream
	case "notifications/roots/list_changed":
		s.roots.forget() // and every server hears of it, below
	}
	if !s.started() {
		return
	}
	select {
	case <-s.ready:
	default:
		return // a notification during initialize has nobody to go to yet
	}
	if s.pool == nil {
		return
	}
	// roots/list_changed and anything newer: every server may care.
	for _, srv := range s.readyServers() {
		if err := srv.Notify(ctx, req.Method, req.Params); err != nil {
			s.log.Debug("a notification could not be passed on", "server", srv.Label(), "method", req.Method, "err", err)
		}
	}
}

// upstream receives what the session's servers send on their own.
type upstream Session

// ServerRequest passes a server's request (sampling, elicitation, roots)
// to the client and its answer back.
func (u *upstream) ServerRequest(ctx context.Context, srv *downstream.Server, req *jsonrpc.Request) (json.RawMessage, error) {
	s := (*Session)(u)
	if s.modern.Load() {
		gen := s.roots.generation()
		res, err := s.modernClient.Ask(ctx, srv, req)
		if err == nil {
			s.noteRoots(req.Method, gen, res)
		}
		return res, err
	}
	params, err := downstream.VisibleTaskIDs(srv.Name, req.Params)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "aqlguard refuses a request whose task ids are spelled ambiguously: " + err.Error()}
	}
	gen := s.roots.generation()
	res, err := s.client.Call(link.WithRelated(ctx, srv.Related()), req.Method, params)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("aqlguard could not pass %s to the client: %v", req.Method, err)}
	}
	s.noteRoots(req.Method, gen, res)
	return res, nil
}

// ServerNotification passes a server's notification to the client:
// progress to the request it belongs to, a tools change through the
// mode, everything else as it is.
func (u *upstream) ServerNotification(ctx context.Context, srv *downstream.Server, req *jsonrpc.Request) {
	s := (*Session)(u)
	if s.modern.Load() {
		// Only aqlguard tags what goes on the client's listen streams.
		if params, tagged := revision.Untagged(req.Params); tagged {
			req = &jsonrpc.Request{Method: req.Method, Params: params}
		}
	}
	// Whatever a server sends may belong to one of its tasks (the
	// related-task _meta): the client sees the task by the id it knows.
	params, err := downstream.VisibleTaskIDs(srv.Name, req.Params)
	if err != nil {
		s.log.Debug("a notification whose task ids are spelled ambiguously was dropped", "server", srv.Label(), "method", req.Method)
		return
	}
	req = &jsonrpc.Request{Method: req.Method, Params: params}
	switch req.Method {
	case link.MethodCancelled:
		return // the server cancelled its request to the client: the link cancelled our call
	case "notifications/progress":
		params, call, ok := srv.Progress(req.Params)
		var request jsonrpc.ID
		if ok {
			request, ok = requestOf(call)
		}
		if !ok {
			s.log.Debug("progress for no request of this session", "server", srv.Label())
			return
		}
		// To the request it belongs to, and no other: clients alike share
		// a session over HTTP, and their tokens may well be the same.
		s.sendClient(link.WithRelated(ctx, request), req.Method, params)
		return
	case "notifications/tools/list_changed":
		srv.Refresh() // coalesced and paced; ToolsRefreshed follows each refresh
		return
	case "notifications/prompts/list_changed":
		s.routes.forgetPrompts()
	case "notifications/resources/updated":
		uri, err := exactString(req.Params, "uri")
		if err != nil || !s.subs.from(srv.Name, uri) {
			s.log.Debug("a resource update nobody asked this server for", "server", srv.Label())
			return
		}
	case "notifications/message":
		if !s.modern.Load() {
			s.sendClient(link.WithRelated(ctx, srv.Related()), req.Method, req.Params)
			return
		}
	}
	s.NotifyClient(req.Method, req.Params)
}

// ServerRestarted tells the mode a server is back; its tools may differ.
func (u *upstream) ServerRestarted(srv *downstream.Server) {
	s := (*Session)(u)
	select {
	case <-s.ready:
	default:
		return
	}
	s.routes.forgetPrompts() // its prompts may differ too
	if s.tools != nil && s.tools.ToolsChanged(context.Background(), srv) {
		s.NotifyClient("notifications/tools/list_changed", json.RawMessage(`{}`))
	}
}

// ToolsRefreshed tells the mode that a refresh the server asked for is
// done (its tools, vetted, are the server's state), and the client.
func (u *upstream) ToolsRefreshed(srv *downstream.Server) {
	s := (*Session)(u)
	if err := s.waitReady(s.life); err != nil {
		return
	}
	if s.tools.ToolsChanged(s.life, srv) {
		s.NotifyClient("notifications/tools/list_changed", json.RawMessage(`{}`))
	}
}

// requestOf is the client's request that what belongs to a call goes to
// now (its progress): the request the call came with, or for a
// 2026-07-28 client's call the retry waiting for its work (none while
// the call is parked).
func requestOf(call context.Context) (jsonrpc.ID, bool) {
	if request, ok, inExchange := revision.WaitingRequest(call); inExchange {
		return request, ok
	}
	request, _ := link.Related(call)
	return request, true
}

// setLevel passes logging/setLevel on to every server that logs.
func (s *Session) setLevel(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	servers := s.serversWith("logging")
	if len(servers) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no server behind aqlguard supports logging"}
	}
	var firstErr error
	for _, srv := range servers {
		if srv.State().Modern { // 2026-07-28 has no setLevel: the level goes with each request
			level, _ := exactString(req.Params, "level")
			srv.SetLogLevel(level)
			continue
		}
		if _, err := s.pool.Forward(ctx, srv, req.Method, req.Params); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if len(servers) == 1 && firstErr != nil {
		return nil, firstErr
	}
	return json.RawMessage(`{}`), nil
}
