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
