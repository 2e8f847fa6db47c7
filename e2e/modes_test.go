package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// permissive lets every call through the evaluator (auto_approve "*",
// and none of the shipped rules, which would ask for delete_* and refuse
// drop_*), so these tests see the protocol layer and the forwarding, not
// policy.
const permissive = `
mode = %q
agent = "e2e"
[safety]
inherit = false
max_autonomous_steps = 100000
auto_approve = ["*"]
[[servers]]
name = "ev"
trust_first_sight = true
command = {{toml .everything}}
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-stderr-noise"]
`

// endpointFor returns the MCP tool that carries an operation in a mode,
// as introspection reports it.
func endpointFor(t *testing.T, g *guard, introTool, op string) string {
	t.Helper()
	res, _ := g.callAQL(t, introTool, "introspect", map[string]any{"query": "operations", "name": op})
	det, ok := data(t, res)["operation"].(map[string]any)
	if !ok {
		t.Fatalf("introspect %s: %v", op, res)
	}
	return det["mcpTool"].(string)
}

// TestEveryToolInEveryMode: in each mode, every downstream tool of both
// servers is listed by introspection, has details with an example, and the
// example call reaches the downstream server and comes back as a
// well-formed result (the tool's own error counts: it was forwarded).
func TestEveryToolInEveryMode(t *testing.T) {
	for _, mode := range []string{"semantic", "single", "all", "passthrough"} {
		t.Run(mode, func(t *testing.T) {
			g := startGuard(t, fmt.Sprintf(permissive, mode))
			tools := g.tools(t)
			names := map[string]bool{}
			for _, tl := range tools {
				names[tl.Name] = true
			}
			introTool := map[string]string{"semantic": "mcp_aql_read", "all": "mcp_aql", "single": "mcp_aql", "passthrough": "mcp_aql"}[mode]
			wantTools := map[string][]string{
				"semantic":    {"mcp_aql_create", "mcp_aql_read", "mcp_aql_update", "mcp_aql_delete", "mcp_aql_execute"},
				"single":      {"mcp_aql"},
				"all":         {"mcp_aql", "mcp_aql_create", "mcp_aql_read", "mcp_aql_update", "mcp_aql_delete", "mcp_aql_execute"},
				"passthrough": {"mcp_aql", "ts_echo", "ev_test_simple_text"},
			}[mode]
			for _, w := range wantTools {
				if !names[w] {
					t.Errorf("tool %s missing from tools/list: %v", w, names)
				}
			}
			if mode != "passthrough" && len(tools) != len(wantTools) {
				t.Errorf("tools/list has %d tools, want %d", len(tools), len(wantTools))
			}

			res, _ := g.callAQL(t, introTool, "introspect", map[string]any{"query": "operations"})
			d := data(t, res)
			proto := d["_protocol"].(map[string]any)
			if proto["version"] != "1.0.0-draft" || proto["capabilities"].(map[string]any)["execution_safety_loop"] != "enforcing" {
				t.Errorf("_protocol = %v", proto)
			}
			var ops []string
			for _, o := range d["operations"].([]any) {
				ops = append(ops, o.(map[string]any)["name"].(string))
			}
			for _, want := range []string{"introspect", "ts_echo", "ts_get_item", "ts_read_file_a00b4b", "ev_test_simple_text", "ev_json_schema_2020_12_tool"} {
				if !slices.Contains(ops, want) {
					t.Errorf("operation %s not listed: %v", want, ops)
				}
			}
			evCount, tsCount := 0, 0
			for _, op := range ops {
				switch {
				case strings.HasPrefix(op, "ev_"):
					evCount++
				case strings.HasPrefix(op, "ts_"):
					tsCount++
				}
			}
			if evCount != 28 || tsCount != 17 {
				t.Errorf("listed %d everything-server and %d test server operations, want 28 and 17", evCount, tsCount)
			}
			if mode == "passthrough" {
				for _, op := range ops {
					if downstreamOp(op) && !names[op] {
						t.Errorf("passthrough tool %s missing", op)
					}
				}
			}

			for _, op := range ops {
				if !downstreamOp(op) || !safeToCall(op) {
					continue
				}
				res, _ := g.callAQL(t, introTool, "introspect", map[string]any{"query": "operations", "name": op})
				det := data(t, res)["operation"].(map[string]any)
				examples, _ := det["examples"].([]any)
				if len(examples) == 0 {
					t.Errorf("%s: no example", op)
					continue
				}
				req := examples[0].(map[string]any)["request"].(map[string]any)
				tool := det["mcpTool"].(string)
				var out map[string]any
				if mode == "passthrough" {
					args, _ := req["params"].(map[string]any)
					if args == nil {
						args = map[string]any{}
					}
					raw, err := g.callRaw(tool, renameToDownstream(det, args))
					if err != nil {
						t.Errorf("%s: %v", op, err)
						continue
					}
					if raw.IsError && len(raw.Content) == 1 {
						text := resultText(t, raw)
						if strings.Contains(text, `"success":false`) && !strings.Contains(text, "upstream_error") {
							t.Errorf("%s passthrough refused by aqlguard: %s", op, text)
						}
					}
					continue
				}
				out, _ = g.call(t, tool, req)
				assertResultSchema(t, out)
				if out["success"] != true {
					e := out["error"].(map[string]any)
					details, _ := e["details"].(map[string]any)
					if e["code"] != "INTERNAL_ERROR" || details["upstream_error"] == nil {
						t.Errorf("%s example %v was not forwarded: %v", op, req, out)
					}
				}
			}
		})
	}
}

// downstreamOp says whether op belongs to one of the test's servers
// (aqlguard's own operations are covered by their own tests).
func downstreamOp(op string) bool {
	return strings.HasPrefix(op, "ev_") || strings.HasPrefix(op, "ts_")
}

// safeToCall excludes the everything-server tools that wait for a client
// capability aqlguard's downstream session does not offer (sampling,
// elicitation, roots) or that restart themselves; they are still listed
// and introspected above.
func safeToCall(op string) bool {
	for _, s := range []string{"ts_crash", "elicitation", "sampling", "input_required", "reconnection", "list_roots", "missing_capability", "slow", "trigger_"} {
		if strings.Contains(op, s) {
			return false
		}
	}
	return true
}

// renameToDownstream maps snake_case example params back to the tool's
// own names (passthrough takes the downstream schema as it is).
func renameToDownstream(det map[string]any, args map[string]any) map[string]any {
	out := map[string]any{}
	params, _ := det["parameters"].([]any)
	for k, v := range args {
		name := k
		for _, p := range params {
			pm := p.(map[string]any)
			if pm["name"] == k {
				if al, ok := pm["aliases"].([]any); ok && len(al) > 0 {
					name = al[0].(string)
				}
			}
		}
		out[name] = v
	}
	return out
}

func data(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	if res["success"] != true {
		t.Fatalf("want success, got %v", res)
	}
	d, ok := res["data"].(map[string]any)
	if !ok {
		t.Fatalf("data is not an object: %v", res)
	}
	return d
}
