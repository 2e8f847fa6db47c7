package verify

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var renderNow = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

func TestQuestionText(t *testing.T) {
	r := Request{Kind: KindConfirmation, Agent: "claude-desktop", Client: "Claude Desktop", Operation: "fs_delete_file",
		Server: "fs", Tool: "delete_file",
		Action: `fs.delete_file {"path":"/srv/data/report.csv"}`, Reason: `matches requires_approval "fs.delete_*"`,
		Arguments: map[string]any{"path": "/srv/data/report.csv", "opts": map[string]any{"force": true, "n": 2}},
		Token:     "conf_1", Tier: "confirm", AllowSession: true, ExpiresAt: renderNow.Add(4*time.Minute + 59*time.Second)}
	got, err := questionText(r, renderNow, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `An AI agent wants to run the call below. aqlguard needs your decision.

Agent: claude-desktop (in Claude Desktop)
Server: fs
Tool: delete_file
Why you are asked: matches requires_approval "fs.delete_*"
Tier: confirm
Action: fs.delete_file {"path":"/srv/data/report.csv"}
Arguments (in full; scroll to read all of them; secrets are shown as digests):
{
  "opts": {
    "force": true,
    "n": 2
  },
  "path": "/srv/data/report.csv"
}

"Allow once" lets this one call run.
"Allow for this session" lets this call and every later call of delete_file run without asking, in this session
(calls judged on their arguments still ask).
"Deny" (also Return), Escape or closing this window refuse it.
This question expires ` + expiry(r.ExpiresAt, renderNow) + "."
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.HasSuffix(expiry(r.ExpiresAt, renderNow), ", in 4m59s") {
		t.Errorf("expiry %q", expiry(r.ExpiresAt, renderNow))
	}

	r.Arguments, r.Reason, r.AllowSession = nil, "", false
	got, _ = questionText(r, renderNow, false)
	if !strings.Contains(got, "\nArguments: none\n") || strings.Contains(got, "Why you are asked:") || strings.Contains(got, "session") {
		t.Errorf("no arguments, no reason, no session:\n%s", got)
	}

	// A step-limit check-in says what approving does.
	c := Request{Kind: KindConfirmation, Agent: "a", Operation: "check-in: step limit", Action: "check-in: step limit (next action: x)",
		Steps: 100, ExpiresAt: renderNow.Add(time.Minute)}
	got, _ = questionText(c, renderNow, false)
	if !strings.Contains(got, `"Allow once" lets the agent make another 100 calls before it asks again`) {
		t.Errorf("step-limit check-in:\n%s", got)
	}
}

// Arguments the human cannot see cannot be approved: the question fails.
func TestQuestionTextUnrenderableArguments(t *testing.T) {
	_, err := questionText(Request{Arguments: map[string]any{"f": func() {}}}, renderNow, false)
	if err == nil {
		t.Fatal("no error")
	}
}

// In full (the scrolling view) nothing is cut; capped (the dialogs of
// macOS and Windows, which do not scroll) long arguments are.
func TestArgumentsFullAndCapped(t *testing.T) {
	long := strings.Repeat("é", 5000)
	full, err := renderArguments(map[string]any{"content": long, "list": make([]int, 500)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(full, "é") != 5000 || strings.Count(full, "\n    0") != 500 || strings.Contains(full, "more characters") {
		t.Error("the full rendering left something out")
	}

	// Many short lines: the line cap applies.
	many := map[string]any{"list": make([]int, 500)}
	s, err := renderArguments(many, true)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(s, "\n")
	if len(lines) != maxArgLines+1 || !strings.HasPrefix(lines[maxArgLines], "… (") {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}

	// One long value: the character cap applies, counted in characters
	// (not bytes), and the note says how many are left out.
	s, _ = renderArguments(map[string]any{"content": long}, true)
	total := utf8.RuneCountInString("{\n  \"content\": \"" + long + "\"\n}")
	note := fmt.Sprintf("… (%d more characters)", total-maxArgChars)
	if !strings.HasSuffix(s, "\n"+note) {
		t.Errorf("no note %q at the end of %q", note, s[len(s)-80:])
	}
	if !utf8.ValidString(s) {
		t.Error("cut inside a character")
	}
	for _, line := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(line); n > maxLineChars {
			t.Errorf("line of %d characters", n)
		}
	}
	if n := utf8.RuneCountInString(strings.ReplaceAll(strings.ReplaceAll(s, "\n", ""), "    ", "")); n > maxArgChars+len(note)+10 {
		t.Errorf("%d characters shown", n)
	}
}

// What the human reads is what will run: control characters, line breaks
// in one-line fields, bidi overrides and zero-width characters are shown
// as escapes, invalid UTF-8 as U+FFFD; HTML-ish text is left alone.
func TestVisible(t *testing.T) {
	r := Request{Agent: "a\nAgent: root", Operation: "op\x1b[2J", Action: "rm -rf /\u202Efdp.txt\u200B",
		Reason: "bad \xff byte", Arguments: map[string]any{"s": "x\u202Ey <b>&amp;</b>", "\u2066k": "\U000E0041"}}
	got, err := questionText(r, renderNow, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Agent: a\u000AAgent: root` + "\n",
		`Operation: op\u001B[2J` + "\n",
		`Action: rm -rf /\u202Efdp.txt\u200B` + "\n",
		"Why you are asked: bad \uFFFD byte\n",
		`"s": "x\u202Ey <b>&amp;</b>"`,
		`"\u2066k": "\U000E0041"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	for _, bad := range []string{"\u202E", "\u200B", "\x1b", "\u2066", "\U000E0041", "\xff"} {
		if strings.Contains(got, bad) {
			t.Errorf("raw %q in the text", bad)
		}
	}
}

func TestBreakLine(t *testing.T) {
	line := strings.Repeat("x", 250)
	got := strings.Split(breakLine(line, "    "), "\n")
	if len(got) != 3 || got[0] != strings.Repeat("x", 100) || got[1] != "    "+strings.Repeat("x", 96) ||
		got[2] != "    "+strings.Repeat("x", 54) {
		t.Errorf("%q", got)
	}
	if s := strings.Repeat("y", 100); breakLine(s, "  ") != s {
		t.Error("a line of exactly the limit was broken")
	}
}

func TestFieldCap(t *testing.T) {
	var b strings.Builder
	field(&b, "Action", strings.Repeat("z", maxFieldChar+7))
	s := b.String()
	if !strings.HasSuffix(s, "… (7 more characters)\n") {
		t.Errorf("%q", s[len(s)-40:])
	}
	b.Reset()
	field(&b, "Agent", "")
	if b.String() != "Agent: (none)\n" {
		t.Errorf("%q", b.String())
	}
}

// The code dialog's text: the context, then the code on a line of its
// own, last; with no code (the label above an entry field on macOS and
// Windows) the text carries no part of it.
func TestCodeText(t *testing.T) {
	r := Request{Kind: KindChallenge, Agent: "claude", Operation: "srv_tool", Action: `srv.tool {"p":"C:\x"}`,
		Reason: `Action matches deny pattern "drop_*"`, Tier: "danger_zone", Challenge: "123e4567-e89b-42d3-a456-426614174000",
		Code: "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0", ExpiresAt: renderNow.Add(5 * time.Minute)}
	head := `aqlguard stopped the AI agent "claude" (blocked until you decide).

Why: Action matches deny pattern "drop_*"
Operation: srv_tool
Action: srv.tool {"p":"C:\x"}
Tier: danger_zone
Challenge: 123e4567-e89b-42d3-a456-426614174000
Expires ` + expiry(r.ExpiresAt, renderNow) + `.

To let the agent go on: type or paste this code into your chat with the
assistant. The assistant passes it to aqlguard (verify_challenge); it never
sees the code any other way. In a terminal, ` + "`aqlguard unblock claude`" + ` does the same.
If you did not expect this, close this window and do not give the code.

`
	tests := []struct {
		name, code, want string
	}{
		{"with the code", r.Code, head + "Verification code:\n\n" + r.Code},
		{"label for an entry field", "", head + "Verification code (copy it):"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := codeText(r, renderNow, tt.code)
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			if tt.code == "" && (strings.Contains(got, "7K3M") || strings.Contains(got, NormalizeCode(r.Code))) {
				t.Errorf("the label carries the code:\n%s", got)
			}
		})
	}

	// Fields are made visible as in the question; the code is not a field.
	r.Agent = "a\nVerification code:\n\nAAAA-AAAA-AAAA-AAAA-AAAAA-AAAAA"
	got := codeText(r, renderNow, r.Code)
	if strings.Contains(got, "\nAAAA-AAAA") || !strings.HasSuffix(got, "\n\n"+r.Code) || strings.Count(got, "Verification code:\n") != 1 {
		t.Errorf("an agent name can pass for the code:\n%s", got)
	}
}

func TestExpiry(t *testing.T) {
	if got := expiry(time.Time{}, renderNow); !strings.HasPrefix(got, "never") {
		t.Errorf("%q", got)
	}
	if got := expiry(renderNow.Add(-time.Minute), renderNow); !strings.HasSuffix(got, ", already past") {
		t.Errorf("%q", got)
	}
	at := renderNow.Add(90 * time.Second)
	if got, want := expiry(at, renderNow), "at "+at.Local().Format("15:04:05 MST (2006-01-02)")+", in 1m30s"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}
