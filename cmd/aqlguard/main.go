// Command aqlguard is a multiplexing MCP proxy that puts the MCP-AQL
// execution safety loop in front of the MCP servers a client would
// otherwise launch directly.
//
// Usage:
//
//	aqlguard run [--config FILE] [--agent NAME]     serve MCP over stdio (the default verb)
//	aqlguard serve --listen ADDR                    serve MCP over Streamable HTTP at /mcp
//	aqlguard wrap [--name N] -- CMD ARGS...         one stdio server behind the guard, transparently
//	aqlguard init [--client ID] [--dry-run]         wrap the servers of the MCP clients installed here
//	aqlguard unwrap [--client ID] [--force]         restore them
//	aqlguard doctor                                 check that aqlguard can do its job here
//	aqlguard policy check [--servers] [--strict]    check a config: errors with their line, dead and shadowed rules
//	aqlguard policy explain                         what the policy does with each tool of the servers
//	aqlguard policy test CASES.toml                 run test cases against the policy
//	aqlguard policy suggest [--since 7d]            rules from the human's answers in the audit log
//	aqlguard blocks list                            show hard-blocked agents
//	aqlguard unblock AGENT                          lift a hard block (admin override, audited)
//	aqlguard approvals list|revoke                  standing approvals (allow for this session)
//	aqlguard audit list|show|export|tail|verify|seal|report   read, check and report on the audit log
//	aqlguard state reset --i-understand             accept a state whose database and log disagree (audited)
//	aqlguard sandbox show|grant SERVER PATH|PORT     what each stdio server is confined to; grant it more
//	aqlguard version                                version, commit and Go version (also --version)
//	aqlguard help [VERB]                            every verb with one line, or one verb's flags
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
)

func main() {
	oneClientOneProcessor(os.Args[1:])
	if !supervisesServers(os.Args[1:]) {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	if code, ok := downstream.Supervise(); ok {
		os.Exit(code)
	}
	stdin, stdout, stderr, restore := pollableStdio()
	code := run(os.Args[1:], stdin, stdout, stderr)
	restore()
	downstream.EndAdopted() // what the servers left behind
	os.Exit(code)
}

// pollableStdio is the serving aqlguard's stdin, stdout and stderr read
// and written through the runtime's poller (link.Pollable): no thread of
// it ever blocks in read(2) or write(2) on the pipes its client gave it.
// restore puts the descriptors back as they were given.
func pollableStdio() (stdin, stdout, stderr *os.File, restore func()) {
	var restores []func()
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	for i, f := range files {
		p, r, err := link.Pollable(f)
		if err != nil {
			fmt.Fprintf(os.Stderr, "aqlguard: %s stays a blocking descriptor: %v\n", f.Name(), err)
			continue
		}
		files[i] = p
		restores = append(restores, r)
	}
	return files[0], files[1], files[2], func() {
		for _, r := range restores {
			r()
		}
	}
}

// oneClientOneProcessor runs a verb that serves one client over stdio
// (run, wrap) on one processor, unless GOMAXPROCS says otherwise. Its
// calls come one after another through a chain of goroutines (the
// client's line, a worker, the guard, the server's pipe and back): with
// more processors every hand-off wakes an idle one, a futex call and a
// spinning search for work each, which on a virtual machine cost more
// than the work (bench/RESULTS.md (ad): the added p50 of a guarded stdio
// call and the CPU per call both fall). What runs in parallel is the
// servers, which are processes of their own; serve, with many clients,
// keeps every processor.
func oneClientOneProcessor(args []string) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if verb, _ := verbOf(args); verb == "run" || verb == "wrap" {
		runtime.GOMAXPROCS(1)
	}
}

// supervisesServers reports whether a verb may start stdio servers, and
// so runs under a supervisor (downstream.Supervise) that ends them and
// everything they started however aqlguard ends.
func supervisesServers(args []string) bool {
	verb, _ := verbOf(args)
	switch verb {
	case "run", "serve", "wrap", "doctor", "policy":
		return true
	}
	return false
}

