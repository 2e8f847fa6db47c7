package proxy

import (
	"math/rand/v2"
	"testing"

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
