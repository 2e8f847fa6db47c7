package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// visibleTask is the id the client sees for a server's task.
func visibleTask(server, id string) string { return server + ":" + id }

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
	res, err := s.Forward(ctx, srv, req.Method, params)
	if err != nil {
		return nil, err
	}
	out, err := taskIDsFor(srv.Name, res)
	if err != nil {
		return nil, errTaskSpelling(srv, err)
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
		out, err := taskIDsFor(srv.Name, res)
		if err != nil {
			refused = errTaskSpelling(srv, err)
		}
		return out
	})
	if refused != nil {
		return nil, refused
	}
	return res, err
}

// taskIDsFor rewrites the task ids in what a server sent (a result, a
// notification's or a request's params) to the ids the client sees: a
// task's own taskId (tasks/get, tasks/cancel, a 2026-07-28 task result,
// a status notification), a CreateTaskResult's task, tasks/list's tasks,
// and the related-task _meta of anything tied to a task.
//
// The members are read exactly (rawjson.Exact): a "TaskId" left as the
// server wrote it would read, to a client that matches names without
// regard to case, as a task id of another server's ("beta:7"), so what
// spells one of them twice or in another case is refused.
func taskIDsFor(server string, raw json.RawMessage) (json.RawMessage, error) {
	v, err := rawjson.Exact(raw, "taskId", "task", "tasks", "_meta")
	if errors.Is(err, rawjson.ErrNotObject) {
		return raw, nil // nothing here names a task
	}
	if err != nil {
		return nil, err
	}
	out := raw
	set := func(key string, value json.RawMessage) error {
		next, err := setMember(out, key, value)
		if err == nil {
			out = next
		}
		return err
	}
	if v[0] != nil {
		if err := set("taskId", visibleID(server, v[0])); err != nil {
			return nil, err
		}
	}
	if v[1] != nil {
		task, err := withVisibleID(server, v[1])
		if err == nil {
			err = set("task", task)
		}
		if err != nil {
			return nil, err
		}
	}
	if v[2] != nil {
		var list []json.RawMessage
		if json.Unmarshal(v[2], &list) == nil {
			for i, t := range list {
				if list[i], err = withVisibleID(server, t); err != nil {
					return nil, err
				}
			}
			b, err := json.Marshal(list)
			if err == nil {
				err = set("tasks", b)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if v[3] != nil {
		if rel, ok := rawjson.Lookup(v[3], relatedTaskMeta); ok {
			rel, err := withVisibleID(server, rel)
			if err != nil {
				return nil, err
			}
			meta, err := setMember(v[3], relatedTaskMeta, rel)
			if err == nil {
				err = set("_meta", meta)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// withVisibleID is a task object (or a related-task _meta) with its
// taskId rewritten; a value that is no object is left as it is.
func withVisibleID(server string, task json.RawMessage) (json.RawMessage, error) {
	id, err := rawjson.Exact(task, "taskId")
	if errors.Is(err, rawjson.ErrNotObject) {
		return task, nil
	}
	if err != nil || id[0] == nil {
		return task, err
	}
	return setMember(task, "taskId", visibleID(server, id[0]))
}

// errTaskSpelling answers a client whose server named a task ambiguously.
func errTaskSpelling(srv *downstream.Server, err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("aqlguard refused what the server %s answered: its task ids are spelled ambiguously (%v)", srv.Name, err)}
}

// visibleID is a task id as JSON, rewritten; one that is not a string is
// left as it is (and no client can name it back).
func visibleID(server string, raw json.RawMessage) json.RawMessage {
	var id string
	if json.Unmarshal(raw, &id) != nil {
		return raw
	}
	b, _ := json.Marshal(visibleTask(server, id))
	return b
}
