package revision

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/aqlguard/aqlguard/proxy/mcpmethod"
	"github.com/aqlguard/aqlguard/proxy/rawjson"
	"github.com/aqlguard/aqlguard/proxy/revision/mcpheader"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The headers of a 2026-07-28 POST (SEP-2243, SEP-2575).
const (
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
)

// IsModernPost reports whether a POST without a session is a 2026-07-28
// request: its protocol version header or its _meta says so.
func IsModernPost(h http.Header, body []byte) bool {
	if v := h.Get(HeaderProtocolVersion); v >= Modern {
		return true
	}
	var msg struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil {
		return false
	}
	_, modern, err := ParseMeta(msg.Params, nil)
	return modern || err != nil // a malformed version is answered as 2026-07-28 answers it
}

// CheckHeaders checks what SEP-2243 and SEP-2575 say the headers of
// a 2026-07-28 POST must repeat from its body.
//
// params and meta are the request's params and their _meta, read once by
// the caller with the relay's exact member names — the names the call is
// routed by, so a header is checked against what runs ("Name" is not
// "name").
func CheckHeaders(h http.Header, req *jsonrpc.Request, params, meta map[string]json.RawMessage, legacy []string) *jsonrpc.Error {
	var metaVersion string
	_ = json.Unmarshal(meta[MetaProtocolVersion], &metaVersion)
	header := h.Get(HeaderProtocolVersion)
	switch {
	case header == "":
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: HeaderProtocolVersion + " header is required for a " + Modern + " request"}
	case metaVersion != "" && header != metaVersion:
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match _meta %q", HeaderProtocolVersion, header, metaVersion)}
	}
	if _, _, err := ParseMeta(req.Params, legacy); err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return werr
		}
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if metaVersion == "" {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing or invalid _meta field " + MetaProtocolVersion}
	}
	method := h.Get(HeaderMethod)
	switch {
	case method == "":
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "missing required " + HeaderMethod + " header"}
	case method != req.Method:
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match the body's method %q", HeaderMethod, method, req.Method)}
	}
	// Mcp-Name is held to the body where the guard judges what it names.
	m := mcpmethod.Lookup(req.Method)
	if !m.Guarded || m.Subject == "" {
		return nil
	}
	raw, present := params[m.Subject]
	var inBody string
	if present && json.Unmarshal(raw, &inBody) != nil {
		present = false
	}
	name := h.Get(HeaderName)
	switch {
	case name == "":
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: "missing required " + HeaderName + " header for " + req.Method}
	case !present || inBody != name:
		return &jsonrpc.Error{Code: CodeHeaderMismatch, Message: fmt.Sprintf("%s header %q does not match the body", HeaderName, name)}
	}
	return nil
}

// Status is the HTTP status of a 2026-07-28 error answer.
func Status(werr *jsonrpc.Error) int {
	switch werr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, CodeHeaderMismatch, CodeMissingClientCapability, CodeUnsupportedProtocolVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// SetHeaders sets what SEP-2243 mirrors of a 2026-07-28 request into
// its POST's headers: the revision, the method, the name it is about
// (tools/call, prompts/get, resources/read; a task's id for tasks/*) and
// the tool's x-mcp-header arguments (bindings: a tool's, by its name;
// nil for none). It has no session.
func SetHeaders(h http.Header, version string, call *jsonrpc.Request, bindings func(tool string) []mcpheader.Binding) {
	h.Set(HeaderProtocolVersion, version)
	h.Set(HeaderMethod, call.Method)
	ms := rawjson.Members(call.Params)
	m := mcpmethod.Lookup(call.Method)
	var name string
	if m.Subject != "" && json.Unmarshal(ms[m.Subject], &name) == nil {
		h.Set(HeaderName, mcpheader.Encode(name))
	}
	if m.ParamHeaders && bindings != nil {
		for k, v := range mcpheader.Headers(bindings(name), ms["arguments"]) {
			h.Set(k, v)
		}
	}
}
