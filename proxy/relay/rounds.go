package relay

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxRounds bounds how often aqlguard retries one call for a server that
// keeps asking; maxBusyRounds how often it retries one that asks nothing
// (input_required without inputRequests: it is busy, retry later).
const (
	maxRounds     = 32
	maxBusyRounds = 3
)

// rounds carries a 2026-07-28 server's input_required answers to the
// client and the client's answers back, as many rounds as the server
// asks, and returns the server's final answer. The call was judged
// before its first round: each retry is that call again (the same
// params, judged as they are forwarded) with the client's answers under
// the server's own names and the server's requestState, which the
// client never sees. A 2026-07-28 client answers each round on a retry
// of its own request (see exchange); a client of an older revision is
// asked each request in turn, as the server would have asked it.
func (s *Session) rounds(ctx context.Context, srv *downstream.Server, request jsonrpc.ID, method string, params, res json.RawMessage) (json.RawMessage, error) {
	busy := 0
	for round := 1; ; round++ {
		ms := members(res)
		if string(ms["resultType"]) != `"input_required"` {
			return res, nil
		}
		if round > maxRounds {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("aqlguard: the server %s still asked for input after %d rounds", srv.Name, maxRounds)}
		}
		asked, err := rawjson.Split(ms["inputRequests"])
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server's inputRequests is not an object"}
		}
		var answers map[string]json.RawMessage
		if len(asked) == 0 {
			if busy++; busy > maxBusyRounds {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("aqlguard: the server %s is busy (input_required with nothing to ask, %d times)", srv.Name, busy)}
			}
			select {
			case <-time.After(time.Duration(busy) * 200 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else if answers, err = s.ask(ctx, request, asked); err != nil {
			return nil, err
		}
		retry := params
		if len(answers) > 0 {
			retry, err = setMember(retry, "inputResponses", answers)
		}
		if state, ok := ms["requestState"]; ok && err == nil {
			retry, err = setMember(retry, "requestState", state)
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: " + err.Error()}
		}
		if res, err = srv.Request(ctx, method, retry); err != nil {
			return nil, err
		}
	}
}

// ask puts one round of a server's input requests to the client and
// returns its answers by the server's names.
func (s *Session) ask(ctx context.Context, request jsonrpc.ID, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	if s.modern.Load() {
		x, ok := ctx.Value(exchangeKey{}).(*exchange)
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server asked for input outside a call that can carry it"}
		}
		return x.round(ctx, asked)
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

// round makes a server's input requests the exchange's next round, under
// the server's own names, and waits for the client's retry: what it
// answered comes back (a request it left unanswered is the server's to
// ask again).
func (x *exchange) round(ctx context.Context, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	irs := make([]*inputRequest, 0, len(asked))
	for _, m := range asked {
		irs = append(irs, &inputRequest{id: m.Key, raw: m.Value, partial: true, answer: make(chan json.RawMessage, 1)})
	}
	x.mu.Lock()
	x.waiting = append(x.waiting, irs...)
	x.mu.Unlock()
	select {
	case x.asked <- struct{}{}:
	default:
	}
	out := map[string]json.RawMessage{}
	for _, ir := range irs {
		select {
		case r := <-ir.answer:
			if r != nil {
				out[ir.id] = r
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, nil
}
