package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/flows"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/aqlguard/aqlguard/proxy/httpfront"
	"github.com/aqlguard/aqlguard/proxy/pins"
	"github.com/aqlguard/aqlguard/proxy/relay"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/aqlguard/aqlguard/proxy/watch"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/telemetry"
)

// Instance is one configured aqlguard: what its sessions share. Each
// client session starts its own downstream servers (package relay).
type Instance struct {
	// Shared is what the configured principal's sessions share; Relay
	// their relay configuration; Log the process's log.
	Shared *proxy.Shared
	Relay  *relay.Config
	Log    *slog.Logger
	store  store.State
	// version is aqlguard's (Options.Version).
	version string
	// forwarding ends the audit forwarder and waits for its last delivery.
	forwarding func()
	// forwarder ships the audit; nil when it is not forwarded.
	forwarder *forward.Forwarder
	// watcher sees every guarded call, of every principal's guard (nil
	// when serve is not watched: see watch). Guarded by othersMu.
	watcher watch.Watcher
	// healthCheck answers /readyz (health), on both listeners.
	healthOnce  sync.Once
	healthCheck *telemetry.Health

	// principals are, on serve, the principals other than the configured
	// agent that clients authenticated as, each with its own guard
	// (blocks, steps, approvals and the failure budget are theirs), kept
	// while in use (ServePrincipals); nil for run. othersMu guards watcher.
	othersMu   sync.Mutex
	principals *httpfront.Principals[*Principal]
	// Reloaded, when set, is told of each configuration put in force.
	Reloaded func(*config.Config)
}

// Principal is one principal's guard and relay configuration.
type Principal struct {
	shared *proxy.Shared
	relay  *relay.Config
}

// Options are what Start takes besides the configuration.
type Options struct {
	// Log receives the process's log lines.
	Log *slog.Logger
	// Version is aqlguard's version, for the start line, the servers and
	// the audit forwarder.
	Version string
	// WaitForState waits for a state that is not up yet (a replica
	// started before its database), saying so, instead of failing.
	WaitForState bool
}

// Start opens the state and builds what the sessions of one aqlguard
// process share: the configured principal's guard, its pins and names,
// the shared servers' hub and the audit forwarder. Close it when the
// process stops. An error says why it could not start (nothing is left
// open).
func Start(ctx context.Context, cfg *config.Config, o Options) (*Instance, error) {
	log := o.Log
	pol, err := policy.Compile(cfg, cfg.Agent)
	if err != nil {
		return nil, err
	}
	source := cfg.Path
	if source == "" {
		source = "embedded defaults"
	}
	st, anchorsOff, err := OpenStore(ctx, cfg, log, o.WaitForState)
	if err != nil {
		return nil, err
	}
	if dir, ok := st.(*store.Store); ok {
		for _, w := range dir.Warnings() {
			log.Warn(w)
		}
	}
	anchors, warn := AnchorsSaid(cfg, anchorsOff)
	if warn {
		log.Warn("audit anchors are off: the audit log's heads cannot be sent to the system log, so `aqlguard audit verify --anchors` "+
			"has nothing to check a rewound log against", "why", anchorsOff)
	}
	managed := "none"
	if cfg.Managed != nil {
		managed = cfg.Managed.Path
	}
	log.Info("aqlguard starting", "version", o.Version, "config", source, "managed", managed, "mode", cfg.Mode,
		"principal", pol.Principal, "loop", pol.Loop, "servers", len(cfg.Servers), "human_channel", cfg.Verify.Channel,
		"state", StateName(st), "anchors", anchors)
	if len(cfg.NotInEffect) > 0 {
		ReportNotInEffect(ctx, cfg, pol, st, log)
	}
	remote := &remoteauth.Manager{Store: &remoteauth.Store{Dir: filepath.Join(StateDir(cfg), "oauth")}, Log: log}
	sh := NewShared(cfg, pol, st, remote, log, o.Version)
	// The client's other aqlguard processes (one per server, as init
	// wraps them) share what their sessions read (flows.Board).
	if board, err := flows.OpenBoard(filepath.Join(StateDir(cfg), "flows"), pol.Principal, ClientKey(), ProcessName()); err != nil {
		log.Warn("what this client's other aqlguard processes read is not shared: a send through one after a read through another does not ask", "err", err)
	} else {
		board.Failed = func(err error) {
			log.Error("a read that counts could not be shared with the client's other aqlguard processes", "err", err)
		}
		sh.Guard.Board = board
	}
	sh.Names.Start(ctx)
	in := &Instance{Shared: sh, Relay: sh.RelayConfig(), Log: log, store: st, forwarding: func() {}, version: o.Version}
	// Servers with share = true: one process for all sessions (serve's;
	// run has one session, which the shared server serves alike).
	in.Relay.Hub = downstream.NewHub(ctx, log)
	if f := cfg.Audit.Forward; f != nil {
		fw, err := forward.New(f, st, o.Version, log.With("audit_forward", f.To))
		if err != nil {
			_ = st.Close()
			return nil, err
		}
		in.forwarding, in.forwarder = StartForwarder(ctx, fw, log), fw
	}
	return in, nil
}

