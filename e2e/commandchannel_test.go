package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSpoolChannelExample runs docs/examples/spool-channel.py, the
// command channel example of docs/command-channel.md, as the human
// channel: a gated call waits for the answer written beside its
// question; a block's code is read from its file and clears the block.
func TestSpoolChannelExample(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("AQLGUARD_E2E_REQUIRE_NPM") == "1" {
			t.Fatal("python3 missing (.ci/run installs it)")
		}
		t.Skip("\n!!!!!!!! SKIPPING the command channel example: python3 missing !!!!!!!!")
	}
	script, err := filepath.Abs("../docs/examples/spool-channel.py")
	if err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(t.TempDir(), "spool")
	g := startGuard(t, `
mode = "all"
agent = "spool-agent"
`+shippedSafety(t)+`
[verify]
channel = "command"
command = [`+tomlString(script)+`, `+tomlString(spool)+`]
inline_wait = "30s"

[[servers]]
name = "ts"
command = {{toml .testserver}}
`)

	// A gated call: the question appears, the human answers allow.
	done := make(chan map[string]any, 1)
	go func() {
		res, _ := g.callAQL(t, "mcp_aql", "ts_delete_note", map[string]any{"id": "n1"})
		done <- res
	}()
	question := waitForFile(t, spool, ".question")
	text, _ := os.ReadFile(question)
	if !strings.Contains(string(text), "spool-agent") || !strings.Contains(string(text), "delete_note") {
		t.Errorf("the question does not say who wants what:\n%s", text)
	}
	if info, _ := os.Stat(question); info.Mode().Perm() != 0o600 {
		t.Errorf("question file mode %v", info.Mode().Perm())
	}
	writeFile(t, strings.TrimSuffix(question, ".question")+".answer", "allow\n")
	select {
	case res := <-done:
		if res["success"] != true {
			t.Fatalf("allowed through the spool: %s", jsonString(res))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after the answer")
	}

	// A block: the code is in the spool, and it clears the block.
	id := blockWith(t, g, "ts_run_command", map[string]any{"command": "rm -rf /"})
	codeFile := filepath.Join(spool, id+".code")
	waitForFile(t, spool, id+".code")
	body, _ := os.ReadFile(codeFile)
	m := regexp.MustCompile(`chat: (\S+)`).FindSubmatch(body)
	if m == nil {
		t.Fatalf("no code in %s:\n%s", codeFile, body)
	}
	if res := verifyCode(t, g, id, string(m[1])); res["success"] != true {
		t.Fatalf("the spooled code did not verify: %s", jsonString(res))
	}
}

// waitForFile waits for a file in dir whose name ends in suffix.
func waitForFile(t *testing.T, dir, suffix string) string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), suffix) {
				return filepath.Join(dir, e.Name())
			}
		}
	}
	t.Fatalf("no *%s in %s", suffix, dir)
	return ""
}
