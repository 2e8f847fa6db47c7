package config

import (
	"regexp"
	"time"
)

// Serve configures `aqlguard serve` (MCP over HTTP).
type Serve struct {
	// Auth is "token" (clients send Authorization: Bearer <token>) or
	// "none" (only where nobody else can connect: a loopback address or a
	// unix socket).
	Auth string `toml:"auth"`
	// TokenFile holds the token; created (0600) with a fresh token on
	// first start. Default <state_dir>/serve.token.
	TokenFile string `toml:"token_file"`
	// MaxSessions bounds the client sessions alive at once; each runs its
	// own downstream servers.
	MaxSessions int `toml:"max_sessions"`
	// SessionIdleTimeout ends a session nobody used for that long.
	SessionIdleTimeout Duration `toml:"session_idle_timeout"`
	// PrincipalIdleTimeout drops the guard of a principal (other than the
	// configured agent) whose last session ended that long ago; what it
	// owes is kept in the state for its next one (docs/deploy.md).
	PrincipalIdleTimeout Duration `toml:"principal_idle_timeout"`
	// MetricsListen is HOST:PORT of a listener of its own for Prometheus
	// metrics (/metrics), /healthz and /readyz; "" for none.
	MetricsListen string `toml:"metrics_listen"`
	// TracesEndpoint is an OTLP/HTTP traces URL that gets a span per
	// call through the guard; "" for none.
	TracesEndpoint string `toml:"traces_endpoint"`
	// Clients are the static clients ([[serve.clients]]): each its own
	// token, known here only by its SHA-256, and its own principal.
	Clients []ServeClient `toml:"clients"`
	// OAuth accepts OAuth 2.1 bearer JWTs from the team's identity
	// provider ([serve.oauth]); nil when the table is absent.
	OAuth *ServeOAuth `toml:"oauth"`
}

// ServeClient is one [[serve.clients]] entry.
type ServeClient struct {
	// Name names the client in the audit log and in `serve token list`.
	Name string `toml:"name"`
	// Agent is the principal the client's calls belong to (blocks, steps,
	// approvals, the failure budget); default Name.
	Agent string `toml:"agent"`
	// TokenSHA256 is the hex SHA-256 of the client's token; the token
	// itself is shown once, by `aqlguard serve token add`, and kept
	// nowhere.
	TokenSHA256 string `toml:"token_sha256"`
	// Created is when the token was made (RFC 3339), for `serve token list`.
	Created string `toml:"created"`
}

// ServeOAuth is the [serve.oauth] table: aqlguard as an OAuth 2.1
// resource server (the MCP authorization spec), accepting JWT access
// tokens its issuer signed for this resource.
type ServeOAuth struct {
	// Issuer is the authorization server's issuer identifier; the
	// token's iss must equal it, and the protected resource metadata
	// names it.
	Issuer string `toml:"issuer"`
	// JWKSURL is where the issuer's signing keys are (https, or http on
	// a loopback address).
	JWKSURL string `toml:"jwks_url"`
	// Resource is this server's canonical URI (RFC 8707/9728), e.g.
	// "https://aqlguard.example.com/mcp": the audience a token must name.
	Resource string `toml:"resource"`
	// Audience, when set, is accepted as the token's audience instead of
	// Resource (issuers that cannot put a URI in aud).
	Audience string `toml:"audience"`
	// Scopes must all be granted (scope or scp claim); default ["mcp"].
	Scopes []string `toml:"scopes"`
	// PrincipalClaim names the claim that is the principal; default "sub".
	PrincipalClaim string `toml:"principal_claim"`
	// ClientClaim names the claim that names the client in the audit log;
	// default "client_id" (RFC 9068), then "azp".
	ClientClaim string `toml:"client_claim"`
	// Algorithms are the signature algorithms accepted; default RS256,
	// ES256 and EdDSA. Only asymmetric ones may be named.
	Algorithms []string `toml:"algorithms"`
}

// DefaultPrincipalIdleTimeout is [serve] principal_idle_timeout's
// default: how long serve keeps the guard of a principal none of whose
// sessions is open.
const DefaultPrincipalIdleTimeout = 10 * time.Minute

// LegacyClient names the client of the single serve token
// (AQLGUARD_SERVE_TOKEN or [serve] token_file) in the audit log; no
// [[serve.clients]] entry may take the name.
const LegacyClient = "serve-token"

// TokenDigestRE is how a [[serve.clients]] token_sha256 is written:
// 64 lowercase hex digits.
var TokenDigestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// SignatureAlgorithms are the JWS algorithms [serve.oauth] algorithms
// may name: asymmetric only, so that no key the issuer publishes can be
// used as an HMAC secret.
var SignatureAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// DefaultSignatureAlgorithms are accepted when algorithms is not set.
var DefaultSignatureAlgorithms = []string{"RS256", "ES256", "EdDSA"}
