package revision

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// TestRounds: each retry is the call again with the client's answers
// under the server's names and the server's requestState; a server that
// keeps asking is stopped, and a question no client can carry fails the
// call.
func TestRounds(t *testing.T) {
	ask := func(_ context.Context, asked []rawjson.Member) (map[string]json.RawMessage, error) {
		out := map[string]json.RawMessage{}
		for _, m := range asked {
			out[m.Key] = json.RawMessage(`{"ok":true}`)
		}
		return out, nil
	}
	first := json.RawMessage(`{"resultType":"input_required","inputRequests":{"q":{"method":"roots/list"}},"requestState":"s1"}`)
	var retries []string
	res, err := Rounds(context.Background(), "srv", json.RawMessage(`{"name":"t"}`), first,
		func(_ context.Context, params json.RawMessage) (json.RawMessage, error) {
			retries = append(retries, string(params))
			return json.RawMessage(`{"content":[]}`), nil
		}, ask)
	if err != nil || string(res) != `{"content":[]}` {
		t.Fatalf("Rounds = %s %v", res, err)
	}
	if want := `{"name":"t","inputResponses":{"q":{"ok":true}},"requestState":"s1"}`; len(retries) != 1 || retries[0] != want {
		t.Errorf("retries = %q, want [%s]", retries, want)
	}
	n := 0
	_, err = Rounds(context.Background(), "srv", json.RawMessage(`{}`), first,
		func(context.Context, json.RawMessage) (json.RawMessage, error) { n++; return first, nil }, ask)
	if err == nil || !strings.Contains(err.Error(), "after 32 rounds") || n != maxRounds {
		t.Errorf("a server that keeps asking: %v after %d retries", err, n)
	}
	_, err = Rounds(context.Background(), "srv", json.RawMessage(`{}`), first,
		func(context.Context, json.RawMessage) (json.RawMessage, error) {
			t.Error("retried without answers")
			return nil, nil
		}, nil)
	if err == nil || !strings.Contains(err.Error(), "outside a call that can carry it") {
		t.Errorf("no client: %v", err)
	}
}
