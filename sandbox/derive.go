package sandbox

import (
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/effects"
	"github.com/aqlguard/aqlguard/policy"
)

// Env is what a derivation reads of the machine beyond the entry.
type Env struct {
	// Home is the home directory the server sees (its entry's HOME, else
	// aqlguard's).
	Home string
	// Dir is the directory the server's relative paths are read in (its
	// entry's cwd, else aqlguard's).
	Dir string
	// Getenv reads aqlguard's environment, which the server inherits
	// (XDG_CACHE_HOME, npm_config_cache, proxies); nil reads none.
	Getenv func(string) string
	// LookPath finds the command (exec.LookPath when nil).
	LookPath func(string) (string, error)
}

// CurrentEnv is the Env of a server started by this process.
func CurrentEnv(s config.Server) Env {
	home, _ := os.UserHomeDir()
	if h := s.Env["HOME"]; h != "" {
		home = h
	}
	dir := s.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return Env{Home: home, Dir: dir, Getenv: os.Getenv}
}

// systemRead are the places every server may read: the system's programs
// and libraries, and /proc and /sys (Landlock keeps a confined process
// out of the memory and environment of processes outside its domain,
// however /proc is granted).
var systemRead = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/opt", "/nix/store", "/snap", "/proc", "/sys"}

// etcRead are the files of /etc that loading programs, name resolution,
// TLS and the user database read; the rest of /etc is not granted.
var etcRead = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf", "/etc/services", "/etc/protocols",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/passwd", "/etc/group", "/etc/localtime", "/etc/timezone", "/etc/os-release", "/etc/mime.types",
	"/etc/alternatives", "/etc/python3", "/etc/npmrc", "/etc/gitconfig",
}

// devWrite are the device files every program may open for writing.
var devWrite = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// defaultConnect are the TCP ports a server may connect to by default:
// HTTPS (APIs, package registries) and DNS over TCP. Landlock's rules
// are by port, on any host.
var defaultConnect = []uint16{53, 443}

// runtimeNeeds is what a kind of command needs beyond its install directory:
// places in the home it reads, and caches it writes.
type runtimeNeeds struct {
	read, write []string // ~/... paths
}

// runtimes by command name (the configured command's base name, and the
// base name of what it resolves to).
var runtimes = map[string]runtimeNeeds{
	// node itself reads neither ~/.npmrc (which may hold a registry
	// token) nor the npm cache: only npm, npx and their kin do.
	"node":   {},
	"npx":    {read: []string{"~/.npmrc", "~/.nvm"}, write: []string{"~/.npm"}},
	"npm":    {read: []string{"~/.npmrc", "~/.nvm"}, write: []string{"~/.npm"}},
	"pnpm":   {read: []string{"~/.npmrc"}, write: []string{"~/.local/share/pnpm", "~/.cache/pnpm"}},
	"pnpx":   {read: []string{"~/.npmrc"}, write: []string{"~/.local/share/pnpm", "~/.cache/pnpm"}},
	"yarn":   {read: []string{"~/.npmrc", "~/.yarnrc"}, write: []string{"~/.yarn", "~/.cache/yarn"}},
	"bun":    {write: []string{"~/.bun"}},
	"bunx":   {write: []string{"~/.bun"}},
	"deno":   {write: []string{"~/.cache/deno"}},
	"uv":     {read: []string{"~/.config/uv"}, write: []string{"~/.cache/uv", "~/.local/share/uv"}},
	"uvx":    {read: []string{"~/.config/uv"}, write: []string{"~/.cache/uv", "~/.local/share/uv"}},
	"pipx":   {read: []string{"~/.local/pipx", "~/.local/share/pipx", "~/.local/bin"}},
	"pip":    {write: []string{"~/.cache/pip"}},
	"python": {read: []string{"~/.local/lib"}},
	"docker": {read: []string{"~/.docker"}},
}

