package downstream

import (
	"testing"
)

// TestVisibleTaskIDs: what a server says of its tasks reaches the client
// under <server>:<id>, wherever the id stands; a member that spells a
// task id another way, which a client matching names without regard to
// case would take for one, is refused rather than passed on as another
// server's task.
func TestVisibleTaskIDs(t *testing.T) {
	for _, c := range []struct {
		in, want string // want "" for a refusal
	}{
		{`{"taskId":"7","status":"working"}`, `{"taskId":"alpha:7","status":"working"}`},
		{`{"task":{"taskId":"7"}}`, `{"task":{"taskId":"alpha:7"}}`},
		{`{"tasks":[{"taskId":"7"},{"taskId":"beta:8"}],"nextCursor":"x"}`, `{"tasks":[{"taskId":"alpha:7"},{"taskId":"alpha:beta:8"}],"nextCursor":"x"}`},
		{`{"level":"info","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"7"}}}`, `{"level":"info","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"alpha:7"}}}`},
		{`{"content":[]}`, `{"content":[]}`},
		{`{"taskId":7}`, `{"taskId":7}`}, // no client can name it back
		{`null`, `null`},
		{`{"TaskId":"beta:7"}`, ""},
		{`{"taskId":"7","taskId":"beta:7"}`, ""},
		{`{"task\u0049d":"7","taskId":"8"}`, ""},
		{`{"Task":{"taskId":"beta:7"}}`, ""},
		{`{"task":{"TASKID":"beta:7"}}`, ""},
		{`{"tasks":[{"taskId":"7"},{"taskid":"beta:8"}]}`, ""},
		{`{"_meta":{"io.modelcontextprotocol/related-task":{"taskID":"beta:7"}}}`, ""},
		{`{"_Meta":{}}`, ""},
	} {
		got, err := VisibleTaskIDs("alpha", []byte(c.in))
		switch {
		case c.want == "" && err == nil:
			t.Errorf("%s: passed on as %s, want a refusal", c.in, got)
		case c.want != "" && (err != nil || string(got) != c.want):
			t.Errorf("%s: %s %v, want %s", c.in, got, err, c.want)
		}
	}
}
