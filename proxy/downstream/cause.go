package downstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/aqlguard/aqlguard/injection"
	"github.com/aqlguard/aqlguard/secrets"
)

// A server that fails to start says why on its stderr (npm's "404 Not
// Found", Python's "ModuleNotFoundError", node's "Cannot find module"),
// and the client learns only what State.Problem carries: the cause is
// that one line, picked from the last lines the server wrote and with
// every secret in it taken out, since the line reaches the model.

// tailLines is how many of a server's last stderr lines are kept for
// the cause; maxCause bounds the line that is shown.
const (
	tailLines = 16
	maxCause  = 300
)

// causeNoise are lines that end a tool's error output without saying
// what went wrong: npm's pointer to its debug log and its hint after a
// 404, node's version banner, a traceback's header.
var causeNoise = []string{
	"a complete log of this run can be found in",
	"/_logs/", `\_logs\`, // where npm 6 put that log, on a line of its own
	"note that you can also install from a",
	"tarball, folder, http url, or git url",
	"traceback (most recent call last)",
	"to show where the warning was created",
	"for more information, try '--help'",
}

// causeWords mark a line that says what failed.
var causeWords = []string{
	"error", "err!", "fatal", "panic", "exception", "not found", "no such", "cannot", "can't", "could not",
	"couldn't", "unable", "failed", "denied", "refused", "invalid", "missing", "unknown", "not in this registry",
}

// npmPrefix is npm's line prefix ("npm error 404", "npm ERR! code E404"),
// which alone says nothing.
var npmPrefix = regexp.MustCompile(`(?i)^npm (error|err!|warn)( +[0-9]+)?\s*`)

// meaningfulLine picks the line of a server's last stderr lines that
// says why it failed: the last that reads as an error (errorish), else
// the last that is not noise ("" when none is).
func meaningfulLine(lines []string) (line string, errorish bool) {
	fallback := ""
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if noiseLine(l) {
			continue
		}
		lower := strings.ToLower(l)
		for _, w := range causeWords {
			if strings.Contains(lower, w) {
				return l, true
			}
		}
		if fallback == "" {
			fallback = l
		}
	}
	return fallback, false
}

func noiseLine(l string) bool {
	if strings.Trim(l, " \t^~-=*#|{}[](),;:.'\"`") == "" {
		return true // blank, a caret under a source line, a rule, a brace
	}
	if strings.HasPrefix(l, "at ") || strings.HasPrefix(l, "File \"") || strings.HasPrefix(l, "Node.js v") {
		return true // a stack frame, node's banner
	}
	if rest := npmPrefix.ReplaceAllString(l, ""); rest == "" {
		return true
	}
	lower := strings.ToLower(l)
	for _, n := range causeNoise {
		if strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// urlInText finds URLs in a line; redactURL takes out what in one is
// secret.
var urlInText = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s'"<>()\[\]{}]+`)

// authScheme finds the credentials of an HTTP Authorization value.
var authScheme = regexp.MustCompile(`(?i)\b(bearer|basic|token)(\s+|=|:\s*)[A-Za-z0-9._~+/=\-]{6,}`)

// redactURL drops a URL's user name and password and the values of its
// query and fragment (signed URLs, access_token=, api_key=): what is
// left (scheme, host, path) still says where.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		// Not a URL we can read: keep only its scheme and host.
		scheme, rest, _ := strings.Cut(raw, "://")
		host, _, _ := strings.Cut(rest, "/")
		if _, h, ok := strings.Cut(host, "@"); ok {
			host = "[redacted]@" + h
		}
		host, _, _ = strings.Cut(host, "?")
		return scheme + "://" + host + "/[redacted]"
	}
	if u.User != nil {
		u.User = url.User("[redacted]")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			q[k] = []string{"[redacted]"}
		}
		// Encode would escape the brackets; the placeholder is ours.
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, url.QueryEscape(k)+"=[redacted]")
		}
		slices.Sort(keys)
		u.RawQuery = strings.Join(keys, "&")
	}
	if u.Fragment != "" {
		u.Fragment = "[redacted]"
	}
	out := u.String()
	// url.String escapes the placeholder in the user name.
	return strings.ReplaceAll(out, "%5Bredacted%5D", "[redacted]")
}

