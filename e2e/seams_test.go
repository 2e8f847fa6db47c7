package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The seams between what the guard reads and what runs (issue "Sound and
// precise at every seam"): each test here failed on the code before it.

// readsConfig is the test server with a resource template and a prompt
// behind a policy that keeps /etc out, recording every message it
// receives as the SDK reads it.
const readsConfig = `
mode = "transparent"
agent = "seams"
[safety]
deny = ["*.resource:file:///etc/*", "*/etc/shadow*"]
auto_approve = ["*.resource:file:///tmp/*", "*.prompt:*", "echo"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-resources", "-wire-log", "{{.dir}}/wire.jsonl"]
`

// rawClient speaks JSON-RPC lines to an `aqlguard run` on its stdio.
type rawClient struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  *bufio.Reader
	stderr *syncBuffer
	nextID int
}

func startRaw(t *testing.T, config string) (*rawClient, string) {
	t.Helper()
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, renderConfig(t, config, dir))
	cmd, stdin, stdout, stderr := rawAqlguardAt(t, dir, cfg)
	c := &rawClient{t: t, stdin: stdin, lines: bufio.NewReader(stdout), stderr: stderr, nextID: 1}
	t.Cleanup(func() {
		stdin.Close()
		if ok, _ := exited(cmd, 10*time.Second); !ok {
			t.Error("aqlguard did not exit on stdin EOF")
		}
		if t.Failed() {
			t.Logf("aqlguard stderr:\n%s", stderr.String())
		}
	})
	c.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}`)
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return c, dir
}

// request sends method with params written as they are and returns the
// answer's result and error.
func (c *rawClient) request(method, params string) (json.RawMessage, *jsonrpc.Error) {
	c.t.Helper()
	id := c.nextID
	c.nextID++
	if _, err := fmt.Fprintf(c.stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		c.t.Fatal(err)
	}
	for {
		line, err := c.lines.ReadString('\n')
		if err != nil {
			c.t.Fatalf("reading the answer to %s: %v", method, err)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *jsonrpc.Error  `json:"error"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == fmt.Sprint(id) {
			return m.Result, m.Error
		}
	}
}

