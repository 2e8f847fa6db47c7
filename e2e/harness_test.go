// Package e2e holds aqlguard's end-to-end tests: a real aqlguard binary between
// a go-sdk MCP client and real downstream MCP servers.
//
// The harness is harness*_test.go: this file builds, in TestMain, once per
// `go test` run:
//   - aqlguard (./cmd/aqlguard): bins.aqlguard
//   - our test server (./internal/fixture/testserver): bins.testserver
//   - go-sdk's conformance everything-server: bins.everything
//
// If aqlguard does not build, every test that starts it fails at once with the
// compiler's output, and the package fails even if no such test ran.
//
// Environment (set by .ci/run; see also fsServer and nodeBin):
//
//	AQLGUARD_E2E_NODE          path of a Node.js >= 22 binary
//	AQLGUARD_E2E_FS_SERVER     @modelcontextprotocol/server-filesystem: its dist/index.js
//	                           (run with AQLGUARD_E2E_NODE) or an executable
//	AQLGUARD_E2E_REQUIRE_NPM=1 fail, instead of skip, when the two above are unset
//
//lint:file-ignore U1000 the helpers here serve the scenario tests, which need not use them all
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// protocolVersion is what the harness's clients ask for by default.
const protocolVersion = "2025-11-25"

// callTimeout bounds every MCP request the harness makes (connect, list, call).
const callTimeout = 30 * time.Second

// bins holds the absolute paths of the binaries TestMain built.
var bins struct {
	aqlguard   string // aqlguard CLI
	testserver string // internal/fixture/testserver
	everything string // go-sdk conformance everything-server (stdio by default, -http ADDR serves at /)
	taskserver string // internal/fixture/taskserver: a 2025-11-25 server that runs its tool as a task
	resserver  string // internal/fixture/resserver: a 2025-11-25 server whose resource updates are not to be believed
	probe      string // internal/fixture/sandboxprobe: a server that tries what its sandbox must refuse

	aqlguardErr error // why aqlguard did not build; startGuard fails with it
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.list"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run()) // `go test -list`: nothing to build
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "aqlguard-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)

	bins.aqlguard = filepath.Join(dir, "aqlguard")
	bins.testserver = filepath.Join(dir, "testserver")
	bins.everything = filepath.Join(dir, "everything-server")
	bins.taskserver = filepath.Join(dir, "taskserver")
	bins.resserver = filepath.Join(dir, "resserver")
	bins.probe = filepath.Join(dir, "sandboxprobe")
	builds := []struct {
		out, pkg string
		err      error
	}{
		{bins.aqlguard, "./cmd/aqlguard", nil},
		{bins.testserver, "./internal/fixture/testserver", nil},
		{bins.everything, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server", nil},
		{bins.taskserver, "./internal/fixture/taskserver", nil},
		{bins.resserver, "./internal/fixture/resserver", nil},
		{bins.probe, "./internal/fixture/sandboxprobe", nil},
	}
	start := time.Now()
	var wg sync.WaitGroup
	for i := range builds {
		wg.Go(func() { builds[i].err = goBuild(builds[i].out, builds[i].pkg) })
	}
	wg.Wait()
	fmt.Fprintf(os.Stderr, "e2e: built test binaries in %s\n", time.Since(start).Round(time.Millisecond))

	bins.aqlguardErr = builds[0].err
	for _, b := range builds[1:] {
		if b.err != nil {
			fmt.Fprintf(os.Stderr, "e2e: HARNESS BROKEN: %v\n", b.err)
			return 1
		}
	}

	code := m.Run()
	if bins.aqlguardErr != nil {
		fmt.Fprintf(os.Stderr, "\ne2e: FAIL: aqlguard does not build, so no end-to-end test of it ran:\n%v\n", bins.aqlguardErr)
		code = 1
	}
	return code
}

// goBuild runs `go build -o out pkg` from the repository root.
func goBuild(out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = ".." // the package directory is e2e/
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s: %v\n%s", filepath.Base(out), pkg, err, b)
	}
	return nil
}
