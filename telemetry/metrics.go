// Package telemetry is what the people who run `aqlguard serve` watch:
// Prometheus metrics, OpenTelemetry traces of the guarded calls, and the
// health and readiness endpoints.
//
// Every label value comes from a bounded set: server names from the
// configuration, decisions and outcomes from fixed lists. Nothing the
// model writes (arguments, tool names a server invents) becomes a label.
package telemetry

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/guard"
	"github.com/aqlguard/aqlguard/proxy/watch"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are aqlguard's Prometheus metrics, in a registry of their own.
type Metrics struct {
	reg        *prometheus.Registry
	calls      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	downstream *prometheus.HistogramVec
	restarts   *prometheus.CounterVec
	// series are the children of the vectors by label values, looked
	// up once each: a call then costs one map read, not a hash of its
	// labels per vector.
	series sync.Map // seriesKey → *callSeries
}

type seriesKey struct{ server, method, decision, outcome string }

type callSeries struct {
	calls              prometheus.Counter
	duration, upstream prometheus.Observer
}

// Sources are what the metrics read when they are scraped.
type Sources struct {
	// Guards gives, per principal with a guard in this process (serve
	// makes one per principal its clients authenticate as), the pending
	// questions and whether the principal is blocked. Principal names
	// come from the configuration or the identity provider, never from
	// a model, so they may be a label.
	Guards func(ctx context.Context) ([]guard.Status, error)
	// Forward is the audit forwarder's status; nil when the audit is not
	// forwarded.
	Forward func() forward.Status
	// SyncFailures counts the failed fsyncs of the audit log (a state
	// directory's: store.Store.SyncFailures); nil on PostgreSQL, whose
	// durability is the server's.
	SyncFailures func() uint64
	// Now defaults to time.Now.
	Now func() time.Time
}

// Buckets of the call latency histograms, in seconds: a call through
// aqlguard takes from well under a millisecond (a refusal) to minutes (a
// human's answer).
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// NewMetrics registers aqlguard's metrics (and the Go runtime's and the
// process's) in a registry of their own.
func NewMetrics(src Sources) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aqlguard_calls_total",
		Help: "Calls that reached the guard (tools/call, resources/read, prompts/get), by server, method, decision (allow, confirm, verify, block, refuse) and outcome (ok, tool_error, rpc_error, failed, refused, unrecorded).",
	}, []string{"server", "method", "decision", "outcome"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "aqlguard_call_duration_seconds",
		Help:    "Time from a call reaching the guard to its answer, a human's answer included, by server, method and decision.",
		Buckets: latencyBuckets,
	}, []string{"server", "method", "decision"})
	m.downstream = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "aqlguard_downstream_duration_seconds",
		Help:    "Time the server took to answer a forwarded call, by server and method.",
		Buckets: latencyBuckets,
	}, []string{"server", "method"})
	m.restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "aqlguard_downstream_restarts_total",
		Help: "Downstream servers brought back after they died, by server.",
	}, []string{"server"})
	m.reg.MustRegister(m.calls, m.duration, m.downstream, m.restarts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src.Guards != nil {
		m.reg.MustRegister(&guardCollector{status: src.Guards})
	}
	if src.Forward != nil {
		now := src.Now
		if now == nil {
			now = time.Now
		}
		m.reg.MustRegister(&forwardCollector{status: src.Forward, now: now})
	}
	if src.SyncFailures != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "aqlguard_audit_fsync_failures_total",
			Help: "Failed fsyncs of the audit log; after one, calls are refused until an fsync succeeds (the log names the records not known to be on disk).",
		}, func() float64 { return float64(src.SyncFailures()) }))
	}
	return m
}

// Handler serves the metrics in the Prometheus text format (or
// OpenMetrics, as the scraper asks).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true, Timeout: 10 * time.Second})
}

// Restarted counts a restart of server (downstream.Options.Restarted).
func (m *Metrics) Restarted(server string) { m.restarts.WithLabelValues(server).Inc() }

