package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// unitFor renders the unit `service install --dry-run` prints, for the
// binary at bin.
func unitFor(t *testing.T, bin string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cmdService([]string{"install", "--dry-run", "--binary", bin}, &out, &errb); code != 0 {
		t.Fatalf("service install --dry-run: %d\n%s", code, errb.String())
	}
	unit, ok := strings.CutPrefix(out.String(), "# /etc/systemd/system/aqlguard.service\n")
	if !ok {
		t.Fatalf("the dry run does not start with the unit's path:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "nothing was changed") {
		t.Errorf("the dry run does not say it changed nothing: %s", errb.String())
	}
	return unit
}

// systemdAnalyze is systemd-analyze; outside CI its absence skips the
// test, loudly; in CI (.ci/run installs systemd) it fails it.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is missing in CI: .ci/run installs the systemd package")
		}
		t.Skip("SKIPPED: systemd-analyze is not installed (apt-get install systemd); the unit is not verified")
	}
	return p
}

// TestServiceUnitVerifies: the unit passes systemd-analyze verify with
// no complaint at all (an unknown or misspelt key is only a warning
// there, so any output fails the test), and systemd's own security
// analysis rates its exposure low.
func TestServiceUnitVerifies(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("systemd units are Linux only")
	}
	analyze := systemdAnalyze(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := unitFor(t, exe)
	for _, want := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
		"CapabilityBoundingSet=\n", "StateDirectory=aqlguard", "StateDirectoryMode=0700", "User=aqlguard", "UMask=0077"} {
		if !strings.Contains(unit, want) {
			t.Errorf("the unit lacks %q", want)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "aqlguard.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s\n%s", err, out, unit)
	}
	// A misspelt key is caught by the same check (so it checks).
	bad := filepath.Join(dir, "bad", "aqlguard.service")
	_ = os.Mkdir(filepath.Dir(bad), 0o755)
	_ = os.WriteFile(bad, []byte(strings.Replace(unit, "ProtectSystem=", "ProtectSytem=", 1)), 0o644)
	if out, _ := exec.Command(analyze, "verify", bad).CombinedOutput(); !bytes.Contains(out, []byte("ProtectSytem")) {
		t.Errorf("systemd-analyze verify did not notice a misspelt key: %s", out)
	}
	out, err = exec.Command(analyze, "security", "--offline=yes", path).CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Overall exposure level for aqlguard.service: ([0-9.]+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no exposure level in:\n%s", out)
	}
	if level, _ := strconv.ParseFloat(string(m[1]), 64); level > 2.0 {
		t.Errorf("systemd rates the unit's exposure %.1f (of 10); want 2.0 or less:\n%s", level, out)
	} else {
		t.Logf("systemd-analyze security: exposure %.1f of 10", level)
	}
}

// TestServiceInstallRefuses: bad values never reach the unit, and a
// machine that cannot take the service is told why (here: no systemd, or
// not root), with nothing written.
func TestServiceInstallRefuses(t *testing.T) {
	for _, args := range [][]string{
		{"install", "--dry-run", "--listen", "127.0.0.1:1 --config /tmp/evil.toml"},
		{"install", "--dry-run", "--binary", "relative/aqlguard"},
		{"install", "--dry-run", "--binary", "/usr/bin/aqlguard\nExecStartPre=/bin/sh"},
		{"install", "--dry-run", "--user", "Root"},
		{"install", "--dry-run", "--binary", "/opt/%h/aqlguard"},
		{"uninstall"},
	} {
		var out, errb bytes.Buffer
		if code := cmdService(args, &out, &errb); code != 2 || out.Len() > 0 {
			t.Errorf("%q: exit %d, out %q", args, code, out.String())
		}
	}
	why := cannotInstall()
	if why == "" {
		t.Skip("this machine could take the service (root, systemd running): not installing it from a test")
	}
	var out, errb bytes.Buffer
	if code := cmdService([]string{"install", "--binary", "/usr/local/bin/aqlguard"}, &out, &errb); code != 1 {
		t.Fatalf("install on a machine that cannot take it: exit %d", code)
	}
	if !strings.Contains(errb.String(), why) || !strings.Contains(errb.String(), "--dry-run prints the unit") {
		t.Errorf("the refusal does not say why and what to do: %s", errb.String())
	}
	if out.Len() > 0 {
		t.Errorf("something was written: %s", out.String())
	}
}

