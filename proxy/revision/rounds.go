package revision

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

// Rounds carries a 2026-07-28 server's input_required answers (res is
// its first) to the client and the client's answers back, as many rounds
// as the server asks, and returns the server's final answer. The call
// was judged before its first round: each retry (retry sends it to the
// server) is that call again — the same params, judged as they are
// forwarded — with the client's answers under the server's own names and
// the server's requestState, which the client never sees. ask puts one
// round to the client: a 2026-07-28 client answers it on a retry of its
// own request (Round), a client of an older revision is asked each
// request in turn, as the server would have asked it (AskAsRequests);
// without ask (no client session behind the call) a question fails the
// call.
func Rounds(ctx context.Context, server string, params, res json.RawMessage,
	retry func(ctx context.Context, params json.RawMessage) (json.RawMessage, error),
	ask func(ctx context.Context, asked []rawjson.Member) (map[string]json.RawMessage, error)) (json.RawMessage, error) {
	busy := 0
	for round := 1; ; round++ {
		ms := rawjson.Members(res)
		if string(ms["resultType"]) != `"input_required"` {
			return res, nil
		}
		if round > maxRounds {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("aqlguard: the server %s still asked for input after %d rounds", server, maxRounds)}
		}
		asked, err := rawjson.Split(ms["inputRequests"])
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server's inputRequests is not an object"}
		}
		var answers map[string]json.RawMessage
		if len(asked) == 0 {
			if busy++; busy > maxBusyRounds {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
					Message: fmt.Sprintf("aqlguard: the server %s is busy (input_required with nothing to ask, %d times)", server, busy)}
			}
			select {
			case <-time.After(time.Duration(busy) * 200 * time.Millisecond):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		} else if ask == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: the server asked for input outside a call that can carry it"}
		} else if answers, err = ask(ctx, asked); err != nil {
			return nil, err
		}
		next := params
		if len(answers) > 0 {
			next, err = rawjson.Set(next, "inputResponses", answers)
		}
		if state, ok := ms["requestState"]; ok && err == nil {
			next, err = rawjson.Set(next, "requestState", state)
		}
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "aqlguard: " + err.Error()}
		}
		if res, err = retry(ctx, next); err != nil {
			return nil, err
		}
	}
}
