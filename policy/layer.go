package policy

import "strconv"

// Layer is where a rule or a setting comes from: the user's own
// configuration file, the managed policy file a security team ships
// (managed.go), or the rules aqlguard ships (default.toml, shipped.go).
// The zero Layer is the user's.
type Layer uint8

const (
	// LayerUser is the user's configuration file (--config).
	LayerUser Layer = iota
	// LayerManaged is the managed policy file (/etc/aqlguard/managed.toml
	// or --managed), read first; nothing in the user's file weakens it.
	LayerManaged
	// LayerShipped is the rules aqlguard ships (policy/default.toml),
	// in force under every configuration file unless one says
	// inherit = false; a file adds to them.
	LayerShipped
)

func (l Layer) String() string {
	switch l {
	case LayerUser:
		return "user"
	case LayerManaged:
		return "managed"
	case LayerShipped:
		return "shipped"
	}
	return "layer(" + strconv.Itoa(int(l)) + ")"
}

// SettingLayers say which layer each safety setting in force comes from:
// the managed layer's, unless the user's is stricter.
type SettingLayers struct {
	Loop, MaxSteps, Tolerance, InterpreterCode Layer
}

// Strictness orders. A higher rank is stricter: the user's value replaces
// the managed layer's only when it ranks higher.
var (
	loopRank = map[string]int{string(LoopDisabled): 0, string(LoopLogging): 1, string(LoopMonitoring): 2, string(LoopEnforcing): 3}
	// A lower threshold asks sooner.
	toleranceRank = map[string]int{"aggressive": 0, "moderate": 1, "conservative": 2}
	// deny blocks the agent, refuse the call, ask a human, allow judges
	// the commands alone.
	codeRank = map[string]int{string(CodeAllow): 0, string(CodeAsk): 1, string(CodeRefuse): 2, string(CodeDeny): 3}
)

// floor is the settings in force under a managed layer: each the managed
// layer's, or the user's where it is stricter. The managed layer's
// settings are floors whether its file wrote them or left them at their
// defaults: a managed file that says nothing of the loop still means its
// rules are enforced.
func floor(managed, user settings) (settings, SettingLayers) {
	out, from := managed, SettingLayers{LayerManaged, LayerManaged, LayerManaged, LayerManaged}
	if loopRank[user.loop] > loopRank[managed.loop] {
		out.loop, from.Loop = user.loop, LayerUser
	}
	if user.steps < managed.steps {
		out.steps, from.MaxSteps = user.steps, LayerUser
	}
	if toleranceRank[user.tol] > toleranceRank[managed.tol] {
		out.tol, from.Tolerance = user.tol, LayerUser
	}
	if codeRank[user.code] > codeRank[managed.code] {
		out.code, from.InterpreterCode = user.code, LayerUser
	}
	return out, from
}

// Layered reports whether the policy has a managed layer.
func (p *Policy) Layered() bool { return p != nil && p.Managed != nil }
