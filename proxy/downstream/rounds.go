package downstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
// client never sees. The client is asked through the pool's Client: a
// 2026-07-28 client answers each round on a retry of its own request, a
// client of an older revision is asked each request in turn, as the
// server would have asked it.
func (p *Pool) rounds(ctx context.Context, srv *Server, method string, params, res json.RawMessage) (json.RawMessage, error) {
	busy := 0
	for round := 1; ; round++ {
		ms := rawjson.Members(res)
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
		} else if answers, err = p.answer(ctx, srv, asked); err != nil {
			return nil, err
		}
		retry := params
		if len(answers) > 0 {
			retry, err = rawjson.Set(retry, "inputResponses", answers)
		}
		if state, ok := ms["requestState"]; ok && err == nil {
			retry, err = rawjson.Set(retry, "requestState", state)
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: " + err.Error()}
		}
		if res, err = srv.Request(ctx, method, retry); err != nil {
			return nil, err
		}
	}
}

// answer asks the pool's client one round; a pool without one (no client
// session behind it) cannot carry a question, and the call fails.
func (p *Pool) answer(ctx context.Context, srv *Server, asked []rawjson.Member) (map[string]json.RawMessage, error) {
	if p.opts.Client == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server asked for input outside a call that can carry it"}
	}
	return p.opts.Client.Answer(ctx, srv, asked)
}
