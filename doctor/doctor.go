// Package doctor checks that aqlguard can do its job on this machine, the
// way a new user would otherwise find out one failure at a time: where
// the binary is, which client configs exist and are wrapped, whether the
// policy loads, whether the state directory is private, whether a human
// can be reached, whether the configured servers start, and whether two
// servers of one client offer one tool or prompt name or have names that
// pass for each other.
package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/verify"
)

// Level is how bad a finding is.
type Level string

const (
	OK   Level = "ok"
	Warn Level = "warn"
	Fail Level = "FAIL"
)

// Check is one finding.
type Check struct {
	Level  Level
	Name   string
	Detail string
}

// Input is what the checks look at.
type Input struct {
	Self      string // this binary's absolute path ("" if unknown)
	SelfErr   error
	Config    *config.Config
	ConfigErr error
	StateDir  string
	// OpenState opens the configured PostgreSQL state ([state] backend =
	// "postgres"); nil for a state directory.
	OpenState func(ctx context.Context) (store.State, error)
	Env       clientconfig.Env
	// Clients limits the client checks, and the wrapped servers started,
	// to these client ids (none: every client).
	Clients []string
	// StartTimeout bounds each server's start (default DefaultStartTimeout).
	StartTimeout time.Duration
	Version      string
	// RecordedNames reads the names aqlguard processes recorded of their
	// servers in the state (store.ServerNames); nil reads none.
	RecordedNames func(ctx context.Context) ([]store.ServerNames, error)
	// Forwarding checks the [audit.forward] destination's cursor against
	// the audit log (forward.CheckCursor): what it says when it matches,
	// the error when it does not. Nil when nothing is forwarded.
	Forwarding func(ctx context.Context) (string, error)
	// Now is the time (time.Now when zero): what was recorded more than
	// proxy.RecordedWithin before it no longer counts.
	Now time.Time
}

// DefaultStartTimeout is how long doctor waits for a server to start:
// the config's own default for start_timeout.
const DefaultStartTimeout = 30 * time.Second

// Run runs every check.
func Run(ctx context.Context, in Input) []Check {
	var out []Check
	out = append(out, binary(in)...)
	out = append(out, clients(in)...)
	out = append(out, hooks(in)...)
	out = append(out, logChecks(in)...)
	out = append(out, configCheck(in)...)
	out = append(out, stateDir(in)...)
	out = append(out, sharedState(ctx, in)...)
	out = append(out, forwarding(ctx, in)...)
	out = append(out, channel(in)...)
	out = append(out, reaches(in)...)
	checks, started := servers(ctx, in)
	out = append(out, checks...)
	out = append(out, nameChecks(ctx, in, started)...)
	return out
}

func binary(in Input) []Check {
	if in.SelfErr != nil {
		return []Check{{Fail, "binary", in.SelfErr.Error()}}
	}
	c := Check{OK, "binary", in.Self}
	if p, err := exec.LookPath("aqlguard"); err != nil || p != in.Self {
		c.Level = Warn
		c.Detail += " (not the aqlguard on your PATH; GUI clients do not see your shell's PATH anyway: aqlguard init writes this absolute path)"
	}
	return []Check{c}
}

// origin is where doctor found a server it starts: the client whose
// config runs it (none: aqlguard's own config), the principal its
// aqlguard runs as, its name as aqlguard wrap records it, and as the
// client config writes it.
type origin struct {
	client, agent, name, entry string
}

// wrappedServers are the servers the guarded client entries run, with
// a label for each ("filesystem (claude-code)") and where each is from,
// by its server name.
func wrappedServers(in Input) ([]config.Server, map[string]string, map[string]origin, []Check) {
	var out []config.Server
	var remote []Check
	labels := map[string]string{}
	origins := map[string]origin{}
	for _, g := range clientconfig.GuardedServers(in.Env, in.Self, in.Clients...) {
		f, e := g.File, g.Entry
		label := e.Label() + " (" + f.Client + ")"
		if g.URL != "" {
			remote = append(remote, Check{OK, "server " + label,
				"remote, " + g.URL + ": aqlguard connects when the client starts it (doctor does not; a server that wants OAuth asks for your consent in the browser on its first call)"})
			continue
		}
		// As aqlguard wrap runs it (its sandbox included), under a name
		// of its client's and entry's, unique among the clients here.
		name := policy.ServerNameFrom(f.Client + e.Name)
		srv := policy.WrappedServer(in.Config, g.Name, g.Argv)
		srv.Name, srv.Env, srv.Transport = name, e.Env, "stdio"
		out = append(out, srv)
		labels[name] = label
		agent := g.Agent
		if agent == "" {
			agent = f.Client
		}
		origins[name] = origin{client: f.Client, agent: agent, name: policy.ServerNameFrom(g.Name), entry: e.Name}
	}
	return out, labels, origins, remote
}

