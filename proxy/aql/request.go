package aql

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strings"
)

// BatchOperation is the operation name under which a batch may be sent
// when a client insists on the base input schema's required "operation"
// member (mcp-integration.md 3.1); {"operations": [...]} alone works too.
const BatchOperation = "batch"

// Request is one parsed operation request.
type Request struct {
	Operation string
	// Params are the resolved parameters: params.<name> wins over a
	// top-level <name> (spec 4.2); underscore-prefixed metadata is dropped.
	Params map[string]any
	// Index is the position inside a batch, or -1 for a single request.
	Index int
	// Raw is the request object as sent, for pending_operations echoes.
	Raw map[string]any
}

// Envelope is a parsed tool call: one request or a batch.
type Envelope struct {
	Single *Request
	// Batch holds the batch's requests. A malformed entry is kept as a
	// Request whose Err is set, so its neighbours still run.
	Batch []*Request
	// BatchErrs holds per-entry envelope errors, indexed like Batch.
	BatchErrs []*Error
}

var operationName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Parse checks a raw tool-call argument object against the payload limits
// and encoding rules and resolves it into requests. Every failure is a
// structured Error; nothing here panics on hostile input.
func Parse(raw []byte, lim Limits) (*Envelope, *Error) {
	obj, err := ParseArguments(raw, lim)
	if err != nil {
		return nil, err
	}
	if len(obj) == 0 && len(bytes.TrimSpace(raw)) == 0 {
		return nil, &Error{Code: CodeMissingParam, Message: "Missing required parameter 'operation'",
			Details: map[string]any{"param_name": "operation"}}
	}
	if ops, isBatch := obj["operations"]; isBatch {
		return parseBatch(obj, ops)
	}
	req, err := resolve(obj, "")
	if err != nil {
		return nil, err
	}
	req.Index = -1
	return &Envelope{Single: req}, nil
}

func parseBatch(obj map[string]any, ops any) (*Envelope, *Error) {
	if op, has := obj["operation"]; has && op != BatchOperation {
		return nil, &Error{Code: CodeInvalidType,
			Message: "A batch carries 'operations' and no other operation (or operation 'batch')",
			Details: map[string]any{"param_name": "operation", "expected_type": "'batch' or absent", "actual_type": jsonType(op)}}
	}
	for k := range obj {
		if k != "operations" && k != "operation" && !strings.HasPrefix(k, "_") {
			return nil, UnknownParams(BatchOperation, []string{k}, []string{"operations"})
		}
	}
	list, ok := ops.([]any)
	if !ok {
		return nil, InvalidType("operations", "array", jsonType(ops), nil)
	}
	if len(list) == 0 {
		return nil, &Error{Code: CodeMissingParam, Message: "Missing required parameter 'operations': a batch needs at least one operation",
			Details: map[string]any{"param_name": "operations"}}
	}
	env := &Envelope{Batch: make([]*Request, len(list)), BatchErrs: make([]*Error, len(list))}
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			env.Batch[i] = &Request{Index: i}
			env.BatchErrs[i] = InvalidType(indexPath("operations", i), "object", jsonType(item), nil)
			continue
		}
		if _, nested := m["operations"]; nested {
			env.Batch[i] = &Request{Index: i, Raw: m}
			env.BatchErrs[i] = UnknownParams(BatchOperation, []string{"operations"}, []string{"operation", "params"})
			env.BatchErrs[i].Message = "Batches cannot be nested"
			continue
		}
		req, err := resolve(m, indexPath("operations", i))
		if err != nil {
			req = &Request{Raw: m}
			if s, ok := m["operation"].(string); ok {
				req.Operation = s
			}
		}
		req.Index = i
		env.Batch[i], env.BatchErrs[i] = req, err
	}
	return env, nil
}

// ParseArguments checks raw tool-call arguments against the payload limits
// and encoding rules and decodes them into an object (numbers as
// json.Number). Empty arguments are an empty object.
func ParseArguments(raw []byte, lim Limits) (map[string]any, *Error) {
	if int64(len(raw)) > lim.MaxRequestSize {
		return nil, TooLarge(LimitRequestSize, lim.MaxRequestSize, int64(len(raw)), "")
	}
	if err := scanRaw(raw, lim.MaxNestingDepth); err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, &Error{Code: CodeInvalidType, Message: "Request must be a single JSON object",
			Details: map[string]any{"param_name": "arguments", "expected_type": "object", "actual_type": "invalid JSON"}}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, InvalidType("arguments", "object", jsonType(v), nil)
	}
	if err := checkValue(lim, obj, ""); err != nil {
		return nil, err
	}
	return obj, nil
}

// resolve turns one request object into a Request.
func resolve(obj map[string]any, at string) (*Request, *Error) {
	opv, ok := obj["operation"]
	if !ok {
		return nil, &Error{Code: CodeMissingParam, Message: "Missing required parameter 'operation'",
			Details: map[string]any{"param_name": keyPath(at, "operation")}}
	}
	op, ok := opv.(string)
	if !ok {
		return nil, InvalidType(keyPath(at, "operation"), "string", jsonType(opv), nil)
	}
	if !operationName.MatchString(op) {
		// Not a name any operation can have: say so as not-found, the
		// recovery (introspect) is the same.
		return nil, NotFoundOperation(op)
	}
	params := map[string]any{}
	for k, v := range obj {
		if k == "operation" || k == "params" || strings.HasPrefix(k, "_") {
			continue
		}
		params[k] = v
	}
	if pv, has := obj["params"]; has && pv != nil {
		pm, ok := pv.(map[string]any)
		if !ok {
			return nil, InvalidType(keyPath(at, "params"), "object", jsonType(pv), nil)
		}
		for k, v := range pm {
			if strings.HasPrefix(k, "_") {
				continue
			}
			params[k] = v
		}
	}
	return &Request{Operation: op, Params: params, Raw: obj}, nil
}

// jsonType names the JSON type of a decoded value (numbers decoded with
// UseNumber): integer, number, string, boolean, array, object or null.
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if isInteger(x) {
			return "integer"
		}
		return "number"
	case float64, float32:
		return "number"
	case int, int64, int32:
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func isInteger(n json.Number) bool {
	if _, err := n.Int64(); err == nil {
		return true
	}
	f, err := n.Float64()
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// sortedKeys returns a map's keys in order, for stable messages.
func sortedKeys(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
