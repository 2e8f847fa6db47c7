// Package redact says what of a call may be written down or shown, and
// how: the audit log, the state database and what a human is shown
// never hold a secret (each is its keyed digest), the human is shown
// what runs (Shown), and a record keeps the redacted arguments up to its
// cap (ForRecord) with a one-line preview (Preview). It is pure but for
// the key it is handed; the guard (proxy/guard) calls it once per check,
// outside any commit.
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/ruling"
	"github.com/aqlguard/aqlguard/secrets"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// What is a secret is policy.SecretArgument's to say (the one notion:
// names, schema, secret_arguments); the schema part comes from the
// catalog as Call.Secrets. A secret is replaced by its keyed digest in
// the audit log, the state database and what a human is shown, and so is
// an object held under a secret name.
//
// Nothing else is redacted by substring: run_python {"code": ...} must
// leave a trace of what ran. But a credential the secrets ruleset knows
// (an access key, a token, a private key block), and a value assigned
// to a name that says secret (secrets.Assigned), is replaced where it
// stands, in every argument, by its keyed digest: the audit log, the
// state and a question never hold one (issue 30), and the rest of the
// value still says what ran.
//
// What the human is shown is what runs: an argument in a role shown in
// full (shownInFull: a command, code, a path, a URL) is shown whole in a
// question, a verification code's window and the command channel's
// request, whatever makes it secret (a schema's writeOnly or format
// password, its name, secret_arguments). A human who approves a digest
// approves something unseen, and a server that marks its command
// writeOnly would have them do just that. Secrets in other roles stay
// digests there too, and the audit log, the state database and the
// previews kept with confirmations, approvals and blocks keep every
// secret a digest (showing: only what is put before the human changes).

// Call is what redaction and the human's view read of one call: a
// proxied call, or a step reported by record_execution_step (Reported:
// described by its Hint alone).
type Call struct {
	Operation, Server, Tool string
	Arguments               map[string]any
	// Secrets are the arguments the tool's schema declares secret
	// (writeOnly, format password), in the server's spelling.
	Secrets  []string
	Hint     string
	Reported bool
	// Roles and Modeled are the tool's effect model's roles of its
	// arguments; Effects and EffectSource its effects; Places, Roots and
	// RootsKnown the call's paths and the server's roots.
	Roles        map[string]policy.Role
	Modeled      bool
	Effects      policy.Effects
	EffectSource policy.EffectSource
	Places       []evaluator.Place
	Roots        []string
	RootsKnown   bool
}

// redactor replaces the secrets of one call's arguments.
type redactor struct {
	key     []byte
	pol     *policy.Policy   // secret_arguments; nil: names only
	names   policy.CallNames // the call's names, for secret_arguments
	schema  map[string]bool
	redacts int
	// whole are the top-level arguments kept whole, secret or not (what
	// a human is shown of a role shown in full); nil: none.
	whole map[string]bool
}

// newRedactor is the redactor of a's arguments under the audit key and
// pol.
func newRedactor(key []byte, pol *policy.Policy, a Call) *redactor {
	r := &redactor{key: key, schema: map[string]bool{}, pol: pol}
	if a.Server != "" {
		r.names = policy.NameForms(a.Operation, a.Server, a.Tool)
	}
	for _, s := range a.Secrets {
		r.schema[s] = true
	}
	return r
}

// Arguments returns a copy of a's arguments with every secret replaced
// by its keyed digest (key: the state's audit key).
func Arguments(key []byte, pol *policy.Policy, a Call) map[string]any {
	return newRedactor(key, pol, a).redact(a.Arguments)
}

// Digest is the keyed digest a secret v is replaced by.
func Digest(key []byte, v any) string { return (&redactor{key: key}).digest(v) }

