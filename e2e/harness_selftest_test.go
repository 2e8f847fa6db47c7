//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all

// Harness: smoke tests of the harness's own pieces (see harness_test.go).

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ---------------------------------------------------------------------------
// Smoke tests of the harness's own pieces (no aqlguard involved)

// connectDirect connects a go-sdk client straight to an MCP server.
func connectDirect(t *testing.T, tr mcp.Transport) *mcp.ClientSession {
	t.Helper()
	trackSources()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, nil).
		Connect(ctx, tr, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

func TestHarnessTestServerDirect(t *testing.T) {
	exercise := func(t *testing.T, cs *mcp.ClientSession, logPath string) {
		t.Helper()
		if got := cs.InitializeResult().ServerInfo.Name; got != "smoke" {
			t.Errorf("server name = %q, want smoke (-name)", got)
		}
		byName := map[string]*mcp.Tool{}
		for _, tool := range listTools(t, cs) {
			byName[tool.Name] = tool
		}
		for _, name := range []string{"get_item", "list_items", "create_note", "update_note", "delete_note",
			"run_command", "echo", "fail", "big_output", "slow", "drop_database", "fetchRemoteData",
			"read-file", "Read_File", "nested"} {
			if byName[name] == nil {
				t.Errorf("tool %s missing", name)
			}
		}
		if a := byName["get_item"].Annotations; a == nil || !a.ReadOnlyHint {
			t.Errorf("get_item annotations = %+v, want readOnlyHint", a)
		}
		if a := byName["delete_note"].Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Errorf("delete_note annotations = %+v, want destructiveHint", a)
		}
		if a := byName["run_command"].Annotations; a != nil {
			t.Errorf("run_command annotations = %+v, want none", a)
		}

		ctx := context.Background()
		call := func(name string, args any) *mcp.CallToolResult {
			t.Helper()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return res
		}
		if got := resultText(t, call("echo", map[string]any{"message": "hello ✓"})); got != "hello ✓" {
			t.Errorf("echo = %q", got)
		}
		var item map[string]any
		if err := json.Unmarshal([]byte(resultText(t, call("get_item", map[string]any{"id": "a-1"}))), &item); err != nil || item["name"] != "Item a-1" {
			t.Errorf("get_item = %v, %v", item, err)
		}
		if res := call("fail", nil); !res.IsError || resultText(t, res) != "deliberate failure" {
			t.Errorf("fail = %s", jsonString(res))
		}
		// The raw handler sees arguments the schema forbids: no SDK validation.
		call("get_item", map[string]any{"id": 42, "extra": true})

		calls := readCalls(t, logPath)
		var got []string
		for _, c := range calls {
			got = append(got, c.Tool+" "+string(c.Arguments))
		}
		want := []string{`echo {"message":"hello ✓"}`, `get_item {"id":"a-1"}`, `fail {}`, `get_item {"extra":true,"id":42}`}
		if !slices.Equal(got, want) {
			t.Errorf("call log:\n got %q\nwant %q", got, want)
		}
	}

	t.Run("stdio", func(t *testing.T) {
		logPath := testserverLog(t)
		var stderr syncBuffer
		cmd := exec.Command(bins.testserver, "-log", logPath, "-name", "smoke", "-stderr-noise")
		cmd.Stderr = &stderr
		cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
		exercise(t, cs, logPath)
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if !strings.Contains(stderr.String(), "stderr noise line 1") {
			t.Errorf("-stderr-noise: stderr = %q", stderr.String())
		}
	})

	t.Run("http", func(t *testing.T) {
		logPath := testserverLog(t)
		url := startTestServerHTTP(t, "-log", logPath, "-name", "smoke")
		if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/mcp") {
			t.Fatalf("url = %q", url)
		}
		cs := connectDirect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1})
		defer cs.Close()
		exercise(t, cs, logPath)
	})

	t.Run("fail-start", func(t *testing.T) {
		out, err := exec.Command(bins.testserver, "-fail-start").CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "deliberate start failure") {
			t.Errorf("-fail-start: err=%v output=%q", err, out)
		}
	})

	t.Run("hang-start", func(t *testing.T) {
		cmd := exec.Command(bins.testserver, "-hang-start")
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 200 * time.Millisecond}, nil)
		if err == nil {
			t.Fatal("connect to a hanging server succeeded")
		}
		// The failed connect closed stdin; the server kept hanging until SIGTERM.
		if ps := cmd.ProcessState; ps == nil || ps.Exited() {
			t.Errorf("want the hanging server terminated by a signal, got %v", ps)
		}
	})
}

// TestHarnessEverythingServerDirect checks the go-sdk everything-server build.
func TestHarnessEverythingServerDirect(t *testing.T) {
	cs := connectDirect(t, &mcp.CommandTransport{Command: exec.Command(bins.everything)})
	defer cs.Close()
	if n := len(listTools(t, cs)); n < 20 {
		t.Errorf("everything-server lists %d tools, want >= 20", n)
	}
}

// TestHarnessFSServerDirect checks the npm filesystem server runs under Node 22.
func TestHarnessFSServerDirect(t *testing.T) {
	command, args := fsServer(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hi from disk"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd := exec.Command(command, append(args, root)...)
	cmd.Stderr = &stderr
	cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
	defer cs.Close()
	defer func() {
		if t.Failed() {
			t.Logf("fs server stderr:\n%s", stderr.String())
		}
	}()
	names := map[string]bool{}
	for _, tool := range listTools(t, cs) {
		names[tool.Name] = true
	}
	if !names["read_text_file"] && !names["read_file"] {
		t.Fatalf("fs server tools lack read_text_file/read_file: %v", names)
	}
	tool := "read_text_file"
	if !names[tool] {
		tool = "read_file"
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool,
		Arguments: map[string]any{"path": filepath.Join(root, "hello.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := resultText(t, res); !strings.Contains(got, "hi from disk") {
		t.Errorf("%s = %q", tool, got)
	}
}

// serveTokenOf reads the bearer token `aqlguard serve` created in the
// state directory of a run in dir (isolatedEnv).
func serveTokenOf(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "home", ".local", "state", "aqlguard", "serve.token"))
	if err != nil {
		t.Fatalf("the serve token: %v", err)
	}
	return strings.TrimSpace(string(b))
}

// bearerClient is an HTTP client that sends token as a bearer token.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
