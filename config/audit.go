package config

import (
	"time"
)

// Audit is the [audit] table: what an audit record keeps of a call.
type Audit struct {
	// MaxArgumentBytes caps the (redacted) arguments kept in a record;
	// the SHA-256 of the whole arguments is kept always.
	MaxArgumentBytes int `toml:"max_argument_bytes"`
	// Sync says when the audit log is fsync'd: "grouped" (within 10 ms
	// of a write; the default) or "always" (before the call goes on).
	Sync string `toml:"sync"`
	// Forward ships every record, as it is written, to a collector
	// ([audit.forward]); nil when the table is absent.
	Forward *Forward `toml:"forward"`
}

// Forward is the [audit.forward] table: where the audit log is shipped
// as it is written, at least once, each record with its sequence number
// and hashes.
type Forward struct {
	// To is "syslog" (RFC 5424 over RELP, TCP or TLS), "otlp" (OTLP/HTTP logs),
	// "splunk" (Splunk HTTP Event Collector) or "file" (OCSF, one event
	// per line).
	To string `toml:"to"`
	// Address is the syslog collector: "relp://HOST:PORT" or
	// "relp+tls://HOST:PORT" (RELP: the collector confirms each record),
	// "tcp://HOST:PORT" or "tls://HOST:PORT" (RFC 5425: no confirmation).
	Address string `toml:"address"`
	// URL is the HTTP collector's endpoint (otlp: .../v1/logs; splunk:
	// .../services/collector/event).
	URL string `toml:"url"`
	// Headers are sent with every HTTP request; ${NAME} in a value is
	// the environment variable NAME (a token kept out of the file).
	Headers map[string]string `toml:"headers"`
	// Path is the file the OCSF events are appended to (to = "file").
	Path string `toml:"path"`
	// CAFile is a PEM file of certificate authorities trusted, besides
	// the system's, for tls:// and https:// collectors.
	CAFile string `toml:"ca_file"`
	// Batch bounds the records sent in one delivery.
	Batch int `toml:"batch"`
	// Start is where a destination that has no cursor yet begins:
	// "oldest" (the whole log, the default) or "newest" (records from now
	// on).
	Start string `toml:"start"`
	// AssumeDeliveredAfter is, for plain syslog (tcp://, tls://), which
	// confirms nothing, how long a connection must stay open after a
	// record before the record counts as delivered (default 30 s).
	AssumeDeliveredAfter Duration `toml:"assume_delivered_after"`
}

// Forward defaults.
const (
	DefaultForwardBatch = 500
	MaxForwardBatch     = 10_000
	// DefaultAssumeDeliveredAfter is longer than haproxy with common
	// settings (timeout connect 5s, retries 3) takes to give up on a
	// collector, and not longer than common idle timeouts.
	DefaultAssumeDeliveredAfter = 30 * time.Second
	MaxAssumeDeliveredAfter     = 10 * time.Minute
)
