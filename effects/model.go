package effects

import (
	"strings"

	"github.com/aqlguard/aqlguard/policy"
)

// Model is what the guard believes one tool does.
type Model struct {
	// Effects are what the tool does; EffectUnknown when nothing tells.
	Effects policy.Effects
	// Source says where Effects come from.
	Source policy.EffectSource
	// Why says it in plain words for the human and the audit log:
	// "writes a file (the filesystem profile)", "runs a command (its
	// argument \"command\" is one)", "reads (a guess from its name
	// get_weather)".
	Why string
	// Profile names the profile that matched ("" for none).
	Profile string
	// Confined says the tool's writes and deletes land only in the
	// server's own store (ProfileTool.Confined).
	Confined bool
	// Private and Untrusted say what the tool's results are to a
	// session's flows, by its profile (ProfileTool.Flow).
	Private, Untrusted bool
	// Roles are the roles of every argument the tool declares, by
	// SnakeName path ("path", "edits.old_text"). An argument the tool
	// does not declare has none: whatever its name, it is RoleOther.
	Roles map[string]policy.Role
	// Reveals says, for a tool no person described (no profile, no
	// configuration), what secrets its own name says it hands out
	// ("credentials"): a call of it asks a human, as a read of a
	// sensitive place does. "" for none.
	Reveals string
	// Claims are what the server says of the tool that the guard does
	// not believe, in plain words ("says it only reads (readOnlyHint),
	// but takes a command"): shown in the first-sight review.
	Claims []string
}

// Config is what a server's configuration says of its tools, and what
// the human said of this one.
type Config struct {
	// Effects are [servers.effects] (tool name → effects as written).
	Effects map[string]string
	// Reviewed says a human approved this tool as it is (pins): then,
	// and only then, its server's readOnlyHint may say what the tool
	// does where nothing else does.
	Reviewed bool
}

// Resolve makes the model of one tool: the configuration's effects,
// else a matching profile's, else what the schema and description say,
// else a guess from the name. Roles come from the profile, else the
// schema. Annotations only add to the effects.
func Resolve(d Definition, cfg Config) Model {
	var m Model
	prof, pt, matched := Match(d)
	switch {
	case matched:
		m.Roles = profileRoles(pt, d.InputSchema)
		m.Profile = prof.Name
	default:
		m.Roles = schemaRoles(d.InputSchema)
	}
	inferred := infer(d, m.Roles)
	if text, ok := cfg.Effects[d.Name]; ok {
		e, err := policy.ParseEffects(text)
		if err == nil {
			m.Effects, m.Source = e, policy.SourceConfig
			m.Why = sayEffects(e) + " (the configuration says so)"
		}
	}
	if m.Source == policy.SourceNone && matched {
		m.Effects, m.Source = pt.ProfileEffects(), policy.SourceProfile
		m.Why = pt.Why + " (the " + prof.Name + " profile)"
		m.Confined = pt.Confined
		m.Private, m.Untrusted, _ = ParseFlow(pt.Flow) // checked when read
	}
	if m.Source == policy.SourceNone {
		m.Effects, m.Source, m.Why = inferred.effects, inferred.source, inferred.why
		if cfg.Reviewed && d.ReadOnly != nil && *d.ReadOnly && (m.Source == policy.SourceGuess || m.Source == policy.SourceUnknown) {
			// Nothing but its name or nothing at all says what it does;
			// a human looked at it and its server says it only reads.
			m.Effects, m.Source = policy.Effects(policy.EffectRead), policy.SourceSchema
			m.Why = "reads (its server says so with readOnlyHint, and a human reviewed the tool)"
		}
	}
	if !matched {
		// A role the schema gives and the effects do not account for: the
		// content of a tool that neither writes nor sends is text the
		// patterns must see.
		m.Roles = gateContent(m.Roles, m.Effects)
	}
	if m.Source != policy.SourceConfig && m.Source != policy.SourceProfile {
		m.Reveals = reveals(d.Name)
	}
	m.Claims = claims(d, m)
	return m
}

// profileRoles are a profile tool's roles by SnakeName path; an argument
// the profile does not name (a newer field it does not know) gets the
// role its schema gives it.
func profileRoles(pt *ProfileTool, schema map[string]any) map[string]policy.Role {
	out := schemaRoles(schema)
	for arg, r := range pt.Roles() {
		out[snakePath(arg)] = r
	}
	return out
}

// snakePath is a dotted path in SnakeName parts.
func snakePath(p string) string {
	parts := strings.Split(p, ".")
	for i, s := range parts {
		parts[i] = policy.SnakeName(s)
	}
	return strings.Join(parts, ".")
}

// gateContent makes content into other for a tool that neither writes
// nor sends: text a command runner calls "content" is still text that
// runs.
func gateContent(roles map[string]policy.Role, e policy.Effects) map[string]policy.Role {
	if e.Has(policy.EffectWrite) || e.Has(policy.EffectSend) {
		return roles
	}
	for k, r := range roles {
		if r == policy.RoleContent {
			roles[k] = policy.RoleOther
		}
	}
	return roles
}

// claims are the annotations the model contradicts.
func claims(d Definition, m Model) []string {
	var out []string
	if d.ReadOnly != nil && *d.ReadOnly {
		for _, e := range []policy.Effect{policy.EffectExecute, policy.EffectWrite, policy.EffectDelete, policy.EffectSend} {
			if m.Effects.Has(e) {
				out = append(out, "says it only reads (readOnlyHint), but it "+effectVerb[e])
				break
			}
		}
		if m.Effects.Has(policy.EffectUnknown) {
			out = append(out, "says it only reads (readOnlyHint), but nothing else says what it does")
		}
	}
	if d.Destructive != nil && !*d.Destructive && m.Effects.Has(policy.EffectDelete) {
		out = append(out, "says it destroys nothing (destructiveHint false), but it deletes")
	}
	return out
}

// effectVerb says an effect as "it ..." does.
var effectVerb = map[policy.Effect]string{
	policy.EffectRead:    "reads",
	policy.EffectWrite:   "writes",
	policy.EffectDelete:  "deletes",
	policy.EffectExecute: "runs commands or code",
	policy.EffectSend:    "sends data out of this machine",
	policy.EffectUnknown: "could do anything",
}

// sayEffects says a set of effects in words: "reads and writes",
// "does nothing outside itself".
func sayEffects(e policy.Effects) string {
	if e.None() {
		return "does nothing outside itself"
	}
	var words []string
	for _, x := range e.List() {
		words = append(words, effectVerb[x])
	}
	switch len(words) {
	case 1:
		return words[0]
	case 2:
		return words[0] + " and " + words[1]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// Say is the model in words: what the tool does and where the guard
// has it from.
func (m Model) Say() string { return m.Why }