func clients(in Input) []Check {
	files := clientconfig.Detect(in.Env, in.Clients...)
	if len(files) == 0 {
		ids := in.Clients
		if len(ids) == 0 {
			ids = clientconfig.ClientIDs()
		}
		return []Check{{Warn, "clients", "no MCP client config found for this user (" + strings.Join(ids, ", ") + ")"}}
	}
	var out []Check
	for _, f := range files {
		data, err := os.ReadFile(f.Path)
		if err != nil {
			out = append(out, Check{Fail, "client " + f.Client, f.Path + ": " + err.Error()})
			continue
		}
		entries, err := clientconfig.Entries(f, data)
		if err != nil {
			out = append(out, Check{Fail, "client " + f.Client, f.Path + ": " + err.Error()})
			continue
		}
		var wrapped, bare, other []string
		for _, e := range entries {
			switch {
			case e.Unsupported != "":
			case e.Wrapped(in.Self) && in.Self != "" && !clientconfig.SamePath(e.Command, in.Self):
				other = append(other, e.Label()+" (by "+e.Command+")")
			case e.Wrapped(in.Self):
				wrapped = append(wrapped, e.Label())
			default:
				bare = append(bare, e.Label())
			}
		}
		c := Check{OK, "client " + f.Client, fmt.Sprintf("%s: %d server(s) guarded", f.Path, len(wrapped))}
		if len(bare) > 0 {
			c.Level = Warn
			c.Detail += "; not guarded: " + strings.Join(bare, ", ") + " (aqlguard init --client " + f.Client + ")"
		}
		if len(other) > 0 {
			c.Level = Warn
			c.Detail += "; wrapped by another aqlguard binary: " + strings.Join(other, ", ")
		}
		out = append(out, c)
	}
	return out
}

func configCheck(in Input) []Check {
	if in.ConfigErr != nil {
		return []Check{{Fail, "policy", in.ConfigErr.Error()}}
	}
	cfg := in.Config
	source := cfg.Path
	if source == "" {
		source = "embedded defaults"
	}
	warnings := 0
	for _, p := range append([]string{cfg.Agent}, keys(cfg.Agents)...) {
		if _, err := policy.Compile(cfg, p); err != nil {
			return []Check{{Fail, "policy", fmt.Sprintf("%s, agent %s: %v", source, p, err)}}
		}
		warnings += len(policy.Lint(cfg, p, nil))
	}
	c := Check{OK, "policy", source + " loads and compiles"}
	if warnings > 0 {
		c.Level = Warn
		c.Detail += fmt.Sprintf("; %d warning(s): aqlguard policy check --servers", warnings)
	}
	return []Check{c}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func stateDir(in Input) []Check {
	dir := in.StateDir
	fi, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		// Can it be made?
		parent := filepath.Dir(dir)
		for {
			if _, err := os.Stat(parent); err == nil {
				break
			}
			parent = filepath.Dir(parent)
		}
		probe, err := os.MkdirTemp(parent, ".aqlguard-doctor-")
		if err != nil {
			return []Check{{Fail, "state", dir + " does not exist and cannot be created: " + err.Error()}}
		}
		os.Remove(probe)
		return []Check{{OK, "state", dir + " does not exist yet; aqlguard creates it (mode 0700) on its first run"}}
	case err != nil:
		return []Check{{Fail, "state", err.Error()}}
	case !fi.IsDir():
		return []Check{{Fail, "state", dir + " is not a directory"}}
	}
	if m, err := store.ReadCopyMark(dir); err != nil || m != nil {
		if err == nil {
			err = &store.IncompleteCopyError{Where: "state directory " + dir, Mark: *m}
		}
		return []Check{{Fail, "state", err.Error()}}
	}
	var problems []string
	writable := false // by others: aqlguard refuses to start on it
	if fi.Mode().Perm()&0o077 != 0 {
		problems = append(problems, fmt.Sprintf("%s is mode %04o, want 0700 (chmod 700 %s)", dir, fi.Mode().Perm(), dir))
		writable = fi.Mode().Perm()&0o022 != 0
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if i, err := d.Info(); err == nil && p != dir && i.Mode().Perm()&0o077 != 0 {
			want := "0600"
			if d.IsDir() {
				want = "0700"
			}
			problems = append(problems, fmt.Sprintf("%s is mode %04o, want %s", p, i.Mode().Perm(), want))
			writable = writable || i.Mode().Perm()&0o022 != 0
		}
		return nil
	})
	probe, err := os.CreateTemp(dir, ".doctor-")
	if err != nil {
		return []Check{{Fail, "state", dir + " is not writable: " + err.Error()}}
	}
	probe.Close()
	os.Remove(probe.Name())
	if writable {
		return []Check{{Fail, "state", "others can write the state directory, so aqlguard refuses to start on it: " +
			strings.Join(problems, "; ")}}
	}
	if len(problems) > 0 {
		return []Check{{Warn, "state", strings.Join(problems, "; ")}}
	}
	return []Check{{OK, "state", dir + " is writable and private (0700, files 0600)"}}
}

