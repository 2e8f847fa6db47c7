package secrets

import (
	"strings"
)

// A file kept where secrets are kept (an application's .env, a cloud
// credentials file) holds secrets whatever their form: a database
// password "hunter2-prod" matches no rule of the ruleset. Assigned reads
// such a file's assignments (NAME=value, name = value, with `export`,
// quotes, a comment after an unquoted value, and the + - or space a diff
// puts before a line) and takes as secret every value assigned to a name
// that says so (KEY, TOKEN, SECRET, PASSWORD, AUTH, DSN, ...): the session
// then knows it, and refuses it on its way out (Seen), whatever the
// ruleset says of its form.

// AssignedRule is the Rule of Assigned's findings.
const AssignedRule = "assigned-secret"

// secretNameParts are what a name holds (in lower case, anywhere in it)
// to say its value is a secret.
var secretNameParts = []string{
	"key", "token", "secret", "pass", "pwd", "credential", "auth", "dsn", "salt", "cookie", "private", "signing", "webhook",
}

// Assigned returns the values text assigns to secret names, at least
// MinSeenLen bytes long, as findings at where (Digest set, Checked
// false). Placeholders (${VAR}, <your key>, a value of one repeated
// character) are not secrets.
func Assigned(where, text string) []Finding {
	var out []Finding
	for start := 0; start < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += start
		}
		if a, b, ok := assignedValue(text, start, end); ok {
			out = append(out, Finding{Rule: AssignedRule, Description: "a value assigned to a secret's name in a file that keeps secrets",
				Where: where, Start: a, End: b, Digest: Digest(text[a:b])})
		}
		start = end + 1
	}
	return out
}

// assignedValue is the value line text[start:end] assigns to a secret
// name, as offsets into text.
func assignedValue(text string, start, end int) (int, int, bool) {
	i := start
	if i < end && (text[i] == '+' || text[i] == '-' || text[i] == ' ') {
		i++ // a diff's line
	}
	for i < end && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if strings.HasPrefix(text[i:end], "export ") {
		i += len("export ")
	}
	// The name is what comes before the first '=' (an npmrc's
	// "//registry.npmjs.org/:_authToken"), or a word before ": " (YAML,
	// INI, JSON's "name": with its quotes).
	nameStart := i
	for i < end && text[i] != ' ' && text[i] != '\t' && text[i] != '=' {
		i++
	}
	name, nameEnd := text[nameStart:i], i
	for i < end && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	switch {
	case i < end && text[i] == '=':
		i++
	case strings.HasSuffix(name, ":"):
		name, i = strings.Trim(name[:len(name)-1], `"'`), nameEnd
	default:
		return 0, 0, false
	}
	for i < end && (text[i] == ' ' || text[i] == '\t') {
		i++
	}
	if !SecretName(name) {
		return 0, 0, false
	}
	a, b := i, end
	if b > a && text[b-1] == '\r' {
		b--
	}
	if a < b && (text[a] == '"' || text[a] == '\'') {
		q := text[a]
		if c := strings.IndexByte(text[a+1:b], q); c >= 0 {
			a, b = a+1, a+1+c
		}
	} else if c := strings.Index(text[a:b], " #"); c >= 0 {
		b = a + c
	}
	for b > a && (text[b-1] == ' ' || text[b-1] == '\t') {
		b--
	}
	if b-a < MinSeenLen || placeholder(text[a:b]) {
		return 0, 0, false
	}
	return a, b, true
}

// SecretName says a variable or key of this name holds a secret (one of
// secretNameParts in it, in any case): what Assigned reads a value by,
// and what a server's failure line is redacted by (its environment).
func SecretName(name string) bool {
	lower := strings.ToLower(name)
	for _, p := range secretNameParts {
		if strings.Contains(lower, p) {
			return true
		}
	}
	return false
}

// placeholder: a value that stands for a secret rather than being one.
func placeholder(v string) bool {
	if strings.HasPrefix(v, "${") || strings.HasPrefix(v, "$(") || v[0] == '<' && v[len(v)-1] == '>' {
		return true
	}
	return strings.Count(v, v[:1]) == len(v)
}