// command is one verb: the table below is what dispatches, what help
// lists and what a stray word is checked against.
type command struct {
	name string
	// subs are the words the verb takes first (audit list, pins
	// approve); nil when it takes flags only, or its own arguments.
	subs []string
	// args is what the verb takes after its name, for help; "" for
	// flags only.
	args    string
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands are the verbs, in the order help lists them. They are set in
// init: a verb's own errors name the others.
var commands []command

func init() {
	commands = []command{
		{"run", nil, "", "serve MCP over stdio in front of the configured servers (the default verb)",
			func(a []string, in io.Reader, out, errw io.Writer) int { return cmdRun(a, in, out, errw) }},
		{"serve", nil, "[token add|list|revoke]", "serve MCP over Streamable HTTP at /mcp (--listen ADDR, default 127.0.0.1:8765); `serve token` manages its clients' tokens",
			func(a []string, _ io.Reader, _, errw io.Writer) int { return cmdServe(a, errw) }},
		{"wrap", nil, "-- CMD ARGS...", "run one stdio server behind the guard, as it is (what init writes)",
			func(a []string, in io.Reader, out, errw io.Writer) int { return cmdWrap(a, in, out, errw) }},
		{"hook", nil, "CLIENT", "judge one of a client's own tool calls (its shell, its file edits) from its hook input on stdin, in its format (what init installs)",
			func(a []string, in io.Reader, out, errw io.Writer) int { return cmdHook(a, in, out, errw) }},
		{"init", nil, "", "put aqlguard in front of the servers of your MCP clients (--dry-run shows the diff)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdInit("init", a, out, errw) }},
		{"unwrap", nil, "", "restore those client configs, entry by entry (a diff before --force drops an edit)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdInit("unwrap", a, out, errw) }},
		{"doctor", nil, "", "check this machine: binary, client configs, policy, state, human channel, servers",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdDoctor(a, out, errw) }},
		{"policy", []string{"check", "explain", "test", "suggest"}, "check|explain|test|suggest", "check a config (-v: how each pattern reads), explain it per tool, run test cases, suggest rules from the human's answers",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdPolicy(a, out, errw) }},
		{"blocks", []string{"list"}, "list", "show hard-blocked agents",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdBlocks(a, out, errw) }},
		{"unblock", nil, "AGENT", "lift an agent's hard block (admin override, audited)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdUnblock(a, out, errw) }},
		{"verify", []string{"show"}, "show", "show a blocked agent's verification code again (a new one, through the human channel; never printed)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdVerify(a, out, errw) }},
		{"approvals", []string{"list", "revoke"}, "list|revoke", `the standing "allow for this session" answers (revoking is audited)`,
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdApprovals(a, out, errw) }},
		{"pins", []string{"list", "approve", "reset"}, "list|approve|reset", "approved tool definitions, changes waiting for a human (as diffs)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdPins(a, out, errw) }},
		{"audit", auditCommands, strings.Join(auditCommands, "|"), "read, check and report on the hash-chained audit log",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdAudit(a, out, errw) }},
		{"state", []string{"reset", "copy"}, "reset|copy", "reset: accept a state directory whose database and audit log do not tell the same history (aqlguard refuses to start on it and says why); copy: move a state between bbolt and PostgreSQL; both audited",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdState(a, out, errw) }},
		{"sandbox", []string{"show", "grant"}, "show|grant", "what each stdio server is confined to (show), and more for one of them (grant SERVER PATH|PORT [--read]: edits the config)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdSandbox(a, out, errw) }},
		{"service", []string{"install"}, "install", "run aqlguard serve as a systemd service under a system user of its own (--dry-run prints the unit)",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdService(a, out, errw) }},
		{"version", nil, "", "print the version, commit and Go version (also --version)",
			func(a []string, _ io.Reader, out, _ io.Writer) int { fmt.Fprintln(out, versionLine()); return 0 }},
		{"help", nil, "[VERB]", "this list, or one verb's flags",
			func(a []string, _ io.Reader, out, errw io.Writer) int { return cmdHelp(a, out, errw) }},
	}
}

// lookupCommand finds a verb by name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func verbNames() string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return strings.Join(names, ", ")
}