// redact returns a copy of args with every secret replaced by its keyed
// digest. args is not modified.
func (r *redactor) redact(args map[string]any) map[string]any {
	if args == nil {
		return nil
	}
	out := make(map[string]any, len(args))
	for k, v := range args {
		if r.whole[k] {
			out[k] = r.walk(v, nil)
			continue
		}
		path := []string{policy.SnakeName(k)}
		if r.schema[k] || r.secret(path) {
			out[k] = r.digest(v)
			continue
		}
		out[k] = r.walk(v, path)
	}
	return out
}

func (r *redactor) walk(v any, path []string) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			p := append(path[:len(path):len(path)], policy.SnakeName(k))
			if path != nil && r.secret(p) {
				out[k] = r.digest(x)
				continue
			}
			out[k] = r.walk(x, p)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = r.walk(x, path)
		}
		return out
	case string:
		found := secrets.Default().Scan("", v)
		if strings.ContainsAny(v, "=:") {
			// A value assigned to a secret name (DB_PASSWORD=…), whatever
			// its form: the edit of a .env keeps its password out of the
			// records as the read of it keeps it in the session.
			found = append(found, secrets.Assigned("", v)...)
		}
		if len(found) > 0 {
			r.redacts++
			return secrets.Redact(v, found)
		}
	}
	return v
}

// ShownInFull reports whether an argument in role r is always shown to
// a human whole: what runs and where it acts.
func ShownInFull(r policy.Role) bool {
	switch r {
	case policy.RoleCommand, policy.RoleCode, policy.RolePath, policy.RoleURL:
		return true
	}
	return false
}

// DisplayRole is the role in which the argument name (as the server
// spells it) of a is shown to a human, as the evaluator reads it: the
// policy's [servers.arguments], then shell_arguments, then the tool's
// effect model (Call.Roles of a modelled action: an argument the tool
// does not declare has none), else, for an action without a model, the
// schema's and the argument's name. It is the one place that says
// where a role for display comes from.
func DisplayRole(pol *policy.Policy, a Call, name string) policy.Role {
	snake := policy.SnakeName(name)
	if pol != nil && (len(pol.ArgumentRoles) > 0 || len(pol.ShellArguments) > 0) {
		names, path := policy.NameForms(a.Operation, a.Server, a.Tool), []string{snake}
		for _, spec := range pol.ArgumentRoles {
			if spec.Server == a.Server && spec.Spec.AppliesTo(names, path) {
				return spec.Role
			}
		}
		for _, spec := range pol.ShellArguments {
			if spec.AppliesTo(names, path) {
				return policy.RoleCommand
			}
		}
	}
	if a.Modeled {
		return a.Roles[snake]
	}
	if r, ok := a.Roles[snake]; ok {
		return r
	}
	return policy.RoleByConvention(snake)
}

// Shown is what a human is shown of one proxied call.
type Shown struct {
	tool, server string
	// digest binds the call's arguments.
	digest string
	// stored is the call's arguments as the state keeps them (the
	// canonical JSON of their redaction, Confirmation.Arguments): a
	// question built from a confirmation shows this call only when its
	// stored arguments are these.
	stored json.RawMessage
	// args are the arguments shown: secrets as digests, but not in a
	// role shown in full; preview is the one-line call made of them.
	args    map[string]any
	preview string
	// roles are the role of each argument as the human is shown it
	// (DisplayRole; verify.Request.Roles), and stepRoles the tool's own
	// (Call.Roles), for the commands the question lists.
	roles     map[string]string
	stepRoles map[string]policy.Role
	// effects, places and roots say what the call will do in the
	// effect's words (verify.Request.Effects, Places, Roots).
	effects []string
	places  []verify.Place
	roots   []string
}

