package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFailingServerSaysWhy (issue 31, item 3): a server that cannot
// start reaches the client with its cause in one line, as a client
// starts the entry `init` wrote: node running a script that fails as
// npx does for a package the registry lacks (its 404 line, not npm's
// noise after it), a URL that answers 404, a host that does not
// resolve. A credential the failing server printed is not in it.
func TestFailingServerSaysWhy(t *testing.T) {
	node := nodeBin(t)
	dir := t.TempDir()
	script := filepath.Join(dir, "npx-404.js")
	writeFile(t, script, `process.stderr.write(
  "npm error code E404\n" +
  "npm error 404 Not Found - GET https://registry.npmjs.org/@modelcontextprotocol%2fserver-nope?token=" + process.env.NPM_TOKEN + " - Not found\n" +
  "npm error 404\n" +
  "npm error 404  '@modelcontextprotocol/server-nope@*' is not in this registry.\n" +
  "npm error 404\n" +
  "npm error 404 Note that you can also install from a\n" +
  "npm error 404 tarball, folder, http url, or git url.\n" +
  "npm error A complete log of this run can be found in: /tmp/_logs/debug-0.log\n");
process.exit(1);
`)
	leak := filepath.Join(dir, "leak.js")
	writeFile(t, leak, `console.error("Error: 401 Unauthorized from https://ci:" + process.env.NPM_TOKEN + "@registry.example.com/pkg?token=" + process.env.NPM_TOKEN);
process.exit(1);
`)
	notFound := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer notFound.Close()

	for _, tt := range []struct {
		name string
		args []string
		want []string
	}{
		{"npx404", []string{"--", node, script},
			[]string{"process exited during start (exit code 1): npm error 404  '@modelcontextprotocol/server-nope@*' is not in this registry."}},
		{"leak", []string{"--", node, leak},
			[]string{"process exited during start (exit code 1): Error: 401 Unauthorized from https://[redacted]@registry.example.com/pkg?token=[redacted]"}},
		{"http404", []string{"--url", notFound.URL + "/mcp"}, []string{"the server answered HTTP 404 Not Found"}},
		{"nohost", []string{"--url", "https://aqlguard-test.invalid/mcp"}, []string{"aqlguard-test.invalid", "resolve"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			cmd := exec.Command(bins.aqlguard, append([]string{"wrap", "--name", tt.name, "--state-dir", filepath.Join(home, "state")}, tt.args...)...)
			cmd.Env = append(isolatedEnv(t, home), "NPM_TOKEN=npm_e2e0secret0token0value")
			var stderr syncBuffer
			cmd.Stderr = &stderr
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "aqlguard-e2e", Version: "0.0.0"}, nil).
				Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
			if err == nil {
				cs.Close()
				t.Fatal("the client connected to a server that cannot start")
			}
			t.Logf("the client sees: %v", err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the client's error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "npm_e2e0secret0token0value") {
				t.Errorf("the token reached the client: %v", err)
			}
			if strings.Count(err.Error(), "\n") > 0 {
				t.Errorf("the cause is more than one line: %q", err)
			}
		})
	}
}
