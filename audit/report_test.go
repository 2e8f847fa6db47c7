package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
	"github.com/aqlguard/aqlguard/store"
)

// day is a day of a small team's audit log: two agents, three servers,
// mostly allowed calls, some asked about, two blocks and what followed.
func day(end time.Time) []store.Record {
	start := end.Add(-24 * time.Hour)
	var recs []store.Record
	add := func(r store.Record) {
		r.Seq = uint64(len(recs) + 1)
		recs = append(recs, r)
	}
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	tools := []struct{ server, op string }{{"fs", "fs_read_file"}, {"fs", "fs_list_directory"}, {"github", "github_get_issue"},
		{"shell", "shell_run_command"}, {"fs", "fs_write_file"}}
	for i := 0; i < 420; i++ {
		at := start.Add(time.Duration(i) * 24 * time.Hour / 420)
		hour := at.Hour()
		if hour >= 1 && hour < 7 && i%5 != 0 { // quieter at night
			continue
		}
		agent := "claude-code"
		if i%3 == 0 {
			agent = "cursor"
		}
		t := tools[i%len(tools)]
		r := store.Record{Time: at, Kind: "decision", Principal: agent, Session: "s-1", Server: t.server, Operation: t.op,
			Decision: "allow", Stage: "safety_tier", Tier: "advisory", Risk: 10,
			Args: args(map[string]any{"path": "/home/alice/project/src/file" + fmt.Sprint(i%17) + ".go"})}
		switch {
		case i%37 == 0:
			r.Decision, r.Tier, r.Risk, r.Result, r.Stage = "confirm", "confirm", 45, "CONFIRMATION_REQUIRED", "safety_tier"
			r.Operation, r.Server = "shell_run_command", "shell"
			r.Args = args(map[string]any{"command": "git push origin feature/login-form", "cwd": "/home/alice/project"})
			r.Factors = []string{"step limit: step 12 of 100", "safety tier: risk 45 (confirm tier) asks under moderate tolerance"}
			r.Token = fmt.Sprintf("conf_%032d", i)
			r.ArgsSHA256 = fmt.Sprintf("%064x", i)
		case i%91 == 0:
			r.Decision, r.Result, r.Stage, r.Tier, r.Risk = "deny", "PERMISSION_DENIED", "pattern", "confirm", 50
			r.Operation, r.Server = "fs_delete_file", "fs"
			r.Args = args(map[string]any{"path": "/home/alice/project/.env"})
			r.Factors = []string{`pattern: requires_approval "delete_*" matched the name "delete_file"`, "confirmation: a human denied it"}
		}
		add(r)
		if r.Decision == "confirm" {
			answer := "approved"
			if i%2 == 1 {
				answer = "denied"
			}
			add(store.Record{Time: at.Add(40 * time.Second), Kind: "confirmation", Principal: agent, Session: "s-1",
				Server: r.Server, Operation: r.Operation, Decision: answer, Tier: "confirm", Token: r.Token})
			if answer == "approved" { // the model repeats the call, which runs
				again := r
				again.Time, again.Decision, again.Result, again.Approval, again.Token = at.Add(45*time.Second), "allow", "", r.Token, ""
				add(again)
				add(store.Record{Time: at.Add(47 * time.Second), Kind: "outcome", Principal: agent, Session: "s-1",
					Server: r.Server, Operation: r.Operation, ArgsSHA256: r.ArgsSHA256, Result: "ok", DurationMS: 1840})
			}
		}
	}
	block := func(at time.Time, agent, cmd string) {
		add(store.Record{Time: at, Kind: "decision", Principal: agent, Session: "s-2", Server: "shell", Operation: "shell_run_command",
			Decision: "block", Stage: "pattern", Tier: "danger_zone", Risk: 100, Result: "PERMISSION_AGENT_BLOCKED",
			Args:        args(map[string]any{"command": cmd}),
			Factors:     []string{"step limit: step 40 of 100", `pattern: deny "*rm -rf /" matched argument "command"`},
			ChallengeID: "3f2b8c1e-5d4a-4c7b-9e2f-1a0b3c4d5e6f"})
		add(store.Record{Time: at.Add(time.Second), Kind: "challenge", Principal: agent, Operation: "shell_run_command",
			Tier: "danger_zone", ChallengeID: "3f2b8c1e-5d4a-4c7b-9e2f-1a0b3c4d5e6f", Result: "code_shown",
			Factors: []string{"verification: code shown to a human through the dialog channel"}})
		add(store.Record{Time: at.Add(3 * time.Minute), Kind: "verification", Principal: agent, Operation: "verify_challenge",
			Decision: "failed", ChallengeID: "3f2b8c1e-5d4a-4c7b-9e2f-1a0b3c4d5e6f", Result: "wrong_code"})
		add(store.Record{Time: at.Add(4 * time.Minute), Kind: "verification", Principal: agent, Operation: "verify_challenge",
			Decision: "verified", ChallengeID: "3f2b8c1e-5d4a-4c7b-9e2f-1a0b3c4d5e6f", Result: "unblocked"})
	}
	block(start.Add(14*time.Hour), "claude-code", "sudo rm -rf / --no-preserve-root </dev/null")
	block(start.Add(20*time.Hour), "cursor", "bash -c 'rm -rf /'")
	add(store.Record{Time: start.Add(11 * time.Hour), Kind: "policy", Principal: "claude-code", Operation: "reload",
		Decision: "b3c1", Result: "policy 9f2ab41c → b3c1d9e0"})
	add(store.Record{Time: start.Add(16 * time.Hour), Kind: "pin", Principal: "claude-code", Server: "github",
		Operation: "pin github.search_issues", Result: "change refused by a human"})
	add(store.Record{Time: start.Add(2 * time.Hour), Kind: "pin", Principal: "claude-code", Server: "fs",
		Operation: "pin fs.read_file", Result: "pinned at first sight"})
	// In log order, as the log gives them.
	for i := range recs {
		for j := i; j > 0 && recs[j].Time.Before(recs[j-1].Time); j-- {
			recs[j], recs[j-1] = recs[j-1], recs[j]
		}
	}
	for i := range recs {
		recs[i].Seq = uint64(i + 1)
	}
	return recs
}

