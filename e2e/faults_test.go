package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/faultinject"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The operator's bad day (issue 20): the faults found with a fault
// injector, each loud, none losing evidence, driven through the real
// binary.

const faultConfig = `
mode = "all"
agent = "faults"
[safety]
deny = ["*drop_database*"]
auto_approve = ["ts_echo"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`

func stateDir(dir string) string { return filepath.Dir(dbPath(dir)) }

// restartRefused starts aqlguard again on dir and wants it refused,
// saying want and naming the command that accepts the state.
func restartRefused(t *testing.T, dir, want string) {
	t.Helper()
	_, err := launchGuard(t, guardOptions{Config: faultConfig, Dir: dir})
	if err == nil {
		t.Fatalf("aqlguard started on a state whose history does not add up (%s)", want)
	}
	for _, w := range []string{want, "aqlguard state reset --i-understand"} {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("the refusal does not say %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "goroutine ") {
		t.Fatalf("aqlguard panicked:\n%v", err)
	}
}

// TestFaultLostDatabase (fault 1): a deleted database is refused at every
// start, blocks list creates nothing, and a reset (audited) accepts it.
func TestFaultLostDatabase(t *testing.T) {
	g := startGuard(t, faultConfig)
	block(t, g)
	_ = g.stop(t)
	if err := os.Remove(dbPath(g.dir)); err != nil {
		t.Fatal(err)
	}
	restartRefused(t, g.dir, "does not exist, but this directory had state before")
	restartRefused(t, g.dir, "does not exist")
	if _, errOut, code := admin(t, g, "blocks", "list"); code == 0 || !strings.Contains(errOut, "does not add up") {
		t.Fatalf("blocks list on a lost database: exit %d: %s", code, errOut)
	}
	if _, err := os.Stat(dbPath(g.dir)); !os.IsNotExist(err) {
		t.Fatalf("blocks list created a database (%v)", err)
	}
	if out, errOut, code := admin(t, g, "state", "reset"); code != 2 || !strings.Contains(errOut, "--i-understand") {
		t.Fatalf("state reset without --i-understand: exit %d: %s%s", code, out, errOut)
	}
	out, errOut, code := admin(t, g, "state", "reset", "--i-understand")
	if code != 0 || !strings.Contains(out, "accepted") {
		t.Fatalf("state reset: exit %d: %s%s", code, out, errOut)
	}
	g2, err := launchGuard(t, guardOptions{Config: faultConfig, Dir: g.dir})
	if err != nil {
		t.Fatalf("aqlguard after the reset: %v", err)
	}
	if res := echo(t, g2); res["success"] != true {
		t.Fatalf("a call after the reset: %s", jsonString(res))
	}
	recs := auditRecords(t, g2)
	found := false
	for _, r := range recs {
		found = found || r["decision"] == "state_reset" && strings.Contains(fmt.Sprint(r["factors"]), "accepted by")
	}
	if !found {
		t.Fatal("the reset left no audit record naming who accepted it")
	}
}

// TestFaultFullDisk (fault 2): on a full disk calls fail closed with no
// partial record; once space returns calls go on and the log verifies.
func TestFaultFullDisk(t *testing.T) {
	disk := faultinject.SmallDisk(t, 4<<20)
	state := filepath.Join(disk, "state")
	g := startGuard(t, faultConfig, "--state-dir", state)
	if res := echo(t, g); res["success"] != true {
		t.Fatalf("first call: %s", jsonString(res))
	}
	free := faultinject.Fill(t, disk)
	for range 5 {
		res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": strings.Repeat("x", 8000)})
		if res["success"] == true {
			t.Fatal("a call whose decision cannot be recorded ran")
		}
	}
	free()
	if res := echo(t, g); res["success"] != true {
		t.Fatalf("a call once space returned: %s", jsonString(res))
	}
	if out, errOut, code := admin(t, g, "audit", "verify", "--state-dir", state); code != 0 {
		t.Fatalf("audit verify after a full disk: exit %d: %s%s", code, out, errOut)
	}
}

// TestFaultDeletedSegment (fault 3): a deleted audit segment is refused at
// this start and the next, never a new chain begun over it.
func TestFaultDeletedSegment(t *testing.T) {
	g := startGuard(t, faultConfig)
	for range 3 {
		echo(t, g)
	}
	_ = g.stop(t)
	seg := filepath.Join(stateDir(g.dir), "audit", "audit-00000001.jsonl")
	if err := os.Remove(seg); err != nil {
		t.Fatal(err)
	}
	restartRefused(t, g.dir, "the log's last records or segments were removed")
	restartRefused(t, g.dir, "were removed")
	if out, errOut, code := admin(t, g, "audit", "verify"); code == 0 {
		t.Fatalf("audit verify passed over a deleted segment: %s%s", out, errOut)
	}
}

// TestFaultDamagedPage (fault 4): a damaged page is an error naming the
// file and what to do, in aqlguard and in every admin command; no panic.
func TestFaultDamagedPage(t *testing.T) {
	g := startGuard(t, faultConfig)
	block(t, g)
	_ = g.stop(t)
	faultinject.DamagePages(t, dbPath(g.dir), 2)
	restartRefused(t, g.dir, "is damaged")
	for _, verb := range [][]string{{"blocks", "list"}, {"unblock", "faults"}, {"audit", "verify"}, {"approvals", "list"}} {
		_, errOut, code := admin(t, g, verb...)
		if code != 1 || !strings.Contains(errOut, "is damaged") || !strings.Contains(errOut, dbPath(g.dir)) ||
			strings.Contains(errOut, "goroutine ") {
			t.Fatalf("%v on a damaged database: exit %d:\n%s", verb, code, errOut)
		}
	}
}

// TestFaultCancelledQuestion (fault 5): calls cancelled while their
// question is on the human's screen are each recorded (never "busy"),
// and a shutdown with the question up records it unanswered.
func TestFaultCancelledQuestion(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "faults"
[safety]
requires_approval = ["ts_create_note"]
[verify]
channel = "command"
command = ["/bin/sleep", "600"]
inline_wait = "60s"
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
		_, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: "mcp_aql", Arguments: map[string]any{
			"operation": "ts_create_note", "params": map[string]any{"title": fmt.Sprint("n", i), "body": "b"}}})
		cancel()
		if err == nil {
			t.Fatal("a cancelled call was answered")
		}
	}
	var decisions int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && decisions < 3; time.Sleep(100 * time.Millisecond) {
		decisions = 0
		for _, r := range auditRecords(t, g) {
			if r["kind"] == "decision" && r["operation"] == "ts_create_note" {
				decisions++
			}
		}
	}
	if decisions != 3 {
		t.Fatalf("%d decision records for 3 cancelled gated calls, want 3", decisions)
	}
	if strings.Contains(g.stderr(), "busy") {
		t.Fatalf("a cancelled call was reported as a busy database:\n%s", g.stderr())
	}
	if err := g.stop(t); err != nil {
		t.Fatal(err)
	}
	unanswered := false
	for _, r := range auditRecords(t, g) {
		unanswered = unanswered || r["kind"] == "confirmation" && r["decision"] == "no_answer"
	}
	if !unanswered {
		t.Fatal("the question withdrawn at shutdown left no record")
	}
}

