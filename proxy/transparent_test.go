package proxy

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTransparentNames(t *testing.T) {
	mk := func(server, tool string) *catalog.Operation {
		return &catalog.Operation{Name: server + "_" + tool, Server: server, Tool: &mcp.Tool{Name: tool}}
	}
	a, b, c, d := mk("fs", "read"), mk("git", "read"), mk("git", "log"), mk("x", VerifyTool)
	got := transparentNames([]*catalog.Operation{a, b, c, d})
	want := map[*catalog.Operation]string{a: "fs__read", b: "git__read", c: "log", d: "x__" + VerifyTool}
	for op, name := range want {
		if got[op] != name {
			t.Errorf("%s.%s: %q, want %q", op.Server, op.Tool.Name, got[op], name)
		}
	}
}

// TestTransparentNamesNeverShared: a prefixed name can be another tool's
// own name (a server offering "fs__read" beside fs's and git's "read");
// then that one is prefixed too, so no two tools are listed, or called,
// under one name.
func TestTransparentNamesNeverShared(t *testing.T) {
	mk := func(server, tool string) *catalog.Operation {
		return &catalog.Operation{Name: server + "_" + tool, Server: server, Tool: &mcp.Tool{Name: tool}}
	}
	fsRead, gitRead, other, plain := mk("fs", "read"), mk("git", "read"), mk("evil", "fs__read"), mk("evil", "list")
	for _, order := range [][]*catalog.Operation{{fsRead, gitRead, other, plain}, {other, plain, gitRead, fsRead}} {
		got := transparentNames(order)
		want := map[*catalog.Operation]string{fsRead: "fs__read", gitRead: "git__read", other: "evil__fs__read", plain: "list"}
		for op, name := range want {
			if got[op] != name {
				t.Errorf("%s.%s: %q, want %q", op.Server, op.Tool.Name, got[op], name)
			}
		}
	}
}

// TestTransparentNamesAgainstTheRule: on random sets of tools whose names
// chain into each other's prefixed names, transparentNames gives what
// applying the rule until nothing changes gives, and no two tools share
// a name unless one server lists a tool twice.
func TestTransparentNamesAgainstTheRule(t *testing.T) {
	servers := []string{"a", "b", "c"}
	tools := []string{"x", "a__x", "b__x", "c__a__x", "b__a__x", "a__b__x", VerifyTool, "a__" + VerifyTool}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var ops []*catalog.Operation
		for range 1 + rng.IntN(8) {
			s, tool := servers[rng.IntN(len(servers))], tools[rng.IntN(len(tools))]
			ops = append(ops, &catalog.Operation{Name: s + "_" + tool, Server: s, Tool: &mcp.Tool{Name: tool}})
		}
		got, want := transparentNames(ops), namesByTheRule(ops)
		seen := map[string]*catalog.Operation{}
		for _, op := range ops {
			if got[op] != want[op] {
				t.Fatalf("%s.%s: %q; the rule gives %q (tools %v)", op.Server, op.Tool.Name, got[op], want[op], describe(ops))
			}
			if o, dup := seen[got[op]]; dup && (o.Server != op.Server || o.Tool.Name != op.Tool.Name) {
				t.Fatalf("%q shown for %s.%s and %s.%s", got[op], o.Server, o.Tool.Name, op.Server, op.Tool.Name)
			}
			seen[got[op]] = op
		}
	}
}

// namesByTheRule applies the naming rule pass by pass until it changes
// nothing: the reference transparentNames is held to.
func namesByTheRule(ops []*catalog.Operation) map[*catalog.Operation]string {
	out := map[*catalog.Operation]string{}
	for _, op := range ops {
		out[op] = op.Tool.Name
	}
	for {
		users := map[string]int{}
		for _, name := range out {
			users[name]++
		}
		changed := false
		for _, op := range ops {
			if p := op.Server + "__" + op.Tool.Name; out[op] != p && (users[out[op]] > 1 || out[op] == VerifyTool) {
				out[op], changed = p, true
			}
		}
		if !changed {
			return out
		}
	}
}

