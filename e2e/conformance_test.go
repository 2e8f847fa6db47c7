package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/internal/fixture/long"
)

// TestConformanceSuite runs the official MCP conformance suite (npm
// @modelcontextprotocol/conformance, server mode) against the go-sdk
// everything-server four ways: directly (Streamable HTTP), through
// `aqlguard serve` in transparent mode with the server behind it on stdio
// and over Streamable HTTP, and through aqlguard's stdio front (`aqlguard
// serve` in front of `aqlguard run` in front of the server). Each check must end as it ends
// directly: aqlguard adds a guard, not a different server. The human
// allows every call, so the guard's questions are part of the path.
func TestConformanceSuite(t *testing.T) {
	long.Test(t)
	suite := requireEnv(t, "AQLGUARD_E2E_CONFORMANCE")
	node := nodeBin(t)

	direct := freeAddr(t)
	ev := exec.Command(bins.everything, "-http", direct, "-stateless=false")
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ev.Process.Kill(); _ = ev.Wait() })
	waitListening(t, direct)
	want := runConformance(t, node, suite, "http://"+direct+"/")

	human := allowingServe(t)

	t.Run("serve", func(t *testing.T) {
		url := startServe(t, human+everythingServer())
		compareConformance(t, want, runConformance(t, node, suite, url))
	})
	t.Run("serve, server over HTTP", func(t *testing.T) {
		url := startServe(t, human+"[[servers]]\nname = \"everything\"\ntrust_first_sight = true\nurl = \"http://"+direct+"/\"\n")
		compareConformance(t, want, runConformance(t, node, suite, url))
	})
	t.Run("stdio front", func(t *testing.T) {
		inner := filepath.Join(t.TempDir(), "inner.toml")
		writeFile(t, inner, "state_dir = "+tomlString(filepath.Join(filepath.Dir(inner), "state"))+"\n"+human+
			everythingServer())
		url := startServe(t, human+"[[servers]]\nname = \"inner\"\ntrust_first_sight = true\ncommand = "+tomlString(bins.aqlguard)+
			"\nargs = [\"run\", \"--config\", "+tomlString(inner)+"]\n")
		compareConformance(t, want, runConformance(t, node, suite, url))
	})
}

// TestConformanceSuite2026 runs what the conformance suite (0.2 alpha)
// requires of a server at protocol 2026-07-28 against the go-sdk
// everything-server directly (stateless Streamable HTTP, its default
// revision) and through `aqlguard serve` four ways: with the server
// behind it on stdio and over stateless Streamable HTTP, where aqlguard
// speaks 2026-07-28 to it (server/discover), and with the server over
// stateful Streamable HTTP, where it speaks only 2025-11-25 (the go-sdk
// takes 2026-07-28 only statelessly), so aqlguard falls back to
// initialize and translates. Through the first two every check must end
// as it ends directly, extensions and pending scenarios included.
// Through the third, every check but the ones named in translationGaps,
// which a 2025-11-25 leg cannot pass (the test fails if one of them
// starts to pass, so the list stays true). The suite is also run
// directly against that 2025-11-25 server, to show what aqlguard's
// translation makes of it.
func TestConformanceSuite2026(t *testing.T) {
	long.Test(t)
	suite := requireEnv(t, "AQLGUARD_E2E_CONFORMANCE_2026")
	node := nodeBin(t)
	modern, legacy := freeAddr(t), freeAddr(t)
	for _, srv := range []*exec.Cmd{
		exec.Command(bins.everything, "-http", modern),
		exec.Command(bins.everything, "-http", legacy, "-stateless=false"),
	} {
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	}
	waitListening(t, modern)
	waitListening(t, legacy)
	args := []string{"--requirements", "2026-07-28"}
	want := runConformance(t, node, suite, "http://"+modern+"/", args...)
	human := allowingServe(t)

	t.Run("2026-07-28 server on stdio", func(t *testing.T) {
		got := runConformance(t, node, suite, startServe(t, human+everythingServer()), args...)
		compareConformance2026(t, want, got, nil)
	})
	t.Run("2026-07-28 server over HTTP", func(t *testing.T) {
		url := startServe(t, human+"[[servers]]\nname = \"everything\"\ntrust_first_sight = true\nurl = \"http://"+modern+"/\"\n")
		compareConformance2026(t, want, runConformance(t, node, suite, url, args...), nil)
	})
	t.Run("2025-11-25 server over HTTP", func(t *testing.T) {
		direct := runConformance(t, node, suite, "http://"+legacy+"/", args...)
		t.Logf("directly, the 2025-11-25 server passes %d of %d checks", count(direct, "SUCCESS"), len(direct))
		url := startServe(t, human+"[[servers]]\nname = \"everything\"\ntrust_first_sight = true\nurl = \"http://"+legacy+"/\"\n")
		got := runConformance(t, node, suite, url, args...)
		if diffs := conformanceDiffs(want, got, translationGaps); len(diffs) > 0 && onlyTimed(diffs) {
			// A probe that waits under a second for its answer, on a
			// session the suite opens with capabilities of its own
			// (aqlguard starts that session's server connection then,
			// with a 2025-11-25 handshake), can time out on a loaded
			// machine: it gets a second run, and must pass that one.
			t.Logf("only timed probes differ; running the suite again:\n  %s", strings.Join(diffs, "\n  "))
			got = runConformance(t, node, suite, url, args...)
		}
		compareConformance2026(t, want, got, translationGaps)
	})
}

