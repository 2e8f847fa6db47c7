package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of what a dialog renders. The human must be able to read the
// whole question and still reach the buttons: a 2000-character argument
// list pretty-printed one value a line would push them off the screen.
const (
	maxArgChars  = 2000 // characters of pretty-printed arguments
	maxArgLines  = 40   // lines of pretty-printed arguments
	maxLineChars = 100  // longer lines are broken (the dialog does not wrap)
	maxFieldChar = 1000 // characters of one single-line field (agent, action, …)
)

// questionText renders a confirmation for the question dialog: who, what,
// why, the arguments as indented JSON, and until when. now is only used
// for the "in 4m59s" hint.
func questionText(r Request, now time.Time) (string, error) {
	var b strings.Builder
	field(&b, "Agent", r.Agent)
	field(&b, "Operation", r.Operation)
	if r.Reason != "" {
		field(&b, "Reason", r.Reason)
	}
	field(&b, "Action", r.Action)
	if len(r.Arguments) == 0 {
		b.WriteString("Arguments: none\n")
	} else {
		args, err := renderArguments(r.Arguments)
		if err != nil {
			// Fail closed: a human must not approve what they cannot see.
			return "", fmt.Errorf("rendering the arguments: %w", err)
		}
		b.WriteString("Arguments:\n")
		b.WriteString(args)
		b.WriteByte('\n')
	}
	b.WriteString("\n")
	b.WriteString(`"Allow once" lets this one call run; "Deny" refuses it.` + "\n")
	if r.AllowSession {
		b.WriteString(`"` + AllowSessionLabel + `" lets this call and every later call of the same tool` + "\n" +
			"in this session run without asking (calls judged on their arguments still ask).\n")
	}
	b.WriteString("This question expires " + expiry(r.ExpiresAt, now) + ".")
	return b.String(), nil
}

// codeText renders the text of the verification code dialog: what the
// code is for, the context to judge it by, and, when code is not empty,
// the code last, on a line of its own (a triple click selects exactly
// it). With an empty code it is the label above an entry field that
// holds the code (see showCode on macOS and Windows).
func codeText(r Request, now time.Time, code string) string {
	var b strings.Builder
	b.WriteString("aqlguard paused or blocked an agent. To let it go on, enter this\n")
	b.WriteString("verification code where you are asked for it (verify_challenge).\n")
	b.WriteString("If you did not expect this, close this window and do not use the code.\n\n")
	field(&b, "Agent", r.Agent)
	if r.Operation != "" {
		field(&b, "Operation", r.Operation)
	}
	field(&b, "Action", r.Action)
	field(&b, "Tier", r.Tier)
	field(&b, "Challenge", r.Challenge)
	b.WriteString("Expires " + expiry(r.ExpiresAt, now) + ".\n\n")
	if code == "" {
		b.WriteString("Verification code (select it and copy it):")
		return b.String()
	}
	b.WriteString("Verification code (select it and copy it):\n\n")
	b.WriteString(code)
	return b.String()
}

// expiry renders an expiry in the machine's local time, with the time left.
func expiry(at, now time.Time) string {
	if at.IsZero() {
		return "never (no expiry was set)"
	}
	s := "at " + at.Local().Format("15:04:05 MST (2006-01-02)")
	if left := at.Sub(now).Round(time.Second); left > 0 {
		s += ", in " + left.String()
	} else {
		s += ", already past"
	}
	return s
}

// field writes "Name: value" on one logical line: the value is made
// visible (see visible), capped at maxFieldChar characters and broken into
// lines of maxLineChars.
func field(b *strings.Builder, name, value string) {
	v, more := capRunes(visible(value, false), maxFieldChar)
	if more > 0 {
		v += fmt.Sprintf("… (%d more characters)", more)
	}
	if v == "" {
		v = "(none)"
	}
	b.WriteString(breakLine(name+": "+v, "    "))
	b.WriteByte('\n')
}

// renderArguments pretty-prints the arguments as indented JSON with sorted
// keys (encoding/json sorts map keys), made visible, capped at maxArgChars
// characters and maxArgLines lines, long lines broken.
func renderArguments(args map[string]any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<" and "&" as they are, not \u003c
	enc.SetIndent("", "  ")
	if err := enc.Encode(args); err != nil {
		return "", err
	}
	full := visible(strings.TrimSuffix(buf.String(), "\n"), true)
	shown, more := capRunes(full, maxArgChars)
	if lines := strings.SplitAfter(shown, "\n"); len(lines) > maxArgLines {
		shown = strings.TrimSuffix(strings.Join(lines[:maxArgLines], ""), "\n")
		more = utf8.RuneCountInString(full) - utf8.RuneCountInString(shown)
	}
	var out []string
	for _, line := range strings.Split(shown, "\n") {
		out = append(out, breakLine(line, "    "))
	}
	s := strings.Join(out, "\n")
	if more > 0 {
		s += fmt.Sprintf("\n… (%d more characters)", more)
	}
	return s, nil
}

// visible makes text safe to show a human who must judge it: invalid
// UTF-8 becomes U+FFFD, and control and format characters are shown as
// \uXXXX escapes rather than acted on. That covers the bidirectional
// overrides (U+202E and friends) that can make "rm -rf /" read as
// something harmless, zero-width characters, and line breaks in a value
// that should be one line (keepNewlines keeps \n for the JSON block).
func visible(s string, keepNewlines bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && keepNewlines:
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			if r > 0xFFFF {
				fmt.Fprintf(&b, `\U%08X`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// capRunes returns at most n runes of s and how many were left out.
func capRunes(s string, n int) (string, int) {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s, 0
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], total - n
}

// breakLine breaks a line longer than maxLineChars runes into pieces,
// the continuations indented. The dialogs run with --no-wrap so that the
// JSON keeps its shape; this keeps a long value from making the window
// wider than the screen.
func breakLine(line, indent string) string {
	if utf8.RuneCountInString(line) <= maxLineChars {
		return line
	}
	var b strings.Builder
	width := maxLineChars
	n := 0
	for _, r := range line {
		if n == width {
			b.WriteString("\n" + indent)
			n = 0
			width = maxLineChars - utf8.RuneCountInString(indent)
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
