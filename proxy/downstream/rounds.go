package downstream

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
)

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
