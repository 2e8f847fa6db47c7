package relay

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Prompts of several servers are named by the rule tools follow
// (names.Shown): a prompt's own name, or <server>__<name> where another
// server's prompt has that name too (both are then prefixed, and a
// prompt whose own name is such a prefixed name is prefixed in turn).
// The names depend only on what the servers offer, never on what the
// client asked first. The rule needs every server's prompts at once, so
// with several servers that offer prompts a prompts/list gathers every
// page of each and answers with one page, and a prompts/get (or a
// completion of a prompt's argument) of a name the session does not
// know lists them first. A name two servers share is nobody's.
//
// With one server the list and the get pass through as they are.

// promptTable is what the session knows of its servers' prompts.
type promptTable struct {
	// routes are the names the client sees → server and the server's
	// own name (nil until gathered).
	routes map[string]promptRoute
	// era moves with every forget: a gathering that began before one
	// does not install what it read.
	era uint64
	// pages are the names of a single server's pages listed so far, from
	// its first page on (promptsPage).
	pages []string
}

type promptRoute struct {
	server, name string
}

// forgetPrompts drops what the session knew of its servers' prompts
// (a list changed, a server restarted or was reloaded).
func (r *routes) forgetPrompts() {
	r.mu.Lock()
	r.prompts = promptTable{era: r.prompts.era + 1}
	r.mu.Unlock()
}

// maxPromptPages bounds the pages read of one server's prompts: a
// server that hands out cursors forever does not hold a list up.
const maxPromptPages = 64

// listedPrompt is one prompt of a server's listing, as sent, and the
// name the client sees.
type listedPrompt struct {
	server, name, shown string
	raw                 json.RawMessage
}

// listPrompts serves prompts/list.
func (s *Session) listPrompts(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	servers := s.serversWith("prompts")
	switch len(servers) {
	case 0:
		return json.Marshal(map[string]any{"prompts": []any{}})
	case 1:
		res, err := s.pool.Forward(ctx, servers[0], req.Method, req.Params)
		if err == nil {
			cursor, _ := exactString(req.Params, "cursor")
			s.promptsPage(servers[0], cursor, res)
		}
		return res, err
	}
	if cursor, err := exactString(req.Params, "cursor"); err != nil || cursor != "" {
		// Every prompt is on the one page aqlguard gives: no cursor of
		// ours exists.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
	}
	listed, err := s.gatherPrompts(ctx, servers)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(listed))
	for i, p := range listed {
		items[i] = p.raw
		if p.shown != p.name {
			if renamed, err := setMember(p.raw, "name", p.shown); err == nil {
				items[i] = renamed
			}
		}
	}
	return json.Marshal(map[string]any{"prompts": items})
}

// gatherPrompts lists every page of each server's prompts, names them
// (names.Shown) and makes that the session's table. A server whose
// listing fails is left out (logged), as a server that is not ready is:
// its prompts cannot be got anyway.
func (s *Session) gatherPrompts(ctx context.Context, servers []*downstream.Server) ([]listedPrompt, error) {
	s.routes.mu.Lock()
	era := s.routes.prompts.era
	s.routes.mu.Unlock()
	var all []listedPrompt
	for _, srv := range servers {
		got, err := s.serverPrompts(ctx, srv)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			s.log.Warn("a server's prompts could not be listed; they are left out", "server", srv.Label(), "err", err)
			continue
		}
		all = append(all, got...)
		if s.cfg.PromptsListed != nil {
			own := make([]string, len(got))
			for i, p := range got {
				own[i] = p.name
			}
			s.cfg.PromptsListed(srv.Name, own)
		}
	}
	items := make([]names.Item, len(all))
	for i, p := range all {
		items[i] = names.Item{Server: p.server, Name: p.name}
	}
	shown := names.Shown(items, nil)
	table := make(map[string]promptRoute, len(all))
	for i, p := range all {
		all[i].shown = shown[i]
		if _, taken := table[shown[i]]; !taken { // a server listing one prompt twice: its first
			table[shown[i]] = promptRoute{server: p.server, name: p.name}
		}
	}
	s.routes.mu.Lock()
	if s.routes.prompts.era == era {
		s.routes.prompts.routes = table
	}
	s.routes.mu.Unlock()
	return all, nil
}