// wire is what the test server received, as it read it.
func wire(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "wire.jsonl"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// received are the lines of a wire log the server read (not those it
// wrote: its tools/list names drop_database).
func received(wire string) string {
	var b strings.Builder
	for line := range strings.Lines(wire) {
		if strings.HasPrefix(line, "read: ") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestJudgedIsForwarded: a request whose judged member is spelled twice
// (repeated, or in another case, which encoding/json reads as the same
// field) is refused with -32602 before any server sees it, for every
// method the guard or a router reads; spelled once, it is judged and
// forwarded as it is.
func TestJudgedIsForwarded(t *testing.T) {
	c, dir := startRaw(t, readsConfig)
	for _, tc := range []struct{ method, params string }{
		{"resources/read", `{"uri":"file:///etc/shadow","URI":"file:///tmp/ok"}`},
		{"resources/read", `{"URI":"file:///etc/shadow","uri":"file:///tmp/ok"}`},
		{"resources/read", `{"uri":"file:///tmp/ok","uri":"file:///etc/shadow"}`},
		{"resources/read", `{"Uri":"file:///etc/shadow"}`},
		{"resources/read", `{"ur\u0130":"file:///etc/shadow","uri":"file:///tmp/ok"}`},
		{"resources/subscribe", `{"uri":"file:///tmp/ok","URI":"file:///etc/shadow"}`},
		{"prompts/get", `{"name":"greet","arguments":{"name":"a"},"Arguments":{"name":"/etc/shadow"}}`},
		{"prompts/get", `{"name":"greet","arguments":{"name":"a","NAME":"/etc/shadow"}}`},
		{"tools/call", `{"name":"echo","NAME":"drop_database","arguments":{"message":"hi"}}`},
		{"tools/call", `{"name":"echo","arguments":{"message":"hi"},"argument\u017f":{"message":"/etc/shadow"}}`},
		{"tools/call", `{"name":"echo","arguments":{"message":"hi","Message":"/etc/shadow"}}`},
		{"tools/call", `{"name":"echo","arguments":{"message":"hi","message":"/etc/shadow"}}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet","Name":"x"},"argument":{"name":"name","value":"a"}}`},
		{"resources/read", `{"uri":"file:///tmp/ok","_meta":{"progressToken":1,"progresstoken":2}}`},
	} {
		res, werr := c.request(tc.method, tc.params)
		if werr == nil || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s %s: want -32602, got %s %v", tc.method, tc.params, res, werr)
		}
	}
	if w := received(wire(t, dir)); strings.Contains(w, "shadow") || strings.Contains(w, `"drop_database"`) {
		t.Errorf("an ambiguous request reached the server:\n%s", w)
	}
	// Spelled once, each is served, and the server reads what was judged.
	res, werr := c.request("resources/read", `{"uri":"file:///tmp/ok"}`)
	if werr != nil || !strings.Contains(string(res), "read file:///tmp/ok") {
		t.Errorf("an honest read: %s %v", res, werr)
	}
	res, werr = c.request("prompts/get", `{"name":"greet","arguments":{"name":"ada"}}`)
	if werr != nil || !strings.Contains(string(res), "hello ada") {
		t.Errorf("an honest prompt: %s %v", res, werr)
	}
	res, werr = c.request("tools/call", `{"name":"echo","arguments":{"message":"hi"}}`)
	if werr != nil || !strings.Contains(string(res), "hi") {
		t.Errorf("an honest call: %s %v", res, werr)
	}
}

// TestReadsByCanonicalURI: every spelling of a file under /etc meets the
// deny written for /etc, and the approval written for /tmp does not reach
// out of it; a URI that names no single path asks (and this run has no
// human, so it is refused).
func TestReadsByCanonicalURI(t *testing.T) {
	// refuse, not deny: each read is refused on its own, the agent goes on.
	g := startGuard(t, strings.Replace(readsConfig, `deny = ["*.resource:file:///etc/*", "*/etc/shadow*"]`,
		`refuse = ["*.resource:file:///etc/*"]`, 1))
	ctx := context.Background()
	for _, uri := range []string{
		"file:///tmp/../etc/shadow", "file://localhost/etc/shadow", "FILE://LOCALHOST/etc/shadow",
		"file:///%65tc/shadow", "file:////etc//shadow", "file:///tmp/./x/../../etc/shadow",
		"file:///tmp/..%2Fetc/shadow", "file://attacker/etc/shadow",
	} {
		_, err := g.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var werr *jsonrpc.Error
		if err == nil || !errors.As(err, &werr) || werr.Code != -32001 {
			t.Errorf("read %s: want a refusal (-32001), got %v", uri, err)
		}
	}
	if w := received(wire(t, g.dir)); strings.Contains(w, "/etc/") || strings.Contains(w, "%65tc") {
		t.Errorf("a read of /etc reached the server:\n%s", w)
	}
	res, err := g.session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///tmp//notes.txt"})
	if err != nil || len(res.Contents) == 0 || res.Contents[0].Text != "read file:///tmp//notes.txt" {
		t.Errorf("a read under /tmp, spelled as the client likes: %v %v", res, err)
	}
}

// TestHonestWritesRun: under a team rule deny = ["*rm -rf *"] and the
// shipped defaults, writing a Makefile whose clean target removes build
// output, and a migration that drops a table, are judged like any write
// (the confirm tier asks; this human allows) and written, with the npm
// filesystem server; running rm -rf still blocks, and the block names
// the call that set it.
func TestHonestWritesRun(t *testing.T) {
	command, args := fsServer(t)
	root := t.TempDir()
	h := newHuman(t)
	h.answer(t, "allow")
	// The team's rule, added to the shipped deny list.
	team := strings.Replace(shippedSafety(t), "deny = [", "deny = [\n  \"*rm -rf *\",", 1)
	g := startGuard(t, `
mode = "transparent"
agent = "team-agent"
`+h.config()+`
`+team+`
[[servers]]
name = "fs"
trust_first_sight = true
command = `+tomlString(command)+`
args = `+tomlArray(append(args, root)...)+`
`)

	ctx := context.Background()
	for name, content := range map[string]string{
		"Makefile":                    "clean:\n\trm -rf build dist\n",
		"db/002_drop_legacy.sql":      "DROP TABLE legacy_users;\n",
		"docs/never-run-this.md":      "Never run `rm -rf /` or `rm -rf ~`.\n",
		"scripts/clean-everything.sh": "#!/bin/sh\nrm -rf node_modules .cache\n",
	} {
		path := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		res, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": path, "content": content}})
		if err != nil || res.IsError {
			t.Errorf("writing %s: %v %s", name, err, jsonString(res))
			continue
		}
		if got := readFile(t, path); got != content {
			t.Errorf("%s holds %q", name, got)
		}
	}
	// An edit whose new text is a command is a write too.
	res, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: "edit_file", Arguments: map[string]any{
		"path": filepath.Join(root, "Makefile"), "edits": []any{map[string]any{"oldText": "build dist", "newText": "build dist out"}}}})
	if err != nil || res.IsError {
		t.Errorf("editing the Makefile: %v %s", err, jsonString(res))
	}
	if out, _, code := admin(t, g, "blocks", "list"); code != 0 || !strings.Contains(out, "no blocked agents") {
		t.Errorf("an honest write blocked the agent:\n%s", out)
	}
	// What a path names is still judged: a write into /etc/shadow's name.
	res, err = g.session.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{
		"path": filepath.Join(root, "x", "..", "..", "..", "etc", "shadow"), "content": "x"}})
	if err == nil && !res.IsError {
		t.Errorf("a write to a path holding /etc/shadow ran: %s", jsonString(res))
	}
}

