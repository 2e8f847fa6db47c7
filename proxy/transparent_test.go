package proxy

import (
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