// forwarding checks that the audit forwarder's cursor matches the log:
// one that does not stops forwarding until it is reset.
func forwarding(ctx context.Context, in Input) []Check {
	if in.Forwarding == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	detail, err := in.Forwarding(ctx)
	if err != nil {
		return []Check{{Fail, "audit forwarding", err.Error()}}
	}
	return []Check{{OK, "audit forwarding", detail}}
}

// sharedState checks the PostgreSQL state replicas decide on: that it
// answers (its schema is created or migrated on open, as aqlguard does
// at start), and what it holds.
func sharedState(ctx context.Context, in Input) []Check {
	if in.OpenState == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	st, err := in.OpenState(ctx)
	if err != nil {
		// pgx's errors span lines (one per address tried): one line here.
		return []Check{{Fail, "state database", strings.Join(strings.Fields(err.Error()), " ") + "; every call is refused until it answers"}}
	}
	defer st.Close()
	var head store.Head
	var blocks []store.Block
	err = st.Load(ctx, func(v store.View) (err error) {
		if head, err = v.AuditHead(); err != nil {
			return err
		}
		blocks, err = v.Blocks()
		return err
	})
	if err != nil {
		return []Check{{Fail, "state database", strings.Join(strings.Fields(err.Error()), " ")}}
	}
	return []Check{{OK, "state database", fmt.Sprintf("PostgreSQL state %s answers: %d audit records, %d blocked agent(s) "+
		"(aqlguard audit verify checks the chain; aqlguard blocks list names the blocked)", st.StateID(), head.Seq, len(blocks))}}
}

func channel(in Input) []Check {
	if in.Config == nil {
		return nil
	}
	v := in.Config.Verify
	switch v.Channel {
	case "command":
		if len(v.Command) == 0 {
			return []Check{{Fail, "human channel", "channel = \"command\" without a command"}}
		}
		fi, err := os.Stat(v.Command[0])
		if err != nil || fi.Mode().Perm()&0o111 == 0 || !filepath.IsAbs(v.Command[0]) {
			return []Check{{Fail, "human channel", v.Command[0] + " is not an executable file at an absolute path"}}
		}
		return []Check{{OK, "human channel", "command " + v.Command[0]}}
	}
	d := verify.NewDialog()
	if err := d.Check(); err != nil {
		return []Check{{Fail, "human channel", "from this shell: " + err.Error() + ": nothing can be approved and no code shown"}}
	}
	disp, _ := d.Display()
	return []Check{{OK, "human channel", "from this shell: dialogs go to " + disp.Where() + " (" + disp.From + "); a trusted dialog program is there"}}
}

// reaches reports what the last start of each agent's aqlguard could
// reach of the human (verify.Reach): a client may start aqlguard with
// an environment that names no display, where this shell has one.
func reaches(in Input) []Check {
	rs, err := verify.ReadReaches(verify.ReachDir(in.StateDir))
	var out []Check
	if err != nil {
		out = append(out, Check{Warn, "human channel", "a record of what a client's aqlguard could reach does not read: " + err.Error()})
	}
	for _, r := range rs {
		name := "human channel (" + r.Agent + "'s aqlguard)"
		when := "last started"
		if r.StartedBy != "" {
			when += " by " + r.StartedBy
		}
		when += " at " + r.At.Local().Format("2006-01-02 15:04")
		switch {
		case r.Channel == "command":
			out = append(out, Check{OK, name, r.From + "; " + when})
		case r.Reached && r.Where == "":
			out = append(out, Check{OK, name, "dialogs: " + r.From + "; " + when})
		case r.Reached:
			out = append(out, Check{OK, name, "dialogs go to " + r.Where + " (" + r.From + "); " + when})
		default:
			out = append(out, Check{Fail, name, "no dialog could be put up, so nothing it asks can be approved: " + r.Problem +
				" (" + when + "). Fix: " + displayFix()})
		}
	}
	return out
}

