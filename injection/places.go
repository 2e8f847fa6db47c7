package injection

import (
	"bytes"
	"strings"
)

// secretNames are file and directory names where secrets are kept: keys,
// credentials, the MCP clients' own configurations (which hold other
// servers' tokens), shell histories, browser and wallet stores.
var secretNames = map[string]bool{
	".ssh": true, "id_rsa": true, "id_dsa": true, "id_ecdsa": true, "id_ed25519": true,
	"id_rsa.pub": true, "id_dsa.pub": true, "id_ecdsa.pub": true, "id_ed25519.pub": true,
	"authorized_keys": true, "known_hosts": true,
	".gnupg": true, "secring.gpg": true, ".aws": true, ".azure": true, ".kube": true, "kubeconfig": true,
	".netrc": true, "_netrc": true, ".pgpass": true, ".git-credentials": true, ".npmrc": true, ".pypirc": true,
	".vault-token": true, ".env": true, ".envrc": true, "credentials.json": true, "application_default_credentials.json": true,
	"mcp.json": true, "claude_desktop_config.json": true, "mcp_config.json": true, "cline_mcp_settings.json": true,
	"mcp_settings.json": true, ".claude.json": true,
	".bash_history": true, ".zsh_history": true, ".python_history": true, ".psql_history": true,
	"wallet.dat": true, "login.keychain": true, "login.keychain-db": true, "key4.db": true, "logins.json": true,
	"cookies.sqlite": true, "login data": true, "keychains": true, ".password-store": true,
}

// secretPairs are secret places named by a directory and a file whose
// name alone is ordinary.
var secretPairs = map[string]bool{
	".aws/credentials": true, ".aws/config": true, "etc/shadow": true, "etc/passwd": true, "etc/sudoers": true,
	"etc/gshadow": true, ".docker/config.json": true, ".kube/config": true, ".config/gcloud": true,
	"gh/hosts.yml": true, ".claude/settings.json": true, ".cursor/mcp.json": true, ".codeium/windsurf": true,
	"private/etc": true, ".config/op": true,
}

// keyFiles are private key names that also turn up inside longer names
// (a parameter called content_from_reading_ssh_id_rsa).
var keyFiles = []string{"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519"}

// secretNameEnds and secretPairEnds hold the length and the last byte
// of every key of secretNames and secretPairs: most components of the
// paths in a text (src, main.go, v1.2) are none of them, and need no
// map to say so.
var secretNameEnds, secretPairEnds = endsOf(secretNames), endsOf(secretPairs)

// secretNameStarts holds the length and the first byte of every key of
// secretNames: with secretNameEnds it keeps most components that end
// like a secret name (net/http, ".go") from the map.
var secretNameStarts = func() (t nameEnds) {
	for name := range secretNames {
		n, c := len(name), name[0]
		t[n][c/64] |= 1 << (c % 64)
	}
	return t
}()

// nameEnds has a bit per length (up to 64) and last byte of names.
type nameEnds [65][256 / 64]uint64

func endsOf(names map[string]bool) (t nameEnds) {
	for name := range names {
		n, c := len(name), name[len(name)-1]
		t[n][c/64] |= 1 << (c % 64)
	}
	return t
}

func (t *nameEnds) has(n int, c byte) bool {
	return n < len(t) && t[n][c/64]&(1<<(c%64)) != 0
}

