package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/internal/fixture/pgtest"
)

// TestAdminVerbsOnPostgres: every admin verb runs on the PostgreSQL state
// of [state] backend = "postgres" as on a state directory. A state with a
// block and pins, moved into PostgreSQL, is listed, unblocked, reset and
// read there by the real binary; what the verbs wrote is in PostgreSQL
// (a state directory made from it afterwards runs the agent again, and
// its chain has the verbs' records); the verbs that only a state
// directory has (audit seal, state reset) say why they do not apply.
func TestAdminVerbsOnPostgres(t *testing.T) {
	dsn := pgtest.Private(t).Database(t)
	g := blockedStateDir(t)
	if out, errOut, code := stateCopy(t, g.dir, g.config, dsn, "postgres"); code != 0 {
		t.Fatalf("state copy --to postgres: exit %d: %s%s", code, out, errOut)
	}

	// The same config on PostgreSQL, in a directory of its own: nothing
	// the verbs read may come from the state directory.
	pgDir := t.TempDir()
	pgConfig := filepath.Join(pgDir, "config.toml")
	body := renderConfig(t, faultConfig, pgDir) + "\n[state]\nbackend = \"postgres\"\n"
	if err := os.WriteFile(pgConfig, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"AQLGUARD_STATE_DSN=" + dsn}
	run := func(wantCode int, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := aqlguardCLIEnv(t, pgDir, env, append(args, "--config", pgConfig)...)
		if code != wantCode {
			t.Fatalf("aqlguard %s: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, wantCode, out, errOut)
		}
		if strings.Contains(out+errOut, "postgres://") || strings.Contains(out+errOut, "password") {
			t.Fatalf("aqlguard %s shows the connection string:\n%s%s", strings.Join(args, " "), out, errOut)
		}
		return out, errOut
	}
	if out, _ := run(0, "blocks", "list"); !strings.Contains(out, "faults") {
		t.Fatalf("blocks list on PostgreSQL does not show the block:\n%s", out)
	}
	if out, _ := run(0, "pins", "list"); !strings.Contains(out, "ts_echo") && !strings.Contains(out, "echo") {
		t.Fatalf("pins list on PostgreSQL shows no pin:\n%s", out)
	}
	if out, _ := run(0, "audit", "verify"); !strings.Contains(out, "audit chain verified") || !strings.Contains(out, "PostgreSQL schema") {
		t.Fatalf("audit verify on PostgreSQL:\n%s", out)
	}
	if out, _ := run(0, "audit", "list", "5"); !strings.Contains(out, "state import") || !strings.Contains(out, "imported") {
		t.Fatalf("audit list on PostgreSQL does not end with the import:\n%s", out)
	}
	if out, _ := run(0, "audit", "show", "1"); !strings.Contains(out, `"seq": 1`) {
		t.Fatalf("audit show 1 on PostgreSQL:\n%s", out)
	}
	export, _ := run(0, "audit", "export")
	exported := filepath.Join(pgDir, "export.jsonl")
	if err := os.WriteFile(exported, []byte(export), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, _ := run(0, "audit", "verify", exported); !strings.Contains(out, "audit export verified") {
		t.Fatalf("the export of the PostgreSQL chain does not verify:\n%s", out)
	}
	if out, _ := run(0, "approvals", "list"); !strings.Contains(out, "no standing approvals") {
		t.Fatalf("approvals list on PostgreSQL:\n%s", out)
	}
	if out, _ := run(0, "unblock", "faults"); !strings.Contains(out, "unblocked faults") {
		t.Fatalf("unblock on PostgreSQL:\n%s", out)
	}
	if _, errOut := run(1, "unblock", "faults"); !strings.Contains(errOut, "is not blocked") {
		t.Fatalf("a second unblock:\n%s", errOut)
	}
	if out, _ := run(0, "blocks", "list"); !strings.Contains(out, "no blocked agents") {
		t.Fatalf("blocks list after the unblock:\n%s", out)
	}
	if out, _ := run(0, "pins", "reset", "ts"); !strings.Contains(out, "forgot") || strings.Contains(out, "forgot 0 ") {
		t.Fatalf("pins reset on PostgreSQL:\n%s", out)
	}
	if _, errOut := run(1, "audit", "seal"); !strings.Contains(errOut, "state directory (bbolt) only") {
		t.Fatalf("audit seal on PostgreSQL:\n%s", errOut)
	}
	if _, errOut := run(1, "state", "reset", "--i-understand"); !strings.Contains(errOut, "state directory (bbolt) only") {
		t.Fatalf("state reset on PostgreSQL:\n%s", errOut)
	}
	if _, errOut := run(1, "audit", "verify", "--anchors"); !strings.Contains(errOut, "no anchors") {
		t.Fatalf("audit verify --anchors on PostgreSQL:\n%s", errOut)
	}
	if out, _, _ := aqlguardCLIEnv(t, pgDir, env, "doctor", "--config", pgConfig, "--client", "claude-code"); !strings.Contains(out, "state database") ||
		!strings.Contains(out, "answers") {
		t.Fatalf("doctor does not check the PostgreSQL state:\n%s", out)
	}

	// What the verbs did is in PostgreSQL: a state directory made from it
	// runs the agent, and its chain carries the verbs' records.
	moved := t.TempDir()
	if out, errOut, code := stateCopy(t, moved, g.config, dsn, "bbolt"); code != 0 {
		t.Fatalf("state copy --to bbolt: exit %d: %s%s", code, out, errOut)
	}
	g2, err := launchGuard(t, guardOptions{Config: faultConfig, Dir: moved})
	if err != nil {
		t.Fatalf("aqlguard on the state copied back: %v", err)
	}
	if res := echo(t, g2); res["success"] != true {
		t.Fatalf("the unblock on PostgreSQL did not hold: %s", jsonString(res))
	}
	if err := g2.stop(t); err != nil {
		t.Fatal(err)
	}
	var unblocked, reset bool
	for _, r := range auditRecords(t, g2) {
		unblocked = unblocked || r["decision"] == "unblock"
		result, _ := r["result"].(string)
		reset = reset || strings.HasPrefix(result, "reset by admin")
	}
	if !unblocked || !reset {
		t.Fatalf("the chain lacks the verbs' records: unblock %v, pins reset %v", unblocked, reset)
	}
}
