package evaluator

import "github.com/aqlguard/aqlguard/policy"

// Annotations are the MCP tool annotations of the called tool; nil = unset.
type Annotations struct {
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
	OpenWorld   *bool
}

// Step is one action to evaluate: a proxied tool call or a reported step.
type Step struct {
	Principal string          // the configured agent, never model-supplied
	Session   string          // MCP session label (for audit only)
	Operation string          // catalog operation name, e.g. "fs_write_file"
	Server    string          // downstream server name ("" for cooperative steps)
	Tool      string          // downstream tool name as the server spells it
	Category  policy.Category // semantic category
	// ManagedCategory is the category as a managed policy layer reads the
	// call: without the user's [servers.categories] override ("": as
	// Category). Only the managed layer's view uses it.
	ManagedCategory policy.Category
	Annotations     Annotations
	Arguments       map[string]any // decoded arguments, as the server will receive them
	// Effects is what the tool does and EffectSource where the guard has
	// that from (package effects); EffectWhy says it in plain words.
	// With SourceNone (a reported step, a policy test case that names
	// no effects) the risk stage scores the step by its Category.
	Effects      policy.Effects
	EffectSource policy.EffectSource
	EffectWhy    string
	// Confined says the tool's writes and deletes land only in its
	// server's own store (a profile says so: effects.Model.Confined).
	Confined bool
	// Roles are the roles of the tool's arguments, by SnakeName path.
	// Modeled: Roles holds every argument the tool declares (its effect
	// model), and an argument it does not hold has no role, whatever its
	// name: the model chose the names it sends, the tool's schema did
	// not. Otherwise Roles holds what the schema says (format uri: url)
	// and the names' own conventions fill in the rest. [servers.arguments]
	// is over both (see Value.Role).
	Roles   map[string]policy.Role
	Modeled bool
	// Places are the call's path arguments as its caller read them
	// (PathValues, then paths and symbolic links), judged against Roots,
	// the clean absolute roots of the server (RootsKnown false: none are
	// known), and Home, the home directory its paths' "~" is (places.go).
	Places     []Place
	Roots      []string
	RootsKnown bool
	Home       string
	// RootsOf names whose Roots are, for the words of a question ("the
	// project" for a client's own tool, whose roots are the project's);
	// "": the server's ("the fs server's roots").
	RootsOf string
	// Flow is what the step's session has read that counts for where
	// data may go (flows.go); empty for a session that read nothing of it.
	Flow       Flow
	ActionHint string // a reported step's next_action_hint; patterns match it (not used for proxied calls)
	Outcome    string // previous step outcome: "", success, failure, skipped
	StepNumber int    // 1-based count of this principal's steps, including this one
	// Unresolved says, in words, what the caller could not read exactly
	// (a resource URI that names no single path): the step then asks a
	// human unless a deny matches it as it stands. Never allowed unasked.
	Unresolved string
}

// Tier is the spec's safety tier (8.7.2 stage 4).
type Tier string

const (
	Advisory   Tier = "advisory"
	Confirm    Tier = "confirm"
	Verify     Tier = "verify"
	DangerZone Tier = "danger_zone"
)

// Decision is what the guard must do with the action.
type Decision string

const (
	Allow        Decision = "allow"   // forward
	NeedsConfirm Decision = "confirm" // pause for a human confirmation
	NeedsVerify  Decision = "verify"  // pause for out-of-band verification
	Block        Decision = "block"   // hard block of the principal
	Refuse       Decision = "refuse"  // reject this one action; the principal goes on
)

// Stage names the pipeline stage that decided (8.7.2).
type Stage string

const (
	StageStepLimit Stage = "step_limit"
	StageOutcome   Stage = "previous_outcome"
	StagePattern   Stage = "pattern"
	StageTier      Stage = "safety_tier"
	StageTolerance Stage = "risk_tolerance"
	StageNone      Stage = "not_evaluated" // logging / disabled modes
)

// Directive is the evaluator's answer: the spec's AutonomyDirective plus
// what the guard and the audit log need.
type Directive struct {
	Continue       bool
	Stopped        bool
	Reason         string
	Factors        []string
	StepsRemaining int
	Tier           Tier
	Risk           int // 0..100
	// Decision is what enforcing mode does. In monitoring mode it is what
	// enforcing would have done, while Continue stays true.
	Decision Decision
	Stage    Stage
	// Matched is the source text of the pattern or rule that decided, if any.
	Matched string
	// Enforced is false in monitoring, logging and disabled modes.
	Enforced bool
	// ArgumentBound says the decision rests on the call's arguments (a
	// text pattern, an argument rule, a shell command, a risk rule on an
	// argument), so an approval of the tool as such cannot stand for it:
	// only an approval of these very arguments can.
	ArgumentBound bool
	// RiskRules are the sources of the risk rules that matched (stage 4).
	RiskRules []string
	// Layer is the configuration layer whose rule or setting decided,
	// "managed" or "user", under a managed policy layer ("" without one,
	// and for what the guard asks about by itself).
	Layer string
}

// Outcome says in a word what happens to the action: "allowed",
// "asks" (a human confirms), "verify" (out-of-band code, the agent
// paused), "refuses" (this action is rejected) or "blocks" (hard
// block). In monitoring mode it is what enforcing would do.
func (d Directive) Outcome() string {
	switch d.Decision {
	case Allow:
		return "allowed"
	case NeedsConfirm:
		return "asks"
	case NeedsVerify:
		return "verify"
	case Block:
		return "blocks"
	case Refuse:
		return "refuses"
	}
	return "allowed"
}
