package relay

import (
	"encoding/json"
	"testing"
)

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
		if err != nil || c.Name != tt.name || string(c.Arguments) != tt.args || string(c.Params) != tt.params {
			t.Errorf("%s: %+v %v", tt.params, c, err)
		}
	}
}
