package relay

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// routes remember which server listed which resource and prompt, so that
// a read or a get goes to the server that offered it.
type routes struct {
	mu        sync.Mutex
	resources map[string]string // uri → server
	templates []templateRoute
	prompts   promptTable
}

type templateRoute struct {
	prefix string // the template's literal text before its first expression
	server string
}

// CodeResourceNotFound is MCP's error for a resource no server has.
const CodeResourceNotFound = -32002

// cursorPrefix marks a cursor aqlguard made for a list that spans
// several servers.
const cursorPrefix = "aqlguard:"

type spanCursor struct {
	Server int    `json:"s"`
	Cursor string `json:"c,omitempty"`
}

// list serves resources/list and resources/templates/list (prompts/list
// is listPrompts'). With one server that has resources, the request and
// the answer pass through as they are. With several, pages are the
// servers' own, one server after the other, under a cursor of ours.
func (s *Session) list(ctx context.Context, field string, req *jsonrpc.Request) (json.RawMessage, error) {
	servers := s.serversWith("resources")
	if len(servers) == 0 {
		return json.Marshal(map[string]any{field: []any{}})
	}
	if len(servers) == 1 {
		res, err := s.pool.Forward(ctx, servers[0], req.Method, req.Params)
		if err == nil {
			s.learn(servers[0], field, res)
		}
		return res, err
	}
	return s.spanPages(ctx, req, servers, func(srv *downstream.Server, res json.RawMessage) json.RawMessage {
		s.learn(srv, field, res)
		return res
	})
}

// spanPages serves one page of a list that spans servers: the servers'
// own pages one server after the other, under a cursor of ours that
// names the server and its own cursor. page is what the session makes of
// a server's page before it goes on (learning its routes, renaming ids).
func (s *Session) spanPages(ctx context.Context, req *jsonrpc.Request, servers []*downstream.Server,
	page func(*downstream.Server, json.RawMessage) json.RawMessage) (json.RawMessage, error) {
	cursor, err := exactString(req.Params, "cursor")
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	}
	at := spanCursor{}
	if cursor != "" {
		c, ok := decodeCursor(cursor)
		if !ok || c.Server < 0 || c.Server >= len(servers) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		at = c
	}
	params := req.Params
	if len(params) == 0 || string(params) == "null" {
		params = json.RawMessage(`{}`)
	}
	if at.Cursor != "" {
		params, err = setMember(params, "cursor", at.Cursor)
	} else {
		params, err = deleteMember(params, "cursor")
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	srv := servers[at.Server]
	res, err := s.pool.Forward(ctx, srv, req.Method, params)
	if err != nil {
		return nil, err
	}
	res = page(srv, res)
	nextCursor, _ := exactString(res, "nextCursor")
	var next *spanCursor
	switch {
	case nextCursor != "":
		next = &spanCursor{Server: at.Server, Cursor: nextCursor}
	case at.Server+1 < len(servers):
		next = &spanCursor{Server: at.Server + 1}
	}
	if next == nil {
		return deleteMember(res, "nextCursor")
	}
	return setMember(res, "nextCursor", encodeCursor(*next))
}

