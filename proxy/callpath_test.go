package proxy

import (
	"context"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTheGuardForwardsStraightDownstream (issue 33, item 1): the
// function the front hands the guard for a tool call is the downstream
// side's own (downstream.Pool.ToolCall), so a call's arguments go link →
// relay → proxy → guard → downstream and enter no package twice: the
// relay is not on the way from the guard to the server.
func TestTheGuardForwardsStraightDownstream(t *testing.T) {
	cfg, err := policy.Parse([]byte("[safety]\n[[servers]]\nname = \"ts\"\ncommand = \"true\"\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	sh := &Shared{Config: cfg, Guard: &guard.Guard{Policy: pol}}
	f := &Front{Guard: sh.Guard, shared: sh, Session: &relay.Session{ID: "s-test"}, Pool: &downstream.Pool{}}
	op := &catalog.Operation{Name: "ts_echo", Server: "ts", Tool: &mcp.Tool{Name: "echo"}}
	req := f.guardedCall(context.Background(), op, map[string]any{"text": "hi"}, "", nil)
	if got := sourceOf(req.Forward); !strings.HasSuffix(got, "/proxy/downstream/forward.go") {
		t.Errorf("the guard forwards through code of %s, want the downstream side's (proxy/downstream/forward.go)", got)
	}
}

// sourceOf is the file whose code fn runs (a closure inlined into its
// caller is still its maker's code, in its maker's file).
func sourceOf(fn any) string {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	file, _ := f.FileLine(f.Entry())
	return filepath.ToSlash(file)
}
