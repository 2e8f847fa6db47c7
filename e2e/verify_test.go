package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/verify"
)

// Scenarios of out-of-band verification through real aqlguard processes,
// with the command channel standing in for the human. Every scenario ends
// with assertNoLeak: no code shown to the human appears in anything
// aqlguard wrote.

// blockingConfig is loopConfig: deny "*drop_database*", ts_create_note in
// the verify tier, ts_echo auto-approved.
func blockingConfig(h *human) string { return loopConfig(h, "enforcing", 1000) }

// dbPath is where aqlguard keeps its state for a guard started in dir
// (isolatedEnv's XDG_STATE_HOME).
func dbPath(dir string) string {
	return filepath.Join(dir, "home", ".local", "state", "aqlguard", "aqlguard.db")
}

// block makes the agent hit the deny pattern and returns the block's
// verification id.
func block(t *testing.T, g *guard) string {
	t.Helper()
	return blockWith(t, g, "ts_drop_database", map[string]any{"name": "prod"})
}

// blockWith blocks the agent with a call of op that a deny matches, and
// returns the block's verification id.
func blockWith(t *testing.T, g *guard, op string, params map[string]any) string {
	t.Helper()
	res, _ := g.callAQL(t, "mcp_aql", op, params)
	code, details := errCode(t, res)
	id, _ := details["verification_id"].(string)
	if code != "PERMISSION_AGENT_BLOCKED" || !verify.ValidChallengeID(id) {
		t.Fatalf("deny match: want PERMISSION_AGENT_BLOCKED with a verification id, got %s", jsonString(res))
	}
	return id
}

// codeFor is the code the human was shown for challenge id.
func codeFor(t *testing.T, h *human, id string) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, r := range h.requests(t) {
			if r["kind"] == "challenge" && r["challenge_id"] == id {
				code, _ := r["code"].(string)
				return code
			}
		}
	}
	t.Fatalf("the human was never shown a code for %s: %v", id, h.requests(t))
	return ""
}

func verifyCode(t *testing.T, g *guard, id, code string) map[string]any {
	t.Helper()
	res, _ := g.callAQL(t, "mcp_aql", "verify_challenge", map[string]any{"challenge_id": id, "code": code})
	return res
}

func wantCode(t *testing.T, res map[string]any, want string) map[string]any {
	t.Helper()
	got, details := errCode(t, res)
	if got != want {
		t.Fatalf("want %s, got %s", want, jsonString(res))
	}
	return details
}

// echo calls the auto-approved ts_echo.
func echo(t *testing.T, g *guard) map[string]any {
	t.Helper()
	res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "hello"})
	return res
}

// admin runs an aqlguard admin verb with g's config and environment (so
// on its state directory), and returns stdout, stderr and the exit code.
func admin(t *testing.T, g *guard, args ...string) (string, string, int) {
	t.Helper()
	return aqlguardCLI(t, g.dir, append(args, "--config", g.config)...)
}

// auditRecords exports g's audit log and checks that its chain verifies,
// in the database and as exported.
func auditRecords(t *testing.T, g *guard) []map[string]any {
	t.Helper()
	out, errOut, code := admin(t, g, "audit", "export")
	if code != 0 {
		t.Fatalf("audit export: exit %d: %s", code, errOut)
	}
	if vout, verr, code := admin(t, g, "audit", "verify"); code != 0 || !strings.Contains(vout, "verified") {
		t.Fatalf("audit verify: exit %d: %s%s", code, vout, verr)
	}
	file := filepath.Join(t.TempDir(), "audit.jsonl")
	writeFile(t, file, out)
	if vout, verr, code := admin(t, g, "audit", "verify", file); code != 0 {
		t.Fatalf("audit verify of the export: exit %d: %s%s", code, vout, verr)
	}
	return jsonLines(t, out)
}

