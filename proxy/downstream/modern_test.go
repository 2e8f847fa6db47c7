package downstream

import (
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision"
)

// TestModernParams: a 2026-07-28 server gets every _meta key the client
// sent, aqlguard's completing what is missing, never replacing what the
// client said (but the revision, which is the server's).
func TestModernParams(t *testing.T) {
	p := &Pool{opts: Options{Initialize: json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"legacy"}}`)}}
	s := newServer(config.Server{Name: "m"}, p, discardLog())
	s.SetLogLevel("debug")
	tests := []struct{ in, want string }{
		{``, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}},"io.modelcontextprotocol/clientInfo":{"name":"legacy"},"io.modelcontextprotocol/logLevel":"debug"}}`},
		{`{"name":"t","_meta":{"progressToken":"p","com.example/trace":"abc","io.modelcontextprotocol/clientInfo":{"name":"own"},"io.modelcontextprotocol/logLevel":"error"}}`,
			`{"name":"t","_meta":{"progressToken":"p","com.example/trace":"abc","io.modelcontextprotocol/clientInfo":{"name":"own"},"io.modelcontextprotocol/logLevel":"error","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`},
	}
	for _, tt := range tests {
		if got := s.modernParams(json.RawMessage(tt.in)); string(got) != tt.want {
			t.Errorf("modernParams(%s) =\n%s, want\n%s", tt.in, got, tt.want)
		}
	}
}

// FuzzOutgoingParams: whatever params a client sends, what goes to a
// server is still a JSON object: without the 2026-07-28 keys for an older
// server, with every key the client sent for a newer one.
func FuzzOutgoingParams(f *testing.F) {
	f.Add(`{"name":"t","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)
	f.Add(`{"_meta":[],"x":1}`)
	f.Add(`{"_meta":{"io.modelcontextprotocol/logLevel":"x","progressToken":1}}`)
	f.Add("{}\v")
	s := newServer(config.Server{Name: "m"}, &Pool{}, discardLog())
	f.Fuzz(func(t *testing.T, params string) {
		raw := json.RawMessage(params)
		if rawjson.Members(raw) == nil {
			return
		}
		legacy := revision.Legacy(raw)
		if rawjson.Members(legacy) == nil {
			t.Fatalf("legacyParams(%s) = %s: not an object", raw, legacy)
		}
		for k := range rawjson.Members(rawjson.Members(legacy)["_meta"]) {
			if revision.IsClientKey(k) {
				t.Fatalf("legacyParams(%s) kept %s", raw, k)
			}
		}
		modern := s.modernParams(raw)
		meta := rawjson.Members(rawjson.Members(modern)["_meta"])
		if meta == nil {
			t.Fatalf("modernParams(%s) = %s: no _meta", raw, modern)
		}
		for k := range rawjson.Members(rawjson.Members(raw)["_meta"]) {
			if _, ok := meta[k]; !ok {
				t.Fatalf("modernParams(%s) dropped %s", raw, k)
			}
		}
	})
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
