package policy

import (
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/policy/paths"
)

// Config is one aqlguard configuration file, decoded and checked.
// Every field mirrors a documented key in config.example.toml.
type Config struct {
	// Mode selects the endpoint surface: semantic, single, all or passthrough.
	Mode string `toml:"mode"`
	// Agent names the principal that owns blocks, step counters and audit
	// entries. Set by the human (config or --agent), never by the model.
	Agent string `toml:"agent"`
	// StateDir holds the bbolt database (default $XDG_STATE_HOME/aqlguard).
	StateDir string `toml:"state_dir"`
	// StateLockTimeout bounds how long a call waits for the state database
	// when another aqlguard process holds it; then the call fails closed.
	StateLockTimeout Duration `toml:"state_lock_timeout"`

	Limits  Limits                   `toml:"limits"`
	Audit   Audit                    `toml:"audit"`
	Safety  Safety                   `toml:"safety"`
	Flows   Flows                    `toml:"flows"`
	Agents  map[string]AgentOverride `toml:"agents"`
	Verify  Verify                   `toml:"verify"`
	Serve   Serve                    `toml:"serve"`
	State   State                    `toml:"state"`
	Servers []Server                 `toml:"servers"`

	// Locked, in the managed policy file only, lists the keys the user's
	// file may not set at all ("safety.auto_approve", "verify",
	// "servers"); see managed.go.
	Locked []string `toml:"locked"`

	// Managed is the managed policy layer under this configuration (nil
	// without one): Overlay sets it, and Compile reads its rules as the
	// managed layer's, which nothing in this file can weaken.
	Managed *Config `toml:"-"`

	// NotInEffect are the settings of the user's file that the managed
	// layer does not let take effect (Overlay), each with its line.
	NotInEffect Errors `toml:"-"`

	// Path is the file this config was read from ("" for embedded defaults).
	Path string `toml:"-"`
	// lines maps key paths to their line in the file, for Lint.
	lines map[string]int
}

// State is the [state] table: which backend keeps blocks, challenges,
// approvals, pins and the audit chain (docs/state.md).
type State struct {
	// Backend is "bbolt" (the default: a database in state_dir, shared
	// by the aqlguard processes of one machine) or "postgres" (one
	// database shared by replicas of `aqlguard serve`).
	Backend string `toml:"backend"`
	// DSN is the PostgreSQL connection string (libpq form or URL). The
	// environment variable AQLGUARD_STATE_DSN, when set, is used
	// instead, so that a password need not be in the file.
	DSN string `toml:"dsn"`
	// Schema holds aqlguard's tables (default "aqlguard"): one database
	// can hold several states.
	Schema string `toml:"schema"`
}

