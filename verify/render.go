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

// questionText renders a confirmation: who asks, in which client, for
// which tool of which server, why (the rule or tier), what approving
// does, the arguments as indented JSON, and until when. With capped (the
// macOS and Windows dialogs, which do not scroll) the arguments are cut
// to what fits; otherwise they are shown in full, for a scrolling view.
// now is only used for the "in 4m59s" hint.
func questionText(r Request, now time.Time, capped bool) (string, error) {
	var b strings.Builder
	agent := r.Agent
	if r.Client != "" {
		agent += " (in " + r.Client + ")"
	}
	switch r.Operation {
	case "check-in: step limit":
		b.WriteString("The agent has made its allowed number of calls without a human looking in.\n\n")
	case "check-in: reported failure":
		b.WriteString("The agent reported that its previous step failed; it is paused until you look.\n\n")
	case OperationToolChange:
		b.WriteString("A server changed one of its tools since it was approved. Until you approve the change,\n" +
			"the agent sees the tool as it was, and calls to it are refused.\n\n")
	default:
		b.WriteString("An AI agent wants to run the call below. aqlguard needs your decision.\n\n")
	}
	field(&b, "Agent", agent)
	if r.Server != "" {
		field(&b, "Server", r.Server)
		field(&b, "Tool", r.Tool)
	} else {
		field(&b, "Operation", r.Operation)
	}
	if r.Reason != "" {
		field(&b, "Why you are asked", r.Reason)
	}
	if r.Tier != "" {
		field(&b, "Tier", r.Tier)
	}
	field(&b, "Action", r.Action)
	switch {
	case r.Detail != "":
		detail := visible(r.Detail, true)
		if capped {
			if cut, more := capRunes(detail, maxArgChars); more > 0 {
				detail = cut + fmt.Sprintf("\n… (%d more characters; read them with aqlguard pins list)", more)
			}
		}
		b.WriteString("Change (- as approved, + as the server sends it now):\n")
		b.WriteString(detail)
		if !strings.HasSuffix(detail, "\n") {
			b.WriteByte('\n')
		}
	case len(r.Arguments) == 0:
		b.WriteString("Arguments: none\n")
	default:
		args, err := renderArguments(r.Arguments, capped)
		if err != nil {
			// Fail closed: a human must not approve what they cannot see.
			return "", fmt.Errorf("rendering the arguments: %w", err)
		}
		if capped {
			b.WriteString("Arguments:\n")
		} else {
			b.WriteString("Arguments (in full; scroll to read all of them; secrets are shown as digests):\n")
		}
		b.WriteString(args)
		b.WriteByte('\n')
	}
	b.WriteString("\n")
	switch r.Operation {
	case "check-in: step limit":
		if r.Steps > 0 {
			fmt.Fprintf(&b, "%q lets the agent make another %d calls before it asks again; each call is still judged by the policy.\n", allowOnceLabel, r.Steps)
		} else {
			fmt.Fprintf(&b, "%q lets the agent go on until it reaches the step limit again.\n", allowOnceLabel)
		}
	case "check-in: reported failure":
		fmt.Fprintf(&b, "%q lifts the pause: the agent may go on after its failed step.\n", allowOnceLabel)
	case OperationToolChange:
		fmt.Fprintf(&b, "%q approves the changed tool: the agent sees it as it is now and may call it.\n", allowOnceLabel)
	default:
		fmt.Fprintf(&b, "%q lets this one call run.\n", allowOnceLabel)
		if r.AllowSession {
			tool := r.Tool
			if tool == "" {
				tool = "this tool"
			}
			fmt.Fprintf(&b, "%q lets this call and every later call of %s run without asking, in this session\n"+
				"(calls judged on their arguments still ask).\n", AllowSessionLabel, visible(tool, false))
		}
	}
	fmt.Fprintf(&b, "%q (also Return), Escape or closing this window refuse it.\n", denyLabel)
	b.WriteString("This question expires " + expiry(r.ExpiresAt, now) + ".")
	return b.String(), nil
}

// codeText renders the text of the verification code dialog: why the
// agent was stopped, what to do with the code, and, when code is not
// empty, the code last, on a line of its own (a triple click selects
// exactly it). With an empty code it is the label above an entry field
// that holds the code (see showCode on macOS and Windows).
func codeText(r Request, now time.Time, code string) string {
	var b strings.Builder
	agent := visible(r.Agent, false)
	fmt.Fprintf(&b, "aqlguard stopped the AI agent %q", agent)
	if r.Tier == "verify" {
		b.WriteString(" (paused until you decide).\n\n")
	} else {
		b.WriteString(" (blocked until you decide).\n\n")
	}
	if r.Reason != "" {
		field(&b, "Why", r.Reason)
	}
	if r.Operation != "" {
		field(&b, "Operation", r.Operation)
	}
	field(&b, "Action", r.Action)
	field(&b, "Tier", r.Tier)
	field(&b, "Challenge", r.Challenge)
	b.WriteString("Expires " + expiry(r.ExpiresAt, now) + ".\n\n")
	b.WriteString("To let the agent go on: type or paste this code into your chat with the\n" +
		"assistant. The assistant passes it to aqlguard (verify_challenge); it never\n" +
		"sees the code any other way. In a terminal, `aqlguard unblock " + agent + "` does the same.\n")
	b.WriteString("If you did not expect this, close this window and do not give the code.\n\n")
	if code == "" {
		b.WriteString("Verification code (copy it):")
		return b.String()
	}
	b.WriteString("Verification code:\n\n")
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
// keys (encoding/json sorts map keys), made visible, long lines broken;
// with capped, cut at maxArgChars characters and maxArgLines lines.
func renderArguments(args map[string]any, capped bool) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // "<" and "&" as they are, not \u003c
	enc.SetIndent("", "  ")
	if err := enc.Encode(args); err != nil {
		return "", err
	}
	full := visible(strings.TrimSuffix(buf.String(), "\n"), true)
	shown, more := full, 0
	if capped {
		shown, more = capRunes(full, maxArgChars)
	}
	if lines := strings.SplitAfter(shown, "\n"); capped && len(lines) > maxArgLines {
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
