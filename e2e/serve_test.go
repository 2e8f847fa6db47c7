package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func serveConfig(extra string) string {
	return extra + `
[[servers]]
name = "ts"
trust_first_sight = true
command = ` + tomlString(bins.testserver) + `
`
}

func connectHTTP(t *testing.T, url string, hc *http.Client) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "0"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
}

// post sends one raw JSON-RPC message and returns the status and the
// session id the answer carries.
func post(t *testing.T, hc *http.Client, url, sessionID, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Header.Get("Mcp-Session-Id")
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// TestServeNeedsItsToken: by default every request must carry the bearer
// token aqlguard created (0600) in its state directory; nothing else gets
// in, and the token is in no log line.
func TestServeNeedsItsToken(t *testing.T) {
	s := startServeOn(t, serveConfig(""), "")
	path := filepath.Join(s.dir, "home", ".local", "state", "aqlguard", "serve.token")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("serve.token mode %#o", fi.Mode().Perm())
	}
	token := serveTokenOf(t, s.dir)
	if code, _ := post(t, http.DefaultClient, s.url, "", initializeBody); code != http.StatusUnauthorized {
		t.Errorf("without a token: %d", code)
	}
	if code, _ := post(t, bearerClient(strings.Repeat("x", len(token))), s.url, "", initializeBody); code != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d", code)
	}
	cs, err := connectHTTP(t, s.url, bearerClient(token))
	if err != nil {
		t.Fatalf("with the token: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.log.String(), token) {
		t.Error("the token is in aqlguard's log")
	}
}

// TestServeRefusesAnOpenNetworkWithoutAuth: auth = "none" on an address
// other machines can reach does not start.
func TestServeRefusesAnOpenNetworkWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	writeFile(t, cfg, serveConfig("[serve]\nauth = \"none\"\n"))
	cmd := exec.Command(bins.aqlguard, "serve", "--listen", "0.0.0.0:0", "--config", cfg)
	cmd.Env = isolatedEnv(t, dir)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing to serve without authentication") {
		t.Errorf("aqlguard serve on 0.0.0.0 without auth: %v\n%s", err, out)
	}
}

// TestServeOnAUnixSocket: --listen unix:PATH serves MCP on a socket only
// its owner can open.
func TestServeOnAUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "aqlguard.sock")
	s := startServeOn(t, serveConfig("[serve]\nauth = \"none\"\n"), "unix:"+sock)
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %#o", fi.Mode().Perm())
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	cs, err := connectHTTP(t, s.url, hc)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_items", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Errorf("a call over the socket: %v %s", err, jsonString(res))
	}
}

// TestServeBoundsSessions: other origins are refused, sessions beyond
// max_sessions are refused, an idle session ends, a deleted one too,
// and an execution its session left running is cancelled.
func TestServeBoundsSessions(t *testing.T) {
	s := startServeOn(t, serveConfig(`agent = "serve-agent"
[serve]
auth = "none"
max_sessions = 1
session_idle_timeout = "2s"
`), "")
	hc := http.DefaultClient
	if code, _ := post(t, hc, s.url, "", initializeBody, "Origin", "https://evil.example"); code != http.StatusForbidden {
		t.Errorf("a request from another origin: %d", code)
	}
	code, id := post(t, hc, s.url, "", initializeBody)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", code, id)
	}
	if code, _ := post(t, hc, s.url, "", initializeBody); code != http.StatusServiceUnavailable {
		t.Errorf("a second session beyond max_sessions = 1: %d", code)
	}
	time.Sleep(4 * time.Second) // idle beyond session_idle_timeout
	if code, _ := post(t, hc, s.url, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("an idle session after its timeout: %d", code)
	}

	// A deleted session makes room for the next one.
	cs, err := connectHTTP(t, s.url, hc)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close() // DELETE
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if code, _ := post(t, hc, s.url, "", initializeBody); code == http.StatusOK {
			return
		}
	}
	t.Error("a deleted session still counts against max_sessions")
}

// TestServeEndsExecutionsOfAClosedSession: an execution a session left
// running is cancelled when the session ends (MCP-AQL 2.3.3).
func TestServeEndsExecutionsOfAClosedSession(t *testing.T) {
	s := startServeOn(t, `mode = "all"
agent = "serve-agent"
[serve]
auth = "none"
`+serveConfig(""), "")
	cs, err := connectHTTP(t, s.url, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp_aql",
		Arguments: map[string]any{"operation": "execute_agent", "params": map[string]any{"element_name": "worker"}}})
	if err != nil || res.IsError {
		t.Fatalf("execute_agent: %v %s", err, jsonString(res))
	}
	cs.Close()
	cmd := exec.Command(bins.aqlguard, "audit", "export", "--config", filepath.Join(s.dir, "config.toml"))
	cmd.Env = isolatedEnv(t, s.dir)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		out, err := cmd.Output()
		if err == nil && strings.Contains(string(out), `"operation":"session_end"`) && strings.Contains(string(out), `"cancelled"`) {
			return
		}
		cmd = exec.Command(cmd.Path, cmd.Args[1:]...)
		cmd.Env = isolatedEnv(t, s.dir)
	}
	t.Error("the execution of the closed session was not cancelled")
}

// TestServeSendsACallsMessagesOnItsPOST: a 2025-11-25 client over HTTP
// that opens no GET stream (it is optional) still gets what belongs to
// its call, on the call's own POST, as a direct server sends it: the
// progress it asked for, the log messages the server sends meanwhile,
// and the server's elicitation and sampling requests, whose answers go
// back to the server.
func TestServeSendsACallsMessagesOnItsPOST(t *testing.T) {
	url := startServe(t, allowingServe(t)+everythingServer())
	c := &modernClient{}
	opts := c.options(false)
	var mu sync.Mutex
	var progress, logs int
	opts.ProgressNotificationHandler = func(context.Context, *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress++
		mu.Unlock()
	}
	//lint:ignore SA1019 logging is deprecated as of 2026-07-28, but this client speaks 2025-11-25, where servers log today
	opts.LoggingMessageHandler = func(context.Context, *mcp.LoggingMessageRequest) {
		mu.Lock()
		logs++
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*callTimeout)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(name string, args map[string]any, meta mcp.Meta) string {
		t.Helper()
		return resultText(t, mustCall(t, ctx, cs, name, args, meta))
	}
	//lint:ignore SA1019 as above
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel: %v", err)
	}
	call("test_tool_with_progress", map[string]any{}, mcp.Meta{"progressToken": "p-1"})
	call("test_tool_with_logging", map[string]any{}, nil)
	mu.Lock()
	if progress == 0 || logs == 0 {
		t.Errorf("without a GET stream, %d progress and %d log messages reached the client during their calls", progress, logs)
	}
	mu.Unlock()
	if got := call("test_elicitation", map[string]any{"message": "who?"}, nil); !strings.Contains(got, "ada") {
		t.Errorf("test_elicitation without a GET stream: %s", got)
	}
	if got := call("test_sampling", map[string]any{"prompt": "capital of France?"}, nil); !strings.Contains(got, "Paris") {
		t.Errorf("test_sampling without a GET stream: %s", got)
	}
}