func encodeCursor(c spanCursor) string {
	b, _ := json.Marshal(c)
	return cursorPrefix + base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (spanCursor, bool) {
	rest, ok := strings.CutPrefix(s, cursorPrefix)
	if !ok {
		return spanCursor{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(rest)
	if err != nil {
		return spanCursor{}, false
	}
	var c spanCursor
	return c, json.Unmarshal(b, &c) == nil
}

// learn records the routes of one page of a resource list.
func (s *Session) learn(srv *downstream.Server, field string, res json.RawMessage) {
	var page map[string]json.RawMessage
	if json.Unmarshal(res, &page) != nil {
		return
	}
	var items []json.RawMessage
	if json.Unmarshal(page[field], &items) != nil {
		return
	}
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	for _, item := range items {
		var it struct {
			URI         string `json:"uri"`
			URITemplate string `json:"uriTemplate"`
		}
		if json.Unmarshal(item, &it) != nil {
			continue
		}
		switch field {
		case "resources":
			if _, taken := s.routes.resources[it.URI]; !taken {
				s.routes.resources[it.URI] = srv.Name
			}
		case "resourceTemplates":
			prefix, _, _ := strings.Cut(it.URITemplate, "{")
			s.routes.templates = append(s.routes.templates, templateRoute{prefix: prefix, server: srv.Name})
		}
	}
}

// uriOf is the uri of a resources/read, subscribe or unsubscribe, read
// exactly (CheckParams).
func uriOf(req *jsonrpc.Request) (string, error) {
	uri, err := exactString(req.Params, "uri")
	if err != nil {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": " + err.Error()}
	}
	return uri, nil
}

// resourceServer finds the server for a resource URI: the one that listed
// it, else the one whose template's literal prefix is the longest match,
// else the only server with resources.
func (s *Session) resourceServer(ctx context.Context, uri string) (*downstream.Server, error) {
	servers := s.serversWith("resources")
	if len(servers) == 1 {
		return servers[0], nil
	}
	s.routes.mu.Lock()
	name, ok := s.routes.resources[uri]
	if !ok {
		best := -1
		for _, t := range s.routes.templates {
			if strings.HasPrefix(uri, t.prefix) && len(t.prefix) > best {
				name, best = t.server, len(t.prefix)
			}
		}
		ok = best >= 0
	}
	s.routes.mu.Unlock()
	if ok {
		if srv, found := s.pool.Server(name); found {
			return srv, nil
		}
	}
	data, _ := json.Marshal(map[string]string{"uri": uri})
	return nil, &jsonrpc.Error{Code: CodeResourceNotFound, Message: "Resource not found", Data: data}
}

// readResource serves resources/read: route, gate, forward.
func (s *Session) readResource(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	uri, err := uriOf(req)
	if err != nil {
		return nil, err
	}
	srv, err := s.resourceServer(ctx, uri)
	if err != nil {
		return nil, err
	}
	return s.gated(ctx, srv, uri, nil, req.Method, req.Params)
}

// gated puts a read to the Gate, which forwards it if it is allowed.
func (s *Session) gated(ctx context.Context, srv *downstream.Server, name string, args map[string]any, method string, params json.RawMessage) (json.RawMessage, error) {
	forward := s.pool.Forwarder(srv, method, params)
	if s.cfg.Gate == nil {
		return forward(ctx)
	}
	return s.cfg.Gate.Forward(ctx, s, srv.Name, method, name, args, forward)
}

// complete serves completion/complete, routed by what is completed: a
// prompt's argument or a resource template's.
func (s *Session) complete(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	servers := s.serversWith("completions")
	if len(servers) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no server behind aqlguard offers completions"}
	}
	if len(servers) == 1 {
		return s.pool.Forward(ctx, servers[0], req.Method, req.Params)
	}
	p, err := completionRef(req.Params)
	if err != nil {
		return nil, err
	}
	switch p.Ref.Type {
	case "ref/prompt":
		srv, name, err := s.promptServer(ctx, p.Ref.Name)
		if err != nil {
			return nil, err
		}
		params := req.Params
		if name != p.Ref.Name {
			ref, _ := setMember(members(req.Params)["ref"], "name", name)
			if params, err = setMember(params, "ref", ref); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
		}
		return s.pool.Forward(ctx, srv, req.Method, params)
	case "ref/resource":
		srv, err := s.resourceServer(ctx, p.Ref.URI)
		if err != nil {
			return nil, err
		}
		return s.pool.Forward(ctx, srv, req.Method, req.Params)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown completion reference type: " + p.Ref.Type}
}

// prompt is what aqlguard reads of a prompts/get.
type prompt struct {
	Name      string
	Arguments map[string]any
}

// promptParams reads a prompts/get's name and arguments exactly
// (CheckParams refused every other spelling of them).
func promptParams(params json.RawMessage) (prompt, error) {
	v, err := rawjson.Exact(params, "name", "arguments")
	if err != nil {
		return prompt{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: params must be an object"}
	}
	var p prompt
	if v[0] == nil || json.Unmarshal(v[0], &p.Name) != nil {
		return prompt{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: name must be a string"}
	}
	if v[1] != nil && string(v[1]) != "null" {
		if err := json.Unmarshal(v[1], &p.Arguments); err != nil {
			return prompt{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "prompts/get: arguments must be an object"}
		}
	}
	return p, nil
}

// completion is what aqlguard reads of a completion/complete: its ref.
type completion struct {
	Ref struct{ Type, Name, URI string }
}

// completionRef reads a completion/complete's ref exactly.
func completionRef(params json.RawMessage) (completion, error) {
	var c completion
	bad := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: ref must be an object with a string type, and name or uri"}
	v, err := rawjson.Exact(params, "ref")
	if err != nil || v[0] == nil {
		return c, bad
	}
	ref, err := rawjson.Exact(v[0], "type", "name", "uri")
	if err != nil {
		return c, bad
	}
	for i, dst := range []*string{&c.Ref.Type, &c.Ref.Name, &c.Ref.URI} {
		if ref[i] != nil && json.Unmarshal(ref[i], dst) != nil {
			return c, bad
		}
	}
	return c, nil
}