// runners fetch the package they run from a registry first.
var runners = map[string]bool{"npx": true, "pnpx": true, "bunx": true, "uvx": true, "pipx": true, "npm": true, "pnpm": true, "yarn": true, "bun": true, "uv": true}

// interpreters run a script named by their first argument that is not an
// option; the script's project is read, not written.
var interpreters = map[string]bool{"node": true, "python": true, "deno": true, "bun": true, "tsx": true, "ts-node": true, "ruby": true, "perl": true, "php": true, "bash": true, "sh": true}

// scriptExt are the extensions of code a server runs: an argument that
// names one is read, with its project, not written.
var scriptExt = map[string]bool{".js": true, ".mjs": true, ".cjs": true, ".ts": true, ".mts": true, ".py": true, ".rb": true, ".pl": true, ".php": true, ".sh": true, ".jar": true}

// runtimeName is a command's base name as the runtimes table spells it:
// python3.12 is python.
func runtimeName(cmd string) string {
	b := filepath.Base(cmd)
	if strings.HasPrefix(b, "python") {
		return "python"
	}
	return b
}

// Derive is the grant a server's entry implies: see the package doc.
// It reads the disk (which of the places the entry names exist, and are
// directories or files) but changes nothing.
func Derive(s config.Server, env Env) Grant {
	g := Grant{Server: s.Name, Home: env.Home}
	if s.Sandbox.Mode == "off" {
		g.Off = true
		return g
	}
	d := deriver{g: &g, env: env, home: filepath.Clean(env.Home)}
	if env.Home == "" {
		d.home = ""
	}
	for _, p := range systemRead {
		d.read(p)
	}
	for _, p := range etcRead {
		d.read(p)
	}
	for _, p := range devWrite {
		d.writeFile(p)
	}
	d.command(s)
	d.arguments(s)
	for _, r := range s.RootPaths() {
		d.write(r, "its root "+r, true)
	}
	if s.Cwd != "" {
		d.read(d.notHome(clean(s.Cwd, d.home, env.Dir), "its working directory"))
	}
	for _, list := range []struct {
		places []string
		write  bool
	}{{s.Sandbox.Read, false}, {s.Sandbox.Write, true}} {
		for _, p := range list.places {
			c := clean(p, d.home, "")
			if _, err := os.Stat(c); err != nil {
				d.g.Notes = append(d.g.Notes, "[servers.sandbox] names "+c+", which is not there: not granted (Landlock grants only what exists; make it, and start the server again)")
				continue
			}
			if list.write {
				d.g.Write = add(d.g.Write, c)
			} else {
				d.g.Read = add(d.g.Read, c)
			}
		}
	}
	d.network(s)
	d.profile(s)
	g.normalize()
	return g
}

type deriver struct {
	g    *Grant
	env  Env
	home string
}

func (d *deriver) getenv(k string) string {
	if d.env.Getenv == nil {
		return ""
	}
	return d.env.Getenv(k)
}

// read adds p if it exists.
func (d *deriver) read(p string) {
	if p == "" {
		return
	}
	if _, err := os.Stat(p); err == nil {
		d.g.Read = add(d.g.Read, p)
	}
}

// writeFile adds p, a file, if it exists.
func (d *deriver) writeFile(p string) {
	if _, err := os.Stat(p); err == nil {
		d.g.Write = add(d.g.Write, p)
	}
}

// made adds a directory the runtime makes on first use (a cache, a
// state): granted whether or not it is there yet, and made by Prepare
// when it is not (Landlock grants only what exists).
func (d *deriver) made(p string) {
	if p == "" {
		return
	}
	d.g.Write = add(d.g.Write, p)
	if _, err := os.Stat(p); err != nil {
		d.g.Create = add(d.g.Create, p)
	}
}

