package revision

import (
	"encoding/json"
	"slices"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Meta is what a 2026-07-28 request's _meta says of its client.
type Meta struct {
	Version      string
	ClientInfo   json.RawMessage // absent: the client did not say
	Capabilities json.RawMessage
	LogLevel     string
}

// ParseMeta reads the 2026-07-28 _meta of a request's params. modern is
// false for a request of an earlier revision (no protocolVersion, or one
// before 2026-07-28). A modern request whose _meta is incomplete or
// malformed is an invalid-params error, one asking for a version aqlguard
// does not speak an UnsupportedProtocolVersion error listing those it
// does (Supported(legacy)).
func ParseMeta(params json.RawMessage, legacy []string) (Meta, bool, error) {
	// Every request passes here, most without _meta, so the first two
	// lookups build nothing.
	rawMeta, _ := rawjson.Lookup(params, "_meta")
	raw, ok := rawjson.Lookup(rawMeta, MetaProtocolVersion)
	if !ok {
		return Meta{}, false, nil
	}
	meta := rawjson.Members(rawMeta)
	var m Meta
	if json.Unmarshal(raw, &m.Version) != nil {
		return m, false, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid _meta field " + MetaProtocolVersion}
	}
	if m.Version < Modern {
		return m, false, nil
	}
	if !slices.Contains(moderns, m.Version) {
		data, _ := json.Marshal(map[string]any{"supported": Supported(legacy), "requested": m.Version})
		return m, true, &jsonrpc.Error{Code: CodeUnsupportedProtocolVersion, Message: "unsupported protocol version " + m.Version, Data: data}
	}
	caps, ok := meta[MetaClientCapabilities]
	if !ok || !IsObject(caps) {
		return m, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing or invalid _meta field " + MetaClientCapabilities}
	}
	m.Capabilities = caps
	if info, ok := meta[MetaClientInfo]; ok {
		if !IsObject(info) {
			return m, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid _meta field " + MetaClientInfo}
		}
		m.ClientInfo = info
	}
	if level, ok := meta[MetaLogLevel]; ok {
		if json.Unmarshal(level, &m.LogLevel) != nil {
			return m, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid _meta field " + MetaLogLevel}
		}
	}
	return m, true, nil
}