// TestRefuseIsOneCall: a refuse match rejects the call and records it;
// the agent is not blocked, and its next call runs.
func TestRefuseIsOneCall(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, defaultsConfig(t, h, ""))
	res, _ := g.callAQL(t, "mcp_aql", "ts_drop_database", map[string]any{"name": "prod"})
	if code, details := errCode(t, res); code != "PERMISSION_DENIED" || !strings.Contains(fmt.Sprint(details["reason"]), `"drop_*"`) {
		t.Fatalf("drop_database under the defaults: %s", jsonString(res))
	}
	if rec := decisionRecord(t, g, "ts_drop_database"); rec["decision"] != "refuse" {
		t.Errorf("the refusal's audit record: %v", rec)
	}
	res, _ = g.callAQL(t, "mcp_aql", "ts_get_item", map[string]any{"id": "a1"})
	if res["success"] != true {
		t.Errorf("the agent's next call after a refusal: %s", jsonString(res))
	}
	if calls := readCalls(t, filepath.Join(g.dir, "calls.jsonl")); len(calls) != 1 || calls[0].Tool != "get_item" {
		t.Errorf("the server saw %v", calls)
	}
}

// TestBlockNamesItsCall: blocks list names the call that set a block.
func TestBlockNamesItsCall(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, defaultsConfig(t, h, ""))
	blockWith(t, g, "ts_run_command", map[string]any{"command": "sudo rm -r -f /"})
	out, errOut, code := admin(t, g, "blocks", "list")
	if code != 0 || !strings.Contains(out, `ts.run_command {"command":"sudo rm -r -f /"}`) {
		t.Errorf("blocks list does not name the call:\n%s%s", out, errOut)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeTokenStaysInAqlguard: the bearer token given to serve in
// AQLGUARD_SERVE_TOKEN is not in a downstream server's environment, so a
// tool that prints its environment cannot hand it to the model; what the
// server's config sets still reaches it.
func TestServeTokenStaysInAqlguard(t *testing.T) {
	token := "tok-" + strings.Repeat("s3cr3t", 8)
	s := startServeEnv(t, `
mode = "transparent"
[safety]
auto_approve = ["get_environment"]
[[servers]]
name = "ts"
trust_first_sight = true
command = `+tomlString(bins.testserver)+`
env = { AQLGUARD_TEST_VALUE = "configured" }
`, "", "AQLGUARD_SERVE_TOKEN="+token, "AQLGUARD_OTHER=x")
	cs, err := connectHTTP(t, s.url, bearerClient(token))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for name, want := range map[string]string{"AQLGUARD_SERVE_TOKEN": "", "AQLGUARD_OTHER": "", "AQLGUARD_TEST_VALUE": "configured"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_environment", Arguments: map[string]any{"name": name}})
		if err != nil || res.IsError {
			t.Fatalf("get_environment %s: %v %s", name, err, jsonString(res))
		}
		text := jsonString(res)
		if strings.Contains(text, token) || !strings.Contains(text, `\"value\":\"`+want+`\"`) {
			t.Errorf("%s in the server's environment: %s", name, text)
		}
	}
	if strings.Contains(s.log.String(), token) {
		t.Error("the token is in aqlguard's log")
	}
}