func describe(ops []*catalog.Operation) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.Server+"."+op.Tool.Name)
	}
	return out
}

// BenchmarkTransparentNamesChain: a server whose tools are named so that
// each one's prefixed name is the next one's own (x, s__x, s__s__x, ...):
// every tool is renamed, one collision after another.
func BenchmarkTransparentNamesChain(b *testing.B) {
	var ops []*catalog.Operation
	name := "x"
	for range 2000 {
		ops = append(ops, &catalog.Operation{Server: "s", Tool: &mcp.Tool{Name: name}})
		name = "s__" + name
	}
	ops = append(ops, &catalog.Operation{Server: "t", Tool: &mcp.Tool{Name: "x"}})
	for b.Loop() {
		transparentNames(ops)
	}
}

// TestTransparentArgumentsRefused (issue 29, item 2): transparent mode
// forwarded whatever the model sent after the payload limits; now an
// argument the tool's schema does not declare, a value of another type
// than declared, a member named twice and a lookalike of a declared name
// are refused before the guard, in one sentence that names them and
// what the tool takes, and an honest call passes as sent.
func TestTransparentArgumentsRefused(t *testing.T) {
	op := func(schema string, allow bool) *catalog.Operation {
		var s any
		if err := json.Unmarshal([]byte(schema), &s); err != nil {
			t.Fatal(err)
		}
		return &catalog.Operation{Name: "ts_run", Server: "ts", Tool: &mcp.Tool{Name: "run", InputSchema: s},
			Input: catalog.InputShape(s, allow), AllowUndeclared: allow}
	}
	command := `{"type":"object","required":["command"],"properties":{"command":{"type":"string"}}}`
	counted := `{"type":"object","properties":{"path":{"type":"string"},"count":{"type":"integer"}}}`
	none := `{"type":"object"}`
	tests := []struct {
		name, schema, args string
		allow              bool
		want               string // the sentence; "" for a call that passes
	}{
		{name: "honest", schema: command, args: `{"command":"ls -l"}`},
		{name: "an extra path", schema: command, args: `{"command":"ls","path":"/etc/shadow"}`,
			want: "aqlguard did not send this call: run does not declare an argument path; it takes command."},
		{name: "two extras", schema: command, args: `{"command":"ls","path":"/x","cwd":"/"}`,
			want: "aqlguard did not send this call: run does not declare arguments cwd, path; it takes command."},
		{name: "a count as text", schema: counted, args: `{"count":"5"}`,
			want: "aqlguard did not send this call: the argument count of run must be an integer, not a string."},
		{name: "a member named twice", schema: command, args: `{"command":"ls","command":"rm -rf ~"}`,
			want: "aqlguard did not send this call: the argument command is given more than once; send each argument once."},
		{name: "a Cyrillic a in path", schema: counted, args: `{"p` + "\u0430" + `th":"/etc/shadow"}`,
			want: `aqlguard did not send this call: run does not declare an argument p\u0430th; it takes count, path.`},
		{name: "a tool that takes none", schema: none, args: `{"path":"/"}`,
			want: "aqlguard did not send this call: run does not declare an argument path; it takes no arguments."},
		{name: "a tool that takes none, called with none", schema: none, args: ``},
		{name: "allowed by the server's entry", schema: command, args: `{"command":"ls","path":"/x"}`, allow: true},
		{name: "not an object", schema: command, args: `["ls"]`,
			want: "aqlguard did not send this call: the arguments of run must be a JSON object, not an array."},
		{name: "not JSON", schema: command, args: `{"command":`,
			want: "aqlguard did not send this call: the arguments of run are not one valid JSON object."},
		{name: "over a limit", schema: command, args: `{"command":"` + strings.Repeat("x", 2<<20) + `"}`,
			want: "aqlguard did not send this call: payload exceeds request_size limit of 1048576."},
		{name: "not UTF-8", schema: command, args: "{\"command\":\"\xff\"}",
			want: "aqlguard did not send this call: invalid character encoding in request."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, err := transparentArguments("run", op(tt.schema, tt.allow), json.RawMessage(tt.args), aql.DefaultLimits())
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if len(args) != strings.Count(tt.args, ":") {
					t.Fatalf("not forwarded as sent: %v", args)
				}
				return
			}
			if err == nil {
				t.Fatalf("forwarded %v", args)
			}
			res := argumentsRefused("run", err)
			if !res.IsError || len(res.Content) != 1 {
				t.Fatalf("not a tool error: %+v", res)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != tt.want {
				t.Errorf("said %q\n want %q", got, tt.want)
			}
		})
	}
}