// TestFaultCrashLoop (faults 6, 7, 10): a server that starts and dies is
// restarted with a growing wait, and a call meanwhile is told, once and
// in a fixed sentence, that it is restarting, the attempt and when.
func TestFaultCrashLoop(t *testing.T) {
	g := startGuard(t, `
mode = "all"
agent = "faults"
[safety]
auto_approve = ["*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-exit-after", "300ms"]
`)
	began := time.Now()
	var told string
	for time.Since(began) < 6*time.Second {
		res, _ := g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "hi"})
		if msg := fmt.Sprint(res["error"]); strings.Contains(msg, "is restarting (attempt") {
			told = msg
		} else if strings.Contains(msg, "Unknown operation") || strings.Contains(msg, "NOT_FOUND_OPERATION") {
			t.Fatalf("a call to a restarting server: %s", msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
	restarts := strings.Count(g.stderr(), "restarting downstream server")
	if restarts > 4 {
		t.Fatalf("%d restarts in 6 s of a crash loop, want at most 4 (0.5, 1, 2 s apart and up)", restarts)
	}
	if told == "" || strings.Count(told, "server ts") != 1 || strings.Contains(told, "unavailable") {
		t.Fatalf("a call to the restarting server was told %q", told)
	}
}

// TestFaultBadLines (fault 8): on stdio, a bad line gets the JSON-RPC error
// for it and the session goes on; an unterminated object does not eat
// the next line.
func TestFaultBadLines(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, renderConfig(t, faultConfig, dir))
	cmd := exec.Command(bins.aqlguard, "run", "--config", cfg)
	cmd.Env = isolatedEnv(t, dir)
	cmd.Stderr = io.Discard
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = cmd.Wait() }()
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(line string) {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatalf("writing %q: %v (aqlguard exited?)", line, err)
		}
	}
	next := func() map[string]any {
		if !out.Scan() {
			t.Fatalf("aqlguard closed its output: %v", out.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", out.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := next(); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`this is not json`, -32700, nil},
		{`[]`, -32600, nil},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":7,"method":42}`, -32600, float64(7)},
		{`{"jsonrpc":"1.0","id":8,"method":"ping"}`, -32600, float64(8)},
		{strings.Repeat("[", 50000), -32700, nil},
		{`{"jsonrpc":"2.0","id":9,"method":"ping"`, -32700, nil},
	} {
		send(tc.line)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != tc.code || m["id"] != tc.id {
			t.Fatalf("line %d %.40q answered %v, want code %v id %v", i, tc.line, m, tc.code, tc.id)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i))
		if m := next(); m["id"] != float64(100+i) || m["result"] == nil {
			t.Fatalf("the ping after line %d: %v", i, m)
		}
	}
	// Over the limit (issue 32, item 4): answered under the request's
	// own id wherever the line holds it (the go-sdk writes it first, the
	// TypeScript SDK after the params), null when it holds none.
	for i, tc := range []struct {
		head string
		size int
		tail string
		id   any
	}{
		{`{"method":"tools/call","params":{"name":"fault_echo","arguments":{"message":"`, 100 << 20, `"}},"jsonrpc":"2.0","id":"ts-\"7\""}`, `ts-"7"`},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"fault_echo","arguments":{"message":"`, 17 << 20, `"}}}`, float64(8)},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"fault_echo","arguments":{"message":"`, 17 << 20, `"}}}`, nil},
	} {
		send(tc.head + strings.Repeat("x", tc.size) + tc.tail)
		m := next()
		e, _ := m["error"].(map[string]any)
		if e == nil || e["code"] != float64(-32600) || m["id"] != tc.id {
			t.Fatalf("over-long line %d answered %v, want code -32600 id %v", i, m, tc.id)
		}
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 200+i))
		if m := next(); m["id"] != float64(200+i) || m["result"] == nil {
			t.Fatalf("the ping after over-long line %d: %v", i, m)
		}
	}
}

