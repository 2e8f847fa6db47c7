package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/internal/procfs"
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
	"github.com/aqlguard/aqlguard/verify"
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
	st, err := openStore(ctx, cfg, log, waitForState)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	if dir, ok := st.(*store.Store); ok {
		for _, w := range dir.Warnings() {
			log.Warn(w)
		}
	}
	anchors, warn := anchorsSaid(cfg, anchorsOff)
	if warn {
		log.Warn("audit anchors are off: the audit log's heads cannot be sent to the system log, so `aqlguard audit verify --anchors` "+
			"has nothing to check a rewound log against", "why", anchorsOff)
	}
	managed := "none"
	if cfg.Managed != nil {
		managed = cfg.Managed.Path
	}
	log.Info("aqlguard starting", "version", version(), "config", source, "managed", managed, "mode", cfg.Mode,
		"principal", pol.Principal, "loop", pol.Loop, "servers", len(cfg.Servers), "human_channel", cfg.Verify.Channel,
		"state", stateName(st), "anchors", anchors)
	if len(cfg.NotInEffect) > 0 {
		reportNotInEffect(ctx, cfg, pol, st, log)
	}
	remote := &remoteauth.Manager{Store: &remoteauth.Store{Dir: filepath.Join(stateDir(cfg), "oauth")}, Log: log}
	sh := newShared(cfg, pol, st, remote, log)
	// The client's other aqlguard processes (one per server, as init
	// wraps them) share what their sessions read (flows.Board).
	if board, err := flows.OpenBoard(filepath.Join(stateDir(cfg), "flows"), pol.Principal, clientKey(), processName()); err != nil {
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
		in.forwarding, in.forwarder = startForwarder(ctx, fw, log), fw
	}
	return in, 0
}

// newShared builds what the sessions of one principal share: its guard
// (and channel to the human), pins, and the way to the servers.
func newShared(cfg *config.Config, pol *policy.Policy, st store.State, remote *remoteauth.Manager, log *slog.Logger) *proxy.Shared {
	gd := newGuard(cfg, pol, st, log)
	sh := &proxy.Shared{
		Mode:   proxy.Mode(cfg.Mode),
		Config: cfg,
		Guard:  gd,
		Pins: &pins.Pinner{State: st, Human: gd.Desk(), Log: log, Process: processName(),
			AskFor: cfg.Verify.ConfirmationTTL.Duration},
		Limits:  cfg.Limits,
		Log:     log,
		Version: version(),
		Auth:    remote,
	}
	gd.SessionClient = sh.SessionClient
	sh.Pins.Judge = sh.JudgeTool
	sh.Names = &proxy.NameReport{State: st, Principal: pol.Principal, Process: processName(), Log: log,
		Servers: func() []string {
			var out []string
			for _, s := range sh.CurrentConfig().Servers {
				out = append(out, s.Name)
			}
			return out
		}}
	return sh
}