// NewShared builds what the sessions of one principal share: its guard
// (and channel to the human), pins, and the way to the servers.
func NewShared(cfg *config.Config, pol *policy.Policy, st store.State, remote *remoteauth.Manager, log *slog.Logger, version string) *proxy.Shared {
	gd := NewGuard(cfg, pol, st, log)
	sh := &proxy.Shared{
		Mode:   proxy.Mode(cfg.Mode),
		Config: cfg,
		Guard:  gd,
		Pins: &pins.Pinner{State: st, Human: gd.Desk(), Log: log, Process: ProcessName(),
			AskFor: cfg.Verify.ConfirmationTTL.Duration},
		Limits:  cfg.Limits,
		Log:     log,
		Version: version,
		Auth:    remote,
	}
	gd.SessionClient = sh.SessionClient
	sh.Pins.Judge = sh.JudgeTool
	sh.Names = &proxy.NameReport{State: st, Principal: pol.Principal, Process: ProcessName(), Log: log,
		Servers: func() []string {
			var out []string
			for _, s := range sh.CurrentConfig().Servers {
				out = append(out, s.Name)
			}
			return out
		}}
	return sh
}

// Close closes the guards, the names being recorded, the forwarder and
// the state, in that order.
func (in *Instance) Close() {
	in.eachPrincipal(func(p *Principal) {
		p.shared.Guard.Close()
		p.shared.Names.Close()
	})
	in.Shared.Guard.Close()
	// The names being recorded, before the store closes.
	in.Shared.Names.Close()
	in.forwarding()      // what the guard recorded last, delivered if the collector takes it
	_ = in.store.Close() // the audit log's last records fsync'd
}

// RelayFor is the relay configuration of an identity's sessions, held
// until release: the configured agent's, or the guard of the identity's
// principal's own (ServePrincipals, made by makePrincipal).
func (in *Instance) RelayFor(ctx context.Context, id clientauth.Identity) (*relay.Config, func(), error) {
	if id.Principal == "" || id.Principal == in.Shared.Guard.Principal() {
		return in.Relay, func() {}, nil
	}
	return in.principals.Hold(ctx, id.Principal)
}

// makePrincipal makes a principal's guard, with the policy compiled for
// it ([agents.NAME]), on its first session or its first since its last
// guard was dropped; the guard takes over what that one parked.
func (in *Instance) makePrincipal(ctx context.Context, name string) (*Principal, error) {
	cfg := in.Shared.CurrentConfig()
	pol, err := policy.Compile(cfg, name)
	if err != nil {
		return nil, err
	}
	sh := NewShared(cfg, pol, in.store, in.Shared.Auth, in.Log, in.version)
	sh.Principal = name
	// The principal's calls are watched as the others are.
	in.othersMu.Lock()
	sh.Guard.Watch = in.watcher
	in.othersMu.Unlock()
	if err := sh.Guard.Resume(ctx); err != nil {
		sh.Guard.Close()
		return nil, err
	}
	p := &Principal{shared: sh, relay: sh.RelayConfig()}
	p.relay.Restarted = in.Relay.Restarted
	p.relay.Hub = in.Relay.Hub
	in.Log.Info("a principal connected", "principal", name, "policy", pol.Version)
	return p, nil
}

// Relay is the relay configuration of the principal's sessions.
func (p *Principal) Relay() *relay.Config { return p.relay }

// Drop parks what the principal's guard owes in the state (guard.Park)
// and ends it; parking.ErrBusy or a state error keeps it.
func (p *Principal) Drop(ctx context.Context) error {
	if err := p.shared.Guard.Park(ctx); err != nil {
		return err
	}
	p.shared.Guard.Close()
	p.shared.Names.Close()
	return nil
}

// eachPrincipal calls fn with every principal's guard serve holds now.
func (in *Instance) eachPrincipal(fn func(*Principal)) {
	if in.principals != nil {
		in.principals.Each(func(_ string, p *Principal) { fn(p) })
	}
}

// ServePrincipals makes, on serve, a guard for each principal other than
// the configured agent that clients authenticate as (RelayFor), and
// drops one idle for idle, parking what it owes in the state, until ctx
// ends.
func (in *Instance) ServePrincipals(ctx context.Context, idle time.Duration) {
	in.principals = &httpfront.Principals[*Principal]{Make: in.makePrincipal, Idle: idle, Log: in.Log}
	go in.principals.Run(ctx)
}
