package catalog

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"read_file": "read_file", "readFile": "read_file", "read-file": "read_file", "Read_File": "read_file",
		"HTTPServer": "http_server", "getURLForID": "get_url_for_id", "list.items": "list_items", "__x__": "x",
		"9lives": "t9lives", "": "tool", "***": "tool", "échec": "chec", "v2Api": "v2_api",
	} {
		if got := Snake(in); got != want {
			t.Errorf("Snake(%q) = %q, want %q", in, got, want)
		}
	}
}

var opName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func TestOperationNames(t *testing.T) {
	names := operationNames("fs", []string{"read-file", "Read_File", "read_file", "list", "agent"})
	if names["read_file"] != "fs_read_file" {
		t.Errorf("canonical spelling keeps the plain name: %v", names)
	}
	seen := map[string]bool{}
	for tool, n := range names {
		if !opName.MatchString(n) {
			t.Errorf("%s → %q is not snake_case", tool, n)
		}
		if seen[n] {
			t.Errorf("collision on %q: %v", n, names)
		}
		seen[n] = true
	}
	// Stable: order of tools and the presence of other servers never matter.
	again := operationNames("fs", []string{"agent", "list", "read_file", "Read_File", "read-file"})
	for k, v := range names {
		if again[k] != v {
			t.Errorf("%s: %s then %s", k, v, again[k])
		}
	}
	// A server and tool that spell a reserved name get a suffix.
	r := operationNames("execute", []string{"agent"})
	if r["agent"] == "execute_agent" || !opName.MatchString(r["agent"]) {
		t.Errorf("reserved collision not avoided: %v", r)
	}
}

func tool(name string, a *mcp.ToolAnnotations) *mcp.Tool {
	return &mcp.Tool{Name: name, Annotations: a, InputSchema: map[string]any{"type": "object"}}
}

func TestClassify(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		tool     *mcp.Tool
		override string
		want     policy.Category
		by       string
	}{
		{tool("read_file", nil), "", policy.Read, ByVerb},
		{tool("createUser", nil), "", policy.Create, ByVerb},
		{tool("move_file", nil), "", policy.Update, ByVerb},
		{tool("drop_table", nil), "", policy.Delete, ByVerb},
		{tool("run_query", nil), "", policy.Execute, ByVerb},
		{tool("directory_tree", nil), "", policy.Execute, ByDefault},
		{tool("write_file", &mcp.ToolAnnotations{ReadOnlyHint: true}), "", policy.Read, ByAnnotations},
		{tool("create_thing", &mcp.ToolAnnotations{DestructiveHint: &yes}), "", policy.Execute, ByAnnotations},
		{tool("delete_thing", &mcp.ToolAnnotations{DestructiveHint: &yes}), "", policy.Delete, ByAnnotations},
		{tool("delete_thing", &mcp.ToolAnnotations{DestructiveHint: &no}), "", policy.Delete, ByVerb},
		{tool("read_file", &mcp.ToolAnnotations{ReadOnlyHint: true}), "update", policy.Update, ByConfig},
	}
	for _, tt := range tests {
		got, by := Classify(tt.tool, tt.override)
		if got != tt.want || by != tt.by {
			t.Errorf("Classify(%s, %q) = %s by %s, want %s by %s", tt.tool.Name, tt.override, got, by, tt.want, tt.by)
		}
	}
}

