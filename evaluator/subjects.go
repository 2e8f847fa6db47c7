package evaluator

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/canonical"
)

// Subjects are what the policy is matched against for one step, each in
// folded form (policy.Normalize). They describe what the downstream server
// will receive, not a rendering of it: no JSON escaping stands between a
// pattern and an argument's text.
type Subjects struct {
	// Names of a proxied call (policy.NameForms): the operation name as
	// the model sees it (fs_write_file), the bare tool name in snake_case
	// and in the server's spelling (write_file, writefile), and
	// server.tool in both spellings (fs.write_file, fs.writefile). Empty
	// for a reported step.
	Names policy.CallNames
	// Values are every leaf of the arguments (strings as the server gets
	// them, numbers in canonical form, booleans as true/false, null) and
	// every object key, nested values walked, in a stable order.
	Values []Value
	// Hint is a reported step's next_action_hint ("" for proxied calls).
	Hint string
}

// Value is one argument leaf or key.
type Value struct {
	// Path is the argument path in SnakeName parts joined by '.'
	// ("options.force"); array elements share their array's path. A key
	// has the path of the object it names a member of, plus itself.
	Path string
	// Text is the folded text matched by patterns.
	Text string
	// Raw is the string exactly as sent (strings only), for the shell
	// parser, which needs the quotes.
	Raw string
	// Key says this is an object key rather than a value.
	Key bool
	// String says the leaf is a JSON string.
	String bool
	// Element says the leaf is an element of an array (argv-style
	// command lines are lists of strings).
	Element bool
	// Role is what the argument holding the value is to the tool
	// (policy.Role): text patterns see every role but content. A key has
	// the role of the object it is a member of.
	Role policy.Role
	// Derived says the value is a canonical form of the one before it
	// (a path cleaned, a URI canonical), not a value the server gets:
	// restrictive patterns see both, an approving rule needs both.
	Derived bool
	// Inert says the value runs nothing: a query given to a tool that
	// changes nothing (its effects are at most reading and sending), the
	// text a search looks for, and any word but a path or URL of such a
	// tool whose effects a person stated (a profile, the configuration).
	// Text patterns pass it by, as they pass content ("drop table"
	// searched for drops nothing); rules that name its role or its
	// argument see it.
	Inert bool

	// unfolded says Text is not made yet: a decision folds a string
	// only when a pattern is matched against it (call.text), and finds
	// its candidates in Raw (policy.ValueIndex.MarkFolding).
	unfolded bool
}

// Under reports whether v lies at or below path (a joined SnakeName path).
func (v Value) Under(path string) bool {
	return v.Path == path || strings.HasPrefix(v.Path, path) && len(v.Path) > len(path) && v.Path[len(path)] == '.'
}

// names reports whether v is the key that names the argument at path
// itself, which a rule on that argument is not about.
func (v Value) names(path string) bool { return v.Key && v.Path == path }

// SubjectsOf extracts the subjects of a step under p (whose
// [servers.arguments] may declare roles; nil for none). It never drops
// a string: every string leaf and every key of the arguments is among
// Values.
func SubjectsOf(p *policy.Policy, s Step) Subjects {
	names := namesOf(s)
	return subjectsWith(s, names, nil, false, newRoles(p, &s, names))
}

// namesOf are a step's names (NameForms); none for a reported step.
func namesOf(s Step) policy.CallNames {
	if s.Server != "" || s.Tool != "" || s.Operation != "" {
		return policy.NameForms(s.Operation, s.Server, s.Tool)
	}
	return policy.CallNames{}
}

// subjectsWith extracts the subjects of a step whose names are known,
// appending its values to values (an empty buffer to reuse, or nil);
// lazy leaves string values unfolded (Value.unfolded).
func subjectsWith(s Step, names policy.CallNames, values []Value, lazy bool, roles roles) Subjects {
	sub := Subjects{Names: names}
	sub.Hint = policy.Normalize(s.ActionHint)
	if len(s.Arguments) > 0 {
		sub.Values = values
		if sub.Values == nil {
			sub.Values = make([]Value, 0, 2*len(s.Arguments))
		}
		inert := changesNothing(&s)
		w := walker{out: &sub.Values, lazy: lazy, roles: roles, inert: inert,
			known: inert && (s.EffectSource == policy.SourceProfile || s.EffectSource == policy.SourceConfig)}
		w.arguments(s.Arguments)
	}
	return sub
}

// walker appends a call's subjects.
type walker struct {
	out   *[]Value
	lazy  bool
	roles roles
	// content says content-named arguments are content for this tool
	// (policy.ContentFor), decided from its top-level arguments.
	content bool
	// inert says the tool's queries run nothing (Value.Inert); known
	// says a person said so (a profile, the configuration), so that its
	// other words run nothing either.
	inert, known bool
}

// member is one member of an object, for walking in sorted order.
type member struct {
	key   string
	value any
}

// sorted are m's members in key order, so the subjects (and the factor
// naming the first match) do not depend on Go's map order. small is
// room for the usual object (no allocation).
func sorted(m map[string]any, small []member) []member {
	members := small[:0]
	for k, v := range m {
		members = append(members, member{k, v})
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.key, b.key) })
	return members
}

