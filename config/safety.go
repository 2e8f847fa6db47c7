package config

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

// Inherits reports whether the shipped rules are in force beneath this
// [safety]: inherit is left out or true.
func (s Safety) Inherits() bool { return s.Inherit == nil || *s.Inherit }