// reportOf renders recs as a report of the 24 hours to end.
func reportOf(t *testing.T, recs []store.Record, end time.Time, chain Chain) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteReport(&b, recs, ReportOptions{Since: end.Add(-24 * time.Hour), Until: end, Generated: end,
		Version: "v1.0.0", StateID: "f9718af4fc9574ab", Chain: chain}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The report is one self-contained file: nothing it shows comes from
// anywhere else, and it says so to the browser (Content-Security-Policy
// default-src 'none'). What the log holds is text in it, never markup.
func TestReportIsSelfContained(t *testing.T) {
	end := time.Date(2026, 11, 25, 18, 0, 0, 0, time.UTC)
	recs := day(end)
	recs = append(recs, store.Record{Seq: uint64(len(recs) + 1), Time: end.Add(-time.Minute), Kind: "decision", Principal: "x",
		Server: "web", Operation: "web_fetch", Decision: "confirm", Result: "CONFIRMATION_REQUIRED",
		Args: json.RawMessage(`{"url":"</script><script>alert(1)</script><img src=https://evil.example/x>"}`)})
	page := reportOf(t, recs, end, Chain{Verified: true, Records: uint64(len(recs))})
	if !strings.Contains(page, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"`) {
		t.Error("no Content-Security-Policy that forbids loading anything")
	}
	for _, external := range []*regexp.Regexp{
		regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]*\s(src|href)=`), regexp.MustCompile(`(?i)url\(`), regexp.MustCompile(`(?i)@import`),
	} {
		if m := external.FindString(page); m != "" {
			t.Errorf("the report loads something: %q", m)
		}
	}
	if strings.Contains(page, "<script><script>alert") || strings.Contains(page, "<img src=https://evil") {
		t.Error("arguments from the log became markup")
	}
	if !strings.Contains(page, "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the arguments are not shown as text")
	}
	for _, want := range []string{"Hash chain verified: ", "Calls by decision", "Calls stopped or put to a person",
		"Answers of a person", "Verification codes", "Policy switches", "policy 9f2ab41c → b3c1d9e0", "Tool definitions",
		"change refused by a human", "1 pinned when first seen", `"command": "sudo rm -rf / --no-preserve-root </dev/null"`} {
		if !strings.Contains(page, want) && !strings.Contains(page, html.EscapeString(want)) {
			t.Errorf("the report lacks %q", want)
		}
	}
	broken := reportOf(t, recs, end, Chain{Problem: "audit chain broken at record 57: its content does not match its hash"})
	if !strings.Contains(broken, "Hash chain does NOT verify: audit chain broken at record 57") {
		t.Error("a broken chain is not said")
	}
}

// chromium is Debian's headless Chromium, or a skip (a failure when
// AQLGUARD_REQUIRE_CHROMIUM=1, which .ci/run sets after installing it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AQLGUARD_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is not installed (.ci/run installs Debian's chromium)")
	}
	t.Skip("\n!!!!!!!! SKIPPING the report's browser test: chromium is not installed (apt-get install chromium) !!!!!!!!")
	return ""
}

// headless runs chromium on page with extra flags; no network, no
// profile but a fresh empty one.
func headless(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, page)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return out
}

// TestReportInChromium renders the report in headless Chromium and
// asserts on the page the script built: the counts, the timeline's bars,
// the filter taken from the address (#agent=cursor) hiding the other
// agent's rows and redrawing the chart. It keeps a screenshot (in
// docs/screenshots with AQLGUARD_UPDATE_DOCS=1).
func TestReportInChromium(t *testing.T) {
	long.Test(t)
	bin := chromium(t)
	end := time.Now().Truncate(time.Hour).Add(time.Hour)
	recs := day(end)
	page := reportOf(t, recs, end, Chain{Verified: true, Records: uint64(len(recs))})
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
		t.Fatal(err)
	}
	decisions, cursor, stopped, cursorStopped := 0, 0, 0, 0
	for _, r := range recs {
		if r.Kind != "decision" {
			continue
		}
		decisions++
		if r.Principal == "cursor" {
			cursor++
		}
		if r.Decision != "allow" {
			stopped++
			if r.Principal == "cursor" {
				cursorStopped++
			}
		}
	}

	dom := string(headless(t, bin, "file://"+file, "--dump-dom", "--virtual-time-budget=5000"))
	if !strings.Contains(dom, `<b id="n-all">`+fmt.Sprint(decisions)+`</b>`) {
		t.Errorf("the page does not count %d decisions", decisions)
	}
	if n := len(regexp.MustCompile(`<rect id="b\d+-blocked"[^>]* height="[1-9]`).FindAllString(dom, -1)); n != 2 {
		t.Errorf("%d bars of blocks drawn, want 2", n)
	}
	if !strings.Contains(dom, `<span data-count="calls">`+fmt.Sprint(stopped)+`</span>`) {
		t.Errorf("the page does not list %d stopped calls", stopped)
	}

	dom = string(headless(t, bin, "file://"+file+"#agent=cursor", "--dump-dom", "--virtual-time-budget=5000"))
	if !strings.Contains(dom, `<b id="n-all">`+fmt.Sprint(cursor)+`</b>`) {
		t.Errorf("filtered by agent: the page does not count cursor's %d decisions", cursor)
	}
	if got := strings.Count(dom, `data-agent="claude-code" data-server="shell" data-tool="shell_run_command" data-section="calls" hidden=""`); got == 0 {
		t.Error("filtered by agent: the other agent's rows are not hidden")
	}
	if !strings.Contains(dom, `<span data-count="calls">`+fmt.Sprint(cursorStopped)+`</span>`) {
		t.Errorf("filtered by agent: want %d stopped calls shown", cursorStopped)
	}

	shot := filepath.Join(t.TempDir(), "audit-report.png")
	headless(t, bin, "file://"+file, "--screenshot="+shot, "--window-size=1280,1500", "--hide-scrollbars",
		"--virtual-time-budget=5000")
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
		t.Fatalf("no screenshot: %v", err)
	}
	keep := func(dir string) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(shot)
		if err := os.WriteFile(filepath.Join(dir, "audit-report.png"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", filepath.Join(dir, "audit-report.png"))
	}
	if dir := os.Getenv("AQLGUARD_ARTIFACTS"); dir != "" {
		keep(dir)
	}
	if os.Getenv("AQLGUARD_UPDATE_DOCS") == "1" {
		keep(filepath.Join("..", "docs", "screenshots"))
	}
}

// A stopped or asked-about call says why in words, and what became of
// it: the person's answer (by its question's token) and whether the
// call then ran (the outcome of the same session, operation and
// arguments after it).
func TestReportSaysWhyAndThen(t *testing.T) {
	at := time.Date(2026, 11, 29, 17, 4, 0, 0, time.Local)
	rec := func(seq uint64, r store.Record) store.Record {
		r.Seq, r.Time, r.Principal = seq, at.Add(time.Duration(seq)*time.Second), "dev"
		if r.Session == "" {
			r.Session = "s1"
		}
		return r
	}
	recs := []store.Record{
		rec(1, store.Record{Kind: "decision", Decision: "confirm", Stage: "safety_tier", Tier: "confirm", Risk: 55,
			Server: "fs", Operation: "fs_write_file", ArgsSHA256: "aa", Token: "T1", Result: "CONFIRMATION_REQUIRED",
			Factors: []string{"step limit: step 1 of 100", "effect: overwrite outside the roots"}}),
		rec(2, store.Record{Kind: "confirmation", Decision: "approved", Token: "T1", Server: "fs", Operation: "fs_write_file"}),
		rec(3, store.Record{Kind: "decision", Decision: "allow", Server: "fs", Operation: "fs_write_file", ArgsSHA256: "aa", Approval: "T1"}),
		rec(4, store.Record{Kind: "outcome", Server: "fs", Operation: "fs_write_file", ArgsSHA256: "aa", Result: "ok"}),
		rec(5, store.Record{Kind: "decision", Decision: "block", Stage: "pattern", Tier: "danger_zone", Risk: 100,
			Server: "db", Operation: "db_drop_database", ArgsSHA256: "bb", ChallengeID: "c1", Result: "PERMISSION_AGENT_BLOCKED",
			Factors: []string{`pattern: deny "*drop_database*" matched the name "db_drop_database"`}}),
		rec(6, store.Record{Kind: "decision", Decision: "confirm", Stage: "safety_tier", Tier: "confirm", Risk: 40,
			Server: "fs", Operation: "fs_move_file", ArgsSHA256: "cc", Token: "T2", Result: "CONFIRMATION_REQUIRED"}),
		rec(7, store.Record{Kind: "decision", Decision: "confirm", Stage: "safety_tier", Tier: "confirm", Risk: 45,
			Server: "sh", Operation: "sh_run", ArgsSHA256: "dd", Token: "T3", Result: "CONFIRMATION_REQUIRED"}),
		rec(8, store.Record{Kind: "confirmation", Decision: "denied", Token: "T3", Server: "sh", Operation: "sh_run"}),
	}
	var b bytes.Buffer
	if err := WriteReport(&b, recs, ReportOptions{Generated: at.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	page := html.UnescapeString(b.String())
	for _, want := range []string{
		"what the call does (risk 55 of 100) is in the confirm tier, which a person decides",
		"the person answered approved at " + at.Add(2*time.Second).Format("15:04:05") + " (#2); the call ran: ok (#4)",
		`a rule of the policy names this call ("*drop_database*", deny)`,
		"the call did not run",
		"no answer in this period; no outcome in this period",
		"the person answered denied at " + at.Add(8*time.Second).Format("15:04:05") + " (#8); the call did not run",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	if strings.Contains(page, "step limit: step 1 of 100") {
		t.Error("the report shows the step count of a call the step limit did not decide")
	}
}
