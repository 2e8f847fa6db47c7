package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestTasksAcrossServers: two servers behind one aqlguard each create
// tasks, under the same ids ("t-1" at both); the client sees them as
// <server>:<id>, and tasks/get, tasks/result, tasks/list and
// tasks/cancel reach the server that created each. The task-augmented
// call is judged like any tools/call: a deny pattern refuses it before
// either server sees it.
func TestTasksAcrossServers(t *testing.T) {
	dir := t.TempDir()
	config := "state_dir = " + tomlString(filepath.Join(dir, "state")) + "\nmode = \"transparent\"\n" +
		"[safety]\ndeny = [\"*forbidden*\"]\n" +
		"[[servers]]\nname = \"alpha\"\ntrust_first_sight = true\ncommand = " + tomlString(bins.taskserver) + "\nargs = [\"-name\", \"alpha\"]\n" +
		"[[servers]]\nname = \"beta\"\ntrust_first_sight = true\ncommand = " + tomlString(bins.taskserver) + "\nargs = [\"-name\", \"beta\"]\n"
	statuses := make(chan json.RawMessage, 16)
	peer := startRawRun(t, dir, config, func(req *jsonrpc.Request) {
		if req.Method == "notifications/tasks/status" {
			statuses <- req.Params
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	call := func(method, params string) json.RawMessage {
		t.Helper()
		res, err := peer.Call(ctx, method, json.RawMessage(params))
		if err != nil {
			t.Fatalf("%s %s: %v", method, params, err)
		}
		return res
	}
	init := call("initialize", `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{"list":{},"cancel":{}}},"clientInfo":{"name":"tasks-test","version":"1"}}`)
	if !strings.Contains(string(init), `"tasks"`) {
		t.Fatalf("initialize does not offer tasks: %s", init)
	}
	_ = peer.Notify(ctx, "notifications/initialized", json.RawMessage(`{}`))

	created := func(tool, label string, ms int) string {
		t.Helper()
		res := call("tools/call", `{"name":"`+tool+`","arguments":{"label":"`+label+`","ms":`+itoa(ms)+`},"task":{"ttl":60000}}`)
		var r struct {
			Task struct {
				ID     string `json:"taskId"`
				Status string `json:"status"`
			} `json:"task"`
		}
		if json.Unmarshal(res, &r) != nil || r.Task.ID == "" {
			t.Fatalf("%s did not create a task: %s", tool, res)
		}
		return r.Task.ID
	}
	a := created("alpha__work", "one", 200)
	b := created("beta__work", "two", 200)
	if a != "alpha:t-1" || b != "beta:t-1" {
		t.Fatalf("task ids %q and %q, want alpha:t-1 and beta:t-1 (both servers said t-1)", a, b)
	}
	for id, want := range map[string]string{a: "alpha: one", b: "beta: two"} {
		res := call("tasks/result", `{"taskId":"`+id+`"}`)
		if !strings.Contains(string(res), want) || !strings.Contains(string(res), `"taskId":"`+id+`"`) {
			t.Errorf("tasks/result %s = %s, want %q and its related-task id", id, res, want)
		}
		if res := call("tasks/get", `{"taskId":"`+id+`"}`); !strings.Contains(string(res), `"status":"completed"`) || !strings.Contains(string(res), `"taskId":"`+id+`"`) {
			t.Errorf("tasks/get %s = %s", id, res)
		}
	}
	slow := created("beta__work", "slow", 60000)
	if res := call("tasks/cancel", `{"taskId":"`+slow+`"}`); !strings.Contains(string(res), `"status":"cancelled"`) {
		t.Errorf("tasks/cancel %s = %s", slow, res)
	}
	for _, id := range []string{"alpha:t-2", "t-1", "gamma:t-1", ""} {
		if res, err := peer.Call(ctx, "tasks/get", json.RawMessage(`{"taskId":"`+id+`"}`)); err == nil {
			t.Errorf("tasks/get %q: %s, want an error (no such task)", id, res)
		}
	}

	// tasks/list: every task of both servers, page by page.
	var all []string
	cursor := ""
	for range 10 {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":"` + cursor + `"}`
		}
		var page struct {
			Tasks []struct {
				ID     string `json:"taskId"`
				Status string `json:"status"`
			} `json:"tasks"`
			NextCursor string `json:"nextCursor"`
		}
		_ = json.Unmarshal(call("tasks/list", params), &page)
		for _, tk := range page.Tasks {
			all = append(all, tk.ID+"="+tk.Status)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	want := "alpha:t-1=completed beta:t-1=completed beta:t-2=cancelled"
	if got := strings.Join(all, " "); got != want {
		t.Errorf("tasks/list = %s, want %s", got, want)
	}

	// Status notifications name the tasks as the client knows them.
	deadline := time.After(10 * time.Second)
	seen := map[string]bool{}
	for len(seen) < 3 {
		select {
		case p := <-statuses:
			var n struct {
				ID string `json:"taskId"`
			}
			_ = json.Unmarshal(p, &n)
			seen[n.ID] = true
		case <-deadline:
			t.Fatalf("status notifications for %v only", seen)
		}
	}
	if !seen[a] || !seen[b] || !seen[slow] {
		t.Errorf("status notifications named %v", seen)
	}

	// A task-augmented call is a tools/call: the guard judges it.
	res := call("tools/call", `{"name":"alpha__work","arguments":{"label":"forbidden","ms":1},"task":{}}`)
	if !strings.Contains(string(res), `"isError":true`) || !strings.Contains(string(res), "PERMISSION_AGENT_BLOCKED") || strings.Contains(string(res), `"task"`) {
		t.Fatalf("a task-augmented call matching a deny pattern: %s, want a refusal and no task", res)
	}
}

// notes is a link.Handler that passes notifications to f.
type notes func(*jsonrpc.Request)

func (n notes) Request(context.Context, *jsonrpc.Request) (json.RawMessage, error) {
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "not a client that serves requests"}
}
func (n notes) Notification(_ context.Context, req *jsonrpc.Request) { n(req) }
