package telemetry

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/proxy/watch"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("%v\n%s", err, rec.Body.String())
	}
	return fams
}

// TestLabelsAreBounded: a decision outside the evaluator's fixed set is
// "other", and no label ever carries the tool's name or the call's
// arguments: what a model or a server invents cannot grow the series.
func TestLabelsAreBounded(t *testing.T) {
	m := NewMetrics(Sources{})
	w := &Watch{Metrics: m}
	for i := range 50 {
		c := watch.Call{Method: watch.MethodToolsCall, Server: "ts", Operation: "ts_x", Tool: "tool" + strings.Repeat("x", i),
			Params: json.RawMessage(`{"_meta":{"k":"` + strings.Repeat("y", i) + `"}}`)}
		ctx := w.CallBegins(context.Background(), c)
		d := evaluator.Decision("made-up-" + strings.Repeat("z", i))
		if i%2 == 0 {
			d = evaluator.Allow
		}
		w.CallEnded(ctx, c, watch.End{Directive: evaluator.Directive{Decision: d}, Outcome: watch.OutcomeOK, Took: time.Millisecond})
	}
	m.Restarted("ts")
	fams := scrape(t, m)
	calls := fams["aqlguard_calls_total"].GetMetric()
	if len(calls) != 2 {
		t.Fatalf("%d call series, want 2 (allow, other)", len(calls))
	}
	for _, s := range calls {
		for _, l := range s.GetLabel() {
			if v := l.GetValue(); v == "tool" || strings.Contains(v, "toolx") || strings.Contains(v, "made-up") {
				t.Errorf("label %s=%q", l.GetName(), l.GetValue())
			}
		}
	}
	if r := fams["aqlguard_downstream_restarts_total"].GetMetric(); len(r) != 1 || r[0].GetCounter().GetValue() != 1 {
		t.Errorf("restarts: %v", r)
	}
}

// TestForwardLag: the forwarder's status reads as lag, delivery and
// failure.
func TestForwardLag(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	st := forward.Status{Delivered: 41, At: now.Add(-3 * time.Second), Failing: "connection refused", Oldest: now.Add(-7 * time.Second)}
	m := NewMetrics(Sources{Forward: func() forward.Status { return st }, Now: func() time.Time { return now }})
	fams := scrape(t, m)
	for name, want := range map[string]float64{
		"aqlguard_audit_forward_delivered_seq":                   41,
		"aqlguard_audit_forward_lag_seconds":                     7,
		"aqlguard_audit_forward_failing":                         1,
		"aqlguard_audit_forward_last_delivery_timestamp_seconds": float64(now.Add(-3 * time.Second).Unix()),
	} {
		if got := fams[name].GetMetric()[0].GetGauge().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}

// TestFsyncFailures: the audit log's failed fsyncs are a counter,
// present (at 0) from the start on a state directory, and absent where
// there is none to count.
func TestFsyncFailures(t *testing.T) {
	var n uint64
	m := NewMetrics(Sources{SyncFailures: func() uint64 { return n }})
	if got := scrape(t, m)["aqlguard_audit_fsync_failures_total"].GetMetric(); len(got) != 1 || got[0].GetCounter().GetValue() != 0 {
		t.Fatalf("before any failure: %v", got)
	}
	n = 3
	if got := scrape(t, m)["aqlguard_audit_fsync_failures_total"].GetMetric()[0].GetCounter().GetValue(); got != 3 {
		t.Fatalf("after three failures: %v", got)
	}
	if _, ok := scrape(t, NewMetrics(Sources{}))["aqlguard_audit_fsync_failures_total"]; ok {
		t.Fatal("a counter of fsync failures without a state directory")
	}
}

// TestMetaTraceContext: only a valid W3C traceparent in _meta is taken;
// anything else leaves the call in the trace it came in.
func TestMetaTraceContext(t *testing.T) {
	for _, c := range []struct {
		params string
		ok     bool
	}{
		{`{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`, true},
		{`{"_meta":{"traceparent":"00-00000000000000000000000000000000-b7ad6b7169203331-01"}}`, false},
		{`{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\n"}}`, false},
		{`{"_meta":{"traceparent":"zz-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`, false},
		{`{"_meta":{"traceparent":42}}`, false},
		{`{"_meta":"x"}`, false},
		{`{}`, false},
		{``, false},
	} {
		if _, ok := metaTraceContext(context.Background(), json.RawMessage(c.params)); ok != c.ok {
			t.Errorf("%s: %v", c.params, ok)
		}
	}
}

// TestSpanPerCall: a span per call, named by server, with the decision,
// in the trace of the call's _meta.
func TestSpanPerCall(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	w := &Watch{Tracer: &Tracer{tp: tp, tracer: tp.Tracer("test")}}
	c := watch.Call{Method: watch.MethodToolsCall, Server: "ts", Operation: "ts_echo", Tool: "echo",
		Params: json.RawMessage(`{"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}`)}
	ctx := w.CallBegins(context.Background(), c)
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("no span in the call's context: nothing to propagate")
	}
	w.CallEnded(ctx, c, watch.End{Directive: evaluator.Directive{Decision: evaluator.NeedsConfirm}, Outcome: watch.OutcomeRefused})
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "tools/call ts" || spans[0].SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" {
		t.Fatalf("spans: %+v", spans)
	}
	found := false
	for _, a := range spans[0].Attributes {
		if a.Key == "aqlguard.decision" && a.Value.AsString() == "confirm" {
			found = true
		}
	}
	if !found {
		t.Errorf("no decision attribute: %v", spans[0].Attributes)
	}
}

