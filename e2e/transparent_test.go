package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTransparentMode: one server behind aqlguard looks exactly like the
// server itself (name, version, instructions, every tool as defined),
// allowed calls return the server's own results, and a refused call is
// answered by aqlguard; verify_challenge is listed only while it has
// something to do.
func TestTransparentMode(t *testing.T) {
	h := newHuman(t)
	changed := make(chan struct{}, 8)
	g, err := launchGuard(t, guardOptions{Config: `
agent = "transparent-agent"
` + h.config() + `
[safety]
deny = ["*drop_database*"]
auto_approve = ["echo", "get_*", "list_*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl", "-name", "the-real-server"]
`, Client: &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}}})
	if err != nil {
		t.Fatal(err)
	}
	direct := connectDirect(t, &mcp.CommandTransport{Command: exec.Command(bins.testserver, "-name", "the-real-server")})
	defer direct.Close()

	if got, want := g.session.InitializeResult().ServerInfo, direct.InitializeResult().ServerInfo; got.Name != want.Name || got.Version != want.Version {
		t.Errorf("serverInfo %+v, want the server's %+v", got, want)
	}
	if got, want := jsonString(listTools(t, g.session)), jsonString(listTools(t, direct)); got != want {
		t.Errorf("tools/list through aqlguard differs from the server's own:\n got %s\nwant %s", got, want)
	}

	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	args := map[string]any{"message": "as it is <3"}
	via, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	own, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	if jsonString(via) != jsonString(own) {
		t.Errorf("result through aqlguard %s, the server's own %s", jsonString(via), jsonString(own))
	}

	// A refusal is aqlguard's answer, as a tool error.
	res, err := g.session.CallTool(ctx, &mcp.CallToolParams{Name: "drop_database", Arguments: map[string]any{"name": "prod"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "PERMISSION_AGENT_BLOCKED") {
		t.Fatalf("refusal: %v %s", err, jsonString(res))
	}
	var refusal struct {
		Error struct {
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resultText(t, res)), &refusal); err != nil {
		t.Fatal(err)
	}
	id, _ := refusal.Error.Details["verification_id"].(string)
	if msg := refusal.Error.Message; id == "" || !strings.Contains(msg, "call the tool aqlguard_verify_challenge with challenge_id and code") {
		t.Errorf("the model is not told the tool it has: %q (id %q)", msg, id)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed after the block")
	}
	if !hasTool(listTools(t, g.session), "aqlguard_verify_challenge") {
		t.Fatal("verify_challenge is not listed while the agent is blocked")
	}
	res, err = g.session.CallTool(ctx, &mcp.CallToolParams{Name: "aqlguard_verify_challenge",
		Arguments: map[string]any{"challenge_id": id, "code": codeFor(t, h, id)}})
	if err != nil || res.IsError || !strings.Contains(resultText(t, res), `"unblocked":true`) {
		t.Fatalf("verify: %v %s", err, jsonString(res))
	}
	if hasTool(listTools(t, g.session), "aqlguard_verify_challenge") {
		t.Error("verify_challenge is still listed after the verification")
	}
	if got := strings.Join(calledTools(t, g), ","); got != "echo" {
		t.Errorf("the server saw %s", got)
	}
}

func hasTool(tools []*mcp.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// TestTransparentConfirmation: a gated call in transparent mode is
// confirmed without any schema change: the question stays up after the
// inline wait, and the retry, carrying the token in _meta or not, finds
// the human's answer.
func TestTransparentConfirmation(t *testing.T) {
	h := newHuman(t)
	g := startGuard(t, `
agent = "transparent-agent"
`+h.config()+`
[safety]
requires_approval = ["delete_*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	h.answer(t, "sleep") // answers after 3 s, after the 2 s inline wait
	params := &mcp.CallToolParams{Name: "delete_note", Arguments: map[string]any{"id": "n1"}}
	res, err := g.session.CallTool(ctx, params)
	if err != nil || !res.IsError || !strings.Contains(resultText(t, res), "CONFIRMATION_REQUIRED") {
		t.Fatalf("first call: %v %s", err, jsonString(res))
	}
	var refusal struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Confirmation struct {
			Token string `json:"token"`
		} `json:"confirmation"`
	}
	if err := json.Unmarshal([]byte(resultText(t, res)), &refusal); err != nil || refusal.Confirmation.Token == "" {
		t.Fatalf("no token: %v %s", err, resultText(t, res))
	}
	// The model has no confirm_operation here: it is told to retry.
	if msg := refusal.Error.Message; strings.Contains(msg, "confirm_operation") || !strings.Contains(msg, "Repeat the same call") {
		t.Errorf("the model is told to use a tool it does not have: %q", msg)
	}
	h.answer(t, "allow")
	time.Sleep(2 * time.Second) // the human answers
	params.Meta = mcp.Meta{"aqlguard/confirmation_token": refusal.Confirmation.Token}
	res, err = g.session.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("the retry with the token in _meta: %v %s", err, jsonString(res))
	}
	if n := len(h.requests(t)); n != 1 {
		t.Errorf("the human was asked %d times", n)
	}
	if got := strings.Join(calledTools(t, g), ","); got != "delete_note" {
		t.Errorf("the server saw %s", got)
	}
}

// TestTransparentSchemaValidation (issue 29, item 2): in transparent
// mode an argument the tool's schema does not declare (an extra path,
// a lookalike of a declared name) and a value of another type than the
// schema declares are refused with one sentence that names them, and
// never reach the server; honest calls run, with the arguments as sent.
func TestTransparentSchemaValidation(t *testing.T) {
	g := startGuard(t, `
agent = "schema-agent"
[safety]
max_autonomous_steps = 100000
auto_approve = ["*"]
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", "{{.dir}}/calls.jsonl"]
`)
	refused := []struct {
		tool string
		args any
		says []string
	}{
		{"run_command", map[string]any{"command": "echo hi", "path": "/etc/shadow"}, []string{"run_command does not declare an argument path", "it takes command, cwd"}},
		{"list_items", map[string]any{"limit": "5"}, []string{"the argument limit of list_items must be an integer, not a string"}},
		{"Read_File", map[string]any{"p\u0430th": "/etc/shadow"}, []string{`does not declare an argument p\u0430th`, "it takes path"}},
		{"crash", map[string]any{"now": true}, []string{"crash does not declare an argument now; it takes no arguments"}},
	}
	for _, c := range refused {
		res, err := g.callRaw(c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		text := resultText(t, res)
		if !res.IsError || !strings.HasPrefix(text, "aqlguard did not send this call: ") {
			t.Errorf("%s %s: not refused: %s", c.tool, jsonString(c.args), text)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(text, s) {
				t.Errorf("%s: %q does not say %q", c.tool, text, s)
			}
		}
	}
	// A member named twice, the second a lookalike of nothing: the relay
	// refuses it before anything reads the arguments (relay.CheckParams).
	if res, err := g.callRaw("echo", json.RawMessage(`{"message":"hello","message":"rm -rf ~"}`)); err == nil ||
		!strings.Contains(err.Error(), `"message" appears more than once`) {
		t.Errorf("a member named twice: %v %s", err, jsonString(res))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"echo", map[string]any{"message": "hello"}},
		{"list_items", map[string]any{"limit": 5, "status": "active"}},
		{"update_note", map[string]any{"id": "n1", "input": map[string]any{"title": "free-form", "x": []any{1, nil}}}},
	} {
		if res, err := g.callRaw(c.tool, c.args); err != nil || res.IsError {
			t.Errorf("%s: an honest call: %v %s", c.tool, err, jsonString(res))
		}
	}
	if got := strings.Join(calledTools(t, g), ","); got != "echo,list_items,update_note" {
		t.Errorf("the server saw %s", got)
	}
}

// TestTransparentSchemaValidationRealServers: every tool of the npm
// filesystem server and the go-sdk everything-server's tools without
// parameters, called honestly through transparent mode, reach their
// server: what the schema check refuses is what they do not take.
func TestTransparentSchemaValidationRealServers(t *testing.T) {
	command, args := fsServer(t)
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a.txt"), "one\ntwo\n")
	fs := startGuard(t, `
agent = "schema-agent"
[safety]
max_autonomous_steps = 100000
auto_approve = ["*"]
[[servers]]
name = "fs"
trust_first_sight = true
command = `+tomlString(command)+`
args = `+tomlArray(append(args, root)...)+`
`)
	a, b, sub := filepath.Join(root, "a.txt"), filepath.Join(root, "b.txt"), filepath.Join(root, "sub")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"list_allowed_directories", nil},
		{"read_text_file", map[string]any{"path": a, "head": 1}},
		{"read_file", map[string]any{"path": a, "tail": 1}},
		{"read_multiple_files", map[string]any{"paths": []any{a}}},
		{"write_file", map[string]any{"path": b, "content": "new\n"}},
		{"edit_file", map[string]any{"path": b, "edits": []any{map[string]any{"oldText": "new", "newText": "edited"}}, "dryRun": false}},
		{"create_directory", map[string]any{"path": sub}},
		{"move_file", map[string]any{"source": b, "destination": filepath.Join(sub, "b.txt")}},
		{"list_directory", map[string]any{"path": root}},
		{"list_directory_with_sizes", map[string]any{"path": root, "sortBy": "size"}},
		{"directory_tree", map[string]any{"path": root, "excludePatterns": []any{"*.log"}}},
		{"search_files", map[string]any{"path": root, "pattern": "*.txt", "excludePatterns": []any{}}},
		{"get_file_info", map[string]any{"path": a}},
	} {
		res, err := fs.callRaw(c.tool, c.args)
		if err != nil || res.IsError {
			t.Errorf("fs %s: %v %s", c.tool, err, jsonString(res))
		}
	}
	if b, err := os.ReadFile(filepath.Join(sub, "b.txt")); err != nil || string(b) != "edited\n" {
		t.Errorf("the honest session did not happen: %q %v", b, err)
	}

	ev := startGuard(t, `
agent = "schema-agent"
[safety]
max_autonomous_steps = 100000
auto_approve = ["*"]
[[servers]]
name = "ev"
trust_first_sight = true
command = {{toml .everything}}
`)
	for _, tool := range []string{"test_simple_text", "test_image_content", "test_multiple_content_types", "test_error_handling"} {
		res, err := ev.callRaw(tool, map[string]any{})
		if err != nil || res.IsError && strings.HasPrefix(resultText(t, res), "aqlguard did not send") {
			t.Errorf("everything %s: %v %s", tool, err, jsonString(res))
		}
	}
	res, err := ev.callRaw("test_elicitation", map[string]any{"message": "hi", "extra": 1})
	if err != nil || !strings.Contains(resultText(t, res), "does not declare an argument extra; it takes message") {
		t.Errorf("everything test_elicitation with an extra argument: %v %s", err, jsonString(res))
	}
}
