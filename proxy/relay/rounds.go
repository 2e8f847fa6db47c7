package relay

import (
	"context"
	"encoding/json"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
)

// A 2026-07-28 server's input_required answers are carried by the
// session's forwarding (downstream: Pool.Forward's rounds); what the
// client side does for them is here: a round is put to the client (Answer)
// and the servers a call reaches are noted (Reaches), so that a server's
// own request goes with the call it belongs to. Both are revision's.

// Answer implements downstream.Client: one round of a 2026-07-28
// server's input requests, put to the client of ctx's call: a
// 2026-07-28 client's as its call's next input_required round, an older
// client's as the server would have asked it, on the stream of the
// request the call belongs to.
func (u *upstream) Answer(ctx context.Context, _ *downstream.Server, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	s := (*Session)(u)
	if s.modern.Load() {
		return revision.Round(ctx, asked)
	}
	request, _ := link.Related(ctx)
	return revision.AskAsRequests(ctx, asked, func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		gen := s.roots.generation()
		res, err := s.client.Call(link.WithRelated(ctx, request), method, params)
		if err == nil {
			s.noteRoots(method, gen, res)
		}
		return res, err
	})
}

// Reaches implements downstream.Client: the work of a 2026-07-28
// client's call that reaches srv carries srv's requests (revision.Used).
func (u *upstream) Reaches(ctx context.Context, srv *downstream.Server) { revision.Used(ctx, srv) }
