package relay

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestToolCallParams: what goes to the server is the client's other
// members as sent, the tool's name and the arguments the guard judged,
// re-encoded: a duplicate or differently spelled member the client sent
// is not what reaches the server.
func TestToolCallParams(t *testing.T) {
	base := json.RawMessage(`{"_meta":{"progressToken":7},"name":"other","arguments":{"path":"/etc/passwd"},"x":1}`)
	got, err := toolCallParams(base, "read_file", map[string]any{"path": "/tmp/a"})
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]json.RawMessage
	if err := json.Unmarshal(got, &p); err != nil {
		t.Fatal(err)
	}
	if string(p["name"]) != `"read_file"` || string(p["arguments"]) != `{"path":"/tmp/a"}` ||
		string(p["_meta"]) != `{"progressToken":7}` || string(p["x"]) != "1" {
		t.Fatalf("params %s", got)
	}
	if strings.Contains(string(got), "passwd") {
		t.Fatalf("the client's own arguments went to the server: %s", got)
	}
	if got, err := toolCallParams(nil, "t", nil); err != nil || string(got) != `{"name":"t","arguments":{}}` {
		t.Fatalf("no base: %s %v", got, err)
	}
}

// TestReadToolCall: the relay reads a call's name and arguments once, by
// their exact names; what it cannot read is the client's -32602 error,
// worded as it always was.
func TestReadToolCall(t *testing.T) {
	tests := []struct {
		params, name, args, err string
	}{
		{`{"name":"echo","arguments":{"a":1}}`, "echo", `{"a":1}`, ""},
		{`{"name":"echo"}`, "echo", "", ""},
		{`{"arguments":{}}`, "", "", "tools/call: name must be a string"},
		{`{"name":7}`, "", "", "tools/call: name must be a string"},
		{`[1]`, "", "", "tools/call: params must be an object whose name and arguments appear once each"},
	}
	s := &Session{}
	for _, tt := range tests {
		c, err := s.readToolCall(json.RawMessage(tt.params))
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("%s: err %v, want %q", tt.params, err, tt.err)
			}
			continue
		}
		if err != nil || c.Name != tt.name || string(c.Arguments) != tt.args || string(c.Params) != tt.params || c.session != s {
			t.Errorf("%s: %+v %v", tt.params, c, err)
		}
	}
}
