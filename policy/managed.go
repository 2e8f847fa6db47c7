package policy

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/config"
)

// A managed policy is a second configuration file, in the same format,
// that a security team ships and the user cannot write
// (DefaultManagedPath, or --managed). It is read first; the user's file
// is laid over it (Overlay) and may add restrictions, never remove or
// loosen the managed ones:
//
//   - Lists (deny, refuse, requires_approval, auto_approve, rules,
//     risk_rules, shell_arguments) are the managed layer's, then the
//     user's. deny > refuse > requires_approval > auto_approve, so no
//     user auto_approve lifts a managed restriction; besides, the
//     evaluator consults the managed layer compiled alone (Policy.Managed)
//     on every call, which reads the call as the managed file alone
//     describes it: a user's [servers.categories] or [servers.arguments],
//     or a user's server whose name changes what "fs_*" reads, cannot
//     hide an argument or a name from a managed rule, and a user
//     auto_approve does not skip a managed risk rule.
//   - Safety settings (loop, max_autonomous_steps, risk_tolerance,
//     interpreter_code) are floors: the managed layer's, written or left
//     at their defaults, unless the user's is stricter (floor).
//   - Other settings follow mergeRules: the human channel is the managed
//     layer's; lifetimes of approvals and codes at most the managed
//     layer's; what the audit keeps at least as much; anything the
//     managed file writes is fixed.
//   - secret_arguments of the user's file are not in effect: they would
//     hide what ran from the audit the security team reads.
//   - Whether the shipped rules (default.toml) are in force is the
//     managed file's inherit: a user's inherit = false is not in effect.
//     Beneath the user's rules, the shipped ones lose what the user's
//     would (layerInput.underManaged): their secret_arguments, and their
//     approvals where the managed file locks them.
//   - A server of the managed file cannot be redefined.
//   - locked lists keys the user's file may not set at all.
//
// What the user's file tries and may not do is reported (Overlay's
// Errors): by `policy check`, which fails, and at start, which goes on
// with the managed values in force.

// mergeRule is how a setting of the user's file meets the managed
// layer's.
type mergeRule int

const (
	// fixedIfWritten: the managed file's value where it writes the key;
	// else the user's.
	fixedIfWritten mergeRule = iota
	// managedAlways: the managed layer's value, written or default. The
	// human channel is what makes a managed question mean anything: a
	// user's command channel could answer every question itself.
	managedAlways
	// lowerIsStricter: the smaller of the two (a lifetime).
	lowerIsStricter
	// higherIsStricter: the larger of the two (what the audit keeps).
	higherIsStricter
	// ranked: the higher rank of the two (rank).
	ranked
	// addedUp: a list whose entries of both layers are in force, each
	// compiled as its layer's ([flows] lists: compileFlows).
	addedUp
)

// mergeRules cover every setting outside [safety], [agents], [[servers]]
// and locked (TestMergeRulesCoverEveryKey).
var mergeRules = []struct {
	key  string
	rule mergeRule
	rank map[string]int
}{
	{"mode", fixedIfWritten, nil},
	{"agent", fixedIfWritten, nil},
	{"state_dir", fixedIfWritten, nil},
	{"state_lock_timeout", fixedIfWritten, nil},
	{"limits.max_request_size", fixedIfWritten, nil},
	{"limits.max_response_size", fixedIfWritten, nil},
	{"limits.max_string_length", fixedIfWritten, nil},
	{"limits.max_array_elements", fixedIfWritten, nil},
	{"limits.max_nesting_depth", fixedIfWritten, nil},
	{"audit.max_argument_bytes", higherIsStricter, nil},
	{"audit.sync", ranked, map[string]int{"grouped": 0, "always": 1}},
	{"audit.forward", fixedIfWritten, nil},
	{"verify.channel", managedAlways, nil},
	{"verify.command", managedAlways, nil},
	{"verify.timeout", fixedIfWritten, nil},
	{"verify.inline_wait", fixedIfWritten, nil},
	{"verify.confirmation_ttl", lowerIsStricter, nil},
	{"verify.challenge_ttl", lowerIsStricter, nil},
	{"verify.session_approval_ttl", lowerIsStricter, nil},
	{"serve.auth", ranked, map[string]int{"none": 0, "token": 1}},
	{"serve.token_file", fixedIfWritten, nil},
	{"serve.max_sessions", fixedIfWritten, nil},
	{"serve.session_idle_timeout", fixedIfWritten, nil},
	{"serve.principal_idle_timeout", fixedIfWritten, nil},
	{"serve.clients", fixedIfWritten, nil},
	{"serve.oauth", fixedIfWritten, nil},
	{"state.backend", fixedIfWritten, nil},
	{"state.dsn", fixedIfWritten, nil},
	{"state.schema", fixedIfWritten, nil},
	{"serve.metrics_listen", fixedIfWritten, nil},
	{"serve.traces_endpoint", fixedIfWritten, nil},
	{"flows.private", addedUp, nil},
	{"flows.untrusted", addedUp, nil},
	{"flows.exits", addedUp, nil},
	{"flows.secrets", ranked, map[string]int{config.FlowSecretsMark: 0, config.FlowSecretsRedact: 1}},
	{"flows.injected", ranked, map[string]int{config.FlowInjectedFlag: 0, config.FlowInjectedQuarantine: 1}},
	{"flows.scan_bytes", higherIsStricter, nil},
}

