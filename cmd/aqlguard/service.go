package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/template"

	"github.com/aqlguard/aqlguard/internal/atomicfile"
)

// cmdService is `aqlguard service install`: aqlguard serve as a systemd
// service, under a system user of its own, the deployment
// docs/threat-model.md calls a boundary (docs/deploy.md).
func cmdService(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "install" {
		fmt.Fprintln(stderr, "usage: aqlguard service install [--dry-run] [--listen ADDR] [--binary PATH] [--user NAME]")
		return 2
	}
	fs := flag.NewFlagSet("aqlguard service install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dry := fs.Bool("dry-run", false, "print the unit and what would be done; change nothing")
	var u unitParams
	fs.StringVar(&u.Listen, "listen", "127.0.0.1:8765", "the address serve listens on (HOST:PORT)")
	fs.StringVar(&u.Binary, "binary", "", "the aqlguard binary the unit runs (default: this one)")
	fs.StringVar(&u.User, "user", "aqlguard", "the system user (and group) the service runs as; created if missing")
	root := fs.String("root", "/", "install under this directory instead of / (for packaging and tests: no user is created, systemd is not told)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if !noWords("service install", fs.Args(), stderr) {
		return 2
	}
	if u.Binary == "" {
		exe, err := os.Executable()
		if err == nil {
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard service install: where this binary is: %v; give --binary\n", err)
			return 1
		}
		u.Binary = exe
	}
	if err := u.check(); err != nil {
		fmt.Fprintf(stderr, "aqlguard service install: %v\n", err)
		return 2
	}
	unit, err := u.render()
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard service install: %v\n", err)
		return 1
	}
	if *dry {
		fmt.Fprintf(stdout, "# %s\n%s", filepath.Join(*root, unitPath), unit)
		for _, w := range u.warnings() {
			fmt.Fprintf(stderr, "aqlguard service install: note: %s\n", w)
		}
		fmt.Fprintf(stderr, "aqlguard service install --dry-run: would create the system user %q if missing, write %s (0644) and %s (0640, group %s) if missing, and run systemctl daemon-reload; nothing was changed\n",
			u.User, unitPath, serviceConfig, u.User)
		return 0
	}
	real := *root == "/"
	if real {
		if why := cannotInstall(); why != "" {
			fmt.Fprintf(stderr, "aqlguard service install: %s; --dry-run prints the unit to install by hand\n", why)
			return 1
		}
		for _, w := range u.warnings() {
			fmt.Fprintf(stderr, "aqlguard service install: refusing: %s\n", w)
			return 1
		}
		if err := ensureUser(u.User); err != nil {
			fmt.Fprintf(stderr, "aqlguard service install: %v\n", err)
			return 1
		}
	}
	if err := installFiles(*root, u, unit, stdout); err != nil {
		fmt.Fprintf(stderr, "aqlguard service install: %v\n", err)
		return 1
	}
	if real {
		if out, err := exec.Command("systemctl", "daemon-reload").CombinedOutput(); err != nil {
			fmt.Fprintf(stderr, "aqlguard service install: systemctl daemon-reload: %v: %s\n", err, bytes.TrimSpace(out))
			return 1
		}
	}
	fmt.Fprintf(stdout, "installed. Next: put the servers and the policy in %s (the managed policy in %s), then\n"+
		"  systemctl enable --now aqlguard\n  journalctl -u aqlguard -f\nsee docs/deploy.md\n", serviceConfig, "/etc/aqlguard/managed.toml")
	return 0
}

// Where the service's files go.
const (
	unitPath      = "/etc/systemd/system/aqlguard.service"
	serviceConfig = "/etc/aqlguard/config.toml"
	serviceState  = "/var/lib/aqlguard"
)

type unitParams struct {
	Listen, Binary, User string
}

// check refuses what the unit cannot carry: systemd would split a value
// with a space or a newline, or expand a % or $.
func (u unitParams) check() error {
	for name, v := range map[string]string{"--listen": u.Listen, "--binary": u.Binary, "--user": u.User} {
		if v == "" || strings.ContainsAny(v, " \t\n\r\\\"'%$;") {
			return fmt.Errorf("%s %q: empty, or has a character a unit file would read as something else", name, v)
		}
	}
	if !filepath.IsAbs(u.Binary) {
		return fmt.Errorf("--binary %q must be an absolute path", u.Binary)
	}
	for _, r := range u.User {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("--user %q: use lowercase letters, digits, - and _", u.User)
		}
	}
	return nil
}

// warnings are what makes the unit fail where it would run: a binary
// the sandbox hides (ProtectHome, PrivateTmp), or one that a user other
// than root can replace.
func (u unitParams) warnings() []string {
	var out []string
	for _, hidden := range []string{"/home/", "/root/", "/run/user/", "/tmp/", "/var/tmp/"} {
		if strings.HasPrefix(u.Binary, hidden) {
			out = append(out, fmt.Sprintf("the binary %s is under %s, which the service's sandbox hides (ProtectHome, PrivateTmp): copy it to /usr/local/bin and give --binary", u.Binary, hidden))
		}
	}
	if writer := writableByOthers(u.Binary); writer != "" {
		out = append(out, fmt.Sprintf("%s can be replaced by a user other than root (%s): whoever can replace it runs as the service", u.Binary, writer))
	}
	return out
}

