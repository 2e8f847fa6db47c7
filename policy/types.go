package policy

import "time"

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
	Safety  Safety                   `toml:"safety"`
	Agents  map[string]AgentOverride `toml:"agents"`
	Verify  Verify                   `toml:"verify"`
	Servers []Server                 `toml:"servers"`

	// Path is the file this config was read from ("" for embedded defaults).
	Path string `toml:"-"`
}

// Limits are the MCP-AQL payload limits (spec 4.7.5). Zero means default.
type Limits struct {
	MaxRequestSize   int64 `toml:"max_request_size"`
	MaxResponseSize  int64 `toml:"max_response_size"`
	MaxStringLength  int64 `toml:"max_string_length"`
	MaxArrayElements int   `toml:"max_array_elements"`
	MaxNestingDepth  int   `toml:"max_nesting_depth"`
}

// Safety is the [safety] table: the evaluator's configuration.
type Safety struct {
	Loop               string     `toml:"loop"`
	MaxAutonomousSteps int        `toml:"max_autonomous_steps"`
	RiskTolerance      string     `toml:"risk_tolerance"`
	Deny               []string   `toml:"deny"`
	RequiresApproval   []string   `toml:"requires_approval"`
	AutoApprove        []string   `toml:"auto_approve"`
	Rules              []ArgRule  `toml:"rules"`
	RiskRules          []RiskRule `toml:"risk_rules"`
}

// ArgRule is an argument-aware pattern: it matches the value of one named
// argument of the calls whose operation matches Operation.
type ArgRule struct {
	// Action is deny, requires_approval or auto_approve.
	Action string `toml:"action"`
	// Operation is a glob over operation / server-qualified names ("*" if empty).
	Operation string `toml:"operation"`
	// Argument is the argument name whose value is matched.
	Argument string `toml:"argument"`
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
	Deny               []string   `toml:"deny"`
	RequiresApproval   []string   `toml:"requires_approval"`
	AutoApprove        []string   `toml:"auto_approve"`
	Rules              []ArgRule  `toml:"rules"`
	RiskRules          []RiskRule `toml:"risk_rules"`
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
}

// Server is one [[servers]] entry: a stdio command or a remote URL.
type Server struct {
	Name      string            `toml:"name"`
	Command   string            `toml:"command"`
	Args      []string          `toml:"args"`
	Env       map[string]string `toml:"env"`
	Cwd       string            `toml:"cwd"`
	URL       string            `toml:"url"`
	Headers   map[string]string `toml:"headers"`
	Transport string            `toml:"transport"` // stdio | streamable | sse (inferred when empty)
	// StartTimeout bounds connect + initialize + tools/list.
	StartTimeout Duration `toml:"start_timeout"`
	// Categories overrides the semantic category of named tools.
	Categories map[string]string `toml:"categories"`
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