// effectWords are what a's call does, for the words of a question: the
// tool's effects (nil without a model), the places it acts on, and the
// server's roots.
func effectWords(a Call) (effects []string, places []verify.Place, roots []string) {
	if a.EffectSource != policy.SourceNone {
		effects = []string{}
		for _, e := range a.Effects.List() {
			effects = append(effects, e.String())
		}
		if len(effects) == 0 {
			effects = append(effects, "none")
		}
	}
	for _, pl := range a.Places {
		if !pl.Lexical.OK || !pl.Resolved.OK {
			continue // not one place: the question's reason says so
		}
		p := verify.Place{Arg: pl.Arg, Path: pl.Lexical.Clean, Looked: pl.Resolved.Looked, Exists: pl.Resolved.Exists}
		if pl.Resolved.Clean != pl.Lexical.Clean {
			p.Target = pl.Resolved.Clean
		}
		if a.RootsKnown {
			p.Outside = !paths.Within(pl.Lexical.Clean, a.Roots) || !paths.Within(pl.Resolved.Clean, a.Roots)
		}
		places = append(places, p)
	}
	if a.RootsKnown {
		for _, r := range a.Roots {
			if !slices.Contains(roots, r) {
				roots = append(roots, r)
			}
		}
	}
	return effects, places, roots
}

// Show is what a human is shown of a's call, given what Arguments,
// Preview and the digest that binds them made of it; nil for a reported
// step (its hint is shown as it is) and a call without a server.
func Show(key []byte, pol *policy.Policy, a Call, redacted map[string]any, preview, digest string) *Shown {
	if a.Reported || a.Server == "" {
		return nil
	}
	s := &Shown{tool: a.Tool, server: a.Server, digest: digest, stepRoles: a.Roles, args: redacted, preview: preview}
	s.effects, s.places, s.roots = effectWords(a)
	if len(redacted) > 0 {
		s.stored, _ = Canonical(redacted)
	}
	r := newRedactor(key, pol, a)
	r.whole = map[string]bool{}
	s.roles = make(map[string]string, len(a.Arguments))
	for k := range a.Arguments {
		role := DisplayRole(pol, a, k)
		s.roles[k] = role.String()
		if ShownInFull(role) {
			r.whole[k] = true
		}
	}
	if len(r.whole) > 0 {
		s.args = r.redact(a.Arguments)
		s.preview = Preview(a, s.args)
	}
	return s
}

// Of reports whether c asks about the call s shows: the same tool and
// the same arguments, by the digest that binds a call's question, or,
// for a check-in (which binds no arguments), by the arguments it keeps
// (equal redactions are equal arguments: a secret's digest is keyed, so
// equal digests are equal secrets).
func (s *Shown) Of(c *store.Confirmation) bool {
	if s == nil || c.Tool != s.tool || c.Server != "" && c.Server != s.server {
		return false
	}
	if c.Kind == ruling.BindAction {
		return c.Digest == s.digest
	}
	return sameJSON(c.Arguments, s.stored)
}

// sameJSON reports whether a and b encode the same value (a store may
// keep JSON in another spelling than it was given).
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	decode := func(raw json.RawMessage) ([]byte, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return nil, false
		}
		out, err := Canonical(v)
		return out, err == nil
	}
	ca, okA := decode(a)
	cb, okB := decode(b)
	return okA && okB && bytes.Equal(ca, cb)
}

func (r *redactor) secret(path []string) bool {
	return r.pol.SecretArgument(r.names, path, nil)
}

// digest stands in for a secret: HMAC-SHA256 under the state directory's
// audit key of the value's canonical JSON, 128 bits shown. Equal secrets
// give equal digests; the digest says nothing about the value to anyone
// without the key.
func (r *redactor) digest(v any) string {
	r.redacts++
	b, err := Canonical(v)
	if err != nil {
		return "[redacted]"
	}
	m := hmac.New(sha256.New, r.key)
	m.Write(b)
	return "[redacted hmac-sha256:" + hex.EncodeToString(m.Sum(nil)[:16]) + "]"
}

// Canonical encodes v with sorted keys (encoding/json sorts map
// keys), without HTML escaping (so the audit log shows "<" as the server
// received it).
func Canonical(v any) ([]byte, error) { return rawjson.Marshal(v) }

