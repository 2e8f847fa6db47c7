package revision

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestRetry(t *testing.T) {
	tests := []struct {
		name, params, state, rest string
		responses                 int
		bad                       bool
	}{
		{"a first call", `{"name":"t","arguments":{}}`, "", `{"name":"t","arguments":{}}`, 0, false},
		{"a retry", `{"name":"t","inputResponses":{"a":{"action":"accept"}},"requestState":"s"}`, "s", `{"name":"t"}`, 1, false},
		{"answers without a state", `{"name":"t","inputResponses":{"a":{}}}`, "", `{"name":"t"}`, 1, false},
		{"inputResponses null", `{"name":"t","inputResponses":null}`, "", "", 0, true},
		{"an answer not an object", `{"name":"t","inputResponses":{"a":12345}}`, "", "", 0, true},
		{"requestState not a string", `{"name":"t","requestState":{}}`, "", "", 0, true},
	}
	for _, tt := range tests {
		state, responses, rest, err := Retry(json.RawMessage(tt.params))
		if tt.bad {
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Errorf("%s: want invalid params, got %v", tt.name, err)
			}
			continue
		}
		if err != nil || state != tt.state || string(rest) != tt.rest || len(responses) != tt.responses {
			t.Errorf("%s: Retry = %q, %d answers, %s, %v", tt.name, state, len(responses), rest, err)
		}
	}
}
