package e2e

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReloadAppliesToTheLiveSession: the policy and the server list are
// reloaded on SIGHUP and when the config file changes; the live session
// gets them without reconnecting (unchanged servers keep running); a
// config that does not load changes nothing; the audit log records each
// switch of policy version.
func TestReloadAppliesToTheLiveSession(t *testing.T) {
	h := newHuman(t)
	h.answer(t, "deny")
	base := `
mode = "all"
agent = "reload-agent"
` + h.config() + `
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`
	g := startGuard(t, base+"[safety]\nauto_approve = [\"*\"]\n")
	if res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "before"}); res["data"] != "before" {
		t.Fatalf("before the reload: %s", jsonString(res))
	}
	first := serverPID(t, g)
	reloads := func() int { return strings.Count(g.stderr(), `msg="configuration reloaded"`) }
	waitReloads := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(15 * time.Second); reloads() < n; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no reload %d:\n%s", n, g.stderr())
			}
		}
	}

	// SIGHUP: echo now asks a human (who says no), and a second server joins.
	writeFile(t, g.config, renderConfig(t, base+`
[safety]
requires_approval = ["*echo*"]
[[servers]]
name = "two"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-name", "two"]
`, g.dir))
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitReloads(1)
	res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "after"})
	if code, _ := errCode(t, res); code != "PERMISSION_DENIED" && code != "CONFIRMATION_REQUIRED" {
		t.Errorf("after the reload, echo is not put to the human: %s", jsonString(res))
	}
	intro, _ := g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations"})
	if !strings.Contains(jsonString(intro), "two_echo") {
		t.Error("the server added by the reload is not in the live session")
	}
	if again := serverPID(t, g); again != first {
		t.Error("the unchanged server was restarted by the reload")
	}

	// The file changes, no signal: the second server goes again.
	time.Sleep(1100 * time.Millisecond) // a new modification time
	writeFile(t, g.config, renderConfig(t, base+"[safety]\nrequires_approval = [\"*echo*\"]\n", g.dir))
	// Wait for what the reload does, not for a count of reloads: the
	// poller may already have reloaded the first write after the SIGHUP,
	// so "two reloads" can come before this write is read.
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		intro, _ = g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations"})
		if !strings.Contains(jsonString(intro), "two_echo") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server removed by the reload is still there:\n%s", g.stderr())
		}
	}

	// A broken config changes nothing.
	writeFile(t, g.config, "this is not = = toml")
	if err := g.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(15 * time.Second); !strings.Contains(g.stderr(), "reload refused"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("a broken config was not refused")
		}
	}
	if res, _ := g.callAQL(t, "mcp_aql", "ts_list_items", map[string]any{}); res["success"] != true {
		t.Errorf("after a refused reload: %s", jsonString(res))
	}
	// (the admin verbs read the config file too)
	writeFile(t, g.config, renderConfig(t, base+"[safety]\nrequires_approval = [\"*echo*\"]\n", g.dir))
	var switches, refused int
	for _, r := range auditRecords(t, g) {
		if r["kind"] == "policy" && r["operation"] == "reload" {
			if strings.HasPrefix(r["result"].(string), "policy ") {
				switches++
			}
			if strings.HasPrefix(r["result"].(string), "refused") {
				refused++
			}
		}
	}
	if switches < 2 || refused < 1 {
		t.Errorf("audit: %d policy switches, %d refusals", switches, refused)
	}
}
