// Command taskserver is an MCP server (2025-11-25, stdio) that runs its
// one tool as a task when asked to, for aqlguard's end-to-end tests of
// tasks across servers: two of them behind one aqlguard hand out the
// same task ids ("t-1", "t-2", ...), so only routing by the server that
// created a task gets tasks/get, tasks/result, tasks/list and
// tasks/cancel right.
//
// Usage: taskserver -name NAME
//
// The tool "work" takes {"label": string, "ms": integer}: it completes
// after ms milliseconds with the text "NAME: LABEL". With params.task it
// answers a CreateTaskResult at once and works in the background.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const relatedTask = "io.modelcontextprotocol/related-task"

type task struct {
	ID            string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	TTL           *int64 `json:"ttl"`
	PollInterval  int64  `json:"pollInterval"`
	result        json.RawMessage
	done          chan struct{}
	cancel        context.CancelFunc
}

type server struct {
	name  string
	peer  *link.Peer
	mu    sync.Mutex
	n     int
	tasks []*task
}

func main() {
	name := flag.String("name", "taskserver", "server name, and the prefix of every result")
	flag.Parse()
	s := &server{name: *name}
	conn := link.NewLineConn(os.Stdin, os.Stdout, func() error { return nil })
	s.peer = link.New(conn, s, slog.New(slog.DiscardHandler))
	s.peer.Start()
	<-s.peer.Done()
}

func (s *server) Notification(context.Context, *jsonrpc.Request) {}

func (s *server) Request(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      *struct {
			TTL *int64 `json:"ttl"`
		} `json:"task"`
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(req.Params, &p)
	switch req.Method {
	case "initialize":
		return json.Marshal(map[string]any{"protocolVersion": "2025-11-25",
			"capabilities": map[string]any{"tools": map[string]any{},
				"tasks": map[string]any{"list": map[string]any{}, "cancel": map[string]any{},
					"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}},
			"serverInfo": map[string]any{"name": s.name, "version": "1.0.0"}})
	case "tools/list":
		return json.RawMessage(`{"tools":[{"name":"work","description":"Waits ms milliseconds, then says NAME: LABEL.",` +
			`"inputSchema":{"type":"object","properties":{"label":{"type":"string"},"ms":{"type":"integer"}}},` +
			`"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"optional"}}]}`), nil
	case "tools/call":
		var a struct {
			Label string `json:"label"`
			MS    int    `json:"ms"`
		}
		_ = json.Unmarshal(p.Arguments, &a)
		if p.Task == nil {
			if err := sleep(ctx, a.MS); err != nil {
				return nil, err
			}
			return s.result(a.Label), nil
		}
		t := s.start(a.Label, a.MS, p.Task.TTL)
		return json.Marshal(map[string]any{"task": t})
	case "tasks/get", "tasks/result", "tasks/cancel":
		t := s.find(p.TaskID)
		if t == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task " + strconv.Quote(p.TaskID)}
		}
		switch req.Method {
		case "tasks/result":
			select {
			case <-t.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if t.result == nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "task " + t.ID + " was " + t.Status}
			}
			meta, _ := json.Marshal(map[string]any{relatedTask: map[string]string{"taskId": t.ID}})
			var res map[string]json.RawMessage
			_ = json.Unmarshal(t.result, &res)
			res["_meta"] = meta
			return json.Marshal(res)
		case "tasks/cancel":
			s.mu.Lock()
			terminal := t.Status != "working"
			s.mu.Unlock()
			if terminal {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "task " + t.ID + " is already " + t.Status}
			}
			t.cancel()
			<-t.done
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		return json.Marshal(t)
	case "tasks/list":
		s.mu.Lock()
		defer s.mu.Unlock()
		return json.Marshal(map[string]any{"tasks": s.tasks})
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found: " + req.Method}
}

func (s *server) result(label string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": s.name + ": " + label}}})
	return b
}

func (s *server) find(id string) *task {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := slices.IndexFunc(s.tasks, func(t *task) bool { return t.ID == id })
	if i < 0 {
		return nil
	}
	return s.tasks[i]
}

// start creates a task and works on it in the background, telling the
// client each change of its status.
func (s *server) start(label string, ms int, ttl *int64) *task {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.n++
	t := &task{ID: fmt.Sprintf("t-%d", s.n), Status: "working", CreatedAt: now, LastUpdatedAt: now, TTL: ttl,
		PollInterval: 50, done: make(chan struct{}), cancel: cancel}
	s.tasks = append(s.tasks, t)
	s.mu.Unlock()
	go func() {
		err := sleep(ctx, ms)
		s.mu.Lock()
		if err != nil {
			t.Status, t.StatusMessage = "cancelled", "cancelled by the client"
		} else {
			t.Status, t.result = "completed", s.result(label)
		}
		t.LastUpdatedAt = time.Now().UTC().Format(time.RFC3339Nano)
		status, _ := json.Marshal(t)
		s.mu.Unlock()
		close(t.done)
		_ = s.peer.Notify(context.Background(), "notifications/tasks/status", status)
	}()
	return t
}

func sleep(ctx context.Context, ms int) error {
	select {
	case <-time.After(time.Duration(ms) * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
