package revision

import (
	"encoding/json"
	"testing"
)

func TestLegacy(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"name":"t"}`, `{"name":"t"}`},
		{`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`, `{"name":"t"}`},
		{`{"_meta":{"progressToken":7,"io.modelcontextprotocol/logLevel":"info","aqlguard/confirmation_token":"c"},"name":"t"}`,
			`{"_meta":{"progressToken":7,"aqlguard/confirmation_token":"c"},"name":"t"}`},
		{`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"},"io.modelcontextprotocol/clientInfo":{}}}`,
			`{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"1"}}}`},
	}
	for _, tt := range tests {
		if got := Legacy(json.RawMessage(tt.in)); string(got) != tt.want {
			t.Errorf("Legacy(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
