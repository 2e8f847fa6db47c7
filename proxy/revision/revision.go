// Package revision is the translation between the MCP revisions aqlguard
// speaks: 2025-11-25 (and older), the revision its relay and guard work
// in, and 2026-07-28, which has no handshake (SEP-2575). It holds both
// directions: from a 2026-07-28 client (its per-request _meta read,
// results completed for it, server/discover answered) and to a server
// (a request's _meta completed for a 2026-07-28 server, or stripped of
// that revision's keys for an older one; a listen stream's id taken off
// what a server sends). What is pure of the translation lives here, so
// that retiring a revision is deleting this package and its call sites;
// what keeps state (a 2026-07-28 client's exchanges and listen streams in
// proxy/relay, a server's listen streams in proxy/downstream, the HTTP
// front's sessionless POSTs) calls it.
package revision

import (
	"bytes"
	"encoding/json"
	"slices"
)

// Modern is the MCP revision without a handshake: every request carries
// the client's version, identity and capabilities in _meta, the client
// asks for the notifications it wants on a subscriptions/listen stream,
// and a server that needs something from the client (elicitation,
// sampling, roots) answers the call with an input_required result that
// the client fulfils and retries (SEP-2322).
const Modern = "2026-07-28"

// The per-request _meta keys of 2026-07-28.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
)

// JSON-RPC error codes of 2026-07-28.
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// moderns are the handshake-free versions aqlguard speaks.
var moderns = []string{Modern}

// Supported are the versions aqlguard speaks, newest first: the
// handshake-free ones, then legacy (those negotiated with initialize).
func Supported(legacy []string) []string {
	return append(slices.Clone(moderns), legacy...)
}

// IsObject reports whether raw is a JSON object.
func IsObject(raw json.RawMessage) bool {
	return json.Valid(raw) && bytes.HasPrefix(bytes.Trim(raw, " \t\r\n"), []byte("{"))
}