// The state backends.
const (
	StateBolt     = "bbolt"
	StatePostgres = "postgres"
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

// Limits are the MCP-AQL payload limits (spec 4.7.5), the [limits]
// table. Zero means default. The protocol core reads them as aql.Limits
// (this type); policy, and the guard that reads it, know nothing of the
// protocol's wire.
type Limits struct {
	MaxRequestSize   int64 `json:"max_request_size" toml:"max_request_size"`
	MaxResponseSize  int64 `json:"max_response_size" toml:"max_response_size"`
	MaxStringLength  int64 `json:"max_string_length" toml:"max_string_length"`
	MaxArrayElements int   `json:"max_array_elements" toml:"max_array_elements"`
	MaxNestingDepth  int   `json:"max_nesting_depth" toml:"max_nesting_depth"`
}

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

// Safety is the [safety] table: the evaluator's configuration.
type Safety struct {
	// Inherit says whether the shipped rules (default.toml's lists) are
	// in force beneath this file's: true (the default, also when nil)
	// adds this file's lists to them; false starts from nothing, only
	// what the file says (see shipped.go).
	Inherit            *bool  `toml:"inherit"`
	Loop               string `toml:"loop"`
	MaxAutonomousSteps int    `toml:"max_autonomous_steps"`
	RiskTolerance      string `toml:"risk_tolerance"`
	// InterpreterCode says what becomes of code handed to an interpreter
	// in a shell argument: "ask" (the default), "deny", "refuse" or
	// "allow".
	InterpreterCode string `toml:"interpreter_code"`
	// Deny blocks the agent (the spec's deny pattern, 8.8): a human's
	// code lifts the block. Refuse rejects the one call and records it;
	// the agent goes on (the Gatekeeper's deny).
	Deny             []string   `toml:"deny"`
	Refuse           []string   `toml:"refuse"`
	RequiresApproval []string   `toml:"requires_approval"`
	AutoApprove      []string   `toml:"auto_approve"`
	Rules            []ArgRule  `toml:"rules"`
	RiskRules        []RiskRule `toml:"risk_rules"`
	// ShellArguments name the arguments that carry shell command lines
	// ("[TOOL:]ARGUMENT"); they are parsed and matched command by command.
	ShellArguments []string `toml:"shell_arguments"`
	// SecretArguments name arguments whose values are never written to
	// the audit log or shown in full ("[TOOL:]ARGUMENT").
	SecretArguments []string `toml:"secret_arguments"`
	// SensitivePaths are places where secrets are kept, added to the
	// shipped ones (policy/paths.Shipped, which no config removes): a
	// path argument there asks a human. Patterns over clean absolute
	// paths: `~/` for the home directory, `*` within a directory, `**`
	// across them ("~/work/secrets/**").
	SensitivePaths []string `toml:"sensitive_paths"`
}

// ArgRule is an argument-aware pattern: it matches the value of one named
// argument, or of every argument of some roles, of the calls whose
// operation matches Operation.
type ArgRule struct {
	// Action is deny, refuse, requires_approval or auto_approve.
	Action string `toml:"action"`
	// Operation is a glob over operation / server-qualified names ("*" if empty).
	Operation string `toml:"operation"`
	// Argument names the argument whose value is matched: its public
	// snake_case name, the server's own spelling or an alias; a dotted
	// path (options.force) reaches into an object.
	Argument string `toml:"argument"`
	// Roles, instead of Argument, matches every argument of these roles
	// (Role): roles = ["content"] is how a rule sees what is written.
	Roles []string `toml:"roles"`
	// Pattern is the glob matched against the argument's value.
	Pattern string `toml:"pattern"`
}

// RiskRule raises the risk score of matching calls to at least Score.
type RiskRule struct {
	Pattern  string `toml:"pattern"`
	Argument string `toml:"argument"`
	Score    int    `toml:"score"`
	Reason   string `toml:"reason"`
}

// AgentOverride is an [agents.NAME] table. Scalars replace the [safety]
// value when set; pattern lists and rules are added to [safety]'s.
type AgentOverride struct {
	Loop               *string    `toml:"loop"`
	MaxAutonomousSteps *int       `toml:"max_autonomous_steps"`
	RiskTolerance      *string    `toml:"risk_tolerance"`
	InterpreterCode    *string    `toml:"interpreter_code"`
	Deny               []string   `toml:"deny"`
	Refuse             []string   `toml:"refuse"`
	RequiresApproval   []string   `toml:"requires_approval"`
	AutoApprove        []string   `toml:"auto_approve"`
	Rules              []ArgRule  `toml:"rules"`
	RiskRules          []RiskRule `toml:"risk_rules"`
	ShellArguments     []string   `toml:"shell_arguments"`
	SecretArguments    []string   `toml:"secret_arguments"`
}

// Verify is the [verify] table: how a human is reached.
type Verify struct {
	Channel string   `toml:"channel"` // dialog | command
	Command []string `toml:"command"`
	// Timeout bounds how long confirm_operation waits for the human.
	Timeout Duration `toml:"timeout"`
	// InlineWait is how long a gated call itself waits for the human's
	// answer before it returns CONFIRMATION_REQUIRED with a token.
	InlineWait Duration `toml:"inline_wait"`
	// ConfirmationTTL is how long a confirmation token lives (max 15m).
	ConfirmationTTL Duration `toml:"confirmation_ttl"`
	// ChallengeTTL is how long a verification challenge lives.
	ChallengeTTL Duration `toml:"challenge_ttl"`
	// SessionApprovalTTL bounds an "allow this tool for this session"
	// answer, which otherwise lasts as long as the MCP session.
	SessionApprovalTTL Duration `toml:"session_approval_ttl"`
}

// Server is one [[servers]] entry: a stdio command or a remote URL.
type Server struct {
	Name string `toml:"name"`
	// Title is the name as the client config spells it ("notes-desktop"),
	// when wrap made Name from it ("notesdesktop"): what messages and
	// logs show (Label). Never read from a file.
	Title     string            `toml:"-"`
	Command   string            `toml:"command"`
	Args      []string          `toml:"args"`
	Env       map[string]string `toml:"env"`
	Cwd       string            `toml:"cwd"`
	URL       string            `toml:"url"`
	Headers   map[string]string `toml:"headers"`
	Transport string            `toml:"transport"` // stdio | streamable | sse (inferred when empty)
	// Protocol is the MCP revision spoken to the server: "auto" (the
	// default: server/discover says whether it speaks 2026-07-28, else
	// initialize), "2026-07-28" or "2025-11-25".
	Protocol string `toml:"protocol"`
	// Auth is how aqlguard authenticates to a remote server: "none" (the
	// default; headers may carry an API key) or "oauth" (MCP's OAuth 2.1
	// authorization: consent in the browser once, tokens kept).
	Auth string `toml:"auth"`
	// OAuthClientID is a client id registered with the server's
	// authorization server beforehand; without it aqlguard registers
	// itself (dynamic client registration).
	OAuthClientID string `toml:"oauth_client_id"`
	// Insecure accepts a url that is plain http:// to a host that is not
	// this machine, which is otherwise an error; credentials (auth =
	// "oauth", headers that carry one, a user name or password in the
	// url) are never sent over it (transport.go).
	Insecure bool `toml:"insecure"`
	// StartTimeout bounds connect + initialize + tools/list.
	StartTimeout Duration `toml:"start_timeout"`
	// CallTimeout bounds one request to the server (a tool call, a read);
	// then the request is cancelled and fails.
	CallTimeout Duration `toml:"call_timeout"`
	// Categories overrides the semantic category of named tools.
	Categories map[string]string `toml:"categories"`
	// TrustFirstSight pins the tools this server lists the first time as
	// they are, without the human's first-sight review (the behaviour
	// before reviews existed); their descriptions are still scanned, and
	// a later change still waits for a human.
	TrustFirstSight bool `toml:"trust_first_sight"`
	// Effects says what named tools do (tool = "read" | "write" |
	// "delete" | "execute" | "send" | "none", or several separated by
	// commas), over the shipped profiles and what the tools' schemas
	// and descriptions say (package effects).
	Effects map[string]string `toml:"effects"`
	// Arguments declares the role of this server's arguments
	// ("[TOOL:]ARGUMENT" = "command" | "code" | "query" | "path" | "url" |
	// "content" | "other"), over what the schema and the names say.
	Arguments map[string]string `toml:"arguments"`
	// AllowUndeclaredArguments lets a call pass arguments its tool's
	// input schema does not declare (a server whose tools take free-form
	// arguments); they are forwarded as sent, their roles read from
	// their names. Default false: such a call is refused, naming them.
	AllowUndeclaredArguments bool `toml:"allow_undeclared_arguments"`
	// Share lets `aqlguard serve` run one process of this stdio server
	// for all its client sessions instead of one per session; aqlguard
	// routes what MCP scopes to a session (docs/design.md, "Shared
	// servers").
	Share bool `toml:"share"`
	// Roots are the roots this server works in (absolute URIs, such as
	// file:///home/alice/projects): its path arguments are judged
	// against them (RootPaths). With share, they are also pinned: the
	// shared server is given them (roots/list is answered with them,
	// never asked of a client); without share, the server's roots/list
	// is still its client's to answer. nil when not set; with share and
	// no roots, sessions that declare different roots cannot share the
	// server.
	Roots []string `toml:"roots"`
	// Sandbox is how the operating system confines this server, when
	// aqlguard starts it (package sandbox): what it may read and write
	// beyond what its entry implies, and where it may connect.
	Sandbox Sandbox `toml:"sandbox"`

	// Managed says the server is the managed layer's (Overlay): its
	// categories and argument roles are the managed layer's own.
	Managed bool `toml:"-"`
}

// Sandbox is a stdio server's [servers.sandbox]: its grant beyond what
// its entry implies (package sandbox derives that: its command's own
// directories, the directories its arguments name, its roots, the
// runtime's caches, a private temporary directory).
type Sandbox struct {
	// Mode is "auto" (the default: confined where the operating system
	// can, Landlock on Linux) or "off" (the server runs with everything
	// its user may touch, which doctor says loudly).
	Mode string `toml:"mode"`
	// Read and Write are more places the server may read, or read and
	// write: absolute paths, or ~/... in the server's home.
	Read  []string `toml:"read"`
	Write []string `toml:"write"`
	// Network is "auto" (the default: TCP connections to the ports its
	// runtime and profile need, 443, and those in Connect), "none" (no
	// TCP connection or listening socket at all) or "any" (no rule).
	Network string `toml:"network"`
	// Connect and Bind are more TCP ports the server may connect to or
	// listen on (Landlock's rules are by port, on any host).
	Connect []int `toml:"connect"`
	Bind    []int `toml:"bind"`
}

// SandboxModes and SandboxNetworks are the values mode and network take.
var (
	SandboxModes    = []string{"auto", "off"}
	SandboxNetworks = []string{"auto", "none", "any"}
)

// RootPaths are the clean absolute paths of the server's file: roots
// (others name no local place), for judging its path arguments; nil when
// no roots are configured.
func (s Server) RootPaths() []string {
	var out []string
	for _, r := range s.Roots {
		if p := paths.Canonical(r, "", ""); p.OK && strings.HasPrefix(strings.ToLower(r), "file:") {
			out = append(out, p.Clean)
		}
	}
	return out
}

// Duration is a time.Duration written as a Go duration string ("30s").
type Duration struct{ time.Duration }

// Category is an MCP-AQL semantic category.
type Category string

const (
	Create  Category = "CREATE"
	Read    Category = "READ"
	Update  Category = "UPDATE"
	Delete  Category = "DELETE"
	Execute Category = "EXECUTE"
)

// Categories lists the semantic categories in CRUDE order.
var Categories = []Category{Create, Read, Update, Delete, Execute}

// Label is the server's name for people: its Title where it has one,
// else its Name.
func (s Server) Label() string {
	if s.Title != "" {
		return s.Title
	}
	return s.Name
}