// startForwarder runs fw beside the calls until the returned function is
// called (or ctx ends), which then waits for its last delivery.
func startForwarder(ctx context.Context, fw *forward.Forwarder, log *slog.Logger) func() {
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fw.Run(fctx); err != nil {
			log.Error("the audit forwarder stopped; records are kept in the log and sent from its cursor at the next start", "err", err)
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// reportNotInEffect logs, and records in the audit log, what the user's
// file tried that the managed policy does not let take effect: the
// security team reads the attempt there.
func reportNotInEffect(ctx context.Context, cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger) {
	rec := store.NewRecord(time.Now(), store.KindPolicy, pol.Principal, processName(), "")
	rec.Operation, rec.Decision, rec.Result = "not_in_effect", pol.Version, cfg.Managed.Path
	for _, e := range cfg.NotInEffect {
		log.Warn("the managed policy does not let this setting take effect", "setting", e.Error())
		rec.Factors = append(rec.Factors, e.Error())
	}
	if err := store.AppendRecords(ctx, st, rec); err != nil {
		log.Error("what the managed policy kept from taking effect could not be recorded in the audit log", "err", err)
	}
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

// newGuard builds the guard and the channel to the human; what the
// channel can reach is recorded for doctor.
func newGuard(cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger) *guard.Guard {
	reached := reachRecorder(cfg, pol, log)
	if cfg.Verify.Channel == "command" {
		// Whether the program answers is its own business; doctor says
		// which channel the client's aqlguard had.
		reached(verify.Display{From: "the command channel (" + cfg.Verify.Command[0] + ")"}, nil)
	}
	return guardWith(cfg, pol, st, log, humanChannel(cfg, log, reached))
}

// humanChannel is the configured channel to the human (each channel
// registered itself with verify); reached, when set, is told what a
// dialog channel can reach (verify.DialogChannel).
func humanChannel(cfg *config.Config, log *slog.Logger, reached func(verify.Display, error)) verify.Channel {
	ch, err := verify.OpenChannel(cfg.Verify, verify.ChannelSetup{Log: log, Reached: reached})
	if err != nil {
		log.Error("no channel to the human: every question fails and nothing is approved", "err", err)
		return verify.Unreachable(err)
	}
	return ch
}

// guardWith is the guard of pol on st, reaching the human through ch.
func guardWith(cfg *config.Config, pol *policy.Policy, st store.State, log *slog.Logger, ch verify.Channel) *guard.Guard {
	return &guard.Guard{
		Policy:             pol,
		State:              st,
		Process:            processName(),
		Channel:            ch,
		InlineWait:         cfg.Verify.InlineWait.Duration,
		AskTimeout:         cfg.Verify.Timeout.Duration,
		ConfirmTTL:         cfg.Verify.ConfirmationTTL.Duration,
		ChallengeTTL:       cfg.Verify.ChallengeTTL.Duration,
		SessionApprovalTTL: cfg.Verify.SessionApprovalTTL.Duration,
		MaxArgumentBytes:   cfg.Audit.MaxArgumentBytes,
		VerifyTool:         proxy.VoiceFor(proxy.Mode(cfg.Mode), nil).VerifyTool,
		Log:                log,
	}
}

// reachRecorder records, for doctor, where this aqlguard's dialogs
// could go (verify.Reach), when it starts and whenever that changes.
func reachRecorder(cfg *config.Config, pol *policy.Policy, log *slog.Logger) func(verify.Display, error) {
	var mu sync.Mutex
	var last verify.Reach
	written := false
	dir := verify.ReachDir(stateDir(cfg))
	by := clientProcess()
	return func(d verify.Display, err error) {
		r := verify.ReachOf(d, err)
		r.Agent, r.StartedBy, r.PID, r.At, r.Channel = pol.Principal, by, os.Getpid(), time.Now().UTC(), cfg.Verify.Channel
		mu.Lock()
		defer mu.Unlock()
		if written && r.Same(last) {
			return
		}
		if err := verify.WriteReach(dir, r); err != nil {
			log.Warn("doctor will not know what this aqlguard's dialogs could reach", "err", err)
			return
		}
		last, written = r, true
	}
}

// clientProcess names the process that started this aqlguard (the
// parent of its supervisor, if it has one) as "node (pid 4242)".
func clientProcess() string {
	ppid := os.Getppid()
	if downstream.UnderSupervisor() {
		if st, err := procfs.Read(ppid); err == nil {
			ppid = st.Ppid
		}
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/comm")
	if err != nil {
		return fmt.Sprintf("pid %d", ppid)
	}
	return fmt.Sprintf("%s (pid %d)", strings.TrimSpace(string(comm)), ppid)
}

// clientKey names the client that started this aqlguard (the parent of
// its supervisor, if it has one, and when that process started, which a
// reused pid does not share), for the board its aqlguard processes share.
func clientKey() string {
	ppid := os.Getppid()
	if downstream.UnderSupervisor() {
		if st, err := procfs.Read(ppid); err == nil {
			ppid = st.Ppid
		}
	}
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/stat")
	if err != nil {
		return strconv.Itoa(ppid)
	}
	// Field 22 (starttime) counts from the last ")" (a name may hold one).
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(fields) > 19 {
		return strconv.Itoa(ppid) + "-" + fields[19]
	}
	return strconv.Itoa(ppid)
}

// stateDir is the configured state directory, or the default one.
func stateDir(cfg *config.Config) string {
	if cfg.StateDir != "" {
		return cfg.StateDir
	}
	d, _ := store.DefaultDir()
	return d
}

// openStore opens the state run and serve decide on (openState): the
// state directory, or the PostgreSQL state replicas share. Without it
// nothing can be decided durably, so aqlguard does not start.
func openStore(ctx context.Context, cfg *config.Config, log *slog.Logger, wait bool) (store.State, error) {
	return store.OpenBackend(ctx, cfg, store.BackendOptions{Options: anchored(store.Options{Log: log}), Wait: wait})
}

// processName tells this process apart in audit records of a shared
// state directory.
func processName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, os.Getpid())
}

// anchorsSaid is what the start line says of the audit anchors, and
// whether their being off (off says why) is worth a warning: only where
// the audit log is meant to go to syslog. A machine without a system
// log (a container, a minimal VM) is not warned at every start.
func anchorsSaid(cfg *config.Config, off string) (said string, warn bool) {
	if off == "" {
		return "system log", false
	}
	f := cfg.Audit.Forward
	return "off (" + off + ")", f != nil && f.To == "syslog"
}

// anchorIdent is the system log identifier of the audit anchors.
const anchorIdent = "aqlguard-audit"

// anchorsOff says why anchors are not sent ("" when they are).
var anchorsOff string