// Written is what an audit record keeps of a call's redacted arguments:
// Args whole when they fit, else Text, their first bytes, and Bytes,
// the whole length.
type Written struct {
	Args  json.RawMessage
	Text  string
	Bytes int
}

// ForRecord renders redacted arguments for an audit record: whole
// when they fit max bytes, else their first max bytes as text and the
// whole length.
func ForRecord(redacted map[string]any, max int) Written {
	if len(redacted) == 0 {
		return Written{}
	}
	b, err := Canonical(redacted)
	if err != nil {
		return Written{Text: "(arguments could not be encoded)"}
	}
	if max <= 0 || len(b) <= max {
		return Written{Args: b}
	}
	return Written{Text: Cut(string(b), max), Bytes: len(b)}
}

// PreviewMax bounds the action previews kept with confirmations,
// approvals and challenges, and shown as a one-line summary.
const PreviewMax = 1024

// Preview is the one-line, redacted description of a call: server.tool
// and its redacted arguments, or a reported step's hint.
func Preview(a Call, redacted map[string]any) string {
	if a.Reported {
		return Cut(a.Hint, PreviewMax)
	}
	s := a.Server + "." + a.Tool
	if len(redacted) > 0 {
		if b, err := Canonical(redacted); err == nil {
			s += " " + string(b)
		}
	}
	return Cut(s, PreviewMax)
}

// Cut shortens s to at most n bytes on a rune boundary, marking the cut.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// MaxCommands bounds the commands a question lists before the arguments.
const MaxCommands = 20

// Question is the request the human sees for c, showing the call as
// shown says (nil: as the state keeps it), under pol.
func Question(pol *policy.Policy, c *store.Confirmation, shown *Shown) verify.Request {
	var args map[string]any
	if len(c.Arguments) > 0 {
		dec := json.NewDecoder(bytes.NewReader(c.Arguments))
		dec.UseNumber()
		_ = dec.Decode(&args) // damaged: the question shows the preview alone
	}
	r := verify.Request{
		Kind: verify.KindConfirmation, Agent: c.Principal, Client: c.Client, Server: pol.Title(c.Server), Tool: c.Tool,
		Operation: c.Operation, Action: c.Action, Arguments: args, Reason: c.Reason, Token: c.Token,
		Tier: c.Tier, ExpiresAt: c.ExpiresAt, AllowSession: c.AllowSession, Forget: c.Forget,
		Category: c.Category, Does: c.Does, Stage: c.Stage, Rule: c.Rule, Risk: c.Risk,
	}
	var roles map[string]policy.Role
	if shown != nil {
		args, roles = shown.args, shown.stepRoles
		r.Arguments, r.Roles, r.Action = shown.args, shown.roles, shown.preview
		r.Effects, r.Places, r.Roots = shown.effects, shown.places, shown.roots
		if c.Kind != ruling.BindAction {
			r.Action = c.Operation + " (next action: " + shown.preview + ")"
		}
	}
	if c.Kind == ruling.BindAction {
		r.Commands = evaluator.Commands(pol, evaluator.Step{Operation: c.Operation, Server: c.Server, Tool: c.Tool,
			Arguments: args, Roles: roles}, MaxCommands)
	}
	if c.Kind == ruling.BindSteps {
		r.Steps = pol.MaxSteps
	}
	return r
}

// ShowCode puts what the human is shown of a's call into req, a
// verification code's request, under pol: the arguments as shown, the
// call's preview, roles, effects, places and roots, and the commands it
// runs. shown nil leaves req as it is.
func ShowCode(pol *policy.Policy, req *verify.Request, a Call, shown *Shown) {
	if shown == nil {
		return
	}
	req.Arguments, req.Action, req.Roles = shown.args, shown.preview, shown.roles
	req.Effects, req.Places, req.Roots = shown.effects, shown.places, shown.roots
	req.Commands = evaluator.Commands(pol, evaluator.Step{Operation: a.Operation, Server: a.Server, Tool: a.Tool,
		Arguments: shown.args, Roles: a.Roles}, MaxCommands)
}
