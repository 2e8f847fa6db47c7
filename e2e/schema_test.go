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
	schemaOnce     sync.Once
	resultSchema   *jsonschema.Resolved
	schemaProblem  string
	schemaDirGuess = filepath.Join("..", "..", "shared", "spec", "schemas")
)

func loadResultSchema() (*jsonschema.Resolved, string) {
	schemaOnce.Do(func() {
		dir := os.Getenv("AQLGUARD_SPEC_SCHEMAS")
		if dir == "" {
			dir = schemaDirGuess
		}
		b, err := os.ReadFile(filepath.Join(dir, "operation-result.schema.json"))
		if err != nil {
			schemaProblem = "SKIPPING schema validation: " + err.Error() + " (the spec's schemas are in ../shared, beside the repository)"
			return
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			schemaProblem = "operation-result.schema.json does not parse: " + err.Error()
			return
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			schemaProblem = "operation-result.schema.json does not resolve: " + err.Error()
			return
		}
		resultSchema = rs
	})
	return resultSchema, schemaProblem
}

// assertResultSchema validates one OperationResult when the schema is
// available; TestResultSchema reports (loudly) when it is not.
func assertResultSchema(t *testing.T, res map[string]any) {
	t.Helper()
	rs, _ := loadResultSchema()
	if rs == nil {
		return
	}
	if err := rs.Validate(res); err != nil {
		t.Errorf("result does not validate against operation-result.schema.json: %v\n%s", err, jsonString(res))
	}
}

// TestResultSchema drives one aqlguard through every kind of response —
// successes, each validation failure, refusals, batches (plain and halted),
// introspection — and validates each against the published schema.
func TestResultSchema(t *testing.T) {
	if _, problem := loadResultSchema(); problem != "" {
		if strings.HasPrefix(problem, "SKIPPING") {
			t.Skip(problem)
		}
		t.Fatal(problem)
	}
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