// safetySettings are the [safety] and [agents.NAME] settings Compile
// floors, with their strictness.
var safetySettings = []struct {
	key  string
	rank map[string]int // nil: max_autonomous_steps, lower is stricter
}{
	{"loop", loopRank},
	{"max_autonomous_steps", nil},
	{"risk_tolerance", toleranceRank},
	{"interpreter_code", codeRank},
}

// Overlay puts the user's configuration over the managed layer: the
// configuration in force (its Managed set, for Compile) and what the
// user's file tried that the managed layer does not let take effect,
// each with its line. Neither argument is changed.
func Overlay(managed, user *config.Config) (*config.Config, config.Errors) {
	eff := user.Clone()
	eff.Managed = managed
	l := layering{managed: managed, user: user, eff: eff}
	l.locks()
	l.settings()
	l.safety()
	l.servers()
	slices.SortStableFunc(l.out, func(a, b config.Error) int { return a.Line - b.Line })
	eff.NotInEffect = l.out
	return eff, l.out
}

type layering struct {
	managed, user, eff *config.Config
	out                config.Errors
}

func (l *layering) report(key, format string, args ...any) {
	e := config.Error{File: l.user.Path, Key: key, Msg: fmt.Sprintf(format, args...)}
	if line, ok := l.user.Wrote(key); ok {
		e.Line = line
	}
	l.out = append(l.out, e)
}

func (l *layering) managedName() string {
	if l.managed.Path == "" {
		return "the managed policy"
	}
	return "the managed policy " + l.managed.Path
}

// locks drops every key of the user's file under a key the managed file
// locks. A lock on a [safety] key locks it in every [agents.NAME] table
// too, or an agent table would be the way around it.
func (l *layering) locks() {
	if len(l.user.Locked) > 0 {
		l.report("locked", "only the managed policy file may lock keys; not in effect")
		l.eff.Locked = nil
	}
	if len(l.managed.Locked) == 0 {
		return
	}
	reported := map[string]bool{}
	for _, key := range l.user.KeysInOrder() {
		generic := lockForm(key)
		for _, lock := range l.managed.Locked {
			if generic != lock && !under(generic, lock) {
				continue
			}
			top := key // report the key once, at its topmost locked form
			for p := parentKey(top); p != "" && (lockForm(p) == lock || under(lockForm(p), lock)); p = parentKey(p) {
				top = p
			}
			if !reported[top] {
				reported[top] = true
				l.report(top, "is locked by %s; not in effect", l.managedName())
			}
		}
	}
	for _, lock := range l.managed.Locked {
		if ev, ok := field(l.eff, lock); ok && !lockedList(lock) {
			// A setting: the managed layer's value (or its default)
			// stands in for the user's.
			mv, _ := field(l.managed, lock)
			ev.Set(mv)
			continue
		}
		clearPath(reflect.ValueOf(l.eff).Elem(), strings.Split(lock, "."))
		if lock == "safety" {
			l.eff.Agents = nil // every agent table is [safety] for one principal
		}
		if rest, ok := strings.CutPrefix(lock, "safety."); ok {
			for name, o := range l.eff.Agents {
				clearPath(reflect.ValueOf(&o).Elem(), strings.Split(rest, "."))
				l.eff.Agents[name] = o
			}
		}
	}
}

// lockedList says a locked key is cleared rather than taken from the
// managed layer: [safety] and its lists (the managed layer's own are in
// force already, as its layer), [agents], [[servers]] and what is in
// them.
func lockedList(lock string) bool {
	head, _, _ := strings.Cut(lock, ".")
	return head == "safety" || head == "agents" || head == "servers"
}

// lockForm is a key as locked names it: no array indices, and an agent
// table's keys as the [safety] keys they stand beside.
func lockForm(key string) string {
	key = stripIndices(key)
	if rest, ok := strings.CutPrefix(key, "agents."); ok {
		name := parentKeyHead(rest)
		if name == rest {
			return "agents"
		}
		return "safety" + rest[len(name):]
	}
	return key
}