// TestReadiness: a missing command, an address nobody listens on and an
// unreadable state each make aqlguard unready, saying which, in fixed
// words; all well is ready.
func TestReadiness(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := "http://" + ln.Addr().String() + "/mcp"
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + closed.Addr().String() + "/mcp"
	closed.Close()
	defer ln.Close()
	servers := []config.Server{{Name: "up", URL: up}, {Name: "sh", Command: "sh"}}
	stateErr := error(nil)
	h := &Health{Servers: func() []config.Server { return servers }, State: func(context.Context) error { return stateErr }}
	if rd := h.Check(context.Background()); !rd.Ready {
		t.Fatalf("not ready: %+v", rd)
	}
	servers = append(servers, config.Server{Name: "gone", URL: down}, config.Server{Name: "nocmd", Command: "/nonexistent/server"})
	stateErr = context.DeadlineExceeded
	h.last = time.Time{} // past the cache
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
	var rd Readiness
	if err := json.Unmarshal(rec.Body.Bytes(), &rd); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || rd.Ready || rd.State != "unavailable" ||
		rd.Servers["gone"] != "unreachable" || rd.Servers["nocmd"] != "command not found" || rd.Servers["up"] != "ok" {
		t.Errorf("%d %s", rec.Code, rec.Body.String())
	}
	if strings.Contains(rec.Body.String(), "127.0.0.1") || strings.Contains(rec.Body.String(), "nonexistent") {
		t.Errorf("the answer names an address or a path: %s", rec.Body.String())
	}
}

// BenchmarkWatch is what the Watcher adds to one guarded call (a call
// through aqlguard takes about 450 µs, bench/RESULTS.md): metrics alone,
// and metrics with a span exported in batches (to an exporter that drops
// them, so only aqlguard's side is measured).
func BenchmarkWatch(b *testing.B) {
	c := watch.Call{Method: watch.MethodToolsCall, Server: "ts", Operation: "ts_echo", Tool: "echo", Params: json.RawMessage(`{"_meta":{"progressToken":1}}`)}
	end := watch.End{Directive: evaluator.Directive{Decision: evaluator.Allow, Stage: evaluator.StagePattern}, Outcome: watch.OutcomeOK,
		Took: 400 * time.Microsecond, Downstream: 200 * time.Microsecond}
	run := func(b *testing.B, w *Watch) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := w.CallBegins(context.Background(), c)
			w.CallEnded(ctx, c, end)
		}
	}
	b.Run("metrics", func(b *testing.B) { run(b, &Watch{Metrics: NewMetrics(Sources{})}) })
	b.Run("metrics+traces", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
		defer tp.Shutdown(context.Background())
		run(b, &Watch{Metrics: NewMetrics(Sources{}), Tracer: &Tracer{tp: tp, tracer: tp.Tracer("bench")}})
	})
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
