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

// TestServerStartFailures: servers that are missing, crash or hang at start
// are reported (log and introspection) and the others still serve; the
// hanging one costs its own start timeout, not more.
func TestServerStartFailures(t *testing.T) {
	began := time.Now()
	g := startGuard(t, `
mode = "single"
agent = "e2e"
[safety]
auto_approve = ["*"]
[[servers]]
name = "missing"
trust_first_sight = true
command = "/nonexistent/mcp-server"
[[servers]]
name = "crash"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-fail-start"]
[[servers]]
name = "hang"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-hang-start"]
start_timeout = "1s"
[[servers]]
name = "good"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-stderr-noise"]
`)
	if d := time.Since(began); d > 15*time.Second {
		t.Errorf("start took %s; servers must start in parallel under their own timeouts", d)
	}
	res, _ := g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations"})
	servers := data(t, res)["_protocol"].(map[string]any)["servers"].([]any)
	want := map[string]string{
		"missing": "command not found",
		"crash":   "process exited during start (exit code 3): testserver: deliberate start failure (-fail-start)",
		"hang":    "start timed out after 1s",
		"good":    "",
	}
	for _, s := range servers {
		m := s.(map[string]any)
		name := m["name"].(string)
		problem, _ := m["problem"].(string)
		if problem != want[name] {
			t.Errorf("server %s: problem %q, want %q", name, problem, want[name])
		}
		if (want[name] == "") != (m["status"] == "ready") {
			t.Errorf("server %s: status %v", name, m["status"])
		}
		for _, leak := range []string{"fork/exec", "/nonexistent", "no such file"} {
			if strings.Contains(problem, leak) {
				t.Errorf("problem leaks internals: %q", problem)
			}
		}
	}
	res, _ = g.callAQL(t, "mcp_aql", "good_echo", map[string]any{"message": "alive"})
	if res["data"] != "alive" {
		t.Errorf("the good server must serve: %v", res)
	}
	log := g.stderr()
	for _, want := range []string{`server=missing problem="command not found"`, "server=hang", "testserver: stderr noise line 1"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q", want)
		}
	}
}

// TestDownstreamStderrStaysOffTheStream: a chatty server's stderr lands in
// aqlguard's log, and the MCP stream stays parseable (the client would
// have failed otherwise).
func TestDownstreamStderrStaysOffTheStream(t *testing.T) {
	g := startGuard(t, `
mode = "single"
agent = "e2e"
[safety]
auto_approve = ["*"]
[[servers]]
name = "noisy"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-stderr-noise"]
`)
	res, _ := g.callAQL(t, "mcp_aql", "noisy_echo", map[string]any{"message": "x"})
	if res["data"] != "x" {
		t.Fatal(res)
	}
	if !regexp.MustCompile(`msg="downstream stderr" (session=s-[0-9a-f]+ )?server=noisy line="testserver: stderr noise line 2 \(not MCP\)"`).MatchString(g.stderr()) {
		t.Errorf("stderr not in aqlguard's log:\n%s", g.stderr())
	}
}

// TestStreamableHTTPServer: a url server is reached over Streamable HTTP
// with the configured headers, and guarded like any other.
func TestStreamableHTTPServer(t *testing.T) {
	url := startTestServerHTTP(t)
	g := startGuard(t, `
mode = "semantic"
agent = "e2e"
[safety]
auto_approve = ["remote_echo"]
deny = ["*drop_database*"]
[[servers]]
name = "remote"
trust_first_sight = true
url = "`+url+`"
headers = { "X-Aqlguard-Test" = "yes" }
`)
	res, _ := g.callAQL(t, "mcp_aql_execute", "remote_echo", map[string]any{"message": "over http"})
	if res["data"] != "over http" {
		t.Fatalf("http call: %v", res)
	}
	res, _ = g.callAQL(t, "mcp_aql_delete", "remote_drop_database", map[string]any{"name": "x"})
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" {
		t.Errorf("http deny: %v", res)
	}
}

