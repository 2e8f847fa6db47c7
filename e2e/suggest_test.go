package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicySuggestFromAScriptedHuman: a human (the command channel)
// allows 20 git status-shaped calls and denies 3 git push --force
// through a real aqlguard; `policy suggest --since 7d --cases FILE`
// proposes an auto_approve for the first and a refuse for the second,
// with their counts, as a diff of the config it does not apply; the
// cases fail against the config as it is and pass once the diff is
// saved, and then the same calls run and are refused without a human.
func TestPolicySuggestFromAScriptedHuman(t *testing.T) {
	h := newHuman(t)
	config := `
mode = "all"
agent = "dev"
` + h.config() + `
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`
	g := startGuard(t, config)
	h.answer(t, "allow")
	for i := range 20 {
		cmd := "git status"
		if i%5 == 4 {
			cmd = "git status --porcelain"
		}
		res, raw := g.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": cmd})
		if raw.IsError {
			t.Fatalf("allowed call %d refused: %v", i, res)
		}
	}
	// (A call a human just denied is refused without asking again: three
	// denials are three pushes.)
	h.answer(t, "deny")
	for _, cmd := range []string{"git push --force", "git push --force origin main", "git push --force origin HEAD"} {
		if _, raw := g.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": cmd}); !raw.IsError {
			t.Fatal("a denied call ran")
		}
	}
	asked := len(h.requests(t))
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(g.config)
	if err != nil {
		t.Fatal(err)
	}

	cases := filepath.Join(g.dir, "suggested-cases.toml")
	out, errOut, code := aqlguardCLI(t, g.dir, "policy", "suggest", "--since", "7d", "--cases", cases, "--config", g.config)
	if code != 0 {
		t.Fatalf("policy suggest: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"23 answer(s)", "2 rule(s) suggested",
		"auto_approve for ts.run_command (agent dev), command ~ {git status,git status --porcelain}",
		"evidence: allowed 20, allowed for the session 0, denied 0",
		"refuse for ts.run_command (agent dev), command ~ {git push --force,git push --force origin HEAD,git push --force origin main}",
		"evidence: allowed 0, allowed for the session 0, denied 3",
		"+[[agents.dev.rules]]", `+action = "auto_approve"`, `+action = "refuse"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("policy suggest does not say %q:\n%s", want, out)
		}
	}
	if after, _ := os.ReadFile(g.config); string(after) != string(before) {
		t.Fatal("policy suggest changed the config: nothing may be applied without the person saving it")
	}
	if _, _, code := aqlguardCLI(t, g.dir, "policy", "test", "--config", g.config, cases); code == 0 {
		t.Fatal("the suggested cases pass before the suggestion is saved: they test nothing")
	}

	// The person saves the diff.
	i := strings.Index(out, "--- a/")
	if i < 0 {
		t.Fatalf("no diff:\n%s", out)
	}
	diff := out[i:]
	diff = diff[:strings.Index(diff, "\n\n")+1]
	patch := exec.Command("patch", "-p1", "-d", "/")
	patch.Stdin = strings.NewReader(diff)
	if b, err := patch.CombinedOutput(); err != nil {
		t.Fatalf("the diff does not apply with patch: %v\n%s\n%s", err, b, diff)
	}
	out, errOut, code = aqlguardCLI(t, g.dir, "policy", "test", "--config", g.config, cases)
	if code != 0 {
		t.Fatalf("the suggested cases fail once the suggestion is saved: exit %d\n%s%s", code, out, errOut)
	}
	if _, _, code := aqlguardCLI(t, g.dir, "policy", "check", "--config", g.config); code != 0 {
		t.Fatal("the saved config does not pass policy check")
	}

	// The same calls now run, and the push is refused, with no human.
	saved, err := os.ReadFile(g.config)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := launchGuard(t, guardOptions{Config: string(saved), Dir: g.dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"git status", "git status --porcelain"} {
		if res, raw := g2.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": cmd}); raw.IsError {
			t.Fatalf("%s after the suggestion: %v", cmd, res)
		}
	}
	if _, raw := g2.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": "git push --force"}); !raw.IsError {
		t.Fatal("git push --force ran after the suggestion")
	}
	h.answer(t, "deny")
	if _, raw := g2.callAQL(t, "mcp_aql", "ts_run_command", map[string]any{"command": "git status; rm -rf ~"}); !raw.IsError {
		t.Fatal("a line the human never saw ran on the suggestion")
	}
	if n := len(h.requests(t)); n != asked+1 {
		t.Fatalf("the human was asked %d more times, want 1 (the line never seen)", n-asked)
	}
	rec := decisionRecord(t, g2, "ts_run_command")
	if rec["decision"] == "allow" {
		t.Fatalf("last decision: %v", rec)
	}
}