// parentKeyHead is the first part of a key path (quoted parts kept whole).
func parentKeyHead(key string) string {
	if seps := separators(key); len(seps) > 0 {
		return key[:seps[0]]
	}
	return key
}

func under(key, table string) bool {
	return strings.HasPrefix(key, table) && len(key) > len(table) && (key[len(table)] == '.' || key[len(table)] == '[')
}

// settings applies mergeRules.
func (l *layering) settings() {
	for _, r := range mergeRules {
		mv, _ := field(l.managed, r.key)
		uv, _ := field(l.user, r.key)
		ev, _ := field(l.eff, r.key)
		_, userWrote := l.user.Wrote(r.key)
		_, managedWrote := l.managed.Wrote(r.key)
		switch r.rule {
		case addedUp:
			continue
		case fixedIfWritten, managedAlways:
			if r.rule == fixedIfWritten && !managedWrote {
				continue
			}
			if userWrote && !reflect.DeepEqual(mv.Interface(), uv.Interface()) {
				l.report(r.key, "%s would replace %s of %s; not in effect", show(uv), show(mv), l.managedName())
			}
			ev.Set(mv)
		default:
			if stricter(r.rule, r.rank, uv, mv) >= 0 {
				continue // the user's is as strict or stricter: it stands
			}
			if userWrote {
				l.report(r.key, "%s would loosen %s of %s; not in effect", show(uv), show(mv), l.managedName())
			}
			ev.Set(mv)
		}
	}
}

// stricter compares a with b under rule: >0 when a is stricter, 0 when
// as strict, <0 when looser.
func stricter(rule mergeRule, rank map[string]int, a, b reflect.Value) int {
	switch rule {
	case ranked:
		return rank[a.String()] - rank[b.String()]
	case lowerIsStricter:
		return sign(number(b) - number(a))
	case higherIsStricter:
		return sign(number(a) - number(b))
	}
	return 0
}

func number(v reflect.Value) int64 {
	if d, ok := v.Interface().(config.Duration); ok {
		return int64(d.Duration)
	}
	return v.Int()
}

func sign(n int64) int {
	switch {
	case n > 0:
		return 1
	case n < 0:
		return -1
	}
	return 0
}

func show(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case string:
		return strconv.Quote(x)
	case config.Duration:
		return x.Duration.String()
	case *config.Forward:
		if x == nil {
			return "no forwarding"
		}
		return "forwarding to " + x.To
	case *config.ServeOAuth:
		if x == nil {
			return "no OAuth"
		}
		return "OAuth tokens of " + strconv.Quote(x.Issuer)
	case []config.ServeClient:
		return strconv.Itoa(len(x)) + " serve clients"
	case []string:
		return strconv.Quote(strings.Join(x, " "))
	}
	return fmt.Sprint(v.Interface())
}

// safety reports the user's [safety] and [agents.NAME] settings that
// would loosen the managed layer's (Compile floors them: they are not in
// effect) and drops the user's secret_arguments.
func (l *layering) safety() {
	mv := &validator{file: l.managed.Path}
	check := func(table string, m settings, u map[string]any) {
		for _, s := range safetySettings {
			val, ok := u[s.key]
			if !ok {
				continue
			}
			var looser bool
			var was any
			switch s.key {
			case "loop":
				looser, was = s.rank[val.(string)] < s.rank[m.loop], m.loop
			case "max_autonomous_steps":
				looser, was = val.(int) > m.steps, m.steps
			case "risk_tolerance":
				looser, was = s.rank[val.(string)] < s.rank[m.tol], m.tol
			case "interpreter_code":
				looser, was = s.rank[val.(string)] < s.rank[m.code], m.code
			}
			if looser {
				l.report(table+"."+s.key, "%v would loosen %v of %s; not in effect", quoteString(val), quoteString(was), l.managedName())
			}
		}
	}
	base := layerOf(l.managed, "", mv).settings
	us := l.user.Safety
	set := map[string]any{}
	for _, s := range safetySettings {
		if _, ok := l.user.Wrote("safety." + s.key); ok {
			switch s.key {
			case "loop":
				set[s.key] = us.Loop
			case "max_autonomous_steps":
				set[s.key] = us.MaxAutonomousSteps
			case "risk_tolerance":
				set[s.key] = us.RiskTolerance
			case "interpreter_code":
				set[s.key] = us.InterpreterCode
			}
		}
	}
	check("safety", base, set)
	if !us.Inherits() && l.managed.Safety.Inherits() {
		// The managed layer may count on the shipped rules beneath it.
		l.report("safety.inherit", "false would take away the rules aqlguard ships (%s), which %s keeps in force; not in effect",
			config.ShippedName, l.managedName())
		l.eff.Safety.Inherit = nil
	}
	for i := range us.SecretArguments {
		l.report(index("safety.secret_arguments", i), "secret arguments are declared in %s alone: "+
			"one declared here would hide what ran from the audit it keeps; not in effect", l.managedName())
	}
	l.eff.Safety.SecretArguments = nil
	for _, name := range slices.Sorted(maps.Keys(l.user.Agents)) {
		o := l.user.Agents[name]
		key := joinKey("agents", name)
		set := map[string]any{}
		if o.Loop != nil {
			set["loop"] = *o.Loop
		}
		if o.MaxAutonomousSteps != nil {
			set["max_autonomous_steps"] = *o.MaxAutonomousSteps
		}
		if o.RiskTolerance != nil {
			set["risk_tolerance"] = *o.RiskTolerance
		}
		if o.InterpreterCode != nil {
			set["interpreter_code"] = *o.InterpreterCode
		}
		check(key, layerOf(l.managed, name, mv).settings, set)
		for i := range o.SecretArguments {
			l.report(index(key+".secret_arguments", i), "secret arguments are declared in %s alone: "+
				"one declared here would hide what ran from the audit it keeps; not in effect", l.managedName())
		}
		if eo, ok := l.eff.Agents[name]; ok {
			eo.SecretArguments = nil
			l.eff.Agents[name] = eo
		}
	}
}