// usage is the help text: one line per verb, from commands.
func usage() string {
	var b strings.Builder
	b.WriteString("usage: aqlguard <verb> [flags]\n\nverbs:\n")
	for _, c := range commands {
		name := c.name
		if c.args != "" {
			name += " " + c.args
		}
		if len(name) > 24 {
			fmt.Fprintf(&b, "  %s\n  %-24s %s\n", name, "", c.summary)
			continue
		}
		fmt.Fprintf(&b, "  %-24s %s\n", name, c.summary)
	}
	b.WriteString(`
global flags (every verb):
  --config FILE     config file (default $XDG_CONFIG_HOME/aqlguard/config.toml,
                    embedded defaults when that does not exist)
  --managed FILE    managed policy layer, read first (default
                    /etc/aqlguard/managed.toml when it exists); the config
                    may add restrictions to it, never loosen it
  --agent NAME      principal that owns blocks, step counts and audit entries
  --state-dir DIR   state directory (default $XDG_STATE_HOME/aqlguard)
  --log-level LVL   debug, info, warn or error (default info)

aqlguard help VERB (or aqlguard VERB -h) shows a verb's flags.
`)
	return b.String()
}

// run dispatches a verb and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			return cmdHelp(args[1:], stdout, stderr)
		case "-version", "--version":
			fmt.Fprintln(stdout, versionLine())
			return 0
		}
	}
	verb, args := verbOf(args)
	c, ok := lookupCommand(verb)
	if !ok {
		fmt.Fprintf(stderr, "aqlguard: unknown verb %q%s; the verbs are %s\n\n%s", verb, didYouMean(verb), verbNames(), usage())
		return 2
	}
	if msg := strayWord(c, args); msg != "" {
		fmt.Fprintln(stderr, msg)
		return 2
	}
	code := c.run(args, stdin, stdout, stderr)
	if code == 2 && asksForHelp(args) {
		return 0 // the usage it printed is what was asked for
	}
	return code
}

// asksForHelp reports whether a verb's arguments hold -h, -help or
// --help before "--" (after it they are the wrapped command's).
func asksForHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// didYouMean names the verb a mistyped one is closest to ("" if none
// is close): a typo (`audt`), a verb's start (`pol`), another
// spelling's case (`Doctor`).
func didYouMean(word string) string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	best := policy.Suggest(word, names)
	if best == "" && len(word) >= 2 {
		for _, n := range names {
			if strings.HasPrefix(n, strings.ToLower(word)) {
				if best != "" {
					return "" // two verbs start so: no guess
				}
				best = n
			}
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// verbOf splits the command line into its verb (run when the first word
// is a flag or there is none) and what follows it.
func verbOf(args []string) (verb string, rest []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "run", args
}

// strayWord checks the first word after a verb that takes sub-commands:
// a word it does not take is an error naming the ones it does, not a
// silent fall-back to something else.
func strayWord(c command, args []string) string {
	if c.subs == nil || len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return ""
	}
	for _, s := range c.subs {
		if args[0] == s {
			return ""
		}
	}
	guess := ""
	if s := policy.Suggest(args[0], c.subs); s != "" {
		guess = fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Sprintf("aqlguard %s: %q is not one of its commands%s; %s takes %s (aqlguard help %s)",
		c.name, args[0], guess, c.name, strings.Join(c.subs, ", "), c.name)
}

// noWords is for verbs that take flags only: what is left after the
// flags is an error that says so, naming the verbs there are.
func noWords(verb string, rest []string, stderr io.Writer) bool {
	if len(rest) == 0 {
		return true
	}
	fmt.Fprintf(stderr, "aqlguard %s: unexpected %q: %s takes flags only (aqlguard help %s); the verbs are %s\n",
		verb, rest[0], verb, verb, verbNames())
	return false
}

// cmdHelp prints the verb list, or one verb's flags (on stdout: asked for).
func cmdHelp(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage())
		return 0
	}
	c, ok := lookupCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "aqlguard help: unknown verb %q%s; the verbs are %s\n", args[0], didYouMean(args[0]), verbNames())
		return 2
	}
	if c.name == "help" {
		fmt.Fprint(stdout, usage())
		return 0
	}
	if c.name == "version" {
		fmt.Fprintln(stdout, "usage: aqlguard version (or --version): "+c.summary)
		return 0
	}
	fmt.Fprintf(stdout, "aqlguard %s: %s\n\n", c.name, c.summary)
	// Each verb prints its own usage and flags for -h.
	c.run([]string{"-h"}, strings.NewReader(""), stdout, stdout)
	return 0
}