// write adds a place the entry names for the server to work in. The
// root and places of the system are left out (with a note): those the
// entry grants only in so many words ([servers.sandbox] write). So is
// the home, or a place above it, unless the entry names it itself (the
// filesystem server given ~): then it is granted, and the note says the
// server has all of it.
func (d *deriver) write(p, what string, itself bool) {
	if p == "" {
		return
	}
	if p == "/" {
		d.g.Notes = append(d.g.Notes, what+" is /, everything: not granted; write it in [servers.sandbox] write if you mean it")
		return
	}
	for _, sys := range []string{"/usr", "/etc", "/bin", "/sbin", "/lib", "/proc", "/sys", "/dev", "/boot"} {
		if within(p, sys) {
			d.g.Notes = append(d.g.Notes, what+" is a place of the system: not granted for writing; grant it with [servers.sandbox] write if the server must write there")
			return
		}
	}
	if d.home != "" && within(d.home, p) {
		if !itself {
			d.g.Notes = append(d.g.Notes, what+" is "+p+", the home directory or above it: not granted; grant it with [servers.sandbox] write if the server must have all of it")
			return
		}
		d.g.Notes = append(d.g.Notes, what+" names "+p+", the home directory or above it: the server may read and write all of it, ~/.ssh too")
	}
	d.g.Write = add(d.g.Write, p)
}

// notHome is p, or "" (with a note) when p is the home or above it.
func (d *deriver) notHome(p, what string) string {
	if p == "" {
		return ""
	}
	if p == "/" || (d.home != "" && within(d.home, p)) {
		d.g.Notes = append(d.g.Notes, what+" is "+p+", the home directory or above it: not granted; grant it with [servers.sandbox] if the server must have all of it")
		return ""
	}
	return p
}

// command grants the command's install directory and its runtime's
// places in the home.
func (d *deriver) command(s config.Server) {
	look := d.env.LookPath
	if look == nil {
		look = exec.LookPath
	}
	found := s.Command
	if !filepath.IsAbs(found) {
		if p, err := look(s.Command); err == nil {
			found, _ = filepath.Abs(p)
		}
	}
	names := []string{runtimeName(s.Command)}
	for _, p := range []string{found, resolved(found)} {
		if !filepath.IsAbs(p) {
			continue
		}
		d.install(p)
		names = append(names, runtimeName(p))
	}
	if slices.Contains(names, "aqlguard") {
		// aqlguard in front of more servers (wrap inside a client that is
		// itself guarded): its state and its config, as it finds them.
		d.made(xdg(firstNonEmpty(s.Env["XDG_STATE_HOME"], d.getenv("XDG_STATE_HOME")), d.home, ".local/state", "aqlguard"))
		d.read(xdg(firstNonEmpty(s.Env["XDG_CONFIG_HOME"], d.getenv("XDG_CONFIG_HOME")), d.home, ".config", "aqlguard"))
		if cfg := optionValue(s.Args, "--config"); cfg != "" {
			if c, err := policy.Load(clean(cfg, d.home, d.env.Dir)); err == nil {
				if c.StateDir != "" {
					d.made(clean(c.StateDir, d.home, d.env.Dir))
				}
				if len(c.Verify.Command) > 0 && filepath.IsAbs(c.Verify.Command[0]) {
					d.install(c.Verify.Command[0]) // its human channel
				}
			}
		}
	}
	cache := d.getenv("XDG_CACHE_HOME")
	for _, n := range slices.Compact(names) {
		rt, ok := runtimes[n]
		if !ok {
			continue
		}
		for _, p := range rt.read {
			d.read(clean(p, d.home, ""))
		}
		for _, p := range rt.write {
			if cache != "" && strings.HasPrefix(p, "~/.cache/") {
				p = filepath.Join(cache, strings.TrimPrefix(p, "~/.cache/"))
			}
			d.made(clean(p, d.home, ""))
		}
	}
	for _, k := range []string{"npm_config_cache", "NPM_CONFIG_CACHE", "UV_CACHE_DIR", "PIP_CACHE_DIR"} {
		if v := firstNonEmpty(s.Env[k], d.getenv(k)); filepath.IsAbs(v) {
			d.write(filepath.Clean(v), k, true)
		}
	}
}

