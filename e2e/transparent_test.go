package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
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