func quoteString(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// servers puts the managed file's servers first, marked, and the user's
// after them; a user's server of a managed server's name is not in
// effect.
func (l *layering) servers() {
	managed := map[string]bool{}
	out := make([]config.Server, 0, len(l.managed.Servers)+len(l.eff.Servers))
	for _, s := range l.managed.Servers {
		s.Managed = true
		managed[s.Name] = true
		out = append(out, s)
	}
	for i, s := range l.eff.Servers {
		if managed[s.Name] {
			l.report(index("servers", i)+".name", "%q is a server of %s, which the user's file cannot redefine; not in effect", s.Name, l.managedName())
			continue
		}
		s.Managed = false
		out = append(out, s)
	}
	l.eff.Servers = out
}

// field is the settable value at a key path of struct fields
// ("verify.channel") in c.
func field(c *config.Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(c).Elem()
	for _, part := range strings.Split(key, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		f, ok := structField(v, part)
		if !ok {
			return reflect.Value{}, false
		}
		v = f
	}
	return v, true
}

func structField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		if tomlName(t.Field(i)) == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// clearPath sets the value at a locked key path to its zero value: in
// every element where the path goes through an array of tables.
func clearPath(v reflect.Value, parts []string) {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Slice {
		for i := range v.Len() {
			clearPath(v.Index(i), parts)
		}
		return
	}
	f, ok := structField(v, parts[0])
	if !ok {
		return
	}
	if len(parts) == 1 {
		f.Set(reflect.Zero(f.Type()))
		return
	}
	if f.Kind() == reflect.Pointer && !f.IsNil() {
		// Copy before changing: the pointer may be shared with the
		// user's Config.
		cp := reflect.New(f.Type().Elem())
		cp.Elem().Set(f.Elem())
		f.Set(cp)
	}
	clearPath(f, parts[1:])
}

// locked checks the managed file's locked list: each a key path of the
// configuration (array indices and map keys left out), and only in the
// managed file.
func (v *validator) locked(list []string) {
	if len(list) > 0 && !v.managed && v.walker != nil {
		// Reported by Layer when there is a managed layer; without one
		// nothing is locked by a user's own file.
		v.errf("locked", "only the managed policy file may lock keys")
		return
	}
	for i, key := range list {
		if err := lockable(key); err != nil {
			v.errf(index("locked", i), "%q: %v", key, err)
		}
	}
}

// lockable reports whether key names a key of the configuration, as
// locked lists them.
func lockable(key string) error {
	if key == "" {
		return errors.New("a key path is required, e.g. \"safety.auto_approve\"")
	}
	if key == "locked" {
		return errors.New("locked cannot be locked")
	}
	t := configType
	for _, part := range strings.Split(key, ".") {
		switch t = deref(t); {
		case isArrayOfTables(t):
			t = deref(t.Elem())
		case t.Kind() == reflect.Map:
			return fmt.Errorf("goes below a table of names; lock %q as a whole", key[:len(key)-len(part)-1])
		}
		ft, msg := lookupKey(t, part, "key")
		if msg != "" {
			return errors.New(msg)
		}
		t = ft
	}
	return nil
}