// install grants the directory a program is installed in: the one above
// its bin/, else its own; never the home or above it, whose program is
// then granted alone.
func (d *deriver) install(prog string) {
	dir := filepath.Dir(prog)
	top := dir
	if filepath.Base(dir) == "bin" {
		top = filepath.Dir(dir)
	}
	for _, c := range []string{top, dir} {
		if c != "/" && (d.home == "" || !within(d.home, c)) {
			d.read(c)
			return
		}
	}
	d.read(prog)
}

// arguments grants what the entry's arguments and environment name: an
// interpreter's script or a file of code, its project read; a program,
// its install directory read; an existing directory, for
// the server to work in (the filesystem server's, git's --repository);
// an existing file, for it to use; a path not there yet, its directory
// (a log, a database it creates).
func (d *deriver) arguments(s config.Server) {
	script := interpreters[runtimeName(s.Command)]
	for i, a := range s.Args {
		v := a
		if k, val, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
			v = val
		}
		p := d.pathOf(v)
		if p == "" {
			if script && !strings.HasPrefix(a, "-") {
				script = false // the interpreter's first word was not a file: -e code, a module
			}
			continue
		}
		first := script && !strings.HasPrefix(a, "-")
		script = script && !first
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			switch {
			case first || scriptExt[filepath.Ext(p)]:
				d.read(d.project(p)) // code it runs: read, never written
				continue
			case fi.Mode()&0o111 != 0:
				d.install(p) // a program it runs (a wrapper's -- node ...)
				continue
			}
		}
		d.named(p, "argument "+strconv.Itoa(i+1)+" ("+a+")")
	}
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if k == "HOME" || k == "PATH" {
			continue
		}
		if p := d.pathOf(s.Env[k]); p != "" {
			d.named(p, "the environment variable "+k)
		}
	}
}

// named grants a place the entry names (see arguments).
func (d *deriver) named(p, what string) {
	if _, err := os.Stat(p); err == nil {
		d.write(p, what, true) // a directory to work in, or a file to use
		return
	}
	parent := filepath.Dir(p)
	if fi, err := os.Stat(parent); err != nil || !fi.IsDir() {
		return
	}
	if d.home != "" && within(d.home, parent) && strings.Contains(filepath.Base(p)[1:], ".") {
		// A file it makes (a log, a database) in the home or above it,
		// whose directory is not granted: the file alone, made empty
		// before it starts (Landlock grants only what exists).
		d.g.Write = add(d.g.Write, p)
		d.g.Create = add(d.g.Create, p)
		return
	}
	d.write(parent, what+"'s directory", false)
}

// pathOf is v as a clean absolute path when it is written as one (/...,
// ~/..., ./..., ../..., or file://), else "".
func (d *deriver) pathOf(v string) string {
	if strings.HasPrefix(v, "file://") {
		if u, err := url.Parse(v); err == nil {
			v = u.Path
		}
	}
	switch {
	case strings.HasPrefix(v, "/"), v == "~", strings.HasPrefix(v, "~/"):
		return clean(v, d.home, "")
	case strings.HasPrefix(v, "./"), strings.HasPrefix(v, "../"), v == ".":
		return clean(v, d.home, d.env.Dir)
	}
	return ""
}

// project is the directory of the project a script belongs to: the
// nearest directory above it with a package.json, pyproject.toml,
// go.mod or .git, else the script's directory (the script alone when
// that is the home or above), under the outermost node_modules when
// there is one (its packages are resolved there).
func (d *deriver) project(script string) string {
	dir := filepath.Dir(script)
	if i := strings.Index(script, "/node_modules/"); i >= 0 {
		return d.notHome(script[:i], "the script's project")
	}
	for c := dir; c != "/" && (d.home == "" || !within(d.home, c)); c = filepath.Dir(c) {
		for _, marker := range []string{"package.json", "pyproject.toml", "go.mod", ".git"} {
			if _, err := os.Stat(filepath.Join(c, marker)); err == nil {
				return c
			}
		}
	}
	if d.home != "" && within(d.home, dir) {
		return script // a script in the home itself: the file alone
	}
	return dir
}

