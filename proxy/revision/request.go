package revision

import (
	"encoding/json"
	"strconv"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What a 2026-07-28 client's requests carry that an older one's do not:
// a retry's answers (SEP-2322) and the notifications a listen stream
// asks for.

// Retry splits a 2026-07-28 retry's requestState and inputResponses off the
// params. inputResponses must be an object of objects; keys that name no
// pending request are ignored.
func Retry(params json.RawMessage) (state string, responses map[string]json.RawMessage, rest json.RawMessage, err error) {
	ms := rawjson.Members(params)
	rest = params
	if raw, ok := ms["requestState"]; ok {
		if json.Unmarshal(raw, &state) != nil {
			return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestState must be a string"}
		}
		if rest, err = rawjson.Delete(rest, "requestState"); err != nil {
			return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
	}
	if raw, ok := ms["inputResponses"]; ok {
		if !IsObject(raw) {
			return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses must be an object"}
		}
		responses = rawjson.Members(raw)
		for id, r := range responses {
			if !IsObject(r) {
				return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "inputResponses[" + strconv.Quote(id) + "] must be an object"}
			}
		}
		if rest, err = rawjson.Delete(rest, "inputResponses"); err != nil {
			return "", nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
	}
	return state, responses, rest, nil
}

// ListenRequest is what a subscriptions/listen asks for.
type ListenRequest struct {
	Notifications struct {
		Tools, Prompts, Resources bool
		URIs                      []string
	}
}

// Listen reads a subscriptions/listen's notifications exactly
// (relay.CheckParams refused other spellings of them).
func Listen(params json.RawMessage) (ListenRequest, error) {
	var p ListenRequest
	bad := &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "subscriptions/listen: missing required 'notifications' field"}
	v, err := rawjson.Exact(params, "notifications")
	if err != nil || v[0] == nil || !IsObject(v[0]) {
		return p, bad
	}
	n, err := rawjson.Exact(v[0], "toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions")
	if err != nil {
		return p, bad
	}
	for i, dst := range []*bool{&p.Notifications.Tools, &p.Notifications.Prompts, &p.Notifications.Resources} {
		if n[i] != nil && json.Unmarshal(n[i], dst) != nil {
			return p, bad
		}
	}
	if n[3] != nil && json.Unmarshal(n[3], &p.Notifications.URIs) != nil {
		return p, bad
	}
	return p, nil
}
