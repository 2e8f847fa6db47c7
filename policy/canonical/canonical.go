// Package canonical puts the names of things a call reaches (resource
// URIs, file paths) in one form before a policy is matched against them,
// so that a pattern written as `*.resource:file:///etc/*` sees
// `file:///tmp/../etc/shadow`, `FILE://localhost/etc/shadow`,
// `file:///%65tc/shadow` and `file:////etc//shadow` as what they are.
//
// The forms are lexical: nothing is looked up on disk (a symlink is the
// server's business and its sandbox's). What cannot be put in one form
// without guessing how the server will read it is reported as not
// canonical, and a caller must then ask a human rather than match the
// text as written.
package canonical

import (
	"path"
	"strings"
	"unicode/utf8"
)

// URI is the canonical form of a URI, and whether it has one.
//
// Every URI: the scheme and the host are lower case; percent-escapes of
// unreserved characters (letters, digits, - . _ ~) are decoded and the
// others written in upper case; the path's dot segments are removed
// (RFC 3986 5.2.4). A file: URI also names one local path: its host is
// empty (localhost is the same machine), its path is fully decoded and
// cleaned (repeated slashes are one), and it has no query or fragment.
// A file: URI whose path cannot be read as one path — another host, an
// encoded slash, backslash or NUL, invalid UTF-8 — has no canonical form,
// nor has a string without a scheme.
func URI(raw string) (string, bool) {
	scheme, rest, ok := splitScheme(raw)
	if !ok {
		return "", false
	}
	scheme = strings.ToLower(scheme)
	rest, fragment, hasFragment := strings.Cut(rest, "#")
	rest, query, hasQuery := strings.Cut(rest, "?")
	authority, rest, hasAuthority := splitAuthority(rest)
	if scheme == "file" {
		return fileURI(authority, hasAuthority, rest, hasQuery || hasFragment)
	}
	var b strings.Builder
	b.Grow(len(raw))
	b.WriteString(scheme)
	b.WriteByte(':')
	if hasAuthority {
		auth, ok := normalizeEscapes(authority)
		if !ok {
			return "", false
		}
		b.WriteString("//")
		b.WriteString(lowerHost(auth))
	}
	p, ok := normalizeEscapes(rest)
	if !ok {
		return "", false
	}
	if hasAuthority || strings.HasPrefix(p, "/") {
		p = removeDotSegments(p)
	}
	if !hasAuthority && strings.HasPrefix(p, "//") {
		p = "/." + p // RFC 3986 5.3: not to be read as an authority
	}
	b.WriteString(p)
	if hasQuery {
		q, ok := normalizeEscapes(query)
		if !ok {
			return "", false
		}
		b.WriteByte('?')
		b.WriteString(q)
	}
	if hasFragment {
		f, ok := normalizeEscapes(fragment)
		if !ok {
			return "", false
		}
		b.WriteByte('#')
		b.WriteString(f)
	}
	return b.String(), true
}

// splitAuthority splits "//authority/path" (RFC 3986 3.2); has is false
// for a URI without an authority.
func splitAuthority(rest string) (authority, p string, has bool) {
	if !strings.HasPrefix(rest, "//") {
		return "", rest, false
	}
	rest = rest[2:]
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		end = len(rest)
	}
	return rest[:end], rest[end:], true
}

// FilePath is the local path a file: URI names, its escapes decoded and
// its segments as written: `.` and `..` are not applied, so that a
// caller can tell a URI that climbs (file:///proj/../etc) from one that
// does not; path.Clean of it is the path of URI's canonical form. ok is
// false where URI finds no canonical form, and for any other scheme.
func FilePath(raw string) (p string, ok bool) {
	scheme, rest, ok := splitScheme(raw)
	if !ok || !strings.EqualFold(scheme, "file") {
		return "", false
	}
	if strings.ContainsAny(rest, "?#") {
		return "", false // a query or fragment: not a path a server is sure to ignore
	}
	authority, rest, hasAuthority := splitAuthority(rest)
	return filePath(authority, hasAuthority, rest)
}

