package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/httpfront"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/pins"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/telemetry"
)

// cmdRun serves MCP over stdio. stdout carries only the MCP stream; every
// log line, ours and the downstream servers', goes to stderr.
func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("run", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !noWords("run", fs.Args(), stderr) {
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	return serveStdio(g, cfg, func() (*config.Config, error) { return loadConfig(g) }, stdin, stdout, stderr)
}

// cmdWrap is `aqlguard wrap [--name N] -- CMD ARGS...`: one stdio server
// behind the guard, in transparent mode, on the config's policy (or the
// embedded defaults), over stdio. This is what `aqlguard init` puts in
// a client's config in place of the server's own command.
func cmdWrap(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("wrap", stderr)
	name := fs.String("name", "", "the server's name (as the client config calls it)")
	url := fs.String("url", "", "a remote server's URL (Streamable HTTP), instead of a command")
	auth := fs.String("auth", "oauth", `with --url: "oauth" (authorize in the browser when the server asks) or "none"`)
	trust := fs.Bool("trust-first-sight", false, "pin the server's tools as it first lists them, without a human's review (trust_first_sight)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aqlguard wrap [--name NAME] [--agent AGENT] [--config FILE] [--state-dir DIR] [--trust-first-sight] -- COMMAND [ARGS...]\n"+
			"       aqlguard wrap --name NAME --url URL [--auth oauth|none] [--trust-first-sight]   (headers: "+clientconfig.WrapHeadersEnv+", a JSON object)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	var headers map[string]string
	if h := os.Getenv(clientconfig.WrapHeadersEnv); h != "" {
		if err := json.Unmarshal([]byte(h), &headers); err != nil {
			fmt.Fprintf(stderr, "aqlguard wrap: %s is not a JSON object of strings\n", clientconfig.WrapHeadersEnv)
			return 2
		}
	}
	wrap := func(base *config.Config) (*config.Config, error) {
		var cfg *config.Config
		var err error
		switch {
		case *url != "" && len(argv) > 0:
			return nil, errors.New("give --url or a command after --, not both")
		case *url != "":
			cfg, err = policy.WrapRemote(base, *name, *url, *auth, headers)
		default:
			cfg, err = policy.Wrap(base, *name, argv)
		}
		if err == nil {
			cfg.Servers[0].TrustFirstSight = *trust
		}
		return cfg, err
	}
	base, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	cfg, err := wrap(base)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard wrap: %v\n", err)
		return 2
	}
	build := func() (*config.Config, error) {
		base, err := loadConfig(g)
		if err != nil {
			return nil, err
		}
		return wrap(base)
	}
	return serveStdio(g, cfg, build, stdin, stdout, stderr)
}

// serveStdio runs one aqlguard on cfg over stdio until stdin closes or a
// signal arrives; build reads the configuration again on a reload.
func serveStdio(g *globals, cfg *config.Config, build func() (*config.Config, error), stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := signalContext()
	defer cancel()
	if isTerminal(stdin) {
		fmt.Fprintln(stderr, "aqlguard: waiting for an MCP client on stdin (this command is meant to be started by your MCP client; Ctrl-C to stop)")
	}
	in, code := startInstance(ctx, g, cfg, stderr, false)
	if in == nil {
		return code
	}
	defer in.close()
	go in.watchConfig(ctx, build)
	// A client that closes stdin right after its last request (a script
	// piping requests in) gets the answers, as from the server itself.
	in.relay.FinishOnEOF = true
	conn := link.NewLineConn(stdin, stdout, nil)
	// A client's bad line gets the JSON-RPC error for it; the session
	// goes on.
	conn.AnswerBadLines = true
	conn.OnBadLine = func(start []byte, why string) {
		in.log.Warn("a line from the client is not a JSON-RPC message; answered with an error", "why", why, "start", string(start))
	}
	if err := relay.Serve(ctx, conn, in.relay); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		in.log.Error("MCP session ended with an error", "err", err)
		return 1
	}
	in.log.Info("aqlguard stopped")
	return 0
}

// isTerminal reports whether r is a terminal (a character device): a
// person, not an MCP client, is at the other end.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// instance is one configured aqlguard: what its sessions share. Each
// client session starts its own downstream servers (package relay).
type instance struct {
	shared *proxy.Shared
	relay  *relay.Config
	log    *slog.Logger
	store  store.State
	// forwarding ends the audit forwarder and waits for its last delivery.
	forwarding func()
	// forwarder ships the audit; nil when it is not forwarded.
	forwarder *forward.Forwarder
	// watcher sees every guarded call, of every principal's guard (nil
	// when serve is not watched: see watch). Guarded by othersMu.
	watcher guard.Watcher
	// healthCheck answers /readyz (health), on both listeners.
	healthOnce  sync.Once
	healthCheck *telemetry.Health

	// principals are, on serve, the principals other than the configured
	// agent that clients authenticated as, each with its own guard
	// (blocks, steps, approvals and the failure budget are theirs), kept
	// while in use (serve.go); nil for run. othersMu guards watcher.
	othersMu   sync.Mutex
	principals *httpfront.Principals[*principal]
	// reloaded, when set, is told of each configuration put in force.
	reloaded func(*config.Config)
}

