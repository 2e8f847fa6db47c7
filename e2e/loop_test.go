package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// human is a stand-in for the person at the other end of the command
// channel (DESIGN.md's contract): a script that appends every request to
// requests.jsonl and answers what the test last wrote to its answer file.
type human struct {
	dir string
	// verify is added to the [verify] table config() writes.
	verify string
}

func newHuman(t *testing.T) *human {
	t.Helper()
	h := &human{dir: t.TempDir()}
	script := `#!/bin/sh
dir=$(dirname "$0")
req=$(cat)
# aqlguard killed before it wrote the request (the crash test): nothing
# was shown.
[ -n "$req" ] || exit 0
printf '%s\n' "$req" >> "$dir/requests.jsonl"
case "$(cat "$dir/answer" 2>/dev/null)" in
  allow) echo allow ;;
  allow_session) echo allow_session ;;
  allow_forget) echo allow_forget ;;
  deny) echo deny ;;
  garbage) echo "sure, why not" ;;
  sleep)
    # A human who takes a while: the call's inline wait (2 s) ends first,
    # the question stays up, and the answer given meanwhile counts.
    sleep 3
    case "$(cat "$dir/answer" 2>/dev/null)" in
      allow) echo allow ;;
      deny) echo deny ;;
    esac ;;
esac
`
	if err := os.WriteFile(filepath.Join(h.dir, "human.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	h.answer(t, "silent")
	return h
}

// answer sets what the human says next: allow, deny, garbage, sleep
// (answers after 3 s, whatever answer says by then) or silent (answers
// nothing).
func (h *human) answer(t *testing.T, a string) {
	t.Helper()
	writeFile(t, filepath.Join(h.dir, "answer"), a)
}

// requests returns what the human was shown, in order.
func (h *human) requests(t *testing.T) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(h.dir, "requests.jsonl"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("human got non-JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

func (h *human) config() string {
	return `
[verify]
channel = "command"
command = [` + tomlString(filepath.Join(h.dir, "human.sh")) + `]
inline_wait = "2s"
timeout = "3s"
` + h.verify + "\n"
}

// loopConfig is the test server behind a policy exercising every path,
// with h as the human.
func loopConfig(h *human, loop string, steps int) string {
	return `
mode = "all"
agent = "loop-agent"
` + h.config() + `
[safety]
loop = "` + loop + `"
max_autonomous_steps = ` + itoa(steps) + `
deny = ["*drop_database*", "*rm -rf /*"]
requires_approval = ["ts_delete_note", "*git push*"]
auto_approve = ["ts_echo", "*.list_items*"]
[[safety.risk_rules]]
pattern = "ts_create_note"
score = 70
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func calledTools(t *testing.T, g *guard) []string {
	var out []string
	for _, c := range readCalls(t, g.dir+"/calls.jsonl") {
		out = append(out, c.Tool)
	}
	return out
}

func confirmationToken(t *testing.T, res map[string]any) string {
	t.Helper()
	code, details := errCode(t, res)
	if code != "CONFIRMATION_REQUIRED" {
		t.Fatalf("want CONFIRMATION_REQUIRED, got %s", jsonString(res))
	}
	token, _ := details["confirmation_token"].(string)
	top, _ := res["confirmation"].(map[string]any)
	if token == "" || top == nil || top["token"] != token || top["expires_at"] != details["expires_at"] {
		t.Fatalf("token must be in error.details and the confirmation object: %s", jsonString(res))
	}
	assertResultSchema(t, res)
	return token
}

// TestConfirmationPaths: requires_approval answered allow, answered deny,
// not answered then confirmed by token; replay, altered arguments, and a
// model confirming its own token alone.
func TestConfirmationPaths(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, loopConfig(h, "enforcing", 1000))
	del := func(id string, extra map[string]any) map[string]any {
		p := map[string]any{"id": id}
		for k, v := range extra {
			p[k] = v
		}
		res, _ := g.callAQL(t, "mcp_aql_delete", "ts_delete_note", p)
		return res
	}

	t.Run("allow and auto_approve", func(t *testing.T) {
		res, _ := g.callAQL(t, "mcp_aql_execute", "ts_echo", map[string]any{"message": "plain"})
		if res["data"] != "plain" {
			t.Fatal(res)
		}
	})
	t.Run("answered allow", func(t *testing.T) {
		h.answer(t, "allow")
		res := del("n-allow", nil)
		if res["success"] != true {
			t.Fatalf("allowed by the human: %s", jsonString(res))
		}
		reqs := h.requests(t)
		last := reqs[len(reqs)-1]
		if last["kind"] != "confirmation" || last["agent"] != "loop-agent" || last["operation"] != "ts_delete_note" ||
			!strings.Contains(last["action"].(string), "n-allow") || last["token"] == "" || last["expires_at"] == "" {
			t.Errorf("the human was asked %v", last)
		}
	})
	t.Run("answered deny", func(t *testing.T) {
		h.answer(t, "deny")
		res := del("n-deny", nil)
		if code, _ := errCode(t, res); code != "PERMISSION_DENIED" {
			t.Fatalf("denied: %s", jsonString(res))
		}
	})
	t.Run("garbage is not an approval", func(t *testing.T) {
		h.answer(t, "garbage")
		confirmationToken(t, del("n-garbage", nil))
	})
	t.Run("nobody answers: nothing is approved", func(t *testing.T) {
		h.answer(t, "silent")
		tok := confirmationToken(t, del("n-silent", nil))
		res, _ := g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": tok})
		if again := confirmationToken(t, res); again != tok {
			t.Errorf("confirm_operation without a human answer returned another token %s", again)
		}
		confirmationToken(t, del("n-silent", map[string]any{"confirmation_token": tok}))
	})
	var token string
	t.Run("answered after the inline wait", func(t *testing.T) {
		h.answer(t, "sleep")
		asked := len(h.requests(t))
		began := time.Now()
		token = confirmationToken(t, del("n-later", nil))
		if d := time.Since(began); d > 10*time.Second {
			t.Errorf("the inline wait is 2s, the call took %s", d)
		}
		// The human, still looking at the question, says yes; the
		// model's confirm_operation finds that same question.
		h.answer(t, "allow")
		res, _ := g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": token})
		if d := data(t, res); d["status"] != "approved" || d["token"] != token {
			t.Fatalf("confirm: %s", jsonString(res))
		}
		if n := len(h.requests(t)) - asked; n != 1 {
			t.Errorf("the human was asked %d times about one call", n)
		}
		h.answer(t, "deny") // from here on the human would refuse: the approval alone must carry the retry
		res = del("n-later", map[string]any{"confirmation_token": token})
		if res["success"] != true {
			t.Fatalf("retry with the approved token: %s", jsonString(res))
		}
	})
	t.Run("token replayed", func(t *testing.T) {
		res := del("n-later", map[string]any{"confirmation_token": token})
		if code, _ := errCode(t, res); code != "TOKEN_ALREADY_USED" {
			t.Errorf("replay: %s", jsonString(res))
		}
		res, _ = g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": token})
		if code, _ := errCode(t, res); code != "TOKEN_ALREADY_USED" {
			t.Errorf("confirming a used token: %s", jsonString(res))
		}
	})
	t.Run("token with altered arguments", func(t *testing.T) {
		h.answer(t, "silent")
		tok := confirmationToken(t, del("n-original", nil))
		h.answer(t, "allow")
		res, _ := g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": tok})
		data(t, res)
		res = del("n-altered", map[string]any{"confirmation_token": tok})
		if code, _ := errCode(t, res); code != "TOKEN_SCOPE_MISMATCH" {
			t.Errorf("altered arguments: %s", jsonString(res))
		}
		res, _ = g.callAQL(t, "mcp_aql_execute", "ts_run_command", map[string]any{"command": "ls", "confirmation_token": tok})
		if code, _ := errCode(t, res); code != "TOKEN_SCOPE_MISMATCH" {
			t.Errorf("another operation: %s", jsonString(res))
		}
		for _, bad := range []string{"conf_nope", "conf_00000000000000000000000000000000"} {
			res, _ = g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": bad})
			if code, _ := errCode(t, res); code != "TOKEN_INVALID" {
				t.Errorf("%s: %s", bad, jsonString(res))
			}
		}
		// The approved identical call goes through even without the token.
		h.answer(t, "deny")
		if res := del("n-original", nil); res["success"] != true {
			t.Errorf("approved identical call: %s", jsonString(res))
		}
	})
	want := "echo,delete_note,delete_note,delete_note"
	if got := strings.Join(calledTools(t, g), ","); got != want {
		t.Errorf("the server saw %s, want %s", got, want)
	}
}

// TestBatchHaltsAtConfirmation: a batch stops at the gated operation and
// returns its token; nothing after it runs.
func TestBatchHaltsAtConfirmation(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, loopConfig(h, "enforcing", 1000))
	res, _ := g.call(t, "mcp_aql", map[string]any{"operations": []any{
		map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "before"}},
		map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": "x"}},
		map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "after"}},
	}})
	assertResultSchema(t, res)
	d := data(t, res)
	halted := d["halted_at"].(map[string]any)["result"].(map[string]any)
	if tok := confirmationToken(t, halted); tok == "" {
		t.Fatal("no token")
	}
	if got := strings.Join(calledTools(t, g), ","); got != "echo" {
		t.Errorf("server saw %s", got)
	}
}

// TestStepLimitCheckIn: reaching max_autonomous_steps pauses the
// principal until a human checks in; confirming resets the counter.
func TestStepLimitCheckIn(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, loopConfig(h, "enforcing", 2))
	echo := func(msg string) map[string]any {
		res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": msg})
		return res
	}
	echo("1")
	echo("2")
	token := confirmationToken(t, echo("3"))
	_, details := errCode(t, echo("3"))
	if details["reason"] != "Step limit exceeded" {
		t.Errorf("still paused by the step limit: %v", details)
	}
	h.answer(t, "allow")
	res, _ := g.callAQL(t, "mcp_aql", "confirm_operation", map[string]any{"token": token})
	data(t, res)
	h.answer(t, "silent")
	for _, m := range []string{"4", "5"} {
		if r := echo(m); r["data"] != m {
			t.Fatalf("after the check-in: %s", jsonString(r))
		}
	}
	confirmationToken(t, echo("6"))
	// Inline: the human answers at once and the call proceeds.
	h.answer(t, "allow")
	if r := echo("7"); r["data"] != "7" {
		t.Errorf("inline check-in: %s", jsonString(r))
	}
	if got := strings.Join(calledTools(t, g), ","); got != "echo,echo,echo,echo,echo" {
		t.Errorf("server saw %s", got)
	}
}

// TestExecutionLoop: the cooperative loop: lifecycle, directives with
// every field, a failure pause lifted by a human, the same step counter
// as proxied calls, and terminal states.
func TestExecutionLoop(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, loopConfig(h, "enforcing", 10))
	res, _ := g.callAQL(t, "mcp_aql_execute", "execute_agent", map[string]any{"element_name": "researcher"})
	ex := data(t, res)
	id := ex["execution_id"].(string)
	if ex["status"] != "running" || ex["started_at"] == nil {
		t.Fatalf("execute_agent: %v", ex)
	}
	step := func(hint, outcome string) map[string]any {
		p := map[string]any{"element_name": "researcher", "nextActionHint": hint}
		if outcome != "" {
			p["outcome"] = outcome
		}
		res, _ := g.callAQL(t, "mcp_aql_create", "record_execution_step", p)
		assertResultSchema(t, res)
		return data(t, res)
	}
	d := step("reading notes/today.md to plan", "")
	if d["continue"] != true || d["factors"] == nil || d["stepsRemaining"] != 9.0 || d["nextStepRisk"] == nil {
		t.Errorf("first directive: %v", d)
	}
	// Proxied calls and reported steps share the counter.
	g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "x"})
	if d := step("listing items", "success"); d["stepsRemaining"] != 7.0 {
		t.Errorf("shared counter: %v", d)
	}
	// A reported failure pauses until a human confirms.
	d = step("retrying the upload", "failure")
	if d["continue"] != false || !strings.Contains(d["reason"].(string), "failed") {
		t.Fatalf("failure pause: %v", d)
	}
	notes, _ := d["notifications"].([]any)
	if len(notes) == 0 || notes[0].(map[string]any)["type"] != "autonomy_pause" {
		t.Errorf("autonomy_pause expected: %v", d)
	}
	token := d["confirmation"].(map[string]any)["token"].(string)
	if d := step("something else", "success"); d["continue"] != false {
		t.Errorf("still paused: %v", d)
	}
	h.answer(t, "allow")
	res, _ = g.callAQL(t, "mcp_aql_execute", "confirm_operation", map[string]any{"token": token})
	data(t, res)
	if d := step("something else", "success"); d["continue"] != true {
		t.Errorf("after the human confirmed: %v", d)
	}
	// Patterns apply to hints: requires_approval pauses with a token.
	h.answer(t, "silent")
	d = step("git push origin main", "")
	if d["continue"] != false || d["confirmation"] == nil || d["nextStepRisk"] != "confirm" {
		t.Errorf("requires_approval hint: %v", d)
	}
	// Lifecycle: terminal states stay terminal.
	res, _ = g.callAQL(t, "mcp_aql_execute", "complete_execution", map[string]any{"execution_id": id})
	if st := data(t, res); st["status"] != "completed" || st["finished_at"] == nil {
		t.Errorf("complete: %v", st)
	}
	for _, op := range []string{"complete_execution", "abort_execution"} {
		res, _ = g.callAQL(t, "mcp_aql_execute", op, map[string]any{"execution_id": id})
		if code, _ := errCode(t, res); code != "CONFLICT_INVALID_STATE" {
			t.Errorf("%s on a completed execution: %s", op, jsonString(res))
		}
	}
	res, _ = g.callAQL(t, "mcp_aql_create", "record_execution_step", map[string]any{"element_name": "researcher", "next_action_hint": "x", "execution_id": id})
	if code, _ := errCode(t, res); code != "CONFLICT_INVALID_STATE" {
		t.Errorf("step on a completed execution: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql_execute", "execute_agent", map[string]any{"element_name": "second"})
	id2 := data(t, res)["execution_id"].(string)
	res, _ = g.callAQL(t, "mcp_aql_execute", "abort_execution", map[string]any{"execution_id": id2, "reason": "user stopped it"})
	if st := data(t, res); st["status"] != "cancelled" || st["reason"] != "user stopped it" {
		t.Errorf("abort: %v", st)
	}
	res, _ = g.callAQL(t, "mcp_aql_read", "introspect", map[string]any{"query": "operations", "name": "execute_agent"})
	lc := data(t, res)["operation"].(map[string]any)["lifecycle"].(map[string]any)
	if jsonString(lc["states"]) != `["pending","running","completed","failed","cancelled"]` {
		t.Errorf("lifecycle: %v", lc)
	}
}

// TestVerifyPause: the verify tier pauses with a challenge whose code
// reaches only the human; the right code resumes.
func TestVerifyPause(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, loopConfig(h, "enforcing", 1000))
	res, _ := g.callAQL(t, "mcp_aql_create", "ts_create_note", map[string]any{"title": "t"})
	code, details := errCode(t, res)
	id, _ := details["verification_id"].(string)
	if code != "PERMISSION_VERIFICATION_REQUIRED" || id == "" {
		t.Fatalf("verify tier: %s", jsonString(res))
	}
	var shown string
	for _, r := range h.requests(t) {
		if r["kind"] == "challenge" && r["challenge_id"] == id {
			shown, _ = r["code"].(string)
		}
	}
	if shown == "" {
		t.Fatalf("the human was not shown a code: %v", h.requests(t))
	}
	if strings.Contains(jsonString(res), shown) || strings.Contains(g.stderr(), shown) {
		t.Fatal("the code leaked to the model or the log")
	}
	res, _ = g.callAQL(t, "mcp_aql_execute", "ts_echo", map[string]any{"message": "paused?"})
	if c, _ := errCode(t, res); c != "PERMISSION_VERIFICATION_REQUIRED" {
		t.Errorf("while paused: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql_create", "verify_challenge", map[string]any{"challenge_id": id, "code": "WRONG-CODE"})
	if c, _ := errCode(t, res); c != "PERMISSION_VERIFICATION_FAILED" {
		t.Errorf("wrong code: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql_create", "verify_challenge", map[string]any{"challenge_id": id, "code": strings.ToLower(shown)})
	if d := data(t, res); d["resumed"] != true {
		t.Errorf("right code: %v", d)
	}
	if r, _ := g.callAQL(t, "mcp_aql_execute", "ts_echo", map[string]any{"message": "resumed"}); r["data"] != "resumed" {
		t.Errorf("after verification: %s", jsonString(r))
	}
	res, _ = g.callAQL(t, "mcp_aql_create", "verify_challenge", map[string]any{"challenge_id": "not-a-uuid", "code": "x"})
	if c, _ := errCode(t, res); c != "VALIDATION_PATTERN_MISMATCH" {
		t.Errorf("malformed id: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql_create", "verify_challenge", map[string]any{"challenge_id": "123e4567-e89b-42d3-a456-426614174000", "code": "x"})
	if c, _ := errCode(t, res); c != "NOT_FOUND_RESOURCE" {
		t.Errorf("unknown id: %s", jsonString(res))
	}
}

// TestLoopModes: monitoring evaluates but never stops; logging records
// without evaluating; disabled tracks executions and evaluates nothing.
func TestLoopModes(t *testing.T) {
	for _, mode := range []string{"monitoring", "logging", "disabled"} {
		t.Run(mode, func(t *testing.T) {
			h := newHuman(t)
			g := startGuard(t, loopConfig(h, mode, 100))
			res, _ := g.callAQL(t, "mcp_aql_read", "introspect", map[string]any{"query": "operations"})
			caps := data(t, res)["_protocol"].(map[string]any)["capabilities"].(map[string]any)
			if caps["execution_safety_loop"] != mode {
				t.Errorf("capability: %v", caps)
			}
			res, _ = g.callAQL(t, "mcp_aql_execute", "execute_agent", map[string]any{"element_name": "m"})
			data(t, res)
			for i := 0; i < 3; i++ {
				res, _ = g.callAQL(t, "mcp_aql_create", "record_execution_step", map[string]any{"element_name": "m", "next_action_hint": "rm -rf / --no-preserve-root"})
				d := data(t, res)
				if d["continue"] != true || d["stopped"] == true {
					t.Fatalf("%s must not stop: %v", mode, d)
				}
				f := jsonString(d["factors"])
				if mode == "monitoring" && !strings.Contains(f, "would have block") ||
					mode != "monitoring" && !strings.Contains(f, "not evaluated") {
					t.Errorf("%s factors: %s", mode, f)
				}
			}
			if len(h.requests(t)) != 0 {
				t.Errorf("%s asked a human: %v", mode, h.requests(t))
			}
		})
	}
}

// TestNoDisplayFailsClosed: the dialog channel on a machine without a
// display approves nothing and says why.
func TestNoDisplayFailsClosed(t *testing.T) {
	g, err := launchGuard(t, guardOptions{Config: `
mode = "semantic"
agent = "a"
[verify]
channel = "dialog"
inline_wait = "2s"
[safety]
requires_approval = ["ts_delete_note"]
deny = ["*drop_database*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`, Env: []string{"DISPLAY=", "WAYLAND_DISPLAY="}})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := g.callAQL(t, "mcp_aql_delete", "ts_delete_note", map[string]any{"id": "x"})
	if !strings.Contains(errMessage(res), "none could be asked (the dialog channel could not reach a human (no graphical display)") {
		t.Errorf("the refusal must say why: %s", jsonString(res))
	}
	if len(calledTools(t, g)) != 0 {
		t.Error("forwarded without a human")
	}

	// A code that cannot be shown: the block stays, and the refusal says why.
	res, _ = g.callAQL(t, "mcp_aql_delete", "ts_drop_database", map[string]any{"name": "prod"})
	code, _ := errCode(t, res)
	if code != "PERMISSION_AGENT_BLOCKED" || !strings.Contains(errMessage(res), "could not show the user a verification code (no graphical display)") {
		t.Errorf("deny without a display: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql_read", "ts_get_item", map[string]any{"id": "1"})
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" {
		t.Errorf("the block must stay: %s", jsonString(res))
	}
}

// TestDangerZoneReachesSecondSession: two MCP sessions on one aqlguard
// (Streamable HTTP front); a deny in one hard-blocks the principal, and
// the other session's executing agent gets the danger_zone broadcast and
// cannot escape the block with a new execution.
func TestDangerZoneReachesSecondSession(t *testing.T) {
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	h := newHuman(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, renderConfig(t, loopConfig(h, "enforcing", 1000), dir))
	cmd := exec.Command(bins.aqlguard, "serve", "--listen", "127.0.0.1:0", "--config", cfg)
	cmd.Env = isolatedEnv(t, dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	diesWithTest(cmd)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Log(stderr.String())
		}
	})
	url := ""
	re := regexp.MustCompile(`url=(http://\S+/mcp)`)
	for deadline := time.Now().Add(20 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("aqlguard serve did not listen:\n%s", stderr.String())
	}
	token := serveTokenOf(t, dir)
	connect := func() *mcp.ClientSession {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: bearerClient(token)},
				&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	call := func(cs *mcp.ClientSession, tool, op string, params map[string]any) map[string]any {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"operation": op, "params": params}})
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(resultText(t, res)), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b := connect(), connect()
	data(t, call(a, "mcp_aql", "execute_agent", map[string]any{"element_name": "alpha"}))
	data(t, call(b, "mcp_aql", "execute_agent", map[string]any{"element_name": "beta"}))
	d := data(t, call(a, "mcp_aql", "record_execution_step", map[string]any{"element_name": "alpha", "next_action_hint": "rm -rf / to free space"}))
	if d["stopped"] != true || d["continue"] != false {
		t.Fatalf("deny must stop: %v", d)
	}
	vid, _ := d["verification_id"].(string)
	d = data(t, call(b, "mcp_aql", "record_execution_step", map[string]any{"element_name": "beta", "next_action_hint": "reading a file"}))
	if d["stopped"] != true {
		t.Errorf("the block holds in the other session: %v", d)
	}
	var got []string
	for _, n := range d["notifications"].([]any) {
		nm := n.(map[string]any)
		got = append(got, nm["type"].(string))
		if nm["type"] == "danger_zone" && nm["metadata"].(map[string]any)["verificationId"] != vid {
			t.Errorf("danger_zone must carry the verification id %s: %v", vid, nm)
		}
	}
	if strings.Join(got, ",") != "danger_zone" {
		t.Errorf("session b got %v, want one danger_zone", got)
	}
	// Delivered once.
	d = data(t, call(b, "mcp_aql", "record_execution_step", map[string]any{"element_name": "beta", "next_action_hint": "reading a file"}))
	if d["notifications"] != nil {
		t.Errorf("delivered twice: %v", d["notifications"])
	}
	if code, _ := errCode(t, call(b, "mcp_aql", "execute_agent", map[string]any{"element_name": "fresh"})); code != "PERMISSION_AGENT_BLOCKED" {
		t.Error("a new execution must not escape the block")
	}
}
