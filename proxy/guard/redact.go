package guard

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy"
)

// One notion of a secret argument, used for the audit log, the state
// database and what a human is shown: a value is a secret when
//   - the tool's schema declares it (writeOnly, format "password"), passed
//     in Action.Secrets;
//   - its name, or the name of an object it sits in, is a well-known
//     secret name, compared exactly (policy.SecretName);
//   - the policy's secret_arguments name it.
//
// Nothing is redacted by substring: run_python {"code": ...} must leave a
// trace of what ran.

// redactor replaces the secrets of one call's arguments.
type redactor struct {
	key     []byte
	specs   []policy.ArgumentSpec
	names   []string // the call's folded names, for secret_arguments
	schema  map[string]bool
	redacts int
}

func (g *Guard) redactorFor(a Action) *redactor {
	r := &redactor{key: g.auditKey(), schema: map[string]bool{}}
	if g.Policy != nil {
		r.specs = g.pol().SecretArguments
	}
	if a.Server != "" {
		r.names = policy.NameForms(a.Operation, a.Server, a.Tool)
	}
	for _, s := range a.Secrets {
		r.schema[s] = true
	}
	return r
}

func (g *Guard) auditKey() []byte {
	if g.Store == nil {
		return nil
	}
	return g.Store.AuditKey()
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
		if r.schema[k] || r.secret(k, path) {
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
			if r.secret(k, p) {
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

func (r *redactor) secret(key string, path []string) bool {
	if policy.SecretName(key) {
		return true
	}
	for _, s := range r.specs {
		if s.AppliesTo(r.names, path) {
			return true
		}
	}
	return false
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

// canonicalJSON encodes v with sorted keys, without HTML escaping (so the
// audit log shows "<" as the server received it).
func canonicalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

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