// timedProbes are the checks whose probe reads the answer within a fixed
// window of 500 to 600 ms (the suite's own choice).
var timedProbes = []string{
	"server-stateless/sep-2575-http-server-no-independent-requests-on-stream",
	"server-stateless/sep-2575-server-no-log-without-loglevel",
}

// onlyTimed reports whether every difference is one of timedProbes.
func onlyTimed(diffs []string) bool {
	for _, d := range diffs {
		timed := false
		for _, p := range timedProbes {
			timed = timed || strings.HasPrefix(d, p+":")
		}
		if !timed {
			return false
		}
	}
	return true
}

// translationGaps are the checks a 2025-11-25 leg cannot pass. A
// 2025-11-25 server asks the client in requests of its own, under no name
// but aqlguard's, so a check that expects the server's name, or answers
// under it without being asked, sees aqlguard's; and the go-sdk's
// 2025-11-25 fallback for input_required runs one round only, for any
// client, so a third round never comes.
var translationGaps = map[string]bool{
	"input-required-result-basic-elicitation/sep-2322-elicitation-incomplete": true,
	"input-required-result-basic-elicitation/sep-2322-elicitation-complete":   true,
	"input-required-result-multi-round/sep-2322-multi-round-r2":               true,
	"input-required-result-multi-round/sep-2322-multi-round-r3":               true,
}

// compareConformance2026 fails on every conformanceDiffs.
func compareConformance2026(t *testing.T, want, got map[string]string, gaps map[string]bool) {
	t.Helper()
	if diffs := conformanceDiffs(want, got, gaps); len(diffs) > 0 {
		t.Errorf("2026-07-28 conformance differs through aqlguard:\n  %s", strings.Join(diffs, "\n  "))
	}
}

// conformanceDiffs lists every check that ends otherwise than directly,
// but for those in gaps, which must still end otherwise.
func conformanceDiffs(want, got map[string]string, gaps map[string]bool) []string {
	var diffs []string
	for check, w := range want {
		g := got[check]
		switch {
		case gaps[check] && g == w:
			diffs = append(diffs, fmt.Sprintf("%s: now %s as directly; take it off the known differences", check, g))
		case !gaps[check] && g != w:
			diffs = append(diffs, fmt.Sprintf("%s: %s through aqlguard, %s directly", check, orNone(g), w))
		}
	}
	for check, g := range got {
		if _, ok := want[check]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s through aqlguard, not run directly", check, g))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func count(checks map[string]string, status string) int {
	n := 0
	for _, s := range checks {
		if s == status {
			n++
		}
	}
	return n
}

// allowingServe is the config of an `aqlguard serve` without
// authentication whose human allows every question, for tests that
// measure the path, not the refusals.
func allowingServe(t *testing.T) string {
	t.Helper()
	allow := filepath.Join(t.TempDir(), "allow.sh")
	writeFile(t, allow, "#!/bin/sh\ncat >/dev/null\necho allow\n")
	if err := os.Chmod(allow, 0o700); err != nil {
		t.Fatal(err)
	}
	return "[serve]\nauth = \"none\"\n[verify]\nchannel = \"command\"\ncommand = [" + tomlString(allow) + "]\n"
}

// served is a running `aqlguard serve`.
type served struct {
	url, dir, listen string
	log              *syncBuffer
	mark             string // in the environment of aqlguard and what it starts (processMark)
}

// startServe runs `aqlguard serve` on config (in an isolated HOME) and
// returns its MCP URL.
func startServe(t *testing.T, config string) string {
	t.Helper()
	return startServeOn(t, config, "").url
}

// startServeOn is startServe listening on listen (default: a free
// loopback port).
func startServeOn(t *testing.T, config, listen string) *served {
	t.Helper()
	return startServeEnv(t, config, listen)
}

// startServeEnv is startServeOn with env (KEY=VALUE) added to aqlguard's.
func startServeEnv(t *testing.T, config, listen string, env ...string) *served {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	writeFile(t, path, config)
	tcp := !strings.HasPrefix(listen, "unix:")
	if listen == "" {
		listen = freeAddr(t)
	}
	cmd := exec.Command(bins.aqlguard, "serve", "--listen", listen, "--config", path)
	mark := processMark()
	cmd.Env = append(append(isolatedEnv(t, dir), env...), mark)
	log := &syncBuffer{}
	cmd.Stderr = log
	diesWithTest(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("aqlguard serve did not stop within 10s of SIGINT")
		}
		checkMarked(t, mark)
		if t.Failed() {
			t.Logf("aqlguard serve log:\n%s", log.String())
		}
	})
	s := &served{dir: dir, listen: listen, log: log, mark: mark}
	if tcp {
		waitListening(t, listen)
		s.url = "http://" + listen + "/mcp"
	} else {
		for deadline := time.Now().Add(20 * time.Second); !strings.Contains(log.String(), `msg=listening`); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("aqlguard serve did not listen:\n%s", log.String())
			}
		}
		s.url = "http://localhost/mcp"
	}
	return s
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("nothing listens on %s", addr)
}

