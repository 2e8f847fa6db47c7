package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/oauthtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRemoteServerBehindOAuth: a client's remote entry is wrapped by
// init (a local aqlguard that connects to the URL), the first call walks
// the OAuth consent (discovery, registration, PKCE; the browser is
// internal/fixture/testbrowser), calls go through the guard, an expired token is
// refreshed without asking again, unwrap restores the entry byte for
// byte, and no token is in aqlguard's log, its audit log, its state
// files but the grant's own 0600 one, or an MCP response.
func TestRemoteServerBehindOAuth(t *testing.T) {
	as := oauthtest.New()
	defer as.Close()
	as.TokenLife = 12 * time.Second // oauth2 refreshes 10s before expiry: live for ~2s

	dir := t.TempDir()
	browser := filepath.Join(dir, "testbrowser")
	if err := goBuild(browser, "./internal/fixture/testbrowser"); err != nil {
		t.Fatal(err)
	}
	clientFile := filepath.Join(dir, "claude_desktop_config.json")
	orig := `{
  "mcpServers": {
    "remote": {
      "type": "http",
      "url": "` + as.MCP() + `"
    }
  }
}
`
	writeFile(t, clientFile, orig)
	env := isolatedEnv(t, dir)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bins.aqlguard, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("aqlguard %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("init", "--client-config", clientFile)
	data, _ := os.ReadFile(clientFile)
	var cfg struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	entry := cfg.MCPServers["remote"]
	if entry.Command != bins.aqlguard || !strings.Contains(strings.Join(entry.Args, " "), "wrap --name remote") ||
		!strings.Contains(strings.Join(entry.Args, " "), "--url "+as.MCP()) {
		t.Fatalf("init did not wrap the remote entry:\n%s", data)
	}

	// Start the entry as the client would.
	cmd := exec.Command(entry.Command, entry.Args...)
	log := &syncBuffer{}
	cmd.Stderr = log
	cmd.Env = append(append([]string(nil), env...), "BROWSER="+browser)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "oauth-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting: %v\n%s", err, log.String())
	}
	defer cs.Close()
	// The server is new to aqlguard: its tools wait for the human's
	// review, given here at the command line as a user without a window
	// would give it.
	if out := run("pins", "approve", "remote"); !strings.Contains(out, "approved 1 tool(s) of the new server remote") {
		t.Fatalf("pins approve: %s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	var responses []string
	call := func() {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(resultText(t, res), "authorized") {
			t.Fatalf("whoami: %v %s\n%s", err, jsonString(res), log.String())
		}
		responses = append(responses, jsonString(res))
	}
	call()
	if as.Consents != 1 {
		t.Fatalf("%d consents, want 1", as.Consents)
	}
	time.Sleep(2500 * time.Millisecond) // the access token runs out
	call()
	if as.Refreshes < 1 || as.Consents != 1 {
		t.Fatalf("after expiry: %d refreshes, %d consents; want a refresh and no second consent\n%s", as.Refreshes, as.Consents, log.String())
	}
	if as.Calls != 2 {
		t.Fatalf("the server saw %d calls, want 2", as.Calls)
	}
	_ = cs.Close()
	_ = cmd.Wait()

	// Where the grant is kept: one 0600 file (this machine has no keyring).
	state := filepath.Join(dir, "home", ".local", "state", "aqlguard")
	grants, _ := filepath.Glob(filepath.Join(state, "oauth", "*.json"))
	if len(grants) != 1 {
		t.Fatalf("grants kept: %v", grants)
	}
	if fi, err := os.Stat(grants[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the grant's file: %v %v, want 0600", fi.Mode(), err)
	}
	// No token anywhere else: the log, the audit log and state, responses.
	var haystacks []string
	haystacks = append(haystacks, log.String(), strings.Join(responses, "\n"))
	_ = filepath.Walk(state, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && path != grants[0] {
			b, _ := os.ReadFile(path)
			haystacks = append(haystacks, string(b))
		}
		return nil
	})
	for _, tok := range as.Issued {
		for i, h := range haystacks {
			if strings.Contains(h, tok) {
				t.Fatalf("a token is in place %d (log, responses, then state files)", i)
			}
		}
	}
	if !strings.Contains(log.String(), "authorization was kept") {
		t.Errorf("the log does not say the authorization was kept:\n%s", log.String())
	}

	run("unwrap", "--client-config", clientFile)
	if got, _ := os.ReadFile(clientFile); string(got) != orig {
		t.Fatalf("unwrap is not byte-identical:\n%s\nwant\n%s", got, orig)
	}
}