// TestUndeclaredThroughTheEndpoints: the MCP-AQL endpoints and
// passthrough refuse an undeclared parameter; a server whose entry allows
// undeclared arguments gets it forwarded as sent, beside the declared
// ones in its own spelling, and what aqlguard consumes stays behind.
func TestUndeclaredThroughTheEndpoints(t *testing.T) {
	schema := map[string]any{"type": "object", "properties": map[string]any{"filePath": map[string]any{"type": "string"}}}
	cat := catalog.New()
	for _, allow := range []bool{false, true} {
		server := map[bool]string{false: "closed", true: "open"}[allow]
		cat.AddServer(catalog.ServerTools{Server: server, Tools: []*mcp.Tool{{Name: "read", InputSchema: schema}}, AllowUndeclared: allow})
	}
	params := map[string]any{"file_path": "/a", "extra": json.Number("1"), catalog.TokenParam: "tok"}
	closed, _ := cat.Lookup("closed_read")
	if _, err := validate(closed, params); err == nil || err.Code != aql.CodeUnknownParam || !strings.Contains(err.Message, "extra") {
		t.Fatalf("closed: %v", err)
	}
	open, _ := cat.Lookup("open_read")
	got, err := validate(open, params)
	if err != nil {
		t.Fatal(err)
	}
	args := downstreamArgs(open, got)
	if len(args) != 2 || args["filePath"] != "/a" || args["extra"] != json.Number("1") {
		t.Fatalf("forwarded %v", args)
	}
	if _, err := validate(open, map[string]any{"file_path": 7}); err == nil || err.Code != aql.CodeInvalidType {
		t.Fatalf("a declared parameter's type on an open server: %v", err)
	}
}

// BenchmarkTransparentArguments prices reading a transparent call's
// arguments (the limits, the scan, the schema check) for an edit of the
// filesystem server; BenchmarkParseArguments is the reading alone.
func BenchmarkTransparentArguments(b *testing.B) {
	op, raw := benchEdit(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := transparentArguments("edit_file", op, raw, aql.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseArguments(b *testing.B) {
	_, raw := benchEdit(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := aql.ParseArguments(raw, aql.DefaultLimits()); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEdit(b *testing.B) (*catalog.Operation, json.RawMessage) {
	var schema any
	if err := json.Unmarshal([]byte(`{"type":"object","required":["path","edits"],"properties":{"dryRun":{"type":"boolean"},
		"path":{"type":"string"},"edits":{"type":"array","items":{"type":"object","required":["oldText","newText"],
		"properties":{"newText":{"type":"string"},"oldText":{"type":"string"}}}}}}`), &schema); err != nil {
		b.Fatal(err)
	}
	op := &catalog.Operation{Tool: &mcp.Tool{Name: "edit_file"}, Input: catalog.InputShape(schema, false)}
	return op, json.RawMessage(`{"path":"/home/alice/projects/app/src/main.go","edits":[{"oldText":"func main() {","newText":"func main() {\n\tlog.Println(\"start\")"}],"dryRun":false}`)
}
