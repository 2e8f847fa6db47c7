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
//	aqlguard audit list|show|export|verify|seal     read and check the audit log
//	aqlguard state reset --i-understand             accept a state whose database and log disagree (audited)
//	aqlguard version
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
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/link"
)

func main() {
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

// supervisesServers reports whether a verb may start stdio servers, and
// so runs under a supervisor (downstream.Supervise) that ends them and
// everything they started however aqlguard ends.
func supervisesServers(args []string) bool {
	verb := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb = args[0]
	}
	switch verb {
	case "run", "serve", "wrap", "doctor", "policy":
		return true
	}
	return false
}

const usage = `usage: aqlguard <verb> [flags]

verbs:
  run            serve MCP over stdio in front of the configured servers (default)
  serve          serve MCP over Streamable HTTP at /mcp (--listen ADDR, default 127.0.0.1:8765)
  wrap [--name N] -- CMD ARGS...
                 run one stdio server behind the guard, as it is (transparent mode)
  init           put aqlguard in front of the servers of your MCP clients (--dry-run shows the diff)
  unwrap         restore those client configs, entry by entry
  doctor         check this machine: binary, client configs, policy, state, human channel, servers
  policy check [--servers] [--strict]
                 load a config, report every error with its line, warn about
                 dead and shadowed rules (--servers: against the real tools)
  policy explain per tool of the configured servers: category, risk, tier,
                 the deciding rule, and what happens when it is called
  policy test CASES.toml
                 run test cases against the policy (see policy-cases.example.toml)
  policy suggest [--since 7d] [--cases FILE]
                 rules from the human's answers in the audit log, as a diff of
                 the config with their evidence (nothing is applied); --cases
                 writes policy test cases that keep them checked
  blocks list    show hard-blocked agents
  unblock AGENT  lift an agent's hard block (admin override, audited)
  approvals list|revoke ID...|revoke --every
                 the standing "allow for this session" answers (revoking is audited)
  pins list|approve SERVER TOOL|reset SERVER [TOOL]
                 the approved definitions of the servers' tools; changes
                 waiting for a human (shown as a diff), approving them
  audit list|show SEQ|export|tail|verify [FILE]|seal
                 read and check the hash-chained audit log (export --format
                 jsonl|ocsf, tail -f; --since, --until, --agent, --kind);
                 seal records a torn tail (a write cut short) as evidence
  state reset --i-understand
                 accept a state directory whose database and audit log do
                 not tell the same history (aqlguard refuses to start on it
                 and says why); audited
  version        print the version

global flags:
  --config FILE     config file (default $XDG_CONFIG_HOME/aqlguard/config.toml,
                    embedded defaults when that does not exist)
  --managed FILE    managed policy layer, read first (default
                    /etc/aqlguard/managed.toml when it exists); the config
                    may add restrictions to it, never loosen it
  --agent NAME      principal that owns blocks, step counts and audit entries
  --state-dir DIR   state directory (default $XDG_STATE_HOME/aqlguard)
  --log-level LVL   debug, info, warn or error (default info)
`

// run dispatches a verb and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	verb := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		verb, args = args[0], args[1:]
	}
	switch verb {
	case "run":
		return cmdRun(args, stdin, stdout, stderr)
	case "serve":
		return cmdServe(args, stderr)
	case "wrap":
		return cmdWrap(args, stdin, stdout, stderr)
	case "init", "unwrap":
		return cmdInit(verb, args, stdout, stderr)
	case "doctor":
		return cmdDoctor(args, stdout, stderr)
	case "policy":
		return cmdPolicy(args, stdout, stderr)
	case "blocks":
		return cmdBlocks(args, stdout, stderr)
	case "unblock":
		return cmdUnblock(args, stdout, stderr)
	case "approvals":
		return cmdApprovals(args, stdout, stderr)
	case "pins":
		return cmdPins(args, stdout, stderr)
	case "audit":
		return cmdAudit(args, stdout, stderr)
	case "state":
		return cmdState(args, stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "aqlguard", version())
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "aqlguard: unknown verb %q\n\n%s", verb, usage)
	return 2
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
func loadConfig(g *globals) (*policy.Config, error) {
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
func loadUserConfig(g *globals) (*policy.Config, error) {
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
func loadManaged(g *globals) (*policy.Config, error) {
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

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