// TestPipelinedClientIsServed: a client that sends initialize,
// notifications/initialized and tools/list in one write, without waiting
// for initialize's answer (the release smoke test does; so do scripts),
// gets both answered. aqlguard serves requests concurrently, so
// tools/list once raced initialize and was told the session was not
// initialized. Every mode, several rounds: it was a race.
func TestPipelinedClientIsServed(t *testing.T) {
	for _, mode := range []string{"transparent", "all"} {
		for round := range 4 {
			dir := t.TempDir()
			cfg := filepath.Join(dir, "config.toml")
			writeFile(t, cfg, renderConfig(t, strings.Replace(faultConfig, `mode = "all"`, `mode = "`+mode+`"`, 1), dir))
			cmd := exec.Command(bins.aqlguard, "run", "--config", cfg)
			cmd.Env = isolatedEnv(t, dir)
			cmd.Stderr = io.Discard
			cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"pipelined","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/list"}
`)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s round %d: aqlguard: %v", mode, round, err)
			}
			answers := map[float64]map[string]any{}
			for line := range strings.Lines(string(out)) {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("%s round %d: %q: %v", mode, round, line, err)
				}
				if id, ok := m["id"].(float64); ok {
					answers[id] = m
				}
			}
			for id := 1.0; id <= 2; id++ {
				if a := answers[id]; a["result"] == nil {
					t.Fatalf("%s round %d: request %v answered %v", mode, round, id, a)
				}
			}
		}
	}
}

// TestFaultWorldWritableState (fault 9): a state directory others can
// write is refused at start, saying how to fix it.
func TestFaultWorldWritableState(t *testing.T) {
	g := startGuard(t, faultConfig)
	_ = g.stop(t)
	if err := os.Chmod(stateDir(g.dir), 0o777); err != nil {
		t.Fatal(err)
	}
	restartRefused := func() {
		_, err := launchGuard(t, guardOptions{Config: faultConfig, Dir: g.dir})
		if err == nil || !strings.Contains(err.Error(), "writable by others") || !strings.Contains(err.Error(), "chmod -R go-w") {
			t.Fatalf("aqlguard on a world-writable state directory: %v", err)
		}
	}
	restartRefused()
	if err := os.Chmod(stateDir(g.dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dbPath(g.dir), 0o666); err != nil {
		t.Fatal(err)
	}
	restartRefused()
}

// TestFaultStdioIsPolled (fault 11): the serving aqlguard reads its
// client's pipe through the runtime's poller (the descriptor is
// non-blocking), so no thread of it sits in read(2) when the GC stops
// the world.
func TestFaultStdioIsPolled(t *testing.T) {
	g := startGuard(t, faultConfig)
	server := serverPID(t, g)
	serving := parentOf(t, server)
	for _, fd := range []int{0, 1} {
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", serving, fd))
		if err != nil {
			t.Fatal(err)
		}
		var flags int64
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, _ = strconv.ParseInt(strings.TrimSpace(v), 8, 64)
			}
		}
		if flags&syscall.O_NONBLOCK == 0 {
			t.Fatalf("the serving aqlguard's fd %d is blocking (flags %o): a thread reads it in read(2)", fd, flags)
		}
	}
	if res := echo(t, g); res["success"] != true {
		t.Fatalf("a call through the polled stdio: %s", jsonString(res))
	}
}