// arguments walks the top level: each argument's role comes first (a
// tool that is told where it writes may receive content), then its
// values.
func (w *walker) arguments(args map[string]any) {
	var small [8]member
	members := sorted(args, small[:])
	var roleSmall [8]policy.Role
	roles := roleSmall[:0]
	where := false
	for _, mb := range members {
		name := policy.SnakeName(mb.key)
		r := w.roles.of(name, "")
		roles = append(roles, r)
		where = where || policy.NamesWhereItWrites(name, r)
	}
	// A modelled tool's roles say already what is content (the model
	// made content of nothing for a tool that neither writes nor sends).
	w.content = w.roles.s.Modeled || policy.ContentFor(w.roles.s.Category, where)
	for i, mb := range members {
		p := policy.SnakeName(mb.key)
		*w.out = append(*w.out, Value{Path: p, Text: policy.Normalize(mb.key), Raw: mb.key, Key: true, String: true})
		w.value(p, mb.value, false, w.gate(p, roles[i]))
	}
}

// gate turns content into RoleOther where the tool is not one that
// writes content, unless the policy declared it so.
func (w *walker) gate(path string, r policy.Role) policy.Role {
	if r == policy.RoleContent && !w.content && !w.roles.declaredAt(path) {
		return policy.RoleOther
	}
	return r
}

// object walks a nested object whose own role is role.
func (w *walker) object(path string, m map[string]any, role policy.Role) {
	var small [8]member
	for _, mb := range sorted(m, small[:]) {
		p := policy.SnakeName(mb.key)
		if path != "" { // under an argument named "" (snake_case of nothing)
			p = path + "." + p
		}
		*w.out = append(*w.out, Value{Path: p, Text: policy.Normalize(mb.key), Raw: mb.key, Key: true, String: true, Role: role})
		r := role
		if r == policy.RoleOther || w.roles.declaredAt(p) {
			r = w.gate(p, w.roles.of(policy.SnakeName(mb.key), p))
		}
		w.value(p, mb.value, false, r)
	}
}

func (w *walker) value(path string, v any, element bool, role policy.Role) {
	switch v := v.(type) {
	case map[string]any:
		w.object(path, v, role)
	case []any:
		for _, e := range v {
			w.value(path, e, true, role)
		}
	case string:
		w.leaf(Value{Path: path, Raw: v, String: true, Element: element, Role: role, Inert: w.inertRole(role)})
		switch role {
		case policy.RolePath:
			for _, form := range canonical.Path(v) {
				if form != v {
					w.leaf(Value{Path: path, Raw: form, String: true, Element: element, Role: role, Derived: true})
				}
			}
		case policy.RoleURL:
			if form, ok := canonical.URI(v); ok && form != v {
				w.leaf(Value{Path: path, Raw: form, String: true, Element: element, Role: role, Derived: true})
			}
		}
	default:
		if text, ok := scalarText(v); ok {
			*w.out = append(*w.out, Value{Path: path, Text: text, Element: element, Role: role})
		}
	}
}

// inertRole says a value of role r runs nothing (Value.Inert): a query
// of a tool that changes nothing, and, where a person said what the tool
// does (a profile, the configuration), its other words too (an echo's
// message, an issue's number). Paths and URLs stay seen: where a read
// goes is what a pattern on them is about.
func (w *walker) inertRole(r policy.Role) bool {
	switch r {
	case policy.RoleQuery:
		return w.inert
	case policy.RoleOther, policy.RoleIdentifier:
		return w.known
	}
	return false
}

// changesNothing reports whether a modelled step's tool neither writes,
// deletes nor runs anything (nor could, as far as the guard knows): its
// queries are inert (Value.Inert).
func changesNothing(s *Step) bool {
	const changes = policy.Effects(policy.EffectWrite | policy.EffectDelete | policy.EffectExecute | policy.EffectUnknown)
	return s.Modeled && s.EffectSource != policy.SourceNone && s.Effects&changes == 0
}

// leaf appends a string value, folded now or, when lazy, when a pattern
// is matched against it.
func (w *walker) leaf(v Value) {
	if w.lazy {
		v.unfolded = true
	} else {
		v.Text = policy.Normalize(v.Raw)
	}
	*w.out = append(*w.out, v)
}

// scalarText renders a non-string JSON scalar in its one canonical form.
// Decoded requests carry json.Number; Go-built steps may carry float64 or
// ints.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(v), true
	case json.Number:
		if n, ok := policy.CanonicalNumber(v.String()); ok {
			return n, true
		}
		return policy.Normalize(v.String()), true
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return "", false
		}
		if n, ok := policy.CanonicalNumber(strconv.FormatFloat(v, 'g', -1, 64)); ok {
			return n, true
		}
	case float32:
		return scalarText(float64(v))
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	case int32:
		return strconv.FormatInt(int64(v), 10), true
	case uint64:
		return strconv.FormatUint(v, 10), true
	}
	// Anything else cannot come from a decoded request; encode it so a
	// pattern still has something to look at.
	b, err := json.Marshal(v)
	if err != nil {
		return "", false
	}
	return policy.Normalize(string(b)), true
}
