package guard

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/secrets"
	"github.com/aqlguard/aqlguard/verify"
)

// What is a secret is policy.SecretArgument's to say (the one notion:
// names, schema, secret_arguments); the schema part comes from the
// catalog as Action.Secrets. A secret is replaced by its keyed digest in
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

func (g *Guard) redactorFor(a Action) *redactor {
	r := &redactor{key: g.auditKey(), schema: map[string]bool{}}
	r.pol = g.pol()
	if a.Server != "" {
		r.names = policy.NameForms(a.Operation, a.Server, a.Tool)
	}
	for _, s := range a.Secrets {
		r.schema[s] = true
	}
	return r
}

func (g *Guard) auditKey() []byte {
	if g.State == nil {
		return nil
	}
	return g.State.AuditKey()
}

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

// shownInFull reports whether an argument in role r is always shown to
// a human whole: what runs and where it acts.
func shownInFull(r policy.Role) bool {
	switch r {
	case policy.RoleCommand, policy.RoleCode, policy.RolePath, policy.RoleURL:
		return true
	}
	return false
}

// displayRole is the role in which the argument name (as the server
// spells it) of a is shown to a human, as the evaluator reads it: the
// policy's [servers.arguments], then shell_arguments, then the tool's
// effect model (Action.Roles of a modelled action: an argument the tool
// does not declare has none), else, for an action without a model, the
// schema's and the argument's name. It is the one place that says
// where a role for display comes from.
func displayRole(pol *policy.Policy, a Action, name string) policy.Role {
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

// shownCall is what a human is shown of one proxied call.
type shownCall struct {
	tool, server string
	// digest binds the call's arguments (Action.argsDigest).
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
	// (displayRole; verify.Request.Roles), and stepRoles the tool's own
	// (Action.Roles), for the commands the question lists.
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
func effectWords(a Action) (effects []string, places []verify.Place, roots []string) {
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

// showing is what a human is shown of a's call; nil for a reported step
// (its hint is shown as it is) and an action without a server.
func (g *Guard) showing(a Action) *shownCall {
	if a.reported() || a.Server == "" {
		return nil
	}
	a = g.prepare(a)
	s := &shownCall{tool: a.Tool, server: a.Server, digest: a.digest, stepRoles: a.Roles, args: a.redacted, preview: a.preview}
	s.effects, s.places, s.roots = effectWords(a)
	if len(a.redacted) > 0 {
		s.stored, _ = canonicalJSON(a.redacted)
	}
	pol := g.pol()
	r := g.redactorFor(a)
	r.whole = map[string]bool{}
	s.roles = make(map[string]string, len(a.Arguments))
	for k := range a.Arguments {
		role := displayRole(pol, a, k)
		s.roles[k] = role.String()
		if shownInFull(role) {
			r.whole[k] = true
		}
	}
	if len(r.whole) > 0 {
		s.args = r.redact(a.Arguments)
		s.preview = actionPreview(a, s.args)
	}
	return s
}

// of reports whether c asks about the call s shows: the same tool and
// the same arguments, by the digest that binds a call's question, or,
// for a check-in (which binds no arguments), by the arguments it keeps
// (equal redactions are equal arguments: a secret's digest is keyed, so
// equal digests are equal secrets).
func (s *shownCall) of(c *Confirmation) bool {
	if s == nil || c.Tool != s.tool || c.Server != "" && c.Server != s.server {
		return false
	}
	if c.Kind == kindAction {
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
		out, err := canonicalJSON(v)
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
	b, err := canonicalJSON(v)
	if err != nil {
		return "[redacted]"
	}
	m := hmac.New(sha256.New, r.key)
	m.Write(b)
	return "[redacted hmac-sha256:" + hex.EncodeToString(m.Sum(nil)[:16]) + "]"
}

// canonicalJSON encodes v with sorted keys (encoding/json sorts map
// keys), without HTML escaping (so the audit log shows "<" as the server
// received it).
func canonicalJSON(v any) ([]byte, error) { return rawjson.Marshal(v) }

// argsForRecord renders redacted arguments for an audit record: whole
// when they fit max bytes, else their first max bytes as text and the
// whole length.
func argsForRecord(redacted map[string]any, max int) (args json.RawMessage, text string, total int) {
	if len(redacted) == 0 {
		return nil, "", 0
	}
	b, err := canonicalJSON(redacted)
	if err != nil {
		return nil, "(arguments could not be encoded)", 0
	}
	if max <= 0 || len(b) <= max {
		return b, "", 0
	}
	return nil, cut(string(b), max), len(b)
}

// previewMax bounds the action previews kept with confirmations,
// approvals and challenges, and shown as a one-line summary.
const previewMax = 1024

// actionPreview is the one-line, redacted description of an action:
// server.tool and its redacted arguments, or a reported step's hint.
func actionPreview(a Action, redacted map[string]any) string {
	if a.reported() {
		return cut(a.Hint, previewMax)
	}
	s := a.Server + "." + a.Tool
	if len(redacted) > 0 {
		if b, err := canonicalJSON(redacted); err == nil {
			s += " " + string(b)
		}
	}
	return cut(s, previewMax)
}

// cut shortens s to at most n bytes on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