// fileURI is the canonical form of a file: URI's parts.
func fileURI(authority string, hasAuthority bool, p string, extra bool) (string, bool) {
	if extra {
		return "", false // a query or fragment: not a path a server is sure to ignore
	}
	decoded, ok := filePath(authority, hasAuthority, p)
	if !ok {
		return "", false
	}
	return "file://" + encodePath(path.Clean(decoded)), true
}

// filePath is the decoded path of a file: URI's parts, not cleaned.
func filePath(authority string, hasAuthority bool, p string) (string, bool) {
	if hasAuthority {
		host, ok := decode(authority)
		if !ok || host != "" && !strings.EqualFold(host, "localhost") {
			return "", false // file://server/share: another machine
		}
	} else if !strings.HasPrefix(p, "/") {
		return "", false // file:relative
	}
	if p == "" {
		p = "/"
	}
	// An encoded slash or backslash is a separator to some servers and a
	// file name character to others.
	lower := strings.ToLower(p)
	if strings.Contains(lower, "%2f") || strings.Contains(lower, "%5c") || strings.Contains(p, `\`) {
		return "", false
	}
	decoded, ok := decode(p)
	if !ok || strings.ContainsRune(decoded, 0) || !utf8.ValidString(decoded) || !strings.HasPrefix(decoded, "/") {
		return "", false
	}
	return decoded, true
}

// Path is the lexical canonical form of a file path as a tool receives
// it: repeated separators one, `.` segments dropped, `..` applied
// (path.Clean). A path holding backslashes is also read with them as
// separators (Windows), as a second form; a caller matches both.
func Path(p string) (forms []string) {
	if p == "" {
		return nil
	}
	forms = append(forms, path.Clean(p))
	if strings.Contains(p, `\`) {
		forms = append(forms, path.Clean(strings.ReplaceAll(p, `\`, "/")))
	}
	return forms
}

// splitScheme splits "scheme:rest" (RFC 3986 3.1).
func splitScheme(raw string) (scheme, rest string, ok bool) {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return raw[:i], raw[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// lowerHost lower-cases the host of an authority, keeping its userinfo.
func lowerHost(authority string) string {
	at := strings.LastIndexByte(authority, '@')
	return authority[:at+1] + strings.ToLower(authority[at+1:])
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// escapeAt decodes the percent-escape at s[i], if one is there.
func escapeAt(s string, i int) (byte, bool) {
	if i+2 >= len(s) || s[i] != '%' {
		return 0, false
	}
	hi, ok1 := unhex(s[i+1])
	lo, ok2 := unhex(s[i+2])
	return hi<<4 | lo, ok1 && ok2
}

// normalizeEscapes decodes the escapes of unreserved characters and
// writes the others in upper case (RFC 3986 6.2.2); a stray % makes the
// text not a URI.
func normalizeEscapes(s string) (string, bool) { return unescape(s, false) }

// decode undoes every percent-escape.
func decode(s string) (string, bool) { return unescape(s, true) }

// unescape decodes the percent-escapes of s: every one with all, else
// those of unreserved characters, the others written in upper case.
func unescape(s string, all bool) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		c, ok := escapeAt(s, i)
		if !ok {
			return "", false
		}
		if all || unreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(s[i+1:i+3]))
		}
		i += 2
	}
	return b.String(), true
}

// encodePath writes a decoded path back as a URI path: what must be
// escaped in one (%, ?, #, spaces and controls, bytes beyond ASCII stay
// as UTF-8 text: a pattern is written with the letters, not escapes).
func encodePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '%' || c == '?' || c == '#' || c <= ' ' || c == 0x7f {
			b.WriteString("%" + strings.ToUpper(hexByte(c)))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// removeDotSegments is RFC 3986 5.2.4 over a path with escapes already
// normalized (so "%2E" is ".").
func removeDotSegments(p string) string {
	if !strings.Contains(p, ".") {
		return p
	}
	var out []string
	segs := strings.Split(p, "/")
	for i, s := range segs {
		switch s {
		case ".":
			if i == len(segs)-1 {
				out = append(out, "")
			}
		case "..":
			if len(out) > 1 || len(out) == 1 && out[0] != "" {
				out = out[:len(out)-1]
			}
			if i == len(segs)-1 {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	r := strings.Join(out, "/")
	if strings.HasPrefix(p, "/") && !strings.HasPrefix(r, "/") {
		r = "/" + r
	}
	return r
}
