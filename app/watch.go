package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/telemetry"
)

// watch starts what [serve] metrics_listen and traces_endpoint ask for:
// the metrics listener (with /healthz and /readyz beside /metrics) and
// the trace exporter, and puts the guard's Watcher in place. With neither
// the guard has no Watcher at all: a call costs nothing more. The
// returned function stops both, exporting the spans left.
func (in *Instance) Watch(cfg *config.Config) (stop func(), err error) {
	var w telemetry.Watch
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if addr := cfg.Serve.MetricsListen; addr != "" {
		src := telemetry.Sources{Guards: in.guardStatuses}
		if fw := in.forwarder; fw != nil {
			src.Forward = func() forward.Status { return fw.Status() }
		}
		if dir, ok := in.store.(*store.Store); ok {
			src.SyncFailures = dir.SyncFailures
		}
		w.Metrics = telemetry.NewMetrics(src)
		in.Relay.Restarted = w.Metrics.Restarted
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return stop, fmt.Errorf("[serve] metrics_listen %s: %w", addr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", w.Metrics.Handler())
		mux.HandleFunc("GET /healthz", telemetry.Healthz)
		mux.Handle("GET /readyz", in.Health())
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				in.Log.Error("the metrics listener stopped", "err", err)
			}
		}()
		in.Log.Info("metrics listening", "url", "http://"+ln.Addr().String()+"/metrics")
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = hs.Shutdown(ctx)
		})
	}
	if ep := cfg.Serve.TracesEndpoint; ep != "" {
		t, err := telemetry.NewTracer(ep, nil, in.version)
		if err != nil {
			stop()
			return func() {}, err
		}
		w.Tracer = t
		in.Log.Info("tracing tool calls", "to", ep)
		stops = append(stops, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := t.Shutdown(ctx); err != nil {
				in.Log.Warn("the last spans could not be exported", "err", err)
			}
		})
	}
	if w.Metrics != nil || w.Tracer != nil {
		in.othersMu.Lock()
		in.watcher = &w
		in.Shared.Guard.Watch = &w
		in.othersMu.Unlock()
		in.eachPrincipal(func(p *Principal) {
			p.shared.Guard.Watch = &w
			p.relay.Restarted = in.Relay.Restarted
		})
	}
	return stop, nil
}

// guardStatuses is the status of every principal's guard in this
// process: the configured agent's, and those serve made for the
// principals its clients authenticated as and has not dropped (idle).
func (in *Instance) guardStatuses(ctx context.Context) ([]guard.Status, error) {
	guards := []*guard.Guard{in.Shared.Guard}
	in.eachPrincipal(func(p *Principal) { guards = append(guards, p.shared.Guard) })
	sts := make([]guard.Status, 0, len(guards))
	for _, g := range guards {
		st, err := g.Status(ctx)
		sts = append(sts, st)
		if err != nil {
			return sts, err
		}
	}
	return sts, nil
}

// health is the readiness check of in: its state and its servers.
func (in *Instance) Health() *telemetry.Health {
	in.healthOnce.Do(func() {
		in.healthCheck = &telemetry.Health{
			State: func(ctx context.Context) error {
				_, err := in.Shared.Guard.Status(ctx)
				return err
			},
			Servers: func() []config.Server { return in.Shared.CurrentConfig().Servers },
			Log:     in.Log,
		}
	})
	return in.healthCheck
}