// network sets the grant's TCP rules: the entry's network, else its
// profile's, else the default ports; with the proxies of its environment
// and its entry's connect and bind in every case but "any" and "none".
func (d *deriver) network(s config.Server) {
	prof := ""
	if p := effects.SandboxProfileFor(s.Command, s.Args); p != nil {
		prof = p.Sandbox.Network
	}
	switch {
	case s.Sandbox.Network == "any" || (s.Sandbox.Network != "none" && prof == "any"):
		d.g.Network = NetAny
		return
	case s.Sandbox.Network == "none":
		d.g.Network = NetNone
		return
	}
	d.g.Network = NetPorts
	if prof != "none" || runners[runtimeName(s.Command)] {
		// A server whose profile says it needs no network gets none
		// of the default ports, unless its package runner (npx, uvx)
		// fetches the package from a registry first.
		d.g.Connect = append(d.g.Connect, defaultConnect...)
		for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
			if p := proxyPort(firstNonEmpty(s.Env[k], d.getenv(k))); p != 0 {
				d.g.Connect = append(d.g.Connect, p)
			}
		}
	}
	for _, p := range s.Sandbox.Connect {
		d.g.Connect = append(d.g.Connect, uint16(p))
	}
	for _, p := range s.Sandbox.Bind {
		d.g.Bind = append(d.g.Bind, uint16(p))
	}
	if len(d.g.Connect) == 0 && len(d.g.Bind) == 0 {
		d.g.Network = NetNone
	}
}

// profile adds what the shipped profile of the server says it needs
// beyond its network.
func (d *deriver) profile(s config.Server) {
	p := effects.SandboxProfileFor(s.Command, s.Args)
	if p == nil {
		return
	}
	d.g.Profile = p.Name
	sb := p.Sandbox
	if d.g.Network == NetPorts {
		d.g.Connect = append(d.g.Connect, sb.Connect...)
	}
	if !sb.WriteBesideScript {
		return
	}
	for _, k := range sb.WriteEnv {
		if firstNonEmpty(s.Env[k], d.getenv(k)) != "" {
			return // the environment names the file, and arguments granted it
		}
	}
	for _, a := range s.Args {
		for _, m := range sb.Match {
			if i := strings.Index(a, "/"+m+"/"); i >= 0 && filepath.IsAbs(a) {
				d.write(filepath.Dir(a), "the directory of its script, where it keeps its data", false)
				return
			}
		}
	}
	// Run through a package runner (npx): the script is in the runner's
	// cache, which the runtime's grant already lets it write.
}

// optionValue is the value of a command line's option ("--config X",
// "--config=X", and the one-dash spelling Go's flag package takes too),
// "" when it has none.
func optionValue(args []string, name string) string {
	for i, a := range args {
		for _, n := range []string{name, strings.TrimPrefix(name, "-")} {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

// xdg is an XDG base directory's subdirectory: dir/sub, else
// home/fallback/sub.
func xdg(dir, home, fallback, sub string) string {
	switch {
	case filepath.IsAbs(dir):
		return filepath.Join(dir, sub)
	case home != "":
		return filepath.Join(home, fallback, sub)
	}
	return ""
}

// proxyPort is the port of a proxy URL, 0 if none can be read.
func proxyPort(v string) uint16 {
	if v == "" {
		return 0
	}
	if !strings.Contains(v, "://") {
		v = "http://" + v
	}
	u, err := url.Parse(v)
	if err != nil {
		return 0
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			return 443
		case "http":
			return 80
		}
		return 0
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return uint16(n)
}

// resolved is p with its symbolic links followed, p when they cannot be.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