// principal is one principal's guard and relay configuration.
type principal struct {
	shared *proxy.Shared
	relay  *relay.Config
}

// startInstance opens the state and builds what the sessions share. On
// failure it returns nil and the exit code.
func startInstance(ctx context.Context, g *globals, cfg *config.Config, stderr io.Writer, waitForState bool) (*instance, int) {
	log, err := newLogger(stderr, g.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return nil, 2
	}
	if err := harden(); err != nil {
		log.Warn("could not make the process non-dumpable; verification codes in its memory are less protected", "err", err)
	}
	pol, err := policy.Compile(cfg, cfg.Agent)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	source := cfg.Path
	if source == "" {
		source = "embedded defaults"
	}
	st, err := app.OpenStore(ctx, cfg, log, waitForState)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	if dir, ok := st.(*store.Store); ok {
		for _, w := range dir.Warnings() {
			log.Warn(w)
		}
	}
	anchors, warn := app.AnchorsSaid(cfg, app.AnchorsOff)
	if warn {
		log.Warn("audit anchors are off: the audit log's heads cannot be sent to the system log, so `aqlguard audit verify --anchors` "+
			"has nothing to check a rewound log against", "why", app.AnchorsOff)
	}
	managed := "none"
	if cfg.Managed != nil {
		managed = cfg.Managed.Path
	}
	log.Info("aqlguard starting", "version", version(), "config", source, "managed", managed, "mode", cfg.Mode,
		"principal", pol.Principal, "loop", pol.Loop, "servers", len(cfg.Servers), "human_channel", cfg.Verify.Channel,
		"state", app.StateName(st), "anchors", anchors)
	if len(cfg.NotInEffect) > 0 {
		app.ReportNotInEffect(ctx, cfg, pol, st, log)
	}
	remote := &remoteauth.Manager{Store: &remoteauth.Store{Dir: filepath.Join(app.StateDir(cfg), "oauth")}, Log: log}
	sh := newShared(cfg, pol, st, remote, log)
	// The client's other aqlguard processes (one per server, as init
	// wraps them) share what their sessions read (flows.Board).
	if board, err := flows.OpenBoard(filepath.Join(app.StateDir(cfg), "flows"), pol.Principal, app.ClientKey(), app.ProcessName()); err != nil {
		log.Warn("what this client's other aqlguard processes read is not shared: a send through one after a read through another does not ask", "err", err)
	} else {
		board.Failed = func(err error) {
			log.Error("a read that counts could not be shared with the client's other aqlguard processes", "err", err)
		}
		sh.Guard.Board = board
	}
	sh.Names.Start(ctx)
	in := &instance{shared: sh, relay: sh.RelayConfig(), log: log, store: st, forwarding: func() {}}
	// Servers with share = true: one process for all sessions (serve's;
	// run has one session, which the shared server serves alike).
	in.relay.Hub = downstream.NewHub(ctx, log)
	if f := cfg.Audit.Forward; f != nil {
		fw, err := forward.New(f, st, version(), log.With("audit_forward", f.To))
		if err != nil {
			_ = st.Close()
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return nil, 1
		}
		in.forwarding, in.forwarder = app.StartForwarder(ctx, fw, log), fw
	}
	return in, 0
}

// newShared builds what the sessions of one principal share: its guard
// (and channel to the human), pins, and the way to the servers.
func newShared(cfg *config.Config, pol *policy.Policy, st store.State, remote *remoteauth.Manager, log *slog.Logger) *proxy.Shared {
	gd := app.NewGuard(cfg, pol, st, log)
	sh := &proxy.Shared{
		Mode:   proxy.Mode(cfg.Mode),
		Config: cfg,
		Guard:  gd,
		Pins: &pins.Pinner{State: st, Human: gd.Desk(), Log: log, Process: app.ProcessName(),
			AskFor: cfg.Verify.ConfirmationTTL.Duration},
		Limits:  cfg.Limits,
		Log:     log,
		Version: version(),
		Auth:    remote,
	}
	gd.SessionClient = sh.SessionClient
	sh.Pins.Judge = sh.JudgeTool
	sh.Names = &proxy.NameReport{State: st, Principal: pol.Principal, Process: app.ProcessName(), Log: log,
		Servers: func() []string {
			var out []string
			for _, s := range sh.CurrentConfig().Servers {
				out = append(out, s.Name)
			}
			return out
		}}
	return sh
}

func (in *instance) close() {
	in.eachPrincipal(func(p *principal) {
		p.shared.Guard.Close()
		p.shared.Names.Close()
	})
	in.shared.Guard.Close()
	// The names being recorded, before the store closes.
	in.shared.Names.Close()
	in.forwarding()      // what the guard recorded last, delivered if the collector takes it
	_ = in.store.Close() // the audit log's last records fsync'd
}
