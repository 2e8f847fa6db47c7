package e2e

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requireLandlock skips, loudly, where this kernel has no Landlock with
// TCP rules (ABI 4); AQLGUARD_REQUIRE_LANDLOCK=1 makes that a failure.
func requireLandlock(t *testing.T) {
	t.Helper()
	out, _, _ := aqlguardCLI(t, t.TempDir(), "sandbox", "show")
	if strings.Contains(out, "Landlock ABI") && !strings.Contains(out, "the network: TCP rules need ABI 4") {
		return
	}
	msg := "SKIP (the sandbox is not tested end to end): this kernel has no Landlock with TCP rules: " + strings.TrimSpace(out)
	if os.Getenv("AQLGUARD_REQUIRE_LANDLOCK") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// TestSandboxRefusesTheMisbehavingServer: internal/fixture/sandboxprobe reads
// ~/.ssh/id_rsa, writes in the home outside its directory, connects to a
// loopback port it was not granted and has a shell try the same, at its
// start and on a call. Under the default sandbox (auto) every attempt is
// refused by the kernel, the failed result tells the client what was
// refused and how to grant it, and the audit log has the server's start
// with its grant and each refusal; with mode = "off" it does all of it.
func TestSandboxRefusesTheMisbehavingServer(t *testing.T) {
	requireLandlock(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	run := func(t *testing.T, mode string) (text string, isError bool, g *guard) {
		dir := t.TempDir()
		secret := filepath.Join(dir, "home", ".ssh", "id_rsa")
		if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
			t.Fatal(err)
		}
		writeFile(t, secret, "-----BEGIN FAKE KEY-----\n")
		work := t.TempDir()
		g, err := launchGuard(t, guardOptions{Dir: dir, Config: `mode = "transparent"
[[servers]]
name = "probe"
command = ` + tomlString(bins.probe) + `
args = ["-dir", ` + tomlString(work) + `, "-connect", ` + tomlString(ln.Addr().String()) + `]
trust_first_sight = true
effects = { probe = "read" }
[servers.sandbox]
mode = "` + mode + `"
`})
		if err != nil {
			t.Fatal(err)
		}
		res, err := g.callRaw("probe", map[string]any{})
		if err != nil {
			t.Fatalf("calling probe: %v", err)
		}
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text + "\n"
			}
		}
		if _, err := os.Stat(filepath.Join(work, "call.txt")); err != nil {
			t.Errorf("%s: the probe did not write in its own directory: %v", mode, err)
		}
		return text, res.IsError, g
	}

	t.Run("off", func(t *testing.T) {
		accepted.Store(0)
		text, isError, g := run(t, "off")
		if isError || strings.Contains(text, "denied") || strings.Count(text, ": ok") != 7 {
			t.Errorf("unconfined, the probe was refused something:\n%s", text)
		}
		for _, f := range []string{"probe-start.txt", "probe-call.txt", "shell-start.txt", "shell-call.txt"} {
			if _, err := os.Stat(filepath.Join(g.dir, "home", f)); err != nil {
				t.Errorf("unconfined: %v", err)
			}
		}
		if n := accepted.Load(); n < 2 {
			t.Errorf("unconfined: %d connections reached the listener, want at least 2", n)
		}
	})
	t.Run("auto", func(t *testing.T) {
		accepted.Store(0)
		text, isError, g := run(t, "auto")
		t.Logf("the client got:\n%s", text)
		if !isError {
			t.Error("the probe's result is not an error")
		}
		for _, want := range []string{
			"read " + filepath.Join(g.dir, "home", ".ssh", "id_rsa") + ": open",
			"shell read " + filepath.Join(g.dir, "home", ".ssh", "id_rsa") + ": cat:",
			"write " + filepath.Join(g.dir, "home", "probe-call.txt") + ": open",
			"connect " + ln.Addr().String() + ": dial tcp",
			// What the client is told, and how to grant it.
			// ~/.ssh is a sensitive place: no grant is suggested for it.
			"aqlguard: the sandbox of the server probe refused " + filepath.Join(g.dir, "home", ".ssh", "id_rsa") + " (SSH private keys",
			"aqlguard does not suggest granting it",
			"aqlguard sandbox grant probe " + filepath.Join(g.dir, "home", "probe-call.txt"),
			"refused a connection to " + ln.Addr().String(),
			"aqlguard sandbox grant probe " + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port),
		} {
			if !strings.Contains(text, want) {
				t.Errorf("the result lacks %q", want)
			}
		}
		if n := strings.Count(text, "permission denied") + strings.Count(text, "Permission denied"); n < 6 {
			t.Errorf("%d refusals said, want every attempt but its own directory's (6)", n)
		}
		if n := accepted.Load(); n != 0 {
			t.Errorf("confined: %d connections reached the listener", n)
		}
		for _, f := range []string{"probe-start.txt", "probe-call.txt", "shell-start.txt", "shell-call.txt"} {
			if _, err := os.Stat(filepath.Join(g.dir, "home", f)); err == nil {
				t.Errorf("confined: the probe wrote ~/%s", f)
			}
		}
		out, errOut, code := admin(t, g, "audit", "export")
		if code != 0 {
			t.Fatalf("audit export: %s", errOut)
		}
		for _, want := range []string{"server_start", "confined", "grant: read", "sandbox_refused", "aqlguard sandbox grant probe"} {
			if !strings.Contains(out, want) {
				t.Errorf("the audit log lacks %q", want)
			}
		}
		if strings.Contains(text, "aqlguard sandbox grant probe "+filepath.Join(g.dir, "home", ".ssh")) {
			t.Error("the client was told how to grant ~/.ssh")
		}
		if strings.Contains(out, "BEGIN FAKE KEY") || strings.Contains(text, "BEGIN FAKE KEY") {
			t.Error("the secret's content got out")
		}
	})
}
