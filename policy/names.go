package policy

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// SnakeName lower-cases a name and puts single underscores at word
// boundaries: camelCase and PascalCase humps, acronym ends (HTTPServer ->
// http_server), and any run of non-alphanumerics ("drop-table", "drop
// table", "__drop__table" -> drop_table). Leading and trailing separators
// are dropped, so "_drop_table" cannot slip past drop_*. Tool and argument
// names are compared in this form, so a rule written for target_env also
// covers the server's targetEnv.
func SnakeName(s string) string {
	if isSnake(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 4)
	rs := []rune(s)
	sep := false
	for i, r := range rs {
		switch {
		case unicode.IsUpper(r):
			if i > 0 {
				prev := rs[i-1]
				nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
				if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
					sep = true
				}
			}
			r = unicode.ToLower(r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
		default:
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('_')
		}
		sep = false
		b.WriteRune(r)
	}
	return b.String()
}

func isSnake(s string) bool {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return s == ""
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '_':
			if s[i-1] == '_' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// secretNames are argument names whose values are secrets by convention,
// compared exactly in SnakeName form. Exact, not by substring: "code" in
// run_python {"code": ...} or "key" in a cache lookup is what ran, and an
// auditor must see it; a substring list would hide it.
var secretNames = map[string]bool{
	"password": true, "passwd": true, "passphrase": true, "pass": true,
	"secret": true, "client_secret": true, "secret_key": true, "secret_access_key": true,
	"token": true, "access_token": true, "refresh_token": true, "id_token": true, "auth_token": true,
	"bearer_token": true, "session_token": true, "api_token": true, "github_token": true,
	"api_key": true, "apikey": true, "x_api_key": true, "access_key": true,
	"authorization": true, "proxy_authorization": true, "cookie": true, "set_cookie": true,
	"private_key": true, "ssh_key": true, "credentials": true, "credential": true,
	"otp": true, "totp": true, "mfa_code": true, "pin": true,
}

// secretSuffixes extend secretNames to qualified names (db_password,
// stripe_secret_key, github_access_token), at a word boundary only: no
// "monkey" for "key", no max_tokens for "token".
var secretSuffixes = []string{"_password", "_passwd", "_passphrase", "_secret", "_secret_key", "_api_key", "_apikey",
	"_private_key", "_access_token", "_refresh_token", "_auth_token", "_bearer_token", "_session_token", "_client_secret"}

// SecretName reports whether an argument of this name holds a secret by
// convention (see secretNames and secretSuffixes).
func SecretName(name string) bool {
	n := SnakeName(name)
	if secretNames[n] {
		return true
	}
	for _, s := range secretSuffixes {
		if strings.HasSuffix(n, s) {
			return true
		}
	}
	return false
}

// SecretSchema reports whether a JSON Schema declares its value secret:
// writeOnly, or format "password".
func SecretSchema(s map[string]any) bool {
	return s["writeOnly"] == true || s["format"] == "password"
}

// SecretArgument is aqlguard's one notion of a secret argument. The
// argument at path (snake_case names from the top level) of a call known
// by names (NameForms) holds a secret when its own name says so
// (SecretName, at any depth), when its schema says so (SecretSchema;
// schema is nil where it is not known), or when secret_arguments names
// it. The catalog marks such parameters sensitive (validation errors do
// not echo them) and the guard replaces them in audit records and in
// the human's questions. p may be nil: conventions and schema only.
func (p *Policy) SecretArgument(names CallNames, path []string, schema map[string]any) bool {
	if len(path) == 0 {
		return false
	}
	if SecretName(path[len(path)-1]) || schema != nil && SecretSchema(schema) {
		return true
	}
	if p == nil {
		return false
	}
	for _, s := range p.SecretArguments {
		if s.AppliesTo(names, path) {
			return true
		}
	}
	return false
}

// ArgumentSpec names an argument of some tools: shell_arguments and
// secret_arguments entries, "[TOOL:]ARGUMENT".
type ArgumentSpec struct {
	// Tool matches the call's names (zero: every tool).
	Tool Pattern
	// Path is the argument's name, or a dotted path into an object, each
	// part in SnakeName form.
	Path []string
	// Source is the entry as written.
	Source string
}

// ParseArgumentSpec parses "[TOOL:]ARGUMENT".
func ParseArgumentSpec(src string) (ArgumentSpec, error) {
	spec := ArgumentSpec{Source: src}
	arg := src
	if tool, rest, ok := strings.Cut(src, ":"); ok {
		pat, err := CompilePattern(tool)
		if err != nil {
			return spec, err
		}
		spec.Tool, arg = pat, rest
	}
	path, err := ArgumentPath(arg)
	if err != nil {
		return spec, err
	}
	spec.Path = path
	return spec, nil
}

// ArgumentPath splits an argument name or dotted path into SnakeName parts.
func ArgumentPath(name string) ([]string, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("an argument name is required")
	}
	parts := strings.Split(strings.TrimSpace(name), ".")
	for i, p := range parts {
		parts[i] = SnakeName(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("argument %q has an empty part", name)
		}
	}
	return parts, nil
}

