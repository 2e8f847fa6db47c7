//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all

// Harness: the downstream servers: our test server, npm servers (see harness_test.go).

package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ---------------------------------------------------------------------------
// The test server

// loggedCall is one line of the test server's call log.
type loggedCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"` // as received; null if absent
}

// testserverLog returns a fresh path for a test server call log (pass it as
// `-log PATH`, or AQLGUARD_TESTSERVER_LOG=PATH in the server's env).
func testserverLog(t *testing.T) string {
	return filepath.Join(t.TempDir(), "testserver-calls.jsonl")
}

// readCalls returns the calls the test server logged at path, in order. A
// missing file means the server never started and yields no calls. Each line
// is fsync'd before the server answers, so after a response arrives its
// call is in the log.
func readCalls(t *testing.T, path string) []loggedCall {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var calls []loggedCall
	for line := range strings.Lines(string(b)) {
		var c loggedCall
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("bad call log line %q: %v", line, err)
		}
		calls = append(calls, c)
	}
	return calls
}

// startTestServerHTTP runs the test server with `-http 127.0.0.1:0 args...`
// and returns its Streamable HTTP endpoint (http://127.0.0.1:PORT/mcp).
// Cleanup stops it; its stderr is logged if the test fails.
func startTestServerHTTP(t *testing.T, args ...string) string {
	t.Helper()
	trackSources()
	cmd := exec.Command(bins.testserver, append([]string{"-http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(&log, sc.Text())
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				urlc <- u
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("testserver -http stderr:\n%s", log.String())
		}
	})
	select {
	case u := <-urlc:
		return u
	case <-done:
		t.Fatalf("testserver -http exited before listening:\n%s", log.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("testserver -http did not report its address in 10s:\n%s", log.String())
	}
	return ""
}

// ---------------------------------------------------------------------------
// npm's filesystem server

// fsServer returns how to run @modelcontextprotocol/server-filesystem: append
// the allowed directories to args. AQLGUARD_E2E_FS_SERVER is either the
// package's dist/index.js (run with nodeBin) or an executable. If it is unset
// the test is skipped, loudly, or fails when AQLGUARD_E2E_REQUIRE_NPM=1.
func fsServer(t *testing.T) (command string, args []string) {
	t.Helper()
	p := requireEnv(t, "AQLGUARD_E2E_FS_SERVER")
	if strings.HasSuffix(p, ".js") || strings.HasSuffix(p, ".mjs") {
		return nodeBin(t), []string{p}
	}
	return p, nil
}

// nodeBin returns AQLGUARD_E2E_NODE, the Node.js (>= 22) binary, with the
// same skip/fail rule as fsServer.
func nodeBin(t *testing.T) string {
	t.Helper()
	return requireEnv(t, "AQLGUARD_E2E_NODE")
}

func requireEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v != "" {
		if _, err := os.Stat(v); err != nil {
			t.Fatalf("%s=%s: %v", name, v, err)
		}
		return v
	}
	if os.Getenv("AQLGUARD_E2E_REQUIRE_NPM") == "1" {
		t.Fatalf("%s is not set but AQLGUARD_E2E_REQUIRE_NPM=1", name)
	}
	msg := fmt.Sprintf("SKIPPING: Node.js or an npm @modelcontextprotocol server is not installed; run .ci/run (%s unset)", name)
	fmt.Fprintf(os.Stderr, "\n!!!!!!!! %s: %s !!!!!!!!\n\n", t.Name(), msg)
	t.Skip(msg)
	return ""
}
