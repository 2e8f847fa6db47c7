package injection_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/aqlguard/aqlguard/injection"
)

// liveServer is a real server whose tools/list is the honest corpus.
type liveServer struct {
	name string
	cmd  func(t *testing.T) *exec.Cmd // nil: not available here
}

// TestHonestServersLive runs the real servers that are installed here and
// scans every tool they list, with every other server's tools named as
// other tools: no definition may give a High finding. The npm servers
// come from the e2e environment (AQLGUARD_E2E_NODE,
// AQLGUARD_E2E_FS_SERVER, AQLGUARD_E2E_EVERYTHING_SERVER, see
// .ci/env.sh); the go-sdk's example servers are built from the module
// cache, and this repository's testserver from its source.
func TestHonestServersLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs servers")
	}
	bin := t.TempDir()
	node := os.Getenv("AQLGUARD_E2E_NODE")
	npm := func(env string, args ...string) func(t *testing.T) *exec.Cmd {
		script := os.Getenv(env)
		if node == "" || script == "" {
			return nil
		}
		return func(t *testing.T) *exec.Cmd { return exec.Command(node, append([]string{script}, args...)...) }
	}
	built := func(pkg string, args ...string) func(t *testing.T) *exec.Cmd {
		return func(t *testing.T) *exec.Cmd {
			out := filepath.Join(bin, filepath.Base(pkg))
			if _, err := os.Stat(out); err != nil {
				build := exec.Command("go", "build", "-o", out, pkg)
				if msg, err := build.CombinedOutput(); err != nil {
					t.Skipf("cannot build %s: %v\n%s", pkg, err, msg)
				}
			}
			return exec.Command(out, args...)
		}
	}
	const examples = "github.com/modelcontextprotocol/go-sdk/examples/server/"
	servers := []liveServer{
		{"npm-filesystem", npm("AQLGUARD_E2E_FS_SERVER", t.TempDir())},
		{"npm-everything", npm("AQLGUARD_E2E_EVERYTHING_SERVER")},
		{"go-sdk-everything", built(examples + "everything")},
		{"go-sdk-memory", built(examples + "memory")},
		{"go-sdk-sequentialthinking", built(examples + "sequentialthinking")},
		{"go-sdk-toolschemas", built(examples + "toolschemas")},
		{"testserver", built("github.com/aqlguard/aqlguard/internal/fixture/testserver", "-rug-pull")},
	}
	lists := map[string][]*mcp.Tool{}
	for _, s := range servers {
		if s.cmd == nil {
			t.Logf("%s: not installed here (see .ci/env.sh)", s.name)
			continue
		}
		lists[s.name] = listTools(t, s.cmd(t))
	}
	total, low := 0, 0
	for name, tools := range lists {
		var own, others []string
		for _, tool := range tools {
			own = append(own, tool.Name)
		}
		for other, ts := range lists {
			if other != name {
				for _, tool := range ts {
					others = append(others, tool.Name)
				}
			}
		}
		for _, tool := range tools {
			raw, err := json.Marshal(tool)
			if err != nil {
				t.Fatal(err)
			}
			fs, err := injection.ScanToolJSON(raw, injection.Options{OtherTools: others, OwnTools: own})
			if err != nil {
				t.Fatalf("%s/%s: %v", name, tool.Name, err)
			}
			total++
			if len(fs) > 0 {
				low++
			}
			for _, f := range fs {
				if f.Confidence == injection.High {
					t.Errorf("%s/%s: %v\n    excerpt: %s", name, tool.Name, f, f.Excerpt)
				} else {
					t.Logf("%s/%s: %v", name, tool.Name, f)
				}
			}
		}
	}
	t.Logf("%d definitions of %d servers scanned; %d with a finding (none may be High)", total, len(lists), low)
}

// TestRugPullLive: the testserver's rug pull rewrites echo with an
// instruction to read an SSH key into a new argument; the definition it
// lists then is held back (a reproduction of issue 29 item 4's
// "a tool with a high-confidence finding stays out of tools/list").
func TestRugPullLive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a server")
	}
	out := filepath.Join(t.TempDir(), "testserver")
	if msg, err := exec.Command("go", "build", "-o", out, "github.com/aqlguard/aqlguard/internal/fixture/testserver").CombinedOutput(); err != nil {
		t.Fatalf("building the testserver: %v\n%s", err, msg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "injection-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(out, "-rug-pull")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()
	echo := func() *mcp.Tool {
		for tool, err := range session.Tools(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if tool.Name == "echo" {
				return tool
			}
		}
		t.Fatal("no echo tool")
		return nil
	}
	highest := func(tool *mcp.Tool) injection.Confidence {
		raw, _ := json.Marshal(tool)
		fs, err := injection.ScanToolJSON(raw, injection.Options{})
		if err != nil {
			t.Fatal(err)
		}
		c := injection.Confidence(0)
		for _, f := range fs {
			c = max(c, f.Confidence)
		}
		return c
	}
	if c := highest(echo()); c == injection.High {
		t.Fatalf("echo is High before the rug pull")
	}
	if _, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "change_echo", Arguments: map[string]any{"kind": "widen"}}); err != nil {
		t.Fatal(err)
	}
	if c := highest(echo()); c != injection.High {
		t.Errorf("the widened echo is %v, want high", c)
	}
}

func listTools(t *testing.T, cmd *exec.Cmd) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	session, err := mcp.NewClient(&mcp.Implementation{Name: "injection-test", Version: "0"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	defer session.Close()
	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("%s: listing tools: %v", cmd.Path, err)
		}
		tools = append(tools, tool)
	}
	return tools
}