// AppliesTo reports whether the spec covers an argument path of a call
// with these names.
func (a ArgumentSpec) AppliesTo(names CallNames, path []string) bool {
	if len(path) != len(a.Path) {
		return false
	}
	for i := range path {
		if path[i] != a.Path[i] {
			return false
		}
	}
	return a.Tool.g == nil || a.Tool.MatchesName(names)
}

// CallNames are the names a proxied call is known by, folded and without
// repeats, with what each is built from, so that a name pattern is
// matched against the names it speaks of (Pattern.FirstName).
type CallNames struct {
	// Forms are, in this order: the operation name as the model sees it
	// (fs_write_file); the tool's own name in snake_case (write_file)
	// and in the server's spelling (writefile, folded); and server.tool
	// in both spellings (fs.write_file, fs.writefile).
	Forms []string
	kinds [maxForms]formKind
	// qualified[i], for an own name, is the position of server.<it>.
	qualified [maxForms]int8
}

// formKind says what a name form is built from (a set: two ways of
// building a name may give the same text).
type formKind uint8

const (
	formOperation formKind = 1 << iota // server + "_" + the tool's name: aqlguard's
	formOwn                            // the tool's own name: the server's word
	formQualified                      // server + "." + the tool's own name
)

const maxForms = 5

// NameForms lists the names a proxied call is known by (CallNames). A
// resource or a prompt (IsReadSubject) is known by its subject as it is
// and by server.<subject>.
func NameForms(operation, server, tool string) CallNames {
	var n CallNames
	add := func(form string, kind formKind) int {
		form = Normalize(form)
		if form == "" {
			return -1
		}
		for i, have := range n.Forms {
			if have == form {
				n.kinds[i] |= kind
				return i
			}
		}
		n.kinds[len(n.Forms)] = kind
		n.qualified[len(n.Forms)] = -1
		n.Forms = append(n.Forms, form)
		return len(n.Forms) - 1
	}
	n.Forms = make([]string, 0, maxForms)
	if IsReadSubject(tool) {
		// A resource or a prompt is named by its URI or name as it is:
		// resource:<uri>, server.resource:<uri>.
		own := add(tool, formOwn)
		if server != "" && own >= 0 {
			n.qualified[own] = int8(add(server+"."+tool, formQualified))
		}
		return n
	}
	add(operation, formOperation)
	snake, own := add(SnakeName(tool), formOwn), add(tool, formOwn)
	if server != "" && tool != "" {
		q := add(server+"."+SnakeName(tool), formQualified)
		if snake >= 0 {
			n.qualified[snake] = int8(q)
		}
		if q := add(server+"."+tool, formQualified); own >= 0 {
			n.qualified[own] = int8(q)
		}
	}
	return n
}

// Read subjects: what a resources/read or a prompts/get is matched as,
// "resource:<uri>" and "prompt:<name>" (with the server,
// "fs.resource:file:///etc/hosts").
const (
	ResourcePrefix = "resource:"
	PromptPrefix   = "prompt:"
)

// IsReadSubject reports whether tool names a resource or a prompt rather
// than a tool.
func IsReadSubject(tool string) bool {
	return strings.HasPrefix(tool, ResourcePrefix) || strings.HasPrefix(tool, PromptPrefix)
}
