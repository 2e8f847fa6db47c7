package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A 2026-07-28 server's input_required answers are carried by the
// session's forwarding (downstream: Pool.Forward's rounds); what the
// client side does for them is here: a round is put to the client (Answer)
// and the servers a call reaches are noted (Reaches), so that a server's
// own request goes with the call it belongs to. A 2026-07-28 client's
// rounds are revision's (revision.Round, revision.Used).

// Answer implements downstream.Client: one round of a 2026-07-28
// server's input requests, put to the client of ctx's call.
func (u *upstream) Answer(ctx context.Context, _ *downstream.Server, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	request, _ := link.Related(ctx)
	return (*Session)(u).ask(ctx, request, asked)
}

// Reaches implements downstream.Client: the work of a 2026-07-28
// client's call that reaches srv carries srv's requests (used).
func (u *upstream) Reaches(ctx context.Context, srv *downstream.Server) { revision.Used(ctx, srv) }

// ask puts one round of a server's input requests to the client and
// returns its answers by the server's names.
func (s *Session) ask(ctx context.Context, request jsonrpc.ID, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	if s.modern.Load() {
		return revision.Round(ctx, asked)
	}
	// A client of an older revision is asked as a server would ask it,
	// on the stream of the request the call belongs to.
	out := make(map[string]json.RawMessage, len(asked))
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for _, m := range asked {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(m.Value, &r) != nil || r.Method == "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("aqlguard: the server's input request %q names no method", m.Key)}
		}
		wg.Go(func() {
			gen := s.roots.generation()
			res, err := s.client.Call(link.WithRelated(ctx, request), r.Method, r.Params)
			if err == nil {
				s.noteRoots(r.Method, gen, res)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
				}
				return
			}
			out[m.Key] = res
		})
	}
	wg.Wait()
	if first != nil {
		if werr, ok := first.(*jsonrpc.Error); ok {
			return nil, werr
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard could not put the server's request to the client: " + first.Error()}
	}
	return out, nil
}
