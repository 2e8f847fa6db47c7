package downstream

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A server names its tasks as it likes, and two servers may well hand
// out the same ids, so the client sees each as <server>:<id> (a server's
// name holds no ':'); the relay routes a tasks/* request by it. What a
// server sends that names a task (a result, a notification, a request)
// is rewritten here, where its calls are forwarded.

const relatedTaskMeta = "io.modelcontextprotocol/related-task"

// visibleTask is the id the client sees for a server's task.
func visibleTask(server, id string) string { return server + ":" + id }

// VisibleTaskIDs rewrites the task ids in what a server sent (a result, a
// notification's or a request's params) to the ids the client sees: a
// task's own taskId (tasks/get, tasks/cancel, a 2026-07-28 task result,
// a status notification), a CreateTaskResult's task, tasks/list's tasks,
// and the related-task _meta of anything tied to a task.
//
// The members are read exactly (rawjson.Exact): a "TaskId" left as the
// server wrote it would read, to a client that matches names without
// regard to case, as a task id of another server's ("beta:7"), so what
// spells one of them twice or in another case is refused.
func VisibleTaskIDs(server string, raw json.RawMessage) (json.RawMessage, error) {
	v, err := rawjson.Exact(raw, "taskId", "task", "tasks", "_meta")
	if errors.Is(err, rawjson.ErrNotObject) {
		return raw, nil // nothing here names a task
	}
	if err != nil {
		return nil, err
	}
	out := raw
	set := func(key string, value json.RawMessage) error {
		next, err := rawjson.Set(out, key, value)
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
			meta, err := rawjson.Set(v[3], relatedTaskMeta, rel)
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
	return rawjson.Set(task, "taskId", visibleID(server, id[0]))
}

// TaskSpellingError answers a client whose server named a task ambiguously.
func TaskSpellingError(srv *Server, err error) error {
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
