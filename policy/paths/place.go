// Package paths judges the file paths a tool is handed: the one place
// each names (Canonical), whether that place is inside the roots a server
// works in (Within), and whether it is a place where secrets are kept
// (the Shipped list and the config's sensitive_paths, Match).
//
// Everything here is lexical: nothing is looked up on disk, so the
// package is pure and its answers depend on their arguments alone.
// Symbolic links are the caller's to resolve where it may do I/O
// (proxy.ResolvePlace), and a value that cannot be read as one local path
// is reported as not OK, with the reason in plain words: the caller then
// asks a human rather than guess how the server will read it.
//
// Paths are read as Unix reads them (Linux, macOS): '/' alone separates.
// A backslash, which a Windows program reads as a separator and a Unix
// one as part of a name, and a Windows drive path are not OK.
package paths

import (
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/aqlguard/aqlguard/policy/canonical"
)

// Place is one path argument, read.
type Place struct {
	// Raw is the value as the call sent it.
	Raw string
	// Clean is the absolute, lexically clean path Raw names: `~`
	// expanded, a relative path joined to the working directory, a file:
	// URI decoded, repeated separators and `.` removed, `..` applied. ""
	// when not OK.
	Clean string
	// Written is the absolute path as written, before `.` and `..` are
	// applied (`~` expanded, a relative path joined to the working
	// directory, a file: URI decoded). A program that resolves `..`
	// through a symbolic link reads it differently from Clean; the I/O
	// side compares the two readings (proxy.ResolvePlace). "" when not OK.
	Written string
	// OK is false when Raw cannot be read as one local path: Why says
	// why, and the caller asks a human.
	OK bool
	// Climbs is true when the written path has a `..` segment: it goes
	// up from the directory written before it (`/proj/../etc/passwd`,
	// `a/../../x`). Outside every root, that is a path that escapes the
	// roots with `..`.
	Climbs bool
	// Why says, in plain words, why Raw is not OK ("" when it is).
	Why string
	// Looked says the I/O side looked Clean up on disk
	// (proxy.ResolvePlace), and Exists what it found there then: a
	// human is told "create the new file" or "overwrite", not only
	// "write". Nothing is judged on it (the disk may change before the
	// server acts); Canonical leaves both false.
	Looked, Exists bool
}

// Canonical reads raw, a path argument, as the one local path it names.
// home is the user's home directory (for `~` and `~/…`), cwd the
// directory a relative path is relative to (the server's working
// directory); both absolute, or "" when not known, and then a path that
// needs them is not OK. A file: URI is read as the path it names
// (policy/canonical decodes it).
//
// Canonical of an OK place's Clean is that Clean again.
func Canonical(raw, home, cwd string) Place {
	p := Place{Raw: raw}
	written, why := absolute(raw, home, cwd)
	if why == "" {
		why = unreadable(written)
	}
	if why != "" {
		p.Why = why
		return p
	}
	p.Written, p.Clean, p.OK = written, path.Clean(written), true
	p.Climbs = climbs(written)
	return p
}

// absolute is raw as an absolute path, its dot segments as written, or
// why it cannot be read as one.
func absolute(raw, home, cwd string) (written, why string) {
	switch {
	case raw == "":
		return "", "the path is empty"
	case !utf8.ValidString(raw):
		return "", "the path is not valid UTF-8 text, so what it names depends on the program that reads it"
	case isDrivePath(raw):
		return "", "the path is a Windows drive path (" + raw[:2] + `\…), which names no place on this machine`
	case hasPrefixFold(raw, "file:"):
		p, ok := canonical.FilePath(raw)
		if !ok {
			return "", "the file: URI does not name one path on this machine (it names another host, holds an encoded slash or backslash, a query or a fragment, or is relative)"
		}
		return p, ""
	case isURL(raw):
		scheme, _, _ := strings.Cut(raw, ":")
		return "", "the value is a URL (" + scheme + "://…), not a path on this machine"
	case raw == "~" || strings.HasPrefix(raw, "~/"):
		if !usable(home) {
			return "", "the path starts with ~ and the home directory is not known"
		}
		return home + "/" + raw[1:], ""
	case raw[0] == '~':
		return "", "the path names another user's home directory (~name), which aqlguard does not look up"
	case raw[0] != '/':
		if !usable(cwd) {
			return "", "the path is relative and the directory it is relative to is not known"
		}
		return cwd + "/" + raw, ""
	}
	return raw, ""
}

// unreadable says why an absolute path is not one aqlguard can show and
// judge as it is, or "".
func unreadable(p string) string {
	if strings.IndexByte(p, '\\') >= 0 {
		return "the path holds a backslash, which Windows programs read as a separator and others as part of a name"
	}
	for _, r := range p {
		switch {
		case r == 0:
			return "the path holds a NUL byte, where some programs stop reading it"
		case r < 0x20 || r == 0x7f || 0x80 <= r && r < 0xa0:
			return fmt.Sprintf("the path holds a control character (U+%04X), which no file name needs and which hides what it says", r)
		case bidiControl(r):
			return fmt.Sprintf("the path holds an invisible direction mark (U+%04X), which can make it read as another path", r)
		}
	}
	return ""
}

// bidiControl reports the characters that reorder text as it is shown
// (Trojan Source, CVE-2021-42574): a name holding one can read as
// another.
func bidiControl(r rune) bool {
	return r == 0x200e || r == 0x200f || r == 0x061c || 0x202a <= r && r <= 0x202e || 0x2066 <= r && r <= 0x2069
}

// usable reports whether dir can anchor a path: absolute, valid text.
func usable(dir string) bool {
	return strings.HasPrefix(dir, "/") && utf8.ValidString(dir) && unreadable(dir) == ""
}

// climbs reports whether the written path has a `..` segment.
func climbs(written string) bool {
	for seg := range strings.SplitSeq(written, "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

// isDrivePath reports C:, C:\… and C:/… (a file name such as "c:x" on
// Unix is not one).
func isDrivePath(s string) bool {
	if len(s) < 2 || s[1] != ':' || !('a' <= s[0] && s[0] <= 'z' || 'A' <= s[0] && s[0] <= 'Z') {
		return false
	}
	return len(s) == 2 || s[2] == '\\' || s[2] == '/'
}

// isURL reports "scheme://…" (RFC 3986 3.1 scheme). Other text with a
// colon ("notes:2024.txt") is a file name.
func isURL(s string) bool {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok || scheme == "" || !strings.HasPrefix(rest, "//") {
		return false
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		switch {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Within reports whether clean, an absolute clean path, is inside one of
// roots: a root is its own inside, "/" holds every path, and /proj does
// not hold /project. The comparison is exact, byte for byte, also where
// the file system ignores case (macOS): a path spelled in other case than
// its root is judged outside, which asks rather than allows. A root that
// is not absolute holds nothing; one written with a trailing slash or
// dot segments is read clean.
func Within(clean string, roots []string) bool {
	if !strings.HasPrefix(clean, "/") {
		return false
	}
	for _, r := range roots {
		if !strings.HasPrefix(r, "/") {
			continue
		}
		r = path.Clean(r) // no allocation when r is clean already
		if r == "/" || clean == r || strings.HasPrefix(clean, r) && clean[len(r)] == '/' {
			return true
		}
	}
	return false
}
