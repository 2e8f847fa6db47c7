package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
)

// TestEveryVerbsHelp (issue 31, item 9): `aqlguard VERB --help` and
// `aqlguard help VERB` exit 0 for every verb, print its usage, and open
// no state (help audit works where no state database exists yet).
func TestEveryVerbsHelp(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, ".local", "state"))
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			var out, errOut bytes.Buffer
			if code := run(args, strings.NewReader(""), &out, &errOut); code != 0 {
				t.Errorf("aqlguard %s: exit %d\n%s%s", strings.Join(args, " "), code, out.String(), errOut.String())
			}
			if out.Len()+errOut.Len() == 0 {
				t.Errorf("aqlguard %s printed nothing", strings.Join(args, " "))
			}
		}
	}
	for _, sub := range auditCommands {
		var out, errOut bytes.Buffer
		if code := run([]string{"audit", sub, "--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
			t.Errorf("aqlguard audit %s --help: exit %d\n%s", sub, code, errOut.String())
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "state", "aqlguard")); err == nil {
		t.Error("asking for help created a state directory")
	}
	// After "--", -h is the wrapped command's: not help.
	if !asksForHelp([]string{"--name", "x", "-h"}) || asksForHelp([]string{"--name", "x", "--", "npx", "-h"}) {
		t.Error("asksForHelp reads past --")
	}
}

// TestUnknownVerbSaysWhichItMeant (issue 31, item 9).
func TestUnknownVerbSaysWhichItMeant(t *testing.T) {
	for word, want := range map[string]string{
		"audt":   `(did you mean "audit"?)`,
		"polciy": `(did you mean "policy"?)`,
		"Doctor": `(did you mean "doctor"?)`,
		"serv":   `(did you mean "serve"?)`,
		"pol":    `(did you mean "policy"?)`,
		"xyzzy":  "",
	} {
		var out, errOut bytes.Buffer
		if code := run([]string{word}, strings.NewReader(""), &out, &errOut); code != 2 {
			t.Errorf("aqlguard %s: exit %d", word, code)
		}
		first, _, _ := strings.Cut(errOut.String(), "\n")
		if want != "" && !strings.Contains(first, want) || want == "" && strings.Contains(first, "did you mean") {
			t.Errorf("aqlguard %s: %q, want %q", word, first, want)
		}
	}
	var out, errOut bytes.Buffer
	run([]string{"audit", "lsit"}, strings.NewReader(""), &out, &errOut)
	if !strings.Contains(errOut.String(), `(did you mean "list"?)`) {
		t.Errorf("aqlguard audit lsit: %s", errOut.String())
	}
}

// TestServeHelpNamesServeToken (issue 31, item 9): serve's clients'
// tokens are managed by `serve token`, and serve's help says so.
func TestServeHelpNamesServeToken(t *testing.T) {
	var out, errOut bytes.Buffer
	run([]string{"serve", "--help"}, strings.NewReader(""), &out, &errOut)
	if !strings.Contains(errOut.String(), "aqlguard serve token add|list|revoke") {
		t.Errorf("serve --help:\n%s", errOut.String())
	}
}

// TestInitConfigIsDeprecated (issue 31, item 9): init and unwrap name a
// client's file with --client-config; the old --config still does, and
// says it is deprecated, since --config is aqlguard's own config
// everywhere else.
func TestInitConfigIsDeprecated(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"notes": {"command": "npx", "args": ["-y", "notes-server"]}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--client-config", "--config"} {
		var out, errOut bytes.Buffer
		code := run([]string{"init", flag, file, "--client", "cursor", "--dry-run", "--state-dir", filepath.Join(dir, "state")}, strings.NewReader(""), &out, &errOut)
		if code != 0 || !strings.Contains(out.String(), "notes") {
			t.Errorf("init %s: exit %d\n%s%s", flag, code, out.String(), errOut.String())
		}
		deprecated := strings.Contains(errOut.String(), "--config FILE is deprecated for init") && strings.Contains(errOut.String(), "use --client-config")
		if deprecated != (flag == "--config") {
			t.Errorf("init %s: stderr %q", flag, errOut.String())
		}
	}
}

// TestAnchorsWarnOnlyForSyslog (issue 31, item 9): no system log is
// said on the start line, and warned about only where [audit.forward]
// sends the log to syslog.
func TestAnchorsWarnOnlyForSyslog(t *testing.T) {
	plain := policy.Default()
	syslogged := policy.Default()
	syslogged.Audit.Forward = &config.Forward{To: "syslog", Address: "tls://siem.example.com:6514"}
	otlp := policy.Default()
	otlp.Audit.Forward = &config.Forward{To: "otlp", URL: "https://collector.example.com/v1/logs"}
	for _, tt := range []struct {
		name string
		cfg  *config.Config
		off  string
		said string
		warn bool
	}{
		{"a system log", plain, "", "system log", false},
		{"none, nothing forwarded", plain, "Unix syslog delivery error", "off (Unix syslog delivery error)", false},
		{"none, forwarded to otlp", otlp, "Unix syslog delivery error", "off (Unix syslog delivery error)", false},
		{"none, forwarded to syslog", syslogged, "Unix syslog delivery error", "off (Unix syslog delivery error)", true},
	} {
		if said, warn := app.AnchorsSaid(tt.cfg, tt.off); said != tt.said || warn != tt.warn {
			t.Errorf("%s: %q %v, want %q %v", tt.name, said, warn, tt.said, tt.warn)
		}
	}
}