// TestServiceUserCannotBeReachedByTheAgent installs the files under a
// directory, makes the state directory as systemd does for the unit
// (StateDirectory=, StateDirectoryMode=0700, owned by the service user,
// UMask=0077 for what the service writes), and tries, as another
// unprivileged user (the agent's), to read the serve token, list or
// write the state, rewrite the config or the unit, and signal the
// service's process. Every one must fail, while the same user can read a
// plain file beside them (so the failures come from the modes, not from
// a directory it cannot enter). Needs root (CI runs as root).
//
// What a container cannot show: systemd applying the sandbox
// (ProtectSystem, ProtectHome, PrivateTmp, the empty capability set) to
// a running service; systemd-analyze verify and security check the unit
// that asks for it (TestServiceUnitVerifies).
func TestServiceUserCannotBeReachedByTheAgent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: needs root to act as two users (CI runs as root)")
	}
	const serviceUID, agentUID = 64100, 64101
	root := t.TempDir()
	for _, d := range []string{filepath.Dir(root), root} { // t.TempDir's are 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	u := unitParams{Listen: "127.0.0.1:8765", Binary: "/usr/local/bin/aqlguard", User: "aqlguard-test-none"}
	unit, err := u.render()
	if err != nil {
		t.Fatal(err)
	}
	if err := installFiles(root, u, unit, &out); err != nil {
		t.Fatal(err)
	}
	// What systemd makes of StateDirectory=aqlguard, StateDirectoryMode=0700.
	state := filepath.Join(root, "var", "lib", "aqlguard")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(filepath.Dir(state), 0o755)
	_ = os.Chmod(filepath.Join(root, "var"), 0o755)
	if err := os.Chmod(state, 0o700); err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(state, "serve.token")
	if err := os.WriteFile(token, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{state, token} {
		if err := os.Chown(p, serviceUID, serviceUID); err != nil {
			t.Fatal(err)
		}
	}
	plain := filepath.Join(root, "etc", "aqlguard", "readme")
	if err := os.WriteFile(plain, []byte("anyone may read this\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The service's process, as its user.
	svc := exec.Command("sleep", "60")
	svc.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: serviceUID, Gid: serviceUID}}
	if err := svc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = svc.Process.Kill(); _ = svc.Wait() }()

	asAgent := func(script string) (string, error) {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: agentUID, Gid: agentUID}}
		cmd.Dir = "/"
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	if out, err := asAgent("cat " + plain); err != nil {
		t.Fatalf("the agent's user cannot read a plain file beside them (the test proves nothing): %v %s", err, out)
	}
	for what, script := range map[string]string{
		"read the serve token":      "cat " + token,
		"list the state directory":  "ls " + state,
		"write in the state":        "touch " + filepath.Join(state, "planted"),
		"read the service config":   "cat " + filepath.Join(root, "etc", "aqlguard", "config.toml"),
		"rewrite the config":        "echo '[safety]' >> " + filepath.Join(root, "etc", "aqlguard", "config.toml"),
		"add a managed policy":      "echo 'loop = \"disabled\"' > " + filepath.Join(root, "etc", "aqlguard", "managed.toml"),
		"rewrite the unit":          "echo 'User=root' >> " + filepath.Join(root, "etc", "systemd", "system", "aqlguard.service"),
		"signal the service":        "kill -0 " + strconv.Itoa(svc.Process.Pid),
		"read the service's memory": "cat /proc/" + strconv.Itoa(svc.Process.Pid) + "/environ",
	} {
		if out, err := asAgent(script); err == nil {
			t.Errorf("the agent's user could %s: %s", what, out)
		}
	}
	for _, p := range []string{filepath.Join(root, "etc", "aqlguard", "config.toml"), filepath.Join(root, "etc", "systemd", "system", "aqlguard.service")} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s is writable by others: %v", p, fi.Mode())
		}
	}
}