func TestDeriveParams(t *testing.T) {
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","required":["path","maxDepth"],"properties":{
		"path":{"type":"string","description":"File path","minLength":1,"pattern":"^/"},
		"maxDepth":{"type":"integer","minimum":0,"maximum":9,"default":2},
		"mode":{"type":"string","enum":["a","b"]},
		"tags":{"type":"array","items":{"type":"string"}},
		"when":{"type":["string","null"],"format":"date-time"},
		"either":{"anyOf":[{"type":"string"},{"type":"number"}]},
		"api_key":{"type":"string"},
		"dry_run":{"type":"boolean"},"dryRun":{"type":"boolean"}
	}}`), &schema)
	ps := deriveParams(schema)
	by := map[string]*aql.Param{}
	for _, p := range ps {
		by[p.Name] = p
	}
	if ps[0].Name != "max_depth" || ps[1].Name != "path" || !ps[0].Required {
		t.Errorf("required first, by name: %s, %s", ps[0].Name, ps[1].Name)
	}
	md := by["max_depth"]
	if md == nil || md.MapTo != "maxDepth" || md.Aliases[0] != "maxDepth" || *md.Maximum != 9 || string(md.Default) != "2" {
		t.Errorf("max_depth = %+v", md)
	}
	if by["dryRun"] == nil || by["dry_run"] == nil {
		t.Errorf("a taken snake name keeps the original public: %v", by)
	}
	if got := by["when"].Type; got != "string | null" {
		t.Errorf("when type %q", got)
	}
	if got := by["either"].Type; got != "string | number" {
		t.Errorf("either type %q", got)
	}
	if !by["api_key"].Sensitive || by["path"].Sensitive {
		t.Error("sensitive detection")
	}
	if by["tags"].ItemTypes[0] != "string" || by["mode"].Enum[1] != "b" {
		t.Error("items/enum")
	}
}

// Every derived example must pass the operation's own validation: the
// examples are generated from the same definitions (ADR-004).
func TestExamplesValidate(t *testing.T) {
	var schema map[string]any
	_ = json.Unmarshal([]byte(`{"type":"object","required":["id","n","when","kind","url","flag","list"],"properties":{
		"id":{"type":"string","pattern":"^[a-z0-9-]+$","maxLength":8},"n":{"type":"integer","minimum":5},"when":{"type":"string","format":"date-time"},
		"kind":{"type":"string","enum":["x"]},"url":{"type":"string","format":"uri"},"flag":{"type":"boolean"},
		"list":{"type":"array"}}}`), &schema)
	c := New()
	c.AddServer(ServerTools{Server: "srv", Tools: []*mcp.Tool{
		{Name: "get_thing", InputSchema: schema},
		{Name: "noargs", InputSchema: map[string]any{"type": "object"}},
		{Name: "opt", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number", "maximum": 0.5}}}},
	}})
	for _, op := range c.Operations() {
		for p := range op.Params {
			_ = op.Params[p].Compile()
		}
		if len(op.Examples) == 0 {
			t.Errorf("%s has no example", op.Name)
		}
		for _, ex := range op.Examples {
			raw, _ := json.Marshal(ex.Request)
			env, err := aql.Parse(raw, aql.DefaultLimits())
			if err != nil {
				t.Fatalf("%s example: %v", op.Name, err)
			}
			if _, err := aql.Validate(op.Name, op.Params, env.Single.Params); err != nil {
				t.Errorf("%s example %s does not validate: %v", op.Name, raw, err)
			}
		}
	}
	if op, _ := c.Lookup("srv_get_thing"); op == nil || !op.Selectable || op.Category != policy.Read {
		t.Errorf("srv_get_thing: %+v", op)
	}
}

func TestIntrospect(t *testing.T) {
	c := New()
	if err := c.Add(IntrospectOperation()); err != nil {
		t.Fatal(err)
	}
	c.AddServer(ServerTools{Server: "a", Tools: []*mcp.Tool{tool("list_x", nil),
		{Name: "get_y", InputSchema: map[string]any{"type": "object"}, OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}}}})
	toolFor := func(*Operation) string { return "mcp_aql_read" }
	list := c.Introspect("operations", "", toolFor, map[string]any{"version": SpecVersion})
	if ops := list["operations"].([]OperationInfo); len(ops) != 3 || ops[0].Name != "a_get_y" {
		t.Errorf("list = %+v", ops)
	}
	if d := c.Introspect("operations", "nope", toolFor, nil); d["operation"] != nil {
		t.Errorf("unknown op = %v", d)
	}
	det := c.Introspect("operations", "a_get_y", toolFor, nil)["operation"].(OperationDetails)
	if det.Returns.Name != "AGetYResult" || det.MCPTool != "mcp_aql_read" {
		t.Errorf("details = %+v", det)
	}
	if ty := c.Introspect("types", "AGetYResult", toolFor, nil)["type"].(*TypeDetails); len(ty.Fields) != 1 {
		t.Errorf("output type = %+v", ty)
	}
	for _, name := range []string{"SemanticCategory", "OperationInput", "OperationResult", "OperationSuccess", "OperationFailure", "EndpointPermissions"} {
		if c.Introspect("types", name, toolFor, nil)["type"] == (*TypeDetails)(nil) {
			t.Errorf("protocol type %s missing", name)
		}
	}
	if c.Introspect("types", "Nope", toolFor, nil)["type"] != nil {
		t.Error("unknown type not null")
	}
}

func TestClassifyHint(t *testing.T) {
	c := New()
	c.AddServer(ServerTools{Server: "fs", Tools: []*mcp.Tool{
		{Name: "write_file", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{DestructiveHint: ptrTo(true)}},
		{Name: "readFile", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
	}})
	for _, tc := range []struct {
		hint string
		op   string
		cat  policy.Category
		by   string
	}{
		{"calling fs_write_file on notes/todo.txt to add one line", "fs_write_file", policy.Execute, ByOperation},
		{"then fs.readFile README.md", "fs_read_file", policy.Read, ByOperation},
		{"reading notes/today.md to plan", "", policy.Read, ByVerb},
		{"Listing items", "", policy.Read, ByVerb},
		{"deleting the cache", "", policy.Delete, ByVerb},
		{"running the tests", "", policy.Execute, ByVerb},
		{"writing a summary", "", policy.Update, ByVerb},
		{"a thought about the weather", "", "", ByDefault},
		{"", "", "", ByDefault},
	} {
		op, cat, by := c.ClassifyHint(tc.hint)
		name := ""
		if op != nil {
			name = op.Name
		}
		if name != tc.op || cat != tc.cat || by != tc.by {
			t.Errorf("ClassifyHint(%q) = %q %q %q, want %q %q %q", tc.hint, name, cat, by, tc.op, tc.cat, tc.by)
		}
	}
}
func ptrTo[T any](v T) *T { return &v }

// TestSecretParams: a parameter is sensitive (validation errors do not
// echo it) by its name, its schema, or the policy's secret_arguments —
// the notion the guard redacts by.
func TestSecretParams(t *testing.T) {
	cfg, err := policy.Parse([]byte("[safety]\nsecret_arguments = [\"db.*:dsn\"]\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	tool := &mcp.Tool{Name: "query", InputSchema: map[string]any{"type": "object", "properties": map[string]any{
		"dsn": map[string]any{"type": "string"}, "apiKey": map[string]any{"type": "string"},
		"pin_code": map[string]any{"type": "string", "writeOnly": true}, "sql": map[string]any{"type": "string"},
	}}}
	for _, tt := range []struct {
		pol  *policy.Policy
		want map[string]bool
	}{
		{nil, map[string]bool{"dsn": false, "api_key": true, "pin_code": true, "sql": false}},
		{pol, map[string]bool{"dsn": true, "api_key": true, "pin_code": true, "sql": false}},
	} {
		c := New()
		c.AddServer(ServerTools{Server: "db", Tools: []*mcp.Tool{tool}, Policy: tt.pol})
		op, ok := c.Lookup("db_query")
		if !ok {
			t.Fatal("no db_query")
		}
		for _, p := range op.Params {
			if want, ok := tt.want[p.Name]; ok && p.Sensitive != want {
				t.Errorf("policy %v: %s sensitive %v, want %v", tt.pol != nil, p.Name, p.Sensitive, want)
			}
		}
	}
}
