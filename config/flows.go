package config

// Flows is the [flows] table: what of a session's reading counts, and
// which tools send data out, besides what the tools' effects and the
// shipped profiles say (docs/policy.md, "Flows"). A session that holds
// private data and has read untrusted content asks a human before any
// call sends data out: the "lethal trifecta" of an injected instruction,
// a secret and an exit.
type Flows struct {
	// Private are tools (patterns of names, as deny's: "vault.*",
	// "github.get_file_contents") whose results are private data.
	Private []string `toml:"private"`
	// Untrusted are tools whose results anyone may have written (a web
	// page, an issue, a mail): "mail.*".
	Untrusted []string `toml:"untrusted"`
	// Exits are tools that send data out of the machine besides those
	// whose effects say so.
	Exits []string `toml:"exits"`
	// Secrets is what a secret found in a result becomes: "mark" (the
	// default: the session holds private data; the result is unchanged)
	// or "redact" (also replaced by a keyed digest before the client
	// sees it).
	Secrets string `toml:"secrets"`
	// Injected is what a result with instructions aimed at the assistant
	// becomes: "flag" (the default: a short notice beside it; the
	// content unchanged) or "quarantine" (the content withheld, the
	// notice in its place).
	Injected string `toml:"injected"`
	// ScanBytes bounds the bytes of one result that are scanned (default
	// 1 MiB); what lies past it is said, and counts as untrusted.
	ScanBytes int `toml:"scan_bytes"`
}

// Flow settings.
const (
	FlowSecretsMark        = "mark"
	FlowSecretsRedact      = "redact"
	FlowInjectedFlag       = "flag"
	FlowInjectedQuarantine = "quarantine"

	DefaultFlowScanBytes = 1 << 20
	MaxFlowScanBytes     = 64 << 20
)
