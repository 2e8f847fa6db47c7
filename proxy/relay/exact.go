package relay

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// What aqlguard judges or routes a request by must be what the server
// runs: the relay forwards the client's params as sent, and a server may
// read a member that aqlguard did not ("URI" beside "uri" is one member
// to encoding/json, two to JSON.parse). So a client request whose params
// hold a member spelled twice (repeated, or in two cases) anywhere, or a
// judged member only in another case, is refused before anything reads
// it, and every reader after that reads members by their exact names.

// What is judged of each method's params is the method table's
// (mcpmethod.Method.Judged and Inside). Every request's _meta and a
// 2026-07-28 retry's members are judged too.

// everyRequest are the members judged in every request's params.
var everyRequest = []string{"_meta", "requestState", "inputResponses"}

// metaJudged are the members of _meta that aqlguard reads.
var metaJudged = []string{"progressToken", revision.MetaProtocolVersion, revision.MetaClientInfo, revision.MetaClientCapabilities, revision.MetaLogLevel}

// CheckParams refuses, with -32602, a request whose params aqlguard would
// read one way and a server another (see above). The HTTP front calls it
// before it compares headers with the body.
func CheckParams(method string, params json.RawMessage) *jsonrpc.Error {
	if len(params) == 0 {
		return nil
	}
	// One validation; every read below walks what it accepted.
	if !json.Valid(params) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params must be a JSON object"}
	}
	if err := rawjson.UnambiguousValid(params); err != nil {
		return ambiguous(method, err)
	}
	m := mcpmethod.Lookup(method)
	names := append(m.Judged[:len(m.Judged):len(m.Judged)], everyRequest...)
	values, err := rawjson.ExactValid(params, names...)
	if err != nil {
		return ambiguous(method, err)
	}
	meta := values[len(values)-len(everyRequest)]
	if _, err := rawjson.ExactValid(meta, metaJudged...); err != nil {
		return ambiguous(method, err)
	}
	if m.Inside != nil && values[0] != nil {
		if _, err := rawjson.ExactValid(values[0], m.Inside...); err != nil {
			return ambiguous(method, err)
		}
	}
	return nil
}

func ambiguous(method string, err error) *jsonrpc.Error {
	var amb *rawjson.AmbiguousError
	if !errors.As(err, &amb) {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": params must be a JSON object"}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s: %s; send each member once, spelled as the protocol spells it", method, amb)}
}

// exactString reads the string member name of params exactly (CheckParams
// has refused other spellings): "" when it is absent, an error when it is
// not a string.
func exactString(params json.RawMessage, name string) (string, error) {
	v, err := rawjson.Exact(params, name)
	if err != nil {
		return "", err
	}
	if v[0] == nil {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v[0], &s); err != nil {
		return "", fmt.Errorf("%s must be a string", name)
	}
	return s, nil
}
