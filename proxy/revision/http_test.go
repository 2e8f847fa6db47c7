package revision

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestCheckHeaders(t *testing.T) {
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
			map[string]string{"Mcp-Method": "tools/list"}, CodeHeaderMismatch},
		{"version header differs", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2099-01-01", "Mcp-Method": "tools/list"}, CodeHeaderMismatch},
		{"no _meta", "tools/list", `{}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, jsonrpc.CodeInvalidParams},
		{"no method header", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, CodeHeaderMismatch},
		{"method header is case-sensitive", "tools/list", `{` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "TOOLS/LIST"}, CodeHeaderMismatch},
		{"name header differs", "tools/call", `{"name":"t",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "rm"}, CodeHeaderMismatch},
		{"no name header", "tools/call", `{"name":"t",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}, CodeHeaderMismatch},
		{"the header names what runs, not a differently cased twin", "tools/call", `{"name":"t","Name":"other",` + modernMeta + `}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "other"}, CodeHeaderMismatch},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		for k, v := range tt.headers {
			r.Header.Set(k, v)
		}
		id, _ := jsonrpc.MakeID(float64(1))
		params := rawjson.Members(json.RawMessage(tt.params))
		werr := CheckHeaders(r.Header, &jsonrpc.Request{ID: id, Method: tt.method, Params: json.RawMessage(tt.params)},
			params, rawjson.Members(params["_meta"]), []string{"2025-11-25"})
		switch {
		case tt.code == 0 && werr != nil:
			t.Errorf("%s: refused: %v", tt.name, werr)
		case tt.code != 0 && (werr == nil || werr.Code != tt.code):
			t.Errorf("%s: got %v, want code %d", tt.name, werr, tt.code)
		}
	}
}

func TestStatus(t *testing.T) {
	for code, want := range map[int64]int{
		jsonrpc.CodeMethodNotFound: http.StatusNotFound, jsonrpc.CodeInvalidParams: http.StatusBadRequest,
		CodeUnsupportedProtocolVersion: http.StatusBadRequest, CodeHeaderMismatch: http.StatusBadRequest,
		CodeMissingClientCapability: http.StatusBadRequest, jsonrpc.CodeInternalError: http.StatusOK, -32001: http.StatusOK,
	} {
		if got := Status(&jsonrpc.Error{Code: code}); got != want {
			t.Errorf("Status(%d) = %d, want %d", code, got, want)
		}
	}
}

func TestIsModernPost(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	if IsModernPost(r.Header, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`)) {
		t.Error("an initialize is not a 2026-07-28 request")
	}
	if !IsModernPost(r.Header, []byte(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`)) {
		t.Error("a request with the 2026-07-28 _meta is one")
	}
	r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	if !IsModernPost(r.Header, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)) {
		t.Error("a request whose header says 2026-07-28 is answered as that revision answers")
	}
}