// serverPrompts lists every page of one server's prompts.
func (s *Session) serverPrompts(ctx context.Context, srv *downstream.Server) ([]listedPrompt, error) {
	var out []listedPrompt
	cursor := ""
	for range maxPromptPages {
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params, _ = setMember(params, "cursor", cursor)
		}
		res, err := s.pool.Forward(ctx, srv, mcpmethod.PromptsList, params)
		if err != nil {
			return nil, err
		}
		var page struct {
			Prompts    []json.RawMessage `json:"prompts"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return nil, err
		}
		for _, raw := range page.Prompts {
			var p struct {
				Name string `json:"name"`
			}
			if json.Unmarshal(raw, &p) != nil {
				continue
			}
			out = append(out, listedPrompt{server: srv.Name, name: p.Name, raw: raw})
		}
		if page.NextCursor == "" || page.NextCursor == cursor {
			return out, nil
		}
		cursor = page.NextCursor
	}
	s.log.Warn("a server's prompts run past the pages aqlguard reads; the rest are left out", "server", srv.Label(), "pages", maxPromptPages)
	return out, nil
}

// promptsPage follows the pages of a single server's prompts the client
// lists, from its first, and tells Config.PromptsListed their names once
// the last page is in.
func (s *Session) promptsPage(srv *downstream.Server, cursor string, res json.RawMessage) {
	if s.cfg.PromptsListed == nil {
		return
	}
	var page struct {
		Prompts []struct {
			Name string `json:"name"`
		} `json:"prompts"`
		NextCursor string `json:"nextCursor"`
	}
	if json.Unmarshal(res, &page) != nil {
		return
	}
	s.routes.mu.Lock()
	if cursor == "" {
		s.routes.prompts.pages = nil
	}
	for _, p := range page.Prompts {
		s.routes.prompts.pages = append(s.routes.prompts.pages, p.Name)
	}
	var done []string
	if page.NextCursor == "" {
		done = s.routes.prompts.pages
		s.routes.prompts.pages = nil
	}
	s.routes.mu.Unlock()
	if page.NextCursor == "" {
		s.cfg.PromptsListed(srv.Name, done)
	}
}

// getPrompt serves prompts/get: route (undoing a rename), gate, forward.
func (s *Session) getPrompt(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	p, err := promptParams(req.Params)
	if err != nil {
		return nil, err
	}
	srv, name, err := s.promptServer(ctx, p.Name)
	if err != nil {
		return nil, err
	}
	params := req.Params
	if name != p.Name {
		if params, err = setMember(params, "name", name); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
	}
	return s.gated(ctx, srv, name, p.Arguments, req.Method, params)
}

// promptServer finds the server of a prompt the client names, and the
// server's own name for it: with several servers, by the session's
// table, gathered first if the name is not in it (the session has none
// yet, or a server added a prompt and did not say).
func (s *Session) promptServer(ctx context.Context, shown string) (*downstream.Server, string, error) {
	servers := s.serversWith("prompts")
	if len(servers) == 1 {
		return servers[0], shown, nil
	}
	unknown := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown prompt: " + shown}
	if len(servers) == 0 {
		return nil, "", unknown
	}
	lookup := func() (promptRoute, bool) {
		s.routes.mu.Lock()
		defer s.routes.mu.Unlock()
		r, ok := s.routes.prompts.routes[shown]
		return r, ok
	}
	r, ok := lookup()
	if !ok {
		if _, err := s.gatherPrompts(ctx, servers); err != nil {
			return nil, "", err
		}
		if r, ok = lookup(); !ok {
			return nil, "", unknown
		}
	}
	srv, found := s.pool.Server(r.server)
	if !found {
		return nil, "", unknown
	}
	return srv, r.name, nil
}