// callEnded counts one call.
func (m *Metrics) callEnded(c watch.Call, end watch.End) {
	k := seriesKey{c.Server, methodLabel(c.Method), decisionLabel(end.Directive.Decision), end.Outcome}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &callSeries{
			calls:    m.calls.WithLabelValues(k.server, k.method, k.decision, k.outcome),
			duration: m.duration.WithLabelValues(k.server, k.method, k.decision),
			upstream: m.downstream.WithLabelValues(k.server, k.method),
		})
	}
	s := v.(*callSeries)
	s.calls.Inc()
	s.duration.Observe(end.Took.Seconds())
	if end.Outcome != watch.OutcomeRefused {
		s.upstream.Observe(end.Downstream.Seconds())
	}
}

// methodLabel is the method as one of a fixed set of label values.
func methodLabel(m string) string {
	switch m {
	case watch.MethodToolsCall, watch.MethodResourcesRead, watch.MethodPromptsGet:
		return m
	}
	return "other"
}

// decisionLabel is the decision as one of a fixed set of label values.
func decisionLabel(d evaluator.Decision) string {
	switch d {
	case evaluator.Allow, evaluator.NeedsConfirm, evaluator.NeedsVerify, evaluator.Block, evaluator.Refuse:
		return string(d)
	}
	return "other"
}

var (
	pendingDesc = prometheus.NewDesc("aqlguard_pending_questions",
		"Questions put to the human that wait for an answer, in this process.", nil, nil)
	blockedDesc = prometheus.NewDesc("aqlguard_blocked",
		"1 while the principal is hard-blocked (waiting for the out-of-band code), else 0.", []string{"principal"}, nil)
	stateUpDesc = prometheus.NewDesc("aqlguard_state_up",
		"1 when the state database could be read for this scrape, else 0.", nil, nil)
)

// guardCollector reads the guard's state at each scrape.
type guardCollector struct {
	status func(ctx context.Context) ([]guard.Status, error)
}

func (c *guardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingDesc
	ch <- blockedDesc
	ch <- stateUpDesc
}

func (c *guardCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	sts, err := c.status(ctx)
	pending := 0
	for _, st := range sts {
		pending += st.PendingQuestions
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(pending))
	if err != nil {
		ch <- prometheus.MustNewConstMetric(stateUpDesc, prometheus.GaugeValue, 0)
		return // whether a principal is blocked is not known: no sample
	}
	ch <- prometheus.MustNewConstMetric(stateUpDesc, prometheus.GaugeValue, 1)
	for _, st := range sts {
		ch <- prometheus.MustNewConstMetric(blockedDesc, prometheus.GaugeValue, b2f(st.Blocked), st.Principal)
	}
}

var (
	fwdDeliveredDesc = prometheus.NewDesc("aqlguard_audit_forward_delivered_seq",
		"Sequence number of the last audit record the collector confirmed.", nil, nil)
	fwdLagDesc = prometheus.NewDesc("aqlguard_audit_forward_lag_seconds",
		"Age of the oldest audit record read but not yet confirmed by the collector; 0 when it has everything read so far.", nil, nil)
	fwdFailingDesc = prometheus.NewDesc("aqlguard_audit_forward_failing",
		"1 while the last delivery to the collector failed, else 0.", nil, nil)
	fwdLastDesc = prometheus.NewDesc("aqlguard_audit_forward_last_delivery_timestamp_seconds",
		"When the collector last confirmed a delivery (Unix time); 0 before the first.", nil, nil)
)

// forwardCollector reads the audit forwarder's status at each scrape.
type forwardCollector struct {
	status func() forward.Status
	now    func() time.Time
}

func (c *forwardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- fwdDeliveredDesc
	ch <- fwdLagDesc
	ch <- fwdFailingDesc
	ch <- fwdLastDesc
}

func (c *forwardCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.status()
	lag := 0.0
	if !st.Oldest.IsZero() {
		lag = max(c.now().Sub(st.Oldest).Seconds(), 0)
	}
	last := 0.0
	if !st.At.IsZero() {
		last = float64(st.At.UnixNano()) / 1e9
	}
	ch <- prometheus.MustNewConstMetric(fwdDeliveredDesc, prometheus.GaugeValue, float64(st.Delivered))
	ch <- prometheus.MustNewConstMetric(fwdLagDesc, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(fwdFailingDesc, prometheus.GaugeValue, b2f(st.Failing != ""))
	ch <- prometheus.MustNewConstMetric(fwdLastDesc, prometheus.GaugeValue, last)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