// globals are the flags every verb takes.
type globals struct {
	config   string
	managed  string
	agent    string
	stateDir string
	logLevel string
}

func newFlags(name string, stderr io.Writer) (*flag.FlagSet, *globals) {
	g := &globals{}
	fs := flag.NewFlagSet("aqlguard "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&g.config, "config", "", "config file")
	fs.StringVar(&g.managed, "managed", "", "managed policy file (default "+policy.DefaultManagedPath()+" when it exists)")
	fs.StringVar(&g.agent, "agent", "", "principal name (overrides the config's agent)")
	fs.StringVar(&g.stateDir, "state-dir", "", "state directory")
	fs.StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	return fs, g
}

// loadConfig reads --config, else the default path, else the embedded
// defaults. An explicitly named file that does not exist is an error, not
// a silent fallback.
func loadConfig(g *globals) (*config.Config, error) {
	cfg, err := loadUserConfig(g)
	if err != nil {
		return nil, err
	}
	managed, err := loadManaged(g)
	if err != nil || managed == nil {
		return cfg, err
	}
	cfg, _ = policy.Overlay(managed, cfg) // what is not in effect: cfg.NotInEffect
	return cfg, nil
}

// loadUserConfig is loadConfig without the managed layer: the user's
// file (or the defaults) and the flags.
func loadUserConfig(g *globals) (*config.Config, error) {
	path, explicit := g.config, g.config != ""
	if !explicit {
		path = defaultConfigPath()
	}
	cfg, err := policy.Load(path)
	if err != nil {
		if !explicit && errors.Is(err, fs.ErrNotExist) {
			cfg = policy.Default()
		} else {
			return nil, err
		}
	}
	if g.agent != "" {
		cfg.Agent = g.agent
		cfg.SetOnCommandLine("agent")
	}
	if g.stateDir != "" {
		cfg.StateDir = g.stateDir
		cfg.SetOnCommandLine("state_dir")
	}
	return cfg, nil
}

// loadManaged reads the managed policy layer: the system's file when it
// exists, else --managed. --managed cannot stand in for the system's
// file (the flag is in a client config the user can edit); a --managed
// file that does not exist is an error.
func loadManaged(g *globals) (*config.Config, error) {
	system := policy.DefaultManagedPath()
	path := g.managed
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("--managed %s: %w", path, err)
		}
		path = abs
	}
	if sys, err := os.Stat(system); err == nil {
		if path != "" {
			if given, err := os.Stat(path); err != nil || !os.SameFile(sys, given) {
				return nil, fmt.Errorf("--managed %s: the system's managed policy %s is in force, and --managed cannot replace it", path, system)
			}
		}
		path = system
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("the managed policy %s: %w", system, err)
	}
	if path == "" {
		return nil, nil
	}
	return policy.LoadManaged(path)
}

func defaultConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "aqlguard", "config.toml")
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}

// Set by the release build (.goreleaser.yaml): -X main.buildVersion=...
// and so on. A go install or go build leaves them empty, and the module
// and VCS stamps of the build info say what they can.
var (
	buildVersion string
	buildCommit  string
	buildDate    string
)

// version is aqlguard's version: the release's, else the module's (a
// tag or pseudo-version go install stamped), else "dev".
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// versionLine is what --version prints: the version, the commit it was
// built from (with +dirty for uncommitted changes) and when, and the Go
// toolchain and platform.
func versionLine() string {
	commit, date, dirty := buildCommit, buildDate, false
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if commit == "" {
					commit = s.Value
				}
			case "vcs.time":
				if date == "" {
					date = s.Value
				}
			case "vcs.modified":
				dirty = s.Value == "true" && buildCommit == ""
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	} else if len(commit) > 12 {
		commit = commit[:12]
	}
	if dirty {
		commit += "+dirty"
	}
	line := fmt.Sprintf("aqlguard %s (commit %s", version(), commit)
	if date != "" {
		line += ", built " + date
	}
	return line + ", " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