// assertNoLeak looks for every code the human was shown (as shown, and
// as normalised: no hyphens, any case) in every byte aqlguard wrote: the
// MCP stream (where tapped), its stderr log, the audit export and the
// database file (db).
func assertNoLeak(t *testing.T, h *human, db string, guards ...*guard) {
	t.Helper()
	var codes []string
	for _, r := range h.requests(t) {
		if c, _ := r["code"].(string); c != "" {
			codes = append(codes, c)
		}
	}
	if len(codes) == 0 {
		t.Fatal("leak check: no code was shown, so nothing was checked")
	}
	sources := map[string]string{}
	for i, g := range guards {
		sources["stderr of aqlguard #"+itoa(i)] = g.stderr()
		if g.outLog != nil {
			sources["MCP stream of aqlguard #"+itoa(i)] = g.outLog.String()
		}
	}
	export, _, _ := admin(t, guards[0], "audit", "export")
	sources["audit export"] = export
	dbBytes, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	sources["database file"] = string(dbBytes)
	// The audit log's segment files, beside the database.
	segments, _ := filepath.Glob(filepath.Join(filepath.Dir(db), "audit", "*.jsonl"))
	var logBytes []byte
	for _, seg := range segments {
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		sources["audit log file "+filepath.Base(seg)] = string(b)
		logBytes = append(logBytes, b...)
	}
	// Records that name a challenge: the block's decision at least (the
	// "challenge" record that says the code was shown may be lost to a
	// kill -9 while the channel is being asked, as the crash test does).
	if !strings.Contains(export, `"challenge_id":"`) || !bytes.Contains(logBytes, []byte(`"challenge_id":"`)) {
		t.Fatal("leak check: the audit export or the audit log files hold no record of a challenge; wrong state directory?")
	}
	for _, c := range codes {
		forms := []string{c, strings.ToLower(c), verify.NormalizeCode(c), strings.ToLower(verify.NormalizeCode(c))}
		for name, text := range sources {
			upper := strings.ToUpper(text)
			for _, f := range forms {
				if strings.Contains(text, f) || strings.Contains(upper, strings.ToUpper(f)) {
					t.Errorf("verification code leaked into the %s", name)
				}
			}
		}
	}
	t.Logf("leak check: %d codes, %d sources (%d bytes of database, %d of audit log)", len(codes), len(sources), len(dbBytes), len(logBytes))
}