// displayFix says how to give a client's aqlguard a display, with
// this shell's when it has one.
func displayFix() string {
	const command = `on a machine nobody sits at, set [verify] channel = "command" (docs/command-channel.md)`
	disp, err := verify.FindDisplay()
	if err != nil {
		return "start the client from your desktop session, so that aqlguard finds its display; " + command
	}
	var env []string
	for _, name := range []string{"DISPLAY", "WAYLAND_DISPLAY", "XDG_RUNTIME_DIR"} {
		if v := disp.Vars[name]; v != "" {
			env = append(env, fmt.Sprintf("%q: %q", name, v))
		}
	}
	return "start the client from your desktop session, or give aqlguard this shell's display in the client's entries for it " +
		"(\"env\": {" + strings.Join(env, ", ") + "}), then restart the client; " + command
}

// servers starts the configured and wrapped servers: a check each, and
// what each offers, by where it is from.
func servers(ctx context.Context, in Input) ([]Check, []startedServer) {
	var cfgs []config.Server
	wrapped, labels, origins, remote := wrappedServers(in)
	if in.Config != nil && len(in.Clients) == 0 {
		cfgs = append(cfgs, in.Config.Servers...)
		for _, s := range in.Config.Servers {
			origins[s.Name] = origin{agent: in.Config.Agent, name: s.Name, entry: s.Name}
		}
	}
	cfgs = append(cfgs, wrapped...)
	if len(cfgs) == 0 {
		if len(remote) > 0 {
			return remote, nil
		}
		return []Check{{OK, "servers", "none configured or wrapped yet"}}, nil
	}
	timeout := in.StartTimeout
	if timeout <= 0 {
		timeout = DefaultStartTimeout
	}
	for i := range cfgs {
		if cfgs[i].StartTimeout.Duration > timeout || cfgs[i].StartTimeout.Duration == 0 {
			cfgs[i].StartTimeout.Duration = timeout
		}
	}
	log := slog.New(slog.NewTextHandler(discard{}, nil))
	pool := downstream.Start(ctx, cfgs, downstream.Options{Version: in.Version, Log: log})
	defer pool.Close()
	argv := map[string][]string{}
	for _, c := range cfgs {
		argv[c.Name] = append([]string{c.Command}, c.Args...)
	}
	var out []Check
	var started []startedServer
	for _, s := range pool.Servers() {
		if o, ok := origins[s.Name]; ok {
			l := proxy.Listed(ctx, s)
			l.Server = o.name
			started = append(started, startedServer{origin: o, listing: l})
		}
		label := "server " + s.Name
		if l, ok := labels[s.Name]; ok {
			label = "server " + l
		}
		if st := s.State(); st.Status == downstream.Ready {
			out = append(out, Check{OK, label, fmt.Sprintf("starts (%d tools, protocol %s)", len(st.Tools), st.Protocol)})
		} else {
			detail := st.Problem
			if hint := firstRunHint(argv[s.Name], timeout); hint != "" && strings.Contains(st.Problem, "timed out") {
				detail += "; " + hint
			}
			out = append(out, Check{Fail, label, detail})
		}
	}
	out = append(out, sandboxChecks(cfgs, labels)...)
	return append(out, remote...), started
}

// packageRunners are the programs that fetch a package on its first run
// and then start it: a cold cache makes that first start slow.
var packageRunners = map[string]string{"npx": "npm", "bunx": "bun", "pnpx": "pnpm", "uvx": "uv", "pipx": "pipx"}

// firstRunHint explains a timed-out start of a server that a package
// runner fetches first (npx -y PKG, uvx PKG): "" for any other command.
func firstRunHint(argv []string, timeout time.Duration) string {
	if len(argv) == 0 {
		return ""
	}
	runner := strings.TrimSuffix(filepath.Base(argv[0]), ".cmd")
	if _, ok := packageRunners[runner]; !ok {
		return ""
	}
	pkg := ""
	for _, a := range argv[1:] {
		if a == "run" && runner == "pipx" {
			continue
		}
		if !strings.HasPrefix(a, "-") {
			pkg = a
			break
		}
	}
	if pkg == "" {
		return ""
	}
	longer := max(2*timeout, 2*time.Minute).Round(time.Minute)
	return fmt.Sprintf("%s downloads %s on its first run, which can take longer than %s: "+
		"start it once yourself, or wait longer with aqlguard doctor --timeout %s", runner, pkg, shortDuration(timeout), shortDuration(longer))
}

// shortDuration prints whole minutes as 2m, 10m, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