// TestBatchAndFieldSelection: batches run in order with per-operation
// results, halt at a confirmation with the rest pending, and READ results
// honour fields.
func TestBatchAndFieldSelection(t *testing.T) {
	g := startGuard(t, guardedConfig("enforcing", 1000))
	res, _ := g.call(t, "mcp_aql_read", map[string]any{"operations": []any{
		map[string]any{"operation": "ts_get_item", "params": map[string]any{"id": "a1", "fields": []any{"id", "owner.name"}}},
		map[string]any{"operation": "ts_get_item", "params": map[string]any{"id": 3}},
		map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "wrong endpoint"}},
		map[string]any{"operation": "ts_list_items", "params": map[string]any{"limit": 2, "fields": "minimal"}},
	}})
	assertResultSchema(t, res)
	if res["success"] != true {
		t.Fatal(res)
	}
	results := res["results"].([]any)
	sum := res["summary"].(map[string]any)
	if len(results) != 4 || sum["total"] != 4.0 || sum["succeeded"] != 2.0 || sum["failed"] != 2.0 {
		t.Fatalf("batch: %s", jsonString(res))
	}
	first := results[0].(map[string]any)["result"].(map[string]any)["data"]
	if jsonString(first) != `{"id":"a1","owner":{"name":"alice"}}` {
		t.Errorf("field selection: %s", jsonString(first))
	}
	if c := results[2].(map[string]any)["result"].(map[string]any)["error"].(map[string]any)["code"]; c != "VALIDATION_ENDPOINT_MISMATCH" {
		t.Errorf("batch entry on the wrong endpoint: %v", c)
	}
	items := results[3].(map[string]any)["result"].(map[string]any)["data"].(map[string]any)["items"].([]any)
	for _, it := range items {
		for k := range it.(map[string]any) {
			if k != "id" && k != "name" && k != "status" {
				t.Errorf("minimal preset kept %q", k)
			}
		}
	}

	res, _ = g.call(t, "mcp_aql_delete", map[string]any{"operation": "batch", "operations": []any{
		map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": "first"}},
		map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": "second"}},
		map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": "third"}},
	}})
	assertResultSchema(t, res)
	d := data(t, res)
	halted := d["halted_at"].(map[string]any)
	pending := d["pending_operations"].([]any)
	if halted["index"] != 0.0 || len(pending) != 2 || pending[0].(map[string]any)["params"].(map[string]any)["id"] != "second" {
		t.Errorf("halted batch: %s", jsonString(res))
	}
	sum = res["summary"].(map[string]any)
	if sum["halted"] != 1.0 || sum["pending"] != 2.0 {
		t.Errorf("summary: %v", sum)
	}
	for _, c := range readCalls(t, g.dir+"/calls.jsonl") {
		if c.Tool == "delete_note" {
			t.Errorf("a halted batch forwarded %s", c.Arguments)
		}
	}
}