// TestBlockVerifyUnblock: deny match → block → wrong code → right code
// through the command channel → unblocked.
func TestBlockVerifyUnblock(t *testing.T) {
	h := newHuman(t)
	g, err := launchGuard(t, guardOptions{Config: blockingConfig(h), TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	id := block(t, g)
	if out, _, code := admin(t, g, "blocks", "list"); code != 0 || !strings.Contains(out, "loop-agent") || !strings.Contains(out, id) {
		t.Errorf("blocks list while blocked (exit %d):\n%s", code, out)
	}
	code := codeFor(t, h, id)

	wantCode(t, verifyCode(t, g, id, "0000-0000-0000-0000-00000-00000"), "PERMISSION_VERIFICATION_FAILED")
	wantCode(t, echo(t, g), "PERMISSION_AGENT_BLOCKED")
	wantCode(t, call(t, g, "execute_agent", map[string]any{"element_name": "a-new-name"}), "PERMISSION_AGENT_BLOCKED")

	// Typed the way people type: lower case, spaces for hyphens.
	d := data(t, verifyCode(t, g, id, strings.ToLower(strings.ReplaceAll(code, "-", " "))))
	if d["verified"] != true || d["unblocked"] != true {
		t.Fatalf("right code: %v", d)
	}
	if r := echo(t, g); r["success"] != true {
		t.Fatalf("after unblocking: %s", jsonString(r))
	}
	wantCode(t, verifyCode(t, g, id, code), "TOKEN_ALREADY_USED")
	if got := strings.Join(calledTools(t, g), ","); got != "echo" {
		t.Errorf("downstream saw %q; only the echo after unblocking may reach it", got)
	}
	if out, _, _ := admin(t, g, "blocks", "list"); !strings.Contains(out, "no blocked agents") {
		t.Errorf("blocks list after unblocking:\n%s", out)
	}
	results := map[string]int{}
	for _, r := range auditRecords(t, g) {
		if r["kind"] == "verification" {
			results[r["result"].(string)]++
		}
	}
	if results["wrong_code"] != 1 || results["unblocked"] != 1 || results["already_used"] != 1 {
		t.Errorf("verification audit events: %v", results)
	}
	assertNoLeak(t, h, dbPath(g.dir), g)
}

// call is callAQL on the single endpoint.
func call(t *testing.T, g *guard, op string, params map[string]any) map[string]any {
	t.Helper()
	res, _ := g.callAQL(t, "mcp_aql", op, params)
	return res
}

// TestBlockSurvivesKill: block → kill -9 → restart → still blocked, for
// every call, a new execution and a new element name → the code from
// before the restart unblocks.
func TestBlockSurvivesKill(t *testing.T) {
	h := newHuman(t)
	g1, err := launchGuard(t, guardOptions{Config: blockingConfig(h), TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	id := block(t, g1)
	code := codeFor(t, h, id)
	g1.kill(t)

	g2, err := launchGuard(t, guardOptions{Config: blockingConfig(h), Dir: g1.dir, TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := wantCode(t, echo(t, g2), "PERMISSION_AGENT_BLOCKED"); d["verification_id"] != id {
		t.Errorf("after the restart the block names %v, want %s", d["verification_id"], id)
	}
	wantCode(t, call(t, g2, "execute_agent", map[string]any{"element_name": "fresh-start"}), "PERMISSION_AGENT_BLOCKED")
	if d := data(t, verifyCode(t, g2, id, code)); d["unblocked"] != true {
		t.Fatalf("the code from before the restart: %v", d)
	}
	if r := echo(t, g2); r["success"] != true {
		t.Fatalf("after unblocking: %s", jsonString(r))
	}
	assertNoLeak(t, h, dbPath(g1.dir), g1, g2)
}

// TestRateLimitSurvivesRestart: ten wrong codes, then the eleventh
// attempt (even with the right code) is rate limited, and still is after
// a restart; the admin override lifts the block.
func TestRateLimitSurvivesRestart(t *testing.T) {
	h := newHuman(t)
	g1, err := launchGuard(t, guardOptions{Config: blockingConfig(h), TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	id := block(t, g1)
	code := codeFor(t, h, id)
	for i := range 10 {
		if c, _ := errCode(t, verifyCode(t, g1, id, "WRONG-"+itoa(i))); c != "PERMISSION_VERIFICATION_FAILED" {
			t.Fatalf("failure %d: %s", i+1, c)
		}
	}
	d := wantCode(t, verifyCode(t, g1, id, code), "RATE_LIMIT_EXCEEDED")
	if s, _ := d["retry_after_seconds"].(float64); s < 1 {
		t.Errorf("retry_after_seconds = %v", d["retry_after_seconds"])
	}
	if err := g1.stop(t); err != nil {
		t.Fatal(err)
	}

	g2, err := launchGuard(t, guardOptions{Config: blockingConfig(h), Dir: g1.dir, TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	d = wantCode(t, verifyCode(t, g2, id, code), "RATE_LIMIT_EXCEEDED")
	if s, _ := d["retry_after_seconds"].(float64); s <= 60 {
		t.Errorf("a second violation doubles the lockout: retry_after_seconds = %v", d["retry_after_seconds"])
	}
	out, errOut, exit := admin(t, g2, "unblock", "loop-agent")
	if exit != 0 || !strings.Contains(out, "unblocked loop-agent") {
		t.Fatalf("aqlguard unblock: exit %d: %s%s", exit, out, errOut)
	}
	if _, errOut, exit := admin(t, g2, "unblock", "loop-agent"); exit == 0 || !strings.Contains(errOut, "not blocked") {
		t.Errorf("unblocking an agent that is not blocked: exit %d: %s", exit, errOut)
	}
	if r := echo(t, g2); r["success"] != true {
		t.Fatalf("the running process sees the override at its next call: %s", jsonString(r))
	}
	results := map[string]int{}
	admins := 0
	for _, r := range auditRecords(t, g2) {
		switch r["kind"] {
		case "verification":
			results[r["result"].(string)]++
		case "admin":
			admins++
		}
	}
	if results["wrong_code"] != 10 || results["rate_limited"] != 2 || admins != 1 {
		t.Errorf("audit: verification results %v, admin records %d", results, admins)
	}
	assertNoLeak(t, h, dbPath(g1.dir), g1, g2)
}

// TestChallengeExpiry: an expired block code is TOKEN_EXPIRED and the next
// call shows a fresh one; a verify pause lapses at its expiry and the next
// action is evaluated afresh.
func TestChallengeExpiry(t *testing.T) {
	h := newHuman(t)
	h.verify = `challenge_ttl = "2s"`
	g, err := launchGuard(t, guardOptions{Config: blockingConfig(h), TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	// verify tier: paused, then lapsed.
	res := call(t, g, "ts_create_note", map[string]any{"title": "t"})
	wantCode(t, res, "PERMISSION_VERIFICATION_REQUIRED")
	wantCode(t, echo(t, g), "PERMISSION_VERIFICATION_REQUIRED")
	time.Sleep(2200 * time.Millisecond)
	if r := echo(t, g); r["success"] != true {
		t.Fatalf("after the pause's expiry: %s", jsonString(r))
	}

	id := block(t, g)
	code := codeFor(t, h, id)
	time.Sleep(2200 * time.Millisecond)
	wantCode(t, verifyCode(t, g, id, code), "TOKEN_EXPIRED")
	d := wantCode(t, echo(t, g), "PERMISSION_AGENT_BLOCKED")
	fresh, _ := d["verification_id"].(string)
	if fresh == id || !verify.ValidChallengeID(fresh) {
		t.Fatalf("a block whose code expired must show a new one: %v", d)
	}
	if d := data(t, verifyCode(t, g, fresh, codeFor(t, h, fresh))); d["unblocked"] != true {
		t.Fatalf("the fresh code: %v", d)
	}
	assertNoLeak(t, h, dbPath(g.dir), g)
}

// TestTwoProcessesShareState: two aqlguard processes (two clients) on one
// state directory. A block set by one holds in the other at its next call
// and reaches its executing agents as danger_zone; a code entered in
// either lifts it for both. A process that cannot get the database within
// state_lock_timeout fails closed.
func TestTwoProcessesShareState(t *testing.T) {
	h := newHuman(t)
	state := t.TempDir()
	cfg := blockingConfig(h) + "\n"
	cfg = strings.Replace(cfg, `agent = "loop-agent"`, `agent = "loop-agent"
state_dir = `+tomlString(state)+`
state_lock_timeout = "300ms"`, 1)
	a, err := launchGuard(t, guardOptions{Config: cfg, TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	b, err := launchGuard(t, guardOptions{Config: cfg, TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	data(t, call(t, b, "execute_agent", map[string]any{"element_name": "beta"}))
	id := block(t, a)

	d := data(t, call(t, b, "record_execution_step", map[string]any{"element_name": "beta", "next_action_hint": "read a file"}))
	if d["stopped"] != true || d["continue"] != false {
		t.Fatalf("the other process must stop its agent: %v", d)
	}
	var types []string
	for _, n := range d["notifications"].([]any) {
		nm := n.(map[string]any)
		types = append(types, nm["type"].(string))
		if nm["type"] == "danger_zone" && nm["metadata"].(map[string]any)["verificationId"] != id {
			t.Errorf("danger_zone must name %s: %v", id, nm)
		}
	}
	if strings.Join(types, ",") != "danger_zone" {
		t.Errorf("notifications in the other process: %v, want one danger_zone", types)
	}
	if d := wantCode(t, echo(t, b), "PERMISSION_AGENT_BLOCKED"); d["verification_id"] != id {
		t.Errorf("the other process names %v, want %s", d["verification_id"], id)
	}
	if d := data(t, verifyCode(t, b, id, codeFor(t, h, id))); d["unblocked"] != true {
		t.Fatalf("verifying in the other process: %v", d)
	}
	if r := echo(t, a); r["success"] != true {
		t.Fatalf("the blocking process sees the unblock: %s", jsonString(r))
	}

	// Someone else holds the state lock (another aqlguard process stuck
	// in a transaction): a call fails closed, quickly.
	lockFile, err := os.OpenFile(filepath.Join(state, "aqlguard.db.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lockFile.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res := echo(t, a)
	took := time.Since(began)
	_ = lockFile.Close()
	dd := wantCode(t, res, "INTERNAL_ERROR")
	if msg := jsonString(res); !strings.Contains(msg, "busy") || dd["fail_closed"] != true {
		t.Errorf("a locked database must be named as the reason: %s", msg)
	}
	t.Logf("refused after %s with state_lock_timeout 300ms", took.Round(time.Millisecond))
	if strings.Contains(strings.Join(calledTools(t, a), ","), "drop_database") {
		t.Error("the denied call reached the server")
	}
	if r := echo(t, a); r["success"] != true {
		t.Fatalf("after the lock is released: %s", jsonString(r))
	}
	assertNoLeak(t, h, filepath.Join(state, "aqlguard.db"), a, b)
}

// TestVerifyShowGivesANewCode (issue 31, item 6): a person who lost the
// code (its window closed, the client restarted) runs `aqlguard verify
// show`: the block gets a new code, shown through the human channel and
// nowhere else (the command's output says only that it was shown); the
// old code no longer lifts the block, the new one does. The refusal the
// model reads points to the verb and holds no code.
func TestVerifyShowGivesANewCode(t *testing.T) {
	h := newHuman(t)
	g, err := launchGuard(t, guardOptions{Config: blockingConfig(h), TapStdout: true})
	if err != nil {
		t.Fatal(err)
	}
	id := block(t, g)
	old := codeFor(t, h, id)
	res := echo(t, g)
	wantCode(t, res, "PERMISSION_AGENT_BLOCKED")
	if !strings.Contains(errMessage(res), "`aqlguard verify show`") {
		t.Errorf("the refusal does not say how to see the code again: %s", errMessage(res))
	}

	out, errOut, code := admin(t, g, "verify", "show")
	if code != 0 || !strings.Contains(out, "a new verification code for loop-agent is shown through the command channel") {
		t.Fatalf("verify show: exit %d\n%s%s", code, out, errOut)
	}
	var newID string
	if _, after, ok := strings.Cut(out, "(verification "); ok {
		newID, _, _ = strings.Cut(after, ")")
	}
	if !verify.ValidChallengeID(newID) || newID == id {
		t.Fatalf("verify show named no new verification: %q", out)
	}
	fresh := codeFor(t, h, newID)
	for _, c := range []string{old, fresh, verify.NormalizeCode(fresh)} {
		if strings.Contains(out+errOut, c) {
			t.Fatal("verify show printed a code")
		}
	}
	wantCode(t, verifyCode(t, g, id, old), "TOKEN_ALREADY_USED")
	if d := data(t, verifyCode(t, g, newID, fresh)); d["unblocked"] != true {
		t.Fatalf("the new code: %v", d)
	}
	if r := echo(t, g); r["success"] != true {
		t.Fatalf("after the new code: %s", jsonString(r))
	}
	if _, errOut, code := admin(t, g, "verify", "show"); code != 1 || !strings.Contains(errOut, "no agent is blocked") {
		t.Errorf("verify show with nobody blocked: exit %d: %s", code, errOut)
	}
	assertNoLeak(t, h, dbPath(g.dir), g)
}
