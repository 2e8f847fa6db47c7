package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const strictTS = `
mode = "semantic"
agent = "e2e"
[safety]
auto_approve = ["ts_*"]
[limits]
max_request_size = 131072
max_string_length = 65536
max_array_elements = 100
max_nesting_depth = 8
max_response_size = 1048576
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`

func errCode(t *testing.T, res map[string]any) (string, map[string]any) {
	t.Helper()
	if res["success"] != false {
		t.Fatalf("want failure, got %s", jsonString(res))
	}
	e := res["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return e["code"].(string), d
}

// errMessage is a failure's error message ("" for anything else).
func errMessage(res map[string]any) string {
	e, _ := res["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// TestErrorCodes provokes every validation and routing error through a
// real aqlguard process and checks code and details.
func TestErrorCodes(t *testing.T) {
	g := startGuard(t, strictTS)
	long := strings.Repeat("x", 70000)
	big := strings.Repeat("x", 140000)
	deep := map[string]any{}
	cur := deep
	for i := 0; i < 10; i++ {
		next := map[string]any{}
		cur["n"] = next
		cur = next
	}
	many := make([]any, 101)
	for i := range many {
		many[i] = "t"
	}
	tests := []struct {
		name    string
		tool    string
		args    map[string]any
		code    string
		details map[string]any
	}{
		{"missing param", "mcp_aql_read", op("ts_get_item", nil), "VALIDATION_MISSING_PARAM", map[string]any{"param_name": "id", "operation": "ts_get_item"}},
		{"missing operation", "mcp_aql_read", map[string]any{"params": map[string]any{}}, "VALIDATION_MISSING_PARAM", map[string]any{"param_name": "operation"}},
		{"wrong type", "mcp_aql_read", op("ts_get_item", map[string]any{"id": 7}), "VALIDATION_INVALID_TYPE", map[string]any{"param_name": "id", "expected_type": "string", "actual_type": "integer"}},
		{"unknown param", "mcp_aql_read", op("ts_get_item", map[string]any{"id": "a", "force": true}), "VALIDATION_UNKNOWN_PARAM",
			map[string]any{"unknown_params": []any{"force"}, "valid_params": []any{"id", "fields", "confirmation_token"}}},
		{"unknown top-level param", "mcp_aql_read", map[string]any{"operation": "ts_get_item", "id": "a", "extra": 1}, "VALIDATION_UNKNOWN_PARAM", nil},
		{"enum", "mcp_aql_read", op("ts_list_items", map[string]any{"status": "deleted"}), "VALIDATION_INVALID_ENUM", map[string]any{"param_name": "status"}},
		{"range", "mcp_aql_read", op("ts_list_items", map[string]any{"limit": 0}), "VALIDATION_OUT_OF_RANGE", map[string]any{"param_name": "limit", "minimum": 1.0}},
		{"pattern", "mcp_aql_read", op("ts_get_item", map[string]any{"id": "Bad Id"}), "VALIDATION_PATTERN_MISMATCH", map[string]any{"param_name": "id"}},
		{"length", "mcp_aql_create", op("ts_create_note", map[string]any{"title": ""}), "VALIDATION_OUT_OF_RANGE", map[string]any{"param_name": "title"}},
		{"endpoint mismatch", "mcp_aql_create", op("ts_get_item", map[string]any{"id": "a"}), "VALIDATION_ENDPOINT_MISMATCH",
			map[string]any{"expected_endpoint": "READ", "actual_endpoint": "CREATE", "expected_tool": "mcp_aql_read"}},
		{"unknown operation", "mcp_aql_read", op("ts_get_widget", nil), "NOT_FOUND_OPERATION", map[string]any{"operation": "ts_get_widget"}},
		{"request too large", "mcp_aql_execute", op("ts_echo", map[string]any{"message": big}), "VALIDATION_PAYLOAD_TOO_LARGE",
			map[string]any{"limit_type": "request_size", "limit_value": 131072.0, "unit": "bytes"}},
		{"string too long", "mcp_aql_execute", op("ts_echo", map[string]any{"message": long}), "VALIDATION_PAYLOAD_TOO_LARGE",
			map[string]any{"limit_type": "string_length", "limit_value": 65536.0, "actual_value": 70000.0, "location": "params.message"}},
		{"array too long", "mcp_aql_create", op("ts_create_note", map[string]any{"title": "t", "tags": many}), "VALIDATION_PAYLOAD_TOO_LARGE",
			map[string]any{"limit_type": "array_elements", "actual_value": 101.0, "unit": "elements"}},
		{"too deep", "mcp_aql_execute", op("ts_nested", map[string]any{"config": deep}), "VALIDATION_PAYLOAD_TOO_LARGE",
			map[string]any{"limit_type": "nesting_depth", "limit_value": 8.0, "unit": "levels"}},
		{"response too large", "mcp_aql_execute", op("ts_big_output", map[string]any{"bytes": 2 << 20}), "VALIDATION_PAYLOAD_TOO_LARGE",
			map[string]any{"limit_type": "response_size", "limit_value": 1048576.0}},
		{"tool error", "mcp_aql_execute", op("ts_fail", nil), "INTERNAL_ERROR", map[string]any{"server": "ts", "tool": "fail", "upstream_error": "deliberate failure"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, raw := g.call(t, tt.tool, tt.args)
			if !raw.IsError {
				t.Errorf("MCP isError not set on a failure")
			}
			code, details := errCode(t, res)
			if code != tt.code {
				t.Fatalf("code %s, want %s: %s", code, tt.code, jsonString(res))
			}
			for k, v := range tt.details {
				if jsonString(details[k]) != jsonString(v) {
					t.Errorf("details[%s] = %s, want %s", k, jsonString(details[k]), jsonString(v))
				}
			}
			msg := res["error"].(map[string]any)["message"].(string)
			for _, leak := range []string{".go:", "goroutine", "*mcp.", "json: ", "/tmp/", "exec:", "runtime error"} {
				if strings.Contains(msg, leak) {
					t.Errorf("message leaks internals (%q): %s", leak, msg)
				}
			}
			assertResultSchema(t, res)
		})
	}
	// And the proxy is still serving.
	res, _ := g.call(t, "mcp_aql_execute", op("ts_echo", map[string]any{"message": "still here"}))
	if res["data"] != "still here" {
		t.Errorf("after bad input: %v", res)
	}
}

// rawAqlguard starts `aqlguard run` on config with its stdio as pipes,
// for tests that write what a Go MCP client would not (bytes, timing).
func rawAqlguard(t *testing.T, config string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *syncBuffer) {
	t.Helper()
	dir := t.TempDir()
	cfg := dir + "/config.toml"
	writeFile(t, cfg, renderConfig(t, config, dir))
	return rawAqlguardAt(t, dir, cfg)
}

// rawAqlguardAt is rawAqlguard on a config already written in dir.
func rawAqlguardAt(t *testing.T, dir, cfg string) (*exec.Cmd, io.WriteCloser, io.ReadCloser, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bins.aqlguard, "run", "--config", cfg)
	cmd.Env = isolatedEnv(t, dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, stdout, stderr
}

// exited waits at most limit for cmd to exit and returns how it did; ok
// is false, and cmd killed, if it had not by then.
func exited(cmd *exec.Cmd, limit time.Duration) (ok bool, err error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		return false, nil
	}
}

func op(name string, params map[string]any) map[string]any {
	m := map[string]any{"operation": name}
	if params != nil {
		m["params"] = params
	}
	return m
}

// TestInvalidEncoding writes raw bytes to aqlguard's stdin: a Go MCP
// client cannot send invalid UTF-8, a hostile one can.
func TestInvalidEncoding(t *testing.T) {
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	cmd, stdin, stdout, stderr := rawAqlguard(t, strictTS)
	defer func() {
		stdin.Close()
		if ok, err := exited(cmd, 10*time.Second); !ok {
			t.Error("aqlguard did not exit on stdin EOF")
		} else if err != nil {
			t.Errorf("aqlguard exit: %v\n%s", err, stderr.String())
		}
	}()
	lines := bufio.NewReader(stdout)
	send := func(s string) { io.WriteString(stdin, s+"\n") }
	recv := func(id int) map[string]any {
		for {
			line, err := lines.ReadString('\n')
			if err != nil {
				t.Fatalf("reading response %d: %v\n%s", id, err, stderr.String())
			}
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["id"] == float64(id) {
				return m
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i, args := range []string{
		"{\"operation\":\"ts_get_item\",\"params\":{\"id\":\"a\xffb\"}}",
		"{\"operation\":\"ts_get_item\",\"params\":{\"id\":\"\xc0\xaf\"}}",
		`{"operation":"ts_get_item","params":{"id":"\ud800"}}`,
	} {
		id := 10 + i
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"mcp_aql_read","arguments":%s}}`, id, args))
		resp := recv(id)
		result, ok := resp["result"].(map[string]any)
		if !ok {
			t.Fatalf("case %d: no result: %v", i, resp)
		}
		var out map[string]any
		text := result["content"].([]any)[0].(map[string]any)["text"].(string)
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			t.Fatal(err)
		}
		code, details := errCode(t, out)
		if code != "VALIDATION_INVALID_ENCODING" || details["location"] != "params.id" {
			t.Errorf("case %d: %s", i, text)
		}
	}
	send(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"mcp_aql_execute","arguments":{"operation":"ts_echo","params":{"message":"ok"}}}}`)
	if resp := recv(99); !strings.Contains(jsonString(resp), `\"data\":\"ok\"`) {
		t.Errorf("proxy not serving after bad encoding: %v", resp)
	}
}

// TestAnswersAfterStdinCloses: a client may close aqlguard's stdin right
// after its last request (MCP's stdio shutdown; a script piping requests
// in does): the requests already sent are answered, guarded calls
// included, before aqlguard exits.
func TestAnswersAfterStdinCloses(t *testing.T) {
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	cmd, stdin, stdout, stderr := rawAqlguard(t, strictTS)
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"script","version":"1"}}}`)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":1`) {
		t.Fatalf("no answer to initialize: %q %v\n%s", lines.Text(), lines.Err(), stderr.String())
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mcp_aql_execute","arguments":{"operation":"ts_echo","params":{"message":"last words"}}}}`)
	stdin.Close()
	got := map[string]string{}
	for lines.Scan() {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil {
			got[string(m.ID)] = lines.Text()
		}
	}
	if ok, err := exited(cmd, 30*time.Second); !ok {
		t.Fatalf("aqlguard did not exit after stdin closed\n%s", stderr.String())
	} else if err != nil {
		t.Errorf("aqlguard exited with %v\n%s", err, stderr.String())
	}
	if !strings.Contains(got["2"], `"tools"`) {
		t.Errorf("tools/list: %q", got["2"])
	}
	if !strings.Contains(got["3"], "last words") {
		t.Errorf("the guarded call: %q\n%s", got["3"], stderr.String())
	}
}
