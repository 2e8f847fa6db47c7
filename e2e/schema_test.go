package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// The published schemas live in ../shared/spec/schemas beside the
// repository, not in it. Tests that need them skip loudly when absent.
var (
	schemaMu       sync.Mutex
	schemas        = map[string]*jsonschema.Resolved{}
	schemaProblems = map[string]string{}
	schemaDirGuess = filepath.Join("..", "..", "shared", "spec", "schemas")
)

// loadSchema resolves one published schema (once), or says why it cannot.
func loadSchema(name string) (*jsonschema.Resolved, string) {
	schemaMu.Lock()
	defer schemaMu.Unlock()
	if rs, ok := schemas[name]; ok {
		return rs, schemaProblems[name]
	}
	rs, problem := resolveSchema(name)
	schemas[name], schemaProblems[name] = rs, problem
	return rs, problem
}

func resolveSchema(name string) (*jsonschema.Resolved, string) {
	dir := os.Getenv("AQLGUARD_SPEC_SCHEMAS")
	if dir == "" {
		dir = schemaDirGuess
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return nil, "SKIPPING schema validation: " + err.Error() + " (the spec's schemas are in ../shared, beside the repository)"
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, name + " does not parse: " + err.Error()
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, name + " does not resolve: " + err.Error()
	}
	return rs, ""
}

// assertResultSchema validates one OperationResult when the schema is
// available; TestResultSchema reports (loudly) when it is not.
func assertResultSchema(t *testing.T, res map[string]any) {
	t.Helper()
	assertSchema(t, "operation-result.schema.json", res)
}

func assertSchema(t *testing.T, name string, res map[string]any) {
	t.Helper()
	rs, _ := loadSchema(name)
	if rs == nil {
		return
	}
	if err := rs.Validate(res); err != nil {
		t.Errorf("result does not validate against %s: %v\n%s", name, err, jsonString(res))
	}
}

// requireSchema skips loudly (or fails, for a broken schema) when name is
// not available.
func requireSchema(t *testing.T, name string) {
	t.Helper()
	if _, problem := loadSchema(name); problem != "" {
		if strings.HasPrefix(problem, "SKIPPING") {
			t.Skip(problem)
		}
		t.Fatal(problem)
	}
}

// TestIntrospectionSchema validates every introspection answer, of every
// operation (downstream ones with camelCase parameters, and the safety
// loop's with their accepted aliases), against
// introspection-response.schema.json.
func TestIntrospectionSchema(t *testing.T) {
	requireSchema(t, "introspection-response.schema.json")
	g := startGuard(t, `
mode = "all"
agent = "e2e"
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	res, _ := g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations"})
	assertSchema(t, "introspection-response.schema.json", res)
	ops, _ := data(t, res)["operations"].([]any)
	if len(ops) < 10 {
		t.Fatalf("operations: %v", res)
	}
	for _, o := range ops {
		name := o.(map[string]any)["name"].(string)
		res, _ := g.callAQL(t, "mcp_aql", "introspect", map[string]any{"query": "operations", "name": name})
		assertSchema(t, "introspection-response.schema.json", res)
		if name == "record_execution_step" && !strings.Contains(jsonString(res), "Also accepted as nextActionHint") {
			t.Errorf("the nextActionHint alias is not documented: %s", jsonString(res))
		}
	}
	for _, q := range []map[string]any{{"query": "types"}, {"query": "types", "name": "OperationResult"}} {
		res, _ := g.callAQL(t, "mcp_aql", "introspect", q)
		assertSchema(t, "introspection-response.schema.json", res)
	}
}

// TestResultSchema drives one aqlguard through every kind of response —
// successes, each validation failure, refusals, batches (plain and halted),
// introspection — and validates each against the published schema.
func TestResultSchema(t *testing.T) {
	requireSchema(t, "operation-result.schema.json")
	g := startGuard(t, `
mode = "all"
agent = "e2e"
[safety]
requires_approval = ["ts_delete_note"]
deny = ["*drop_database*"]
auto_approve = ["ts_get_item", "ts_echo", "ts_list_items", "ts_fail"]
[limits]
max_response_size = 1048576
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
`)
	calls := []map[string]any{
		{"operation": "introspect", "params": map[string]any{"query": "operations"}},
		{"operation": "introspect", "params": map[string]any{"query": "operations", "name": "ts_get_item"}},
		{"operation": "introspect", "params": map[string]any{"query": "operations", "name": "nope"}},
		{"operation": "introspect", "params": map[string]any{"query": "types"}},
		{"operation": "introspect", "params": map[string]any{"query": "types", "name": "OperationResult"}},
		{"operation": "ts_get_item", "params": map[string]any{"id": "a1", "fields": []any{"id"}}},
		{"operation": "ts_get_item", "params": map[string]any{}},
		{"operation": "ts_get_item", "params": map[string]any{"id": 5}},
		{"operation": "ts_get_item", "params": map[string]any{"id": "a", "bogus": 1}},
		{"operation": "ts_get_item", "params": map[string]any{"id": "A!"}},
		{"operation": "ts_list_items", "params": map[string]any{"status": "nope"}},
		{"operation": "ts_list_items", "params": map[string]any{"limit": 1000}},
		{"operation": "ts_unknown"},
		{"operation": "ts_echo", "params": map[string]any{"message": "hi"}},
		{"operation": "ts_fail"},
		{"operation": "ts_big_output", "params": map[string]any{"bytes": 2 << 20}},
		{"operation": "ts_delete_note", "params": map[string]any{"id": "n1"}},
		{"operation": "ts_drop_database", "params": map[string]any{"name": "prod"}},
		{"operations": []any{
			map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "1"}},
			map[string]any{"operation": "ts_nope"},
		}},
		{"operations": []any{
			map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "1"}},
			map[string]any{"operation": "ts_delete_note", "params": map[string]any{"id": "n1"}},
			map[string]any{"operation": "ts_echo", "params": map[string]any{"message": "2"}},
		}},
		{"params": map[string]any{}},
	}
	for _, c := range calls {
		res, _ := g.call(t, "mcp_aql", c)
		assertResultSchema(t, res)
	}
}
