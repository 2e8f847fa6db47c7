package revision

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var legacy = []string{"2025-11-25", "2025-06-18"}

func TestParseMeta(t *testing.T) {
	const caps = `"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}`
	tests := []struct {
		name, params string
		modern       bool
		code         int64 // 0: no error
	}{
		{"no params", ``, false, 0},
		{"no _meta", `{"name":"x"}`, false, 0},
		{"an older version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}`, false, 0},
		{"complete", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/clientInfo":{"name":"c"}}}`, true, 0},
		{"clientInfo is optional", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `}}`, true, 0},
		{"capabilities are not", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, true, jsonrpc.CodeInvalidParams},
		{"capabilities not an object", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}}`, true, jsonrpc.CodeInvalidParams},
		{"clientInfo not an object", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/clientInfo":"c"}}`, true, jsonrpc.CodeInvalidParams},
		{"version not a string", `{"_meta":{"io.modelcontextprotocol/protocolVersion":2026}}`, false, jsonrpc.CodeInvalidParams},
		{"a future version", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",` + caps + `}}`, true, CodeUnsupportedProtocolVersion},
		{"bad log level", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` + caps + `,"io.modelcontextprotocol/logLevel":3}}`, true, jsonrpc.CodeInvalidParams},
	}
	for _, tt := range tests {
		_, modern, err := ParseMeta(json.RawMessage(tt.params), legacy)
		var werr *jsonrpc.Error
		switch {
		case tt.code == 0 && err != nil:
			t.Errorf("%s: unexpected error %v", tt.name, err)
		case tt.code != 0 && (!errors.As(err, &werr) || werr.Code != tt.code):
			t.Errorf("%s: error %v, want code %d", tt.name, err, tt.code)
		case modern != tt.modern:
			t.Errorf("%s: modern = %v, want %v", tt.name, modern, tt.modern)
		}
	}
	_, _, err := ParseMeta(json.RawMessage(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`), legacy)
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && !strings.Contains(string(werr.Data), `"supported":["2026-07-28","2025-11-25","2025-06-18"]`) {
		t.Errorf("an unsupported version's error must list the supported ones: %s", werr.Data)
	}
}

// BenchmarkParseMeta: a 2025-11-25 tools/call's params, with and without
// a progress token: every request is asked whether it is 2026-07-28.
func BenchmarkParseMeta(b *testing.B) {
	for name, params := range map[string]string{
		"plain":    `{"name":"write_file","arguments":{"path":"/tmp/notes.txt","content":"hello"}}`,
		"progress": `{"name":"write_file","arguments":{"path":"/tmp/notes.txt","content":"hello"},"_meta":{"progressToken":7}}`,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, modern, err := ParseMeta(json.RawMessage(params), nil); modern || err != nil {
					b.Fatal(modern, err)
				}
			}
		})
	}
}