// secretPath reports whether a chunk names a secret place. full: ask
// the maps of every component (Scanner.full).
func secretPath(core []byte, full bool) bool {
	var prev []byte
	rest := core
	for len(rest) > 0 {
		i := bytes.IndexAny(rest, `/\`)
		comp := rest
		if i >= 0 {
			comp, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(comp) == 0 {
			continue
		}
		last := comp[len(comp)-1]
		if (full || secretNameEnds.has(len(comp), last) && secretNameStarts.has(len(comp), comp[0])) && secretNames[string(comp)] || bytes.HasPrefix(comp, []byte(".env.")) {
			return true
		}
		if prev != nil && len(prev)+1+len(comp) <= 64 && (full || secretPairEnds.has(len(prev)+1+len(comp), last)) {
			var pair [64]byte
			n := copy(pair[:], prev)
			pair[n] = '/'
			n++
			n += copy(pair[n:], comp)
			if secretPairs[string(pair[:n])] {
				return true
			}
		}
		prev = comp
	}
	if bytes.Contains(core, []byte("id_")) {
		for _, k := range keyFiles {
			if i := bytes.Index(core, []byte(k)); i >= 0 {
				end := i + len(k)
				if (i == 0 || !isWordByte(core[i-1])) && (end == len(core) || !isWordByte(core[end])) {
					return true
				}
			}
		}
	}
	return false
}

// isEmail: local@domain.tld, as written in prose.
func isEmail(s []byte) bool {
	at := bytes.IndexByte(s, '@')
	if at <= 0 || at == len(s)-1 || bytes.IndexByte(s[at+1:], '@') >= 0 {
		return false
	}
	for _, c := range s[:at] {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("._%+-", c) >= 0) {
			return false
		}
	}
	domain := s[at+1:]
	dot := bytes.LastIndexByte(domain, '.')
	if dot <= 0 || len(domain)-dot-1 < 2 {
		return false
	}
	for i, c := range domain {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.':
		default:
			return false
		}
		if i > dot && !(c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// isPhone: +, then 8 to 15 digits.
func isPhone(s []byte) bool {
	if len(s) < 9 || len(s) > 16 || s[0] != '+' {
		return false
	}
	for _, c := range s[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// exampleAddress: an address at a domain kept for examples, which
// documentation writes ("e.g. alice@example.com"), or a phone number
// of the fictional 555 range.
func exampleAddress(s []byte) bool {
	at := bytes.IndexByte(s, '@')
	if at < 0 {
		return bytes.Contains(s, []byte("555"))
	}
	d := string(s[at+1:])
	for _, suffix := range []string{".example", ".test", ".invalid", ".localhost", ".local"} {
		if strings.HasSuffix(d, suffix) {
			return true
		}
	}
	switch d {
	case "localhost", "test.com", "domain.com", "company.com", "yourcompany.com", "yourdomain.com", "acme.com",
		"foo.com", "bar.com", "email.com":
		return true
	}
	return d == "example.com" || d == "example.org" || d == "example.net" || strings.HasPrefix(d, "example.") ||
		strings.HasSuffix(d, ".example.com")
}

// strongPlaceholders name private data: a URL with a place for one is
// a way out for it.
var strongPlaceholders = []string{"content", "secret", "password", "passwd", "credential", "ssh", "id_rsa", "private",
	"apikey", "api_key", "history", "conversation", "chat", "cookie", "prompt", "transcript", "messages", "env_var"}

// weakPlaceholders name data that is private when it rides in a query.
var weakPlaceholders = []string{"data", "file", "user", "email", "info", "context", "note", "text", "body", "summary",
	"env", "key", "token", "result", "output", "payload", "session"}

// parseURL reads a chunk as a URL (scheme://, www., or host?query) and
// finds a placeholder for data in it: {x}, <x>, [x], ${x}, $x.
func parseURL(s []byte) (urlHit, bool) {
	var u urlHit
	u.scheme = bytes.Contains(s, []byte("://")) || bytes.HasPrefix(s, []byte("www."))
	q := bytes.IndexByte(s, '?')
	if !u.scheme {
		if q <= 0 || bytes.IndexByte(s[:q], '.') < 0 || bytes.IndexByte(s[q:], '=') < 0 {
			return u, false
		}
	}
	for i := 0; i < len(s); i++ {
		var close byte
		switch s[i] {
		case '{':
			close = '}'
		case '<':
			close = '>'
		case '[':
			close = ']'
		case '$':
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || s[j] == '_') {
				j++
			}
			if j > i+1 {
				u.consider(s[i+1:j], q >= 0 && i > q)
			}
			continue
		default:
			continue
		}
		j := bytes.IndexByte(s[i+1:], close)
		if j <= 0 || j > 64 {
			continue
		}
		u.consider(s[i+1:i+1+j], q >= 0 && i > q)
		i += j
	}
	return u, true
}

// consider weighs one placeholder name, keeping the most telling.
func (u *urlHit) consider(name []byte, inQuery bool) {
	name = bytes.Trim(name, "$ ")
	if len(name) == 0 {
		return
	}
	for _, p := range strongPlaceholders {
		if bytes.Contains(name, []byte(p)) {
			u.placeholder, u.strong, u.query = name, true, inQuery
			return
		}
	}
	if u.strong || !inQuery {
		return
	}
	for _, p := range weakPlaceholders {
		if bytes.Contains(name, []byte(p)) {
			u.placeholder, u.query = name, true
			return
		}
	}
}

// secretVariable: a chunk written as an environment variable (upper case
// in the raw text, with an underscore) whose name says it holds a
// secret: OPENAI_API_KEY, GITHUB_TOKEN, DB_PASSWORD.
func secretVariable(raw string, fo []int32, a, b int, core []byte) bool {
	if bytes.IndexByte(core, '_') < 0 || len(core) > 64 {
		return false
	}
	named := false
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "credential"} {
		if bytes.Contains(core, []byte(w)) {
			named = true
			break
		}
	}
	if !named {
		return false
	}
	from, to := int(fo[a]), int(fo[b-1])+1
	if to > len(raw) {
		return false
	}
	for i := from; i < to; i++ {
		c := raw[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c == '{' || c == '}') {
			return false
		}
	}
	return true
}