// writableByOthers names the first of path and its directories that a
// user other than root may write ("" for none).
func writableByOthers(path string) string {
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err == nil {
			if fi.Mode().Perm()&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
				return p + " is group- or world-writable"
			}
			if uid, ok := ownerUID(fi); ok && uid != 0 {
				return p + " is owned by uid " + strconv.Itoa(int(uid))
			}
		}
		if p == filepath.Dir(p) {
			return ""
		}
	}
}

// cannotInstall says why this machine cannot take the unit ("" if it
// can): not Linux, not root, or no systemd running.
func cannotInstall() string {
	switch {
	case runtime.GOOS != "linux":
		return "systemd services are Linux only (on " + runtime.GOOS + ", run aqlguard serve under the system's own service manager)"
	case os.Geteuid() != 0:
		return "it must run as root: it creates a system user and writes " + unitPath
	}
	if fi, err := os.Stat("/run/systemd/system"); err != nil || !fi.IsDir() {
		return "systemd is not running on this machine (/run/systemd/system is missing)"
	}
	return ""
}

// ensureUser creates the system user (and its group) unless it exists.
func ensureUser(name string) error {
	if _, err := user.Lookup(name); err == nil {
		return nil
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--home-dir", serviceState, "--no-create-home",
		"--shell", "/usr/sbin/nologin", "--comment", "aqlguard MCP guard", name).CombinedOutput()
	if err != nil {
		return fmt.Errorf("creating the system user %s: %v: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// installFiles writes the unit and, if there is none, a starting config
// under root. An existing unit that differs is not overwritten.
func installFiles(root string, u unitParams, unit string, stdout io.Writer) error {
	path := filepath.Join(root, unitPath)
	if old, err := os.ReadFile(path); err == nil && string(old) != unit {
		return fmt.Errorf("%s exists and differs from this unit; remove it first (or compare: aqlguard service install --dry-run)", path)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(path, []byte(unit), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", path)
	dir := filepath.Join(root, filepath.Dir(serviceConfig))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // root's, read by the service
		return err
	}
	cfg := filepath.Join(root, serviceConfig)
	if _, err := os.Stat(cfg); errors.Is(err, fs.ErrNotExist) {
		if err := atomicfile.Write(cfg, []byte(starterConfig), 0o640); err != nil {
			return err
		}
		// Readable by the service's group, writable by root alone: the
		// service (and a server it runs) cannot loosen its own policy.
		if g, err := user.LookupGroup(u.User); err == nil {
			gid, _ := strconv.Atoi(g.Gid)
			if err := os.Chown(cfg, 0, gid); err != nil {
				return err
			}
		}
		fmt.Fprintf(stdout, "wrote %s\n", cfg)
	}
	return nil
}

// starterConfig is the service's config until the operator writes one.
const starterConfig = `# aqlguard serve, as the aqlguard service runs it (docs/deploy.md).
# The managed policy, /etc/aqlguard/managed.toml (root's), is read first;
# this file can only add to it.
state_dir = "` + serviceState + `"

[serve]
auth = "token"
# metrics_listen = "127.0.0.1:9464"

# [[servers]]
# name = "fs"
# command = "/usr/local/bin/some-mcp-server"
`

func (u unitParams) render() (string, error) {
	var b strings.Builder
	err := unitTemplate.Execute(&b, struct {
		unitParams
		Config, State string
	}{u, serviceConfig, serviceState})
	return b.String(), err
}

// unitTemplate is the service. Each hardening line is there because
// aqlguard serve does without what it takes away; what it cannot do
// without is said in a comment.
var unitTemplate = template.Must(template.New("unit").Parse(`[Unit]
Description=aqlguard: MCP guard (aqlguard serve)
Documentation=man:systemd.exec(5)
After=network-online.target
Wants=network-online.target

[Service]
Type=exec
ExecStart={{.Binary}} serve --listen {{.Listen}} --config {{.Config}}
ExecReload=/bin/kill -HUP $MAINPID
Restart=on-failure
RestartSec=2s
# A system user of its own (not DynamicUser): its uid is stable, so the
# files its servers need can be given to it, and an administrator runs
# sudo -u {{.User}} aqlguard blocks|unblock|audit ... --state-dir {{.State}}.
User={{.User}}
Group={{.User}}
Environment=XDG_STATE_HOME=/var/lib
StateDirectory=aqlguard
StateDirectoryMode=0700
UMask=0077
# No privilege at all: it listens on a port above 1024, as its own user.
CapabilityBoundingSet=
AmbientCapabilities=
NoNewPrivileges=yes
SecureBits=noroot-locked
ProtectSystem=strict
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM
RemoveIPC=yes
KeyringMode=private
# Not set: MemoryDenyWriteExecute=yes, since the servers it starts may
# be Node or Python programs, whose JIT needs writable code pages.

[Install]
WantedBy=multi-user.target
`))