// TestFilesystemServer: the real npm filesystem server behind aqlguard:
// reads work, a denied write never touches the disk.
func TestFilesystemServer(t *testing.T) {
	command, args := fsServer(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append(args, root)
	g := startGuard(t, `
mode = "semantic"
agent = "e2e"
[safety]
auto_approve = ["fs.read_*", "fs.list_*"]
deny = ["fs.write_file"]
[[servers]]
name = "fs"
trust_first_sight = true
command = `+tomlString(command)+`
args = `+tomlArray(args...)+`
start_timeout = "60s"
`)
	res, _ := g.callAQL(t, "mcp_aql_read", "introspect", map[string]any{"query": "operations"})
	var ops []string
	for _, o := range data(t, res)["operations"].([]any) {
		ops = append(ops, o.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(ops, ","), "fs_read_text_file") {
		t.Fatalf("fs operations: %v", ops)
	}
	res, _ = g.callAQL(t, "mcp_aql_read", "fs_read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})
	if !strings.Contains(jsonString(res), "hello from disk") {
		t.Errorf("read: %s", jsonString(res))
	}
	assertResultSchema(t, res)
	target := filepath.Join(root, "pwned.txt")
	res, _ = g.callAQL(t, endpointFor(t, g, "mcp_aql_read", "fs_write_file"), "fs_write_file", map[string]any{"path": target, "content": "x"})
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" {
		t.Errorf("write: %s", jsonString(res))
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("a denied write reached the disk")
	}
}

// TestPolicyCheck: the CLI reports every error with its line and exits
// non-zero; the example config passes.
func TestPolicyCheck(t *testing.T) {
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	out, err := exec.Command(bins.aqlguard, "policy", "check", "--config", "../config.example.toml").CombinedOutput()
	if err != nil {
		t.Errorf("config.example.toml: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.toml")
	writeFile(t, bad, `mode = "semantic"
agent = "a"
bogus_key = 1

[safety]
loop = "sometimes"
deny = ["ok", "{unclosed"]

[[servers]]
name = "Bad_Name"
trust_first_sight = true
command = "x"
`)
	cmd := exec.Command(bins.aqlguard, "policy", "check", "--config", bad)
	out, err = cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1, got %v\n%s", err, out)
	}
	for _, want := range []string{"bad.toml:3", "bogus_key", "bad.toml:6", "loop", "bad.toml:7", "deny[1]", "bad.toml:10", "servers[0].name"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestStdioServerEnvCwdAndAgentFlag: a stdio server gets the configured
// env and cwd; --agent overrides the config's principal.
func TestStdioServerEnvCwdAndAgentFlag(t *testing.T) {
	work := t.TempDir()
	g := startGuard(t, `
mode = "single"
agent = "from-config"
[safety]
auto_approve = ["ts_get_environment"]
deny = ["ts_drop_database"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
cwd = `+tomlString(work)+`
env = { AQLGUARD_TEST_VALUE = "configured" }
`, "--agent", "from-flag")
	res, _ := g.callAQL(t, "mcp_aql", "ts_get_environment", map[string]any{"name": "AQLGUARD_TEST_VALUE"})
	d := data(t, res)
	if d["value"] != "configured" || d["cwd"] != work {
		t.Errorf("env/cwd not applied: %v", d)
	}
	res, _ = g.callAQL(t, "mcp_aql", "ts_drop_database", map[string]any{"name": "x"})
	if _, details := errCode(t, res); details["agent"] != "from-flag" {
		t.Errorf("--agent not applied: %v", details)
	}
}

// TestDownstreamCrash: a server that dies mid-call yields a structured
// error, later calls to it fail cleanly, and the other servers serve on.
func TestDownstreamCrash(t *testing.T) {
	g := startGuard(t, `
mode = "single"
agent = "e2e"
[safety]
auto_approve = ["*"]
[[servers]]
name = "doomed"
trust_first_sight = true
command = {{toml .testserver}}
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	res, _ := g.callAQL(t, "mcp_aql", "doomed_crash", nil)
	if code, details := errCode(t, res); code != "INTERNAL_ERROR" || details["server"] != "doomed" {
		t.Errorf("crash: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql", "doomed_echo", map[string]any{"message": "x"})
	if code, _ := errCode(t, res); code != "INTERNAL_ERROR" {
		t.Errorf("after crash: %s", jsonString(res))
	}
	res, _ = g.callAQL(t, "mcp_aql", "ts_echo", map[string]any{"message": "fine"})
	if res["data"] != "fine" {
		t.Errorf("other server: %v", res)
	}
	if !strings.Contains(g.stderr(), "server=doomed") || !strings.Contains(g.stderr(), "went away") {
		t.Errorf("log lacks the crash:\n%s", g.stderr())
	}
}
