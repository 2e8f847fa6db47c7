package guard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
)

// What is a secret is policy.SecretArgument's to say (the one notion:
// names, schema, secret_arguments); the schema part comes from the
// catalog as Action.Secrets. A secret is replaced by its keyed digest in
// the audit log, the state database and what a human is shown, and so is
// an object held under a secret name.
//
// Nothing is redacted by substring: run_python {"code": ...} must leave a
// trace of what ran.

// redactor replaces the secrets of one call's arguments.
type redactor struct {
	key     []byte
	pol     *policy.Policy   // secret_arguments; nil: names only
	names   policy.CallNames // the call's names, for secret_arguments
	schema  map[string]bool
	redacts int
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
			if r.secret(p) {
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
	}
	return v
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
