package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNameCollisionsAcrossWraps (issue 29, item 5): a client config with
// two `aqlguard wrap` entries runs one aqlguard per server on one state
// directory. Each knows only its own server, yet the client shows both
// servers' tools side by side: the second reports, at start, the tool
// and the prompt both servers name and that its server's name passes
// for the other's; doctor and policy check --servers say the same from
// what the processes recorded. Before, nothing was said anywhere.
func TestNameCollisionsAcrossWraps(t *testing.T) {
	if bins.aqlguardErr != nil {
		t.Fatal(bins.aqlguardErr)
	}
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	ctx := context.Background()
	// wrap starts one entry as the client would, lists its tools and
	// prompts as a client does at start, and ends it; its log is
	// returned once it has exited.
	wrap := func(name string, server ...string) string {
		t.Helper()
		args := append([]string{"wrap", "--name", name, "--agent", "claude-desktop", "--state-dir", state, "--",
			bins.testserver, "-name", name}, server...)
		cmd := exec.Command(bins.aqlguard, args...)
		cmd.Env = isolatedEnv(t, dir)
		log := &syncBuffer{}
		cmd.Stderr = log
		cs := connectDirect(t, &mcp.CommandTransport{Command: cmd})
		listTools(t, cs)
		if _, err := cs.ListPrompts(ctx, nil); err != nil {
			t.Fatalf("%s: prompts/list: %v", name, err)
		}
		if err := cs.Close(); err != nil {
			t.Fatalf("%s did not exit cleanly: %v\n%s", name, err, log)
		}
		return log.String()
	}
	first := wrap("filesystem", "-tool-prefix", "fs_", "-named-tools", "read_file", "-prompts", "review")
	second := wrap("fi1esystem", "-tool-prefix", "h_", "-named-tools", "read_file", "-prompts", "review")

	for _, want := range []string{
		`tool \"read_file\" is offered by servers fi1esystem and filesystem`,
		`prompt \"review\" is offered by servers fi1esystem and filesystem`,
		`server names \"fi1esystem\" and \"filesystem\" pass for each other`,
	} {
		if n := strings.Count(second, want); n != 1 {
			t.Errorf("the second wrap's log has %s %d times, want once:\n%s", want, n, second)
		}
	}
	if !strings.Contains(second, "recorded_by_other_processes") {
		t.Errorf("the second wrap's log does not say where the other server runs:\n%s", second)
	}
	if strings.Contains(first, "read_file") || strings.Contains(first, "fi1esystem") {
		t.Errorf("the first wrap reported a server that did not exist yet:\n%s", first)
	}

	out, errOut, _ := aqlguardCLI(t, dir, "doctor", "--state-dir", state) // the dialog check fails here: no display
	for _, want := range []string{
		`agent claude-desktop: tool "read_file" is offered by servers fi1esystem and filesystem`,
		`agent claude-desktop: prompt "review" is offered by servers fi1esystem and filesystem`,
		`agent claude-desktop: server names "fi1esystem" and "filesystem" pass for each other`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor does not say %s:\n%s%s", want, out, errOut)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if (strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "FAIL")) && strings.Contains(line, "names") {
			t.Errorf("doctor's name checks are not warnings: %s", line)
		}
	}

	// policy check --servers, for a config of the client's first server:
	// what it offers now, and the second as the state recorded it.
	config := filepath.Join(dir, "config.toml")
	writeFile(t, config, renderConfig(t, `
agent = "claude-desktop"
[[servers]]
name = "filesystem"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-tool-prefix", "fs_", "-named-tools", "read_file", "-prompts", "review"]
`, dir))
	out, errOut, code := aqlguardCLI(t, dir, "policy", "check", "--servers", "--config", config, "--state-dir", state)
	if code != 0 || !strings.Contains(out, "3 name report(s)") {
		t.Errorf("policy check --servers: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`servers: tool "read_file" is offered by servers fi1esystem and filesystem`,
		`servers: prompt "review" is offered by servers fi1esystem and filesystem`,
		`servers: server names "filesystem" and "fi1esystem" pass for each other`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("policy check --servers does not say %s:\n%s", want, errOut)
		}
	}
}
