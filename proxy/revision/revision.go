// Package revision is MCP 2026-07-28 in aqlguard, beside 2025-11-25
// (and older), the revision its relay and guard work in; 2026-07-28 has
// no handshake (SEP-2575). It holds both directions, the translation and
// the state each side keeps for that revision:
//
//   - from a 2026-07-28 client (ClientSession): its per-request _meta
//     read, server/discover answered, results completed for it, its
//     calls that need its input (Exchanges: input_required rounds,
//     requestState) and its subscriptions/listen streams;
//   - over HTTP (ServePost, Conn): its sessionless POSTs, their headers
//     checked (SEP-2243), the POSTs of one client sharing one session;
//   - to a 2026-07-28 server (ServerSession, Rounds): a request's _meta
//     completed (or stripped of the revision's keys for an older
//     server), discovery, the listen streams kept open at it, its
//     input_required rounds carried to the client and back.
//
// What is the relay's, the downstream side's or the HTTP front's (a
// session, a server's connection, the front's session table) they hand
// in through small interfaces declared here (ClientHost, ListenHost,
// PostHost) or functions; this package imports none of them. Retiring
// 2026-07-28 is deleting this package and its call sites (relay and
// downstream modern.go, httpfront stateless.go, and the branches on
// State.Modern and Session.modern).
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
