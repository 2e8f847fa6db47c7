package e2e

import (
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/internal/pgtest"
)

// stateCopy runs `aqlguard state copy --to to` with the environment of
// the guard directory dir and the PostgreSQL state dsn.
func stateCopy(t *testing.T, dir, config, dsn, to string) (string, string, int) {
	t.Helper()
	return aqlguardCLIEnv(t, dir, []string{"AQLGUARD_STATE_DSN=" + dsn}, "state", "copy", "--to", to, "--config", config)
}

// blockedStateDir runs aqlguard on faultConfig until it has made a call
// and blocked its agent, and stops it: a state directory with a block,
// pins and records to move.
func blockedStateDir(t *testing.T) *guard {
	t.Helper()
	g := startGuard(t, faultConfig)
	if res := echo(t, g); res["success"] != true {
		t.Fatalf("a call before the block: %s", jsonString(res))
	}
	block(t, g)
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestStateCopyToPostgresAndBack: a state with a hard block moves from a
// state directory to PostgreSQL and from there into a new state
// directory, with `aqlguard state copy`; aqlguard started on the new
// directory still refuses the blocked agent, and the audit log there is
// the old one, byte for byte, plus one record per move, and verifies.
func TestStateCopyToPostgresAndBack(t *testing.T) {
	dsn := pgtest.Private(t).Database(t)
	g := blockedStateDir(t)
	before := auditRecords(t, g)

	out, errOut, code := stateCopy(t, g.dir, g.config, dsn, "postgres")
	if code != 0 || !strings.Contains(out, "copied state") {
		t.Fatalf("state copy --to postgres: exit %d: %s%s", code, out, errOut)
	}
	// Not twice into the same state.
	if out, errOut, code := stateCopy(t, g.dir, g.config, dsn, "postgres"); code == 0 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("a second copy into the same PostgreSQL state: exit %d: %s%s", code, out, errOut)
	}

	moved := t.TempDir()
	if out, errOut, code := stateCopy(t, moved, g.config, dsn, "bbolt"); code != 0 {
		t.Fatalf("state copy --to bbolt: exit %d: %s%s", code, out, errOut)
	}
	g2, err := launchGuard(t, guardOptions{Config: faultConfig, Dir: moved})
	if err != nil {
		t.Fatalf("aqlguard on the moved state: %v", err)
	}
	res := echo(t, g2)
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" {
		t.Fatalf("the moved state forgot the block: %s", jsonString(res))
	}
	if err := g2.stop(t); err != nil {
		t.Fatal(err)
	}
	after := auditRecords(t, g2) // verifies, in the log and as exported
	if len(after) < len(before)+2 {
		t.Fatalf("%d records after the moves, %d before", len(after), len(before))
	}
	for i, r := range before {
		if r["hash"] != after[i]["hash"] {
			t.Fatalf("record %d changed in the moves", i+1)
		}
	}
	imports := 0
	for _, r := range after[len(before):] {
		if r["decision"] == "state_import" {
			imports++
		}
	}
	if imports != 2 {
		t.Fatalf("%d state_import records after two moves", imports)
	}
}