// runConformance runs the suite against url and returns each check's
// status by "scenario/check".
func runConformance(t *testing.T, node, suite, url string, args ...string) map[string]string {
	t.Helper()
	out := t.TempDir()
	cmd := exec.Command(node, append([]string{suite, "server", "--url", url, "-o", out}, args...)...)
	cmd.Env = os.Environ()
	printed, err := cmd.CombinedOutput()
	// The suite exits non-zero when a check fails; the checks say which.
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("running the conformance suite: %v", err)
	}
	scenario := regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT`)
	dirs, _ := os.ReadDir(out)
	got := map[string]string{}
	for _, d := range dirs {
		m := scenario.FindStringSubmatch(d.Name())
		if m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(out, d.Name(), "checks.json"))
		if err != nil {
			t.Fatal(err)
		}
		var checks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			t.Fatalf("%s: %v", d.Name(), err)
		}
		for _, c := range checks {
			// A scenario may run one check several times (once per case):
			// the second is "id#2", and so on.
			key := m[1] + "/" + c.ID
			for n := 2; ; n++ {
				if _, seen := got[key]; !seen {
					break
				}
				key = fmt.Sprintf("%s/%s#%d", m[1], c.ID, n)
			}
			got[key] = c.Status
		}
	}
	if len(got) == 0 {
		t.Fatalf("the conformance suite reported no checks:\n%s", printed)
	}
	summary(t, url, got, printed)
	return got
}

func summary(t *testing.T, url string, got map[string]string, printed []byte) {
	counts := map[string]int{}
	for _, s := range got {
		counts[s]++
	}
	t.Logf("conformance against %s: %v", url, counts)
	sc := bufio.NewScanner(strings.NewReader(string(printed)))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "Total:") {
			t.Logf("  %s", sc.Text())
		}
	}
}

// compareConformance fails on every check that ends otherwise than it
// does against the server directly.
func compareConformance(t *testing.T, want, got map[string]string) {
	t.Helper()
	var diffs []string
	for k, w := range want {
		if g := got[k]; g != w && !(answeredAsJSON[k] && g == "INFO") {
			diffs = append(diffs, fmt.Sprintf("%s: %s through aqlguard, %s directly", k, orNone(g), w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s through aqlguard, not run directly", k, g))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("%d checks differ:\n%s", len(diffs), strings.Join(diffs, "\n"))
	}
}

// answeredAsJSON are the checks that see aqlguard answer a POST whose
// request has nothing to send before its answer with a JSON body, where
// the go-sdk opens an event stream for every request. Both are the
// transport's to choose; the suite marks JSON "INFO: SSE streaming is
// optional". A stream that failed would still be a WARNING or FAILURE.
var answeredAsJSON = map[string]bool{"server-sse-multiple-streams/server-sse-streams-functional": true}

func orNone(s string) string {
	if s == "" {
		return "missing"
	}
	return s
}
