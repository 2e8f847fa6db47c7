package relay

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Tasks across servers. A server names its tasks as it likes, and two
// servers may well hand out the same ids, so the client sees each as
// <server>:<id> — a server's name holds no ':' — and every tasks/*
// request goes to the server the id names, with the server's own id.
// The id is the route, not a secret: asking another server's task is
// what the client could do without aqlguard. A task-augmented
// tools/call is judged like any other; what runs later is that call.
//
// Both shapes are carried: 2025-11-25's (tasks/get, tasks/result,
// tasks/list, tasks/cancel, notifications/tasks/status, a
// CreateTaskResult holding a task) and the 2026-07-28 extension's
// (tasks/get, tasks/update, tasks/cancel, notifications/tasks, a
// resultType "task" result that is the task).

// taskServer finds the server of a task id the client names, and the
// server's own id for it.
func (s *Session) taskServer(visible string) (*downstream.Server, string, error) {
	server, id, ok := strings.Cut(visible, ":")
	if ok {
		if srv, found := s.pool.Server(server); found {
			return srv, id, nil
		}
	}
	return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown task " + visible}
}

// tasksServed reports whether a server of the session does tasks, in
// either revision's shape.
func (s *Session) tasksServed() bool {
	for _, srv := range s.pool.Servers() {
		st := srv.State()
		if raw, ok := st.Capabilities["tasks"]; ok && string(raw) != "null" {
			return true
		}
		if _, ok := rawjson.Lookup(st.Capabilities["extensions"], tasksExtension); ok {
			return true
		}
	}
	return false
}

// tasksExtension is the 2026-07-28 extension's capability.
const tasksExtension = "io.modelcontextprotocol/tasks"

// taskRequest serves tasks/get, tasks/result, tasks/cancel and
// tasks/update: routed by the id, answered with the ids the client knows.
func (s *Session) taskRequest(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	if req.Method == mcpmethod.TasksResult && s.modern.Load() {
		// The 2026-07-28 extension folds it into tasks/get.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tasks/result is not part of the tasks extension of " + revision.Modern + "; tasks/get carries the result"}
	}
	taskID, err := exactString(req.Params, "taskId") // CheckParams refused other spellings
	if err != nil || taskID == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: req.Method + ": taskId is required"}
	}
	srv, id, err := s.taskServer(taskID)
	if err != nil {
		return nil, err
	}
	params, err := setMember(req.Params, "taskId", id)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	res, err := s.pool.Forward(ctx, srv, req.Method, params)
	if err != nil {
		return nil, err
	}
	out, err := downstream.VisibleTaskIDs(srv.Name, res)
	if err != nil {
		return nil, downstream.TaskSpellingError(srv, err)
	}
	return out, nil
}

// listTasks serves tasks/list (2025-11-25): the servers' lists one after
// the other, each page a server's own, under a cursor of ours.
func (s *Session) listTasks(ctx context.Context, req *jsonrpc.Request) (json.RawMessage, error) {
	servers := s.serversWith("tasks")
	if len(servers) == 0 {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "no server behind aqlguard lists tasks"}
	}
	var refused error
	res, err := s.spanPages(ctx, req, servers, func(srv *downstream.Server, res json.RawMessage) json.RawMessage {
		out, err := downstream.VisibleTaskIDs(srv.Name, res)
		if err != nil {
			refused = downstream.TaskSpellingError(srv, err)
		}
		return out
	})
	if refused != nil {
		return nil, refused
	}
	return res, err
}
