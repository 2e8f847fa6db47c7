package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aqlguard/aqlguard/config"
)

// The rules aqlguard ships (default.toml: its [safety] lists, rules and
// risk rules) are a layer of their own, beneath every configuration:
// Compile puts them first (after a managed layer's), and a file's lists
// are added to them, duplicates dropped. So a two-line file that names an
// agent and a server keeps every shipped deny, refuse and ask. Because
// evaluation resolves deny > refuse > requires_approval > auto_approve,
// nothing a file adds can lift a shipped restriction; it can only add
// restrictions and exemptions of its own, as an [agents.NAME] table can to
// [safety].
//
// Shipped settings (loop, max_autonomous_steps, risk_tolerance,
// interpreter_code, the [verify] channel and timeout) are the defaults a
// file may set: default.toml writes the same values the validator gives a
// key left out (TestShippedSettingsAreTheDefaults).
//
// inherit = false under [safety] starts from nothing: only what the file
// says is in force, and `aqlguard policy check` says which shipped rules
// are not (InheritOff, ShippedNotInForce). Under a managed layer the
// managed file decides: its inherit = false turns them off for both
// files, and a user's inherit = false is not in effect (Overlay reports
// it), since the security team may count on them.

// shipped is the shipped configuration, parsed once. Nothing may change
// it: Default hands out fresh copies. A variable so that a test can ship
// other rules.
var shipped = sync.OnceValue(func() *config.Config {
	cfg, err := Parse(defaultTOML, config.ShippedName)
	if err != nil {
		// The embedded file is a build input checked by TestDefault;
		// reaching this means the binary was built from a broken tree,
		// and running with no policy at all would be worse than stopping.
		panic("policy: embedded default.toml is invalid: " + err.Error())
	}
	return cfg
})

// ShippedNotInForce are the shipped rules that are not in force in p
// because cfg turned them off (inherit = false); none when they are in
// force. A shipped rule the file writes itself is in force, and not
// listed.
func ShippedNotInForce(cfg *config.Config, p *Policy) []RuleInForce {
	if cfg.InheritsShipped() {
		return nil
	}
	alone := build(p.Principal, settings{tol: config.DefaultRiskTolerance}, []layerInput{shippedLayer(serverNames(cfg))}, nil)
	have := map[string]bool{}
	for _, r := range p.InForce {
		have[r.same] = true
	}
	var out []RuleInForce
	for _, r := range alone.InForce {
		if !have[r.same] {
			out = append(out, r)
		}
	}
	return out
}

// shippedLayer is the shipped rules as a layer of the policy, their
// name patterns read for the configured servers.
func shippedLayer(servers map[string]bool) layerInput {
	in := layerOf(shipped(), "", &validator{file: config.ShippedName})
	in.layer, in.servers = LayerShipped, servers
	return in
}

// underManaged is the shipped layer under a managed one: what the managed
// file keeps from the user's file it keeps from the shipped rules too,
// where that would let a call through. Their secret_arguments are not in
// effect (they would hide what ran from the managed audit), nor, where
// the managed file locks safety.auto_approve (or safety.rules, or
// safety), their auto_approve entries (auto_approve rules). Their
// restrictions stay: they only add to the managed layer's.
func (in layerInput) underManaged(m *config.Config) layerInput {
	locked := func(key string) bool {
		return slices.ContainsFunc(m.Locked, func(l string) bool { return key == l || under(key, l) })
	}
	in.secretArgs = nil
	if locked("safety.auto_approve") {
		in.auto = nil
	}
	if locked("safety.rules") {
		in.rules = slices.DeleteFunc(slices.Clone(in.rules), func(r keyedRule) bool { return Action(r.r.Action) == ActionAutoApprove })
	}
	return in
}

// Origin is where a rule in force comes from.
type Origin struct {
	Layer Layer
	// File is the file that holds it ("" for a Config built in Go);
	// Line its line there (0 when not known).
	File string
	Line int
	// Key is its key path: safety.deny[2], agents.ci.rules[0].
	Key string
}

// String says where: "shipped default.toml:38 (safety.deny[0])",
// "config.toml:12 (agents.ci.deny[0])".
func (o Origin) String() string {
	var b strings.Builder
	switch o.Layer {
	case LayerShipped:
		b.WriteString("shipped ")
	case LayerManaged:
		b.WriteString("managed ")
	}
	file := o.File
	if file == "" {
		file = "(no file)"
	}
	b.WriteString(file)
	if o.Line > 0 {
		b.WriteString(":" + strconv.Itoa(o.Line))
	}
	if o.Key != "" {
		b.WriteString(" (" + o.Key + ")")
	}
	return b.String()
}

// RuleInForce is one entry of a policy's lists, rules and argument
// declarations, as policy check lists them.
type RuleInForce struct {
	// List is the key that holds it: deny, refuse, requires_approval,
	// auto_approve, rules, risk_rules, shell_arguments or
	// secret_arguments.
	List string
	// Rule is the entry as the policy reads it: a quoted pattern, an
	// argument rule's action and source, a risk rule's score and
	// pattern, an argument declaration.
	Rule string
	// Origin is where it comes from; Also, where else it is written (a
	// duplicate, dropped: the first stands).
	Origin Origin
	Also   []Origin

	same string // List and the form in which duplicates are found
}

// inForceLists are RuleInForce's lists in the order Policy.InForce
// lists them.
var inForceLists = []string{"deny", "refuse", "requires_approval", "auto_approve", "rules", "risk_rules",
	"shell_arguments", "secret_arguments"}

func (r RuleInForce) String() string {
	s := fmt.Sprintf("%s %s, from %s", r.List, r.Rule, r.Origin)
	for _, o := range r.Also {
		s += "; also " + o.String()
	}
	return s
}