// secretEnvName says a variable's value is a credential by its name: a
// secret name as secrets reads one, or a session's.
func secretEnvName(name string) bool {
	return secrets.SecretName(name) || strings.Contains(strings.ToLower(name), "session")
}

// knownSecrets are the values a server's line must never carry: its
// configured headers, the environment aqlguard gives it where a name
// says a credential, and the same of aqlguard's own environment.
func knownSecrets(env map[string]string, headers map[string]string, inherited []string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 6 {
			out = append(out, v)
			// A header's "Bearer x" also leaks as x alone.
			if _, cred, ok := strings.Cut(v, " "); ok && len(cred) >= 6 {
				out = append(out, cred)
			}
		}
	}
	for k, v := range env {
		if secretEnvName(k) {
			add(v)
		}
	}
	for _, v := range headers {
		add(v)
	}
	for _, kv := range inherited {
		if k, v, ok := strings.Cut(kv, "="); ok && secretEnvName(k) {
			add(v)
		}
	}
	// Longest first, so a value that holds another goes whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactLine takes every secret it can find out of a line that will be
// shown to the client: known values, credentials by their format
// (the secrets package's rules) or by the name they are assigned to,
// Authorization values, and URLs' user info, queries and fragments.
func redactLine(line string, known []string) string {
	// URLs first: a placeholder in one would end it early.
	line = urlInText.ReplaceAllStringFunc(line, redactURL)
	for _, v := range known {
		line = strings.ReplaceAll(line, v, "[redacted]")
	}
	fs := secrets.Default().Scan("stderr", line)
	fs = append(fs, secrets.Assigned("stderr", line)...)
	line = secrets.Redact(line, fs)
	return authScheme.ReplaceAllString(line, "$1$2[redacted]")
}

// cause is the line that says why a server's start failed, redacted and
// bounded ("" when its stderr said nothing useful), and whether it reads
// as an error.
func (l *lineLogger) cause(known []string) (string, bool) {
	l.mu.Lock()
	lines := slices.Clone(l.tail)
	if len(l.buf) > 0 { // a last line without its newline
		lines = append(lines, string(l.buf))
	}
	l.mu.Unlock()
	c, errorish := meaningfulLine(lines)
	if c == "" {
		return "", false
	}
	c = redactLine(c, known)
	if len(c) > maxCause {
		c = strings.ToValidUTF8(c[:maxCause], "") + "…"
	}
	// The line is the server's own words and reaches the model: one
	// that speaks to the assistant stays in the log only.
	if fs := injection.Scan(c, injection.Options{}); len(fs) > 0 {
		return "its last error line is withheld, since it holds text aimed at the assistant (" + fs[0].Rule + "); it is in aqlguard's log", errorish
	}
	return c, errorish
}

// withCause appends a server's own words to a fixed phrase.
func withCause(problem, cause string) string {
	if cause == "" {
		return problem
	}
	return problem + ": " + cause
}

// netProblem says why a connection to a remote server could not be
// made, in one line: the host that does not resolve, the address where
// nothing listens, the certificate that is not trusted ("" for other
// errors). Only the host and port are named, never the URL's path,
// query or credentials.
func netProblem(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Sprintf("the host %s does not resolve (no such host)", dnsErr.Name)
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("the host %s could not be resolved (%s)", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		if errors.As(err, &opErr) && opErr.Addr != nil {
			return fmt.Sprintf("nothing listens at %s (connection refused)", opErr.Addr)
		}
		return "connection refused"
	case errors.As(err, &hostErr):
		return "TLS: " + hostErr.Error()
	case errors.As(err, &unknownCA):
		return "TLS: the server's certificate is signed by an authority this machine does not trust"
	case errors.As(err, &invalid):
		return "TLS: " + invalid.Error()
	case errors.As(err, &certErr):
		return "TLS: the server's certificate could not be verified"
	case errors.Is(err, syscall.ECONNRESET):
		return "the server reset the connection"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "the host cannot be reached (no route)"
	}
	return ""
}
