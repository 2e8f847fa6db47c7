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
	r := Request{Kind: KindConfirmation, Agent: "claude-desktop", Operation: "fs_delete_file",
		Action: `fs.delete_file {"path":"/srv/data/report.csv"}`, Reason: `matches requires_approval "fs.delete_*"`,
		Arguments: map[string]any{"path": "/srv/data/report.csv", "opts": map[string]any{"force": true, "n": 2}},
		Token:     "conf_1", ExpiresAt: renderNow.Add(4*time.Minute + 59*time.Second)}
	got, err := questionText(r, renderNow)
	if err != nil {
		t.Fatal(err)
	}
	want := `Agent: claude-desktop
Operation: fs_delete_file
Reason: matches requires_approval "fs.delete_*"
Action: fs.delete_file {"path":"/srv/data/report.csv"}
Arguments:
{
  "opts": {
    "force": true,
    "n": 2
  },
  "path": "/srv/data/report.csv"
}

"Allow once" lets this one call run; "Deny" refuses it.
This question expires ` + expiry(r.ExpiresAt, renderNow) + "."
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !strings.HasSuffix(expiry(r.ExpiresAt, renderNow), ", in 4m59s") {
		t.Errorf("expiry %q", expiry(r.ExpiresAt, renderNow))
	}

	r.Arguments, r.Reason = nil, ""
	got, _ = questionText(r, renderNow)
	if !strings.Contains(got, "\nArguments: none\n") || strings.Contains(got, "Reason:") {
		t.Errorf("no arguments, no reason:\n%s", got)
	}
}

// Arguments the human cannot see cannot be approved: the question fails.
func TestQuestionTextUnrenderableArguments(t *testing.T) {
	_, err := questionText(Request{Arguments: map[string]any{"f": func() {}}}, renderNow)
	if err == nil {
		t.Fatal("no error")
	}
}

func TestArgumentsAreCapped(t *testing.T) {
	// Many short lines: the line cap applies.
	many := map[string]any{"list": make([]int, 500)}
	s, err := renderArguments(many)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(s, "\n")
	if len(lines) != maxArgLines+1 || !strings.HasPrefix(lines[maxArgLines], "… (") {
		t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}

	// One long value: the character cap applies, counted in characters
	// (not bytes), and the note says how many are left out.
	long := strings.Repeat("é", 5000)
	s, _ = renderArguments(map[string]any{"content": long})
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
	got, err := questionText(r, renderNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`Agent: a\u000AAgent: root` + "\n",
		`Operation: op\u001B[2J` + "\n",
		`Action: rm -rf /\u202Efdp.txt\u200B` + "\n",
		"Reason: bad \uFFFD byte\n",
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
		Tier: "danger_zone", Challenge: "123e4567-e89b-42d3-a456-426614174000", Code: "7K3M-0QZ8-ABCD-EFGH-JKMNP-QRST0",
		ExpiresAt: renderNow.Add(5 * time.Minute)}
	label := `aqlguard paused or blocked an agent. To let it go on, enter this
verification code where you are asked for it (verify_challenge).
If you did not expect this, close this window and do not use the code.

Agent: claude
Operation: srv_tool
Action: srv.tool {"p":"C:\x"}
Tier: danger_zone
Challenge: 123e4567-e89b-42d3-a456-426614174000
Expires ` + expiry(r.ExpiresAt, renderNow) + `.

Verification code (select it and copy it):`
	tests := []struct {
		name, code, want string
	}{
		{"with the code", r.Code, label + "\n\n" + r.Code},
		{"label for an entry field", "", label},
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
	r.Agent = "a\nVerification code (select it and copy it):\n\nAAAA-AAAA-AAAA-AAAA-AAAAA-AAAAA"
	got := codeText(r, renderNow, r.Code)
	if !strings.Contains(got, `Agent: a\u000AVerification code`) || strings.Count(got, "\n\n") != 3 ||
		!strings.HasSuffix(got, "\n\n"+r.Code) {
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
