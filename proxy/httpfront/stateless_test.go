package httpfront

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/revision"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestCheckModernHeaders(t *testing.T) {
	tests := []struct {
		name, method, params string
		headers              map[string]string
		code                 int64 // 0: accepted
	}{
		{"tools/list", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, 0},
		{"tools/call", "tools/call", `{"name":"t",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "t"}, 0},
		{"resources/read names its uri", "resources/read", `{"uri":"file:///a",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "resources/read", "Mcp-Name": "file:///a"}, 0},
		{"no version header", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Method": "tools/list"}, revision.CodeHeaderMismatch},
		{"version header differs", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, revision.CodeHeaderMismatch},
		{"no _meta", "tools/list", `{}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, jsonrpc.CodeInvalidParams},
		{"no method header", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, revision.CodeHeaderMismatch},
		{"method header is case-sensitive", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "TOOLS/LIST"}, revision.CodeHeaderMismatch},
		{"name header differs", "tools/call", `{"name":"t",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "rm"}, revision.CodeHeaderMismatch},
		{"no name header", "tools/call", `{"name":"t",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, revision.CodeHeaderMismatch},
		{"the header names what runs, not a differently cased twin", "tools/call", `{"name":"t","Name":"other",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, revision.CodeHeaderMismatch},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		id, _ := jsonrpc.MakeID(float64(1))
		params := relay.Members(json.RawMessage(tt.params))
		werr := checkModernHeaders(r, &jsonrpc.Request{ID: id, Method: tt.method, Params: json.RawMessage(tt.params)},
			params, relay.Members(params["_meta"]), []string{"2025-11-25"})
		switch {
		case tt.code == 0 && werr != nil:
			t.Errorf("%s: refused: %v", tt.name, werr)
		case tt.code != 0 && (werr == nil || werr.Code != tt.code):
			t.Errorf("%s: got %v, want code %d", tt.name, werr, tt.code)
		}
	}
}

func TestStatusFor(t *testing.T) {
	for code, want := range map[int64]int{
		jsonrpc.CodeMethodNotFound: http.StatusNotFound, jsonrpc.CodeInvalidParams: http.StatusBadRequest,
		revision.CodeUnsupportedProtocolVersion: http.StatusBadRequest, revision.CodeHeaderMismatch: http.StatusBadRequest,
		revision.CodeMissingClientCapability: http.StatusBadRequest, jsonrpc.CodeInternalError: http.StatusOK, -32001: http.StatusOK,
	} {
		if got := statusFor(&jsonrpc.Error{Code: code}); got != want {
			t.Errorf("statusFor(%d) = %d, want %d", code, got, want)
		}
	}
}

// TestClientKey: the POSTs of one client share a session, whatever the
// spacing; another name or other capabilities get a session of their own.
func TestClientKey(t *testing.T) {
	meta := func(info, caps string) map[string]json.RawMessage {
		return relay.Members(relay.Members(json.RawMessage(`{"name":"t","_meta":{"io.modelcontextprotocol/clientInfo":` + info +
			`,"io.modelcontextprotocol/clientCapabilities":` + caps + `,"progressToken":1}}`))["_meta"])
	}
	alice := clientauth.Identity{Principal: "alice", Client: "alice"}
	a := clientKey(alice, meta(`{"name":"c"}`, `{"sampling":{}}`))
	if b := clientKey(alice, meta(`{ "name" : "c" }`, `{ "sampling" : {} }`)); a != b {
		t.Error("the same client, spaced differently, must share a session")
	}
	for _, other := range []map[string]json.RawMessage{meta(`{"name":"d"}`, `{"sampling":{}}`), meta(`{"name":"c"}`, `{}`),
		meta(`{"name":"c"}`, `{"sampling":{},"elicitation":{}}`)} {
		if clientKey(alice, other) == a {
			t.Errorf("%s must not share the session of another client", other)
		}
	}
	for _, id := range []clientauth.Identity{{Principal: "bob", Client: "alice"}, {Principal: "alice", Client: "bob"}, {},
		{Principal: "alice;5:alice", Client: ""}} {
		if clientKey(id, meta(`{"name":"c"}`, `{"sampling":{}}`)) == a {
			t.Errorf("%+v must not share the session of another identity", id)
		}
	}
	if strings.ContainsAny(a, `{}"`) || len(a) != 64 {
		t.Errorf("a key is a digest, not the client's words: %q", a)
	}
}

func TestIsModernPost(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if isModernPost(r, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)) {
		t.Error("an initialize is not a 2026-07-28 request")
	}
	if !isModernPost(r, []byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)) {
		t.Error("a request with the 2026-07-28 _meta is one")
	}
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	if !isModernPost(r, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)) {
		t.Error("a request whose header says 2026-07-28 is answered as that revision answers")
	}
}
