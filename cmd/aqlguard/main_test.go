package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/store"
)

// TestRun drives the verbs through run, as main does, on a state
// directory of the test's own: exit codes and what a user reads.
func TestRun(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no user config: embedded defaults
	dir := t.TempDir()
	badConfig := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(badConfig, []byte("mode = \"semantic\"\n[safety]\nmax_autonomous_steps = \"ten\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	goodConfig := filepath.Join(t.TempDir(), "good.toml")
	if err := os.WriteFile(goodConfig, []byte("mode = \"transparent\"\n[safety]\ndeny = [\"*.drop_*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Issue 29, item 8: a short file keeps the shipped rules, and policy
	// check says where each rule in force comes from.
	twoLines := filepath.Join(t.TempDir(), "two.toml")
	if err := os.WriteFile(twoLines, []byte("agent = \"me\"\n[[servers]]\nname = \"shell\"\ncommand = \"mcp-shell\"\n"+
		"[agents.me]\ndeny = [\"*halt*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noInherit := filepath.Join(t.TempDir(), "alone.toml")
	if err := os.WriteFile(noInherit, []byte("[safety]\ninherit = false\nrefuse = [\"drop_*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// One blocked agent to list and lift.
	st, err := store.Open(context.Background(), dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.Update(context.Background(), func(tx *store.Tx) error {
		if err := tx.PutChallenge(store.Challenge{ID: "ver_1", Principal: "worker", ExpiresAt: now.Add(time.Hour)}); err != nil {
			return err
		}
		if err := tx.PutBlock(store.Block{Principal: "worker", VerificationID: "ver_1", Reason: "rm -rf /", BlockedAt: now,
			Call:               `shell.run_command {"command":"rm -rf /"}`,
			ChallengeExpiresAt: now.Add(time.Hour)}); err != nil {
			return err
		}
		// Standing approvals: one whose session ended, one whose aqlguard
		// is gone (a pid no process has), one still standing.
		host, _ := os.Hostname()
		for _, a := range []store.Approval{
			{ID: "appr_ended", Principal: "worker", Session: "s1", Server: "fs", Tool: "write", EndedAt: now},
			{ID: "appr_gone", Principal: "worker", Session: "s2", Server: "fs", Tool: "move", Process: host + "/2147483646"},
			{ID: "appr_live", Principal: "worker", Session: "s3", Server: "fs", Tool: "copy", Process: app.ProcessName()},
		} {
			a.CreatedAt, a.ExpiresAt = now, now.Add(time.Hour)
			if err := tx.PutApproval(a); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()
	ocsfExport := filepath.Join(t.TempDir(), "audit.ocsf.jsonl")
	if err := os.WriteFile(ocsfExport, []byte(`{"category_uid":6,"class_uid":6003,"metadata":{"uid":"1"}}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a substring of what is printed, "" for anything
		stderr string
		absent string // what stdout must not say ("" for no such check)
	}{
		{name: "version", args: []string{"version"}, stdout: "aqlguard "},
		{name: "help", args: []string{"help"}, stdout: "usage: aqlguard <verb>"},
		{name: "an unknown verb", args: []string{"frobnicate"}, code: 2, stderr: `unknown verb "frobnicate"`},
		{name: "a blocked agent is listed", args: []string{"blocks", "list", "--state-dir", dir}, stdout: "worker"},
		{name: "with the call that blocked it", args: []string{"blocks", "list", "--state-dir", dir}, stdout: `shell.run_command {"command":"rm -rf /"}`},
		{name: "unblock without an agent", args: []string{"unblock", "--state-dir", dir}, code: 2, stderr: "usage: aqlguard unblock"},
		{name: "unblock an agent that is not blocked", args: []string{"unblock", "--state-dir", dir, "nobody"}, code: 1,
			stderr: `"nobody" is not blocked`},
		{name: "unblock", args: []string{"unblock", "--state-dir", dir, "worker"}, stdout: "unblocked worker"},
		{name: "and it stays lifted", args: []string{"unblock", "--state-dir", dir, "worker"}, code: 1, stderr: "is not blocked"},
		{name: "the audit log verifies", args: []string{"audit", "verify", "--state-dir", dir}, stdout: "audit chain verified: 1 records"},
		{name: "the override is in it", args: []string{"audit", "export", "--state-dir", dir}, stdout: `"operation":"unblock"`},
		{name: "a config error names its line", args: []string{"policy", "check", "--config", badConfig}, code: 1,
			stderr: "bad.toml:3"},
		{name: "a good config checks", args: []string{"policy", "check", "--config", goodConfig}, stdout: "transparent"},
		{name: "policy check lists a rule of the file with its line", args: []string{"policy", "check", "--config", goodConfig},
			stdout: goodConfig + `:3 (safety.deny[0])`},
		{name: "and the shipped rules beneath a two-line file", args: []string{"policy", "check", "--config", twoLines},
			stdout: `shipped default.toml:`},
		{name: "and an agent table's", args: []string{"policy", "check", "--config", twoLines},
			stdout: twoLines + `:6 (agents.me.deny[0])`},
		{name: "inherit = false is said loudly", args: []string{"policy", "check", "--config", noInherit},
			stdout: "shipped rules NOT in force (inherit = false)",
			stderr: noInherit + `:2: safety.inherit: warning: inherit = false: the rules aqlguard ships (default.toml) are not in force`},
		{name: "naming the shipped rules not in force, without failing --strict", args: []string{"policy", "check", "--strict", "--config", noInherit},
			stderr: `shipped rule(s) not in force: deny "*rm -rf /"`, absent: `shipped default.toml`},
		{name: "a config named but missing is an error, not the defaults",
			args: []string{"policy", "check", "--config", filepath.Join(dir, "missing.toml")}, code: 1, stderr: "missing.toml"},
		{name: "pins reset on an empty state", args: []string{"pins", "reset", "--state-dir", dir, "--every"}, stdout: "forgot 0 pin(s)"},
		{name: "-h lists every verb", args: []string{"-h"}, stdout: "approvals list|revoke    the standing"},
		{name: "--help too", args: []string{"--help"}, stdout: "audit list|show|export|tail|verify|seal|report"},
		{name: "help VERB shows its flags", args: []string{"help", "doctor"}, stdout: "-timeout"},
		{name: "--version", args: []string{"--version"}, stdout: "aqlguard dev (commit "},
		{name: "a word serve does not take", args: []string{"serve", "frob"}, code: 2,
			stderr: "aqlguard serve: unexpected \"frob\": serve takes flags, or `token add|list|revoke` first"},
		{name: "serve token without a verb", args: []string{"serve", "token"}, code: 2, stderr: "aqlguard serve token add NAME"},
		{name: "serve token with another verb", args: []string{"serve", "token", "frob"}, code: 2, stderr: `unknown verb "frob"`},
		{name: "a command audit does not have", args: []string{"audit", "frob"}, code: 2,
			stderr: `"frob" is not one of its commands; audit takes list, show, export, tail, verify, seal, report`},
		{name: "a word after audit export", args: []string{"audit", "export", "everything", "--state-dir", dir}, code: 2,
			stderr: `aqlguard audit export: unexpected "everything"`},
		{name: "doctor takes no words", args: []string{"doctor", "now"}, code: 2, stderr: "doctor takes flags only"},
		{name: "an audit report", args: []string{"audit", "report", "--state-dir", dir, "-o", filepath.Join(dir, "r.html")},
			stderr: "r.html: 1 records from "},
		{name: "a report is not an export", args: []string{"audit", "verify", filepath.Join(dir, "r.html")}, code: 1,
			stderr: "is an HTML file (an audit report?)"},
		{name: "an OCSF export is not a broken chain", args: []string{"audit", "verify", ocsfExport}, code: 1,
			stderr: "is an OCSF export (--format ocsf)"},
		{name: "approvals of ended sessions are not listed as standing", args: []string{"approvals", "list", "--state-dir", dir},
			stdout: "appr_live", absent: "appr_gone"},
		{name: "--all says why they ended", args: []string{"approvals", "list", "--all", "--state-dir", dir},
			stdout: "ended with its session"},
		{name: "--all names the aqlguard that is gone", args: []string{"approvals", "list", "--all", "--state-dir", dir},
			stdout: "/2147483646, is gone)"},
		{name: "a bad log level", args: []string{"serve", "--log-level", "loud", "--listen", "127.0.0.1:0", "--state-dir", dir},
			code: 2, stderr: "--log-level"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, strings.NewReader(""), &out, &errOut)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tt.stdout) {
				t.Errorf("stdout %q does not say %q", out.String(), tt.stdout)
			}
			if tt.absent != "" && strings.Contains(out.String(), tt.absent) {
				t.Errorf("stdout %q says %q", out.String(), tt.absent)
			}
			if !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("stderr %q does not say %q", errOut.String(), tt.stderr)
			}
		})
	}
}
