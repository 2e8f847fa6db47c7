package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
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
trust_first_sight = true
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
	// Answered: its files are gone.
	waitGoneFile(t, question)
	waitGoneFile(t, strings.TrimSuffix(question, ".question")+".answer")

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

// TestSpoolChannelCleansUp: the example's files go when their question
// ends. A question aqlguard withdraws (SIGTERM: its call's client went
// away) takes its file with it, and each run removes the files of
// expired questions and codes.
func TestSpoolChannelCleansUp(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("\n!!!!!!!! SKIPPING the command channel example: python3 missing !!!!!!!!")
	}
	script, err := filepath.Abs("../docs/examples/spool-channel.py")
	if err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	writeFile(t, filepath.Join(spool, "old.code"), "aqlguard stopped a: x\nexpires: "+past+"\ngive this code ...\n")
	writeFile(t, filepath.Join(spool, "conf_old.question"), "a wants b\nwhy: x\nexpires: "+past+"\n")
	writeFile(t, filepath.Join(spool, "conf_gone.answer"), "allow\n")

	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cmd := exec.Command("python3", script, spool)
	cmd.Stdin = strings.NewReader(`{"kind":"confirmation","token":"conf_live","agent":"a","operation":"fs_x","action":"x",` +
		`"reason":"r","tier":"confirm","arguments":{},"answers":["allow","deny"],"client":"","server":"fs","tool":"x",` +
		`"steps":0,"expires_at":"` + future + `"}` + "\n")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	question := waitForFile(t, spool, "conf_live.question")
	for _, old := range []string{"old.code", "conf_old.question", "conf_gone.answer"} {
		if _, err := os.Stat(filepath.Join(spool, old)); err == nil {
			t.Errorf("%s is still there", old)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	waitGoneFile(t, question)
}

// waitGoneFile waits until path no longer exists.
func waitGoneFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	t.Errorf("%s is still there", path)
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
