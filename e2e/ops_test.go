package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// TestServeOperatorsCanWatch: `aqlguard serve` with [serve]
// metrics_listen and traces_endpoint. Its metrics, scraped and read by
// Prometheus's own text parser, count the calls by server, decision and
// outcome and say the principal is blocked; each call is a span at a
// local OTLP receiver, with its decision, in the client's trace (from the
// POST's traceparent, and from _meta.traceparent), and the server behind
// it gets the trace as traceparent; /readyz goes unready when the server
// cannot be reached and ready again when it is back.
func TestServeOperatorsCanWatch(t *testing.T) {
	spans := newOTLPReceiver(t)
	down := newSwitchableProxy(t, startTestServerHTTP(t, "-resources"))
	metricsAddr := freeAddr(t)
	s := startServeOn(t, `
mode = "transparent"
[safety]
auto_approve = ["ts_echo"]
deny = ["*drop_database*"]
[serve]
metrics_listen = "`+metricsAddr+`"
traces_endpoint = "`+spans.url+`/v1/traces"
[[servers]]
name = "ts"
trust_first_sight = true
url = "`+down.url()+`"
auth = "none"
`, "")
	base := strings.TrimSuffix(s.url, "/mcp")
	for _, u := range []string{base + "/healthz", "http://" + metricsAddr + "/healthz"} {
		if code, _ := get(t, u); code != http.StatusOK {
			t.Errorf("%s: %d", u, code)
		}
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusOK || !strings.Contains(body, `"ts":"ok"`) {
		t.Fatalf("readyz with the server up: %d %s", code, body)
	}

	// The client's own trace, on its POSTs.
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	hc := bearerClient(serveTokenOf(t, s.dir))
	hc.Transport = traceparentTransport{base: hc.Transport, value: "00-" + clientTrace + "-00f067aa0ba902b7-01"}
	cs, err := connectHTTP(t, s.url, hc)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil || res.IsError {
		t.Fatalf("echo: %v %v", res, err)
	}
	// A trace in the call's _meta is the call's own.
	const metaTrace = "0af7651916cd43dd8448eb211c80319c"
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "traced"},
		Meta: mcp.Meta{"traceparent": "00-" + metaTrace + "-b7ad6b7169203331-01"}}); err != nil || res.IsError {
		t.Fatalf("echo with _meta.traceparent: %v %v", res, err)
	}
	// Reads and prompt gets pass the guard too.
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///notes/secret-plan.txt"}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "x"}}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "drop_database", Arguments: map[string]any{"name": "x"}}); err != nil || !res.IsError {
		t.Fatalf("drop_database was not refused: %v %v", res, err)
	}

	// Metrics, read by Prometheus's parser.
	fams := scrape(t, "http://"+metricsAddr+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"aqlguard_calls_total", map[string]string{"server": "ts", "method": "tools/call", "decision": "allow", "outcome": "ok"}, 2},
		{"aqlguard_calls_total", map[string]string{"server": "ts", "method": "tools/call", "decision": "block", "outcome": "refused"}, 1},
		{"aqlguard_calls_total", map[string]string{"server": "ts", "method": "resources/read", "outcome": "ok"}, 1},
		{"aqlguard_calls_total", map[string]string{"server": "ts", "method": "prompts/get", "outcome": "ok"}, 1},
		{"aqlguard_blocked", nil, 1},
		{"aqlguard_pending_questions", nil, 0},
		{"aqlguard_state_up", nil, 1},
	} {
		if got, ok := sample(fams, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if h := fams["aqlguard_call_duration_seconds"]; h == nil || h.GetType() != dto.MetricType_HISTOGRAM {
		t.Error("no call latency histogram")
	} else if n := histogramCount(h, map[string]string{"server": "ts", "method": "tools/call", "decision": "allow"}); n != 2 {
		t.Errorf("latency histogram counted %d allowed calls, want 2", n)
	}
	if h := fams["aqlguard_downstream_duration_seconds"]; h == nil || histogramCount(h, map[string]string{"server": "ts", "method": "tools/call"}) != 2 {
		t.Error("the downstream latency histogram does not count the 2 forwarded calls")
	}

	// Traces: one span per call, each in its client's trace, with the
	// decision; the server got the span as its parent.
	got := spans.wait(t, 5)
	byTrace := map[string][]*tracepb.Span{}
	names := map[string]int{}
	for _, sp := range got {
		byTrace[hex.EncodeToString(sp.TraceId)] = append(byTrace[hex.EncodeToString(sp.TraceId)], sp)
		names[sp.Name]++
		for _, a := range sp.Attributes {
			if strings.Contains(a.Value.GetStringValue(), "secret-plan") || strings.Contains(a.Value.GetStringValue(), "traced") {
				t.Errorf("a span carries what the call said: %s=%s", a.Key, a.Value.GetStringValue())
			}
		}
	}
	if len(byTrace[clientTrace]) != 4 || len(byTrace[metaTrace]) != 1 {
		t.Fatalf("spans by trace: %d in the POSTs' trace (want 4: echo, read, prompt, drop_database), %d in the _meta trace (want 1)",
			len(byTrace[clientTrace]), len(byTrace[metaTrace]))
	}
	if names["tools/call ts"] != 3 || names["resources/read ts"] != 1 || names["prompts/get ts"] != 1 {
		t.Errorf("span names: %v", names)
	}
	decisions := map[string]string{}
	for _, sp := range got {
		decisions[attr(sp, "gen_ai.tool.name")+" "+attr(sp, "aqlguard.outcome")] = attr(sp, "aqlguard.decision")
	}
	if decisions["echo ok"] != "allow" || decisions["drop_database refused"] != "block" {
		t.Errorf("span decisions: %v", decisions)
	}
	if p := hex.EncodeToString(byTrace[metaTrace][0].ParentSpanId); p != "b7ad6b7169203331" {
		t.Errorf("the _meta call's span has parent %s, want the client's b7ad6b7169203331", p)
	}
	seen := down.traceparents()
	for _, sp := range append(byTrace[metaTrace], byTrace[clientTrace]...) {
		if attr(sp, "aqlguard.outcome") != "ok" {
			continue
		}
		want := "00-" + hex.EncodeToString(sp.TraceId) + "-" + hex.EncodeToString(sp.SpanId) + "-01"
		if !seen[want] {
			t.Errorf("the server did not get traceparent %s (it got %v)", want, seen)
		}
	}

	// Readiness follows the server.
	down.stop()
	waitReady(t, base+"/readyz", http.StatusServiceUnavailable, `"ts":"unreachable"`)
	waitReady(t, "http://"+metricsAddr+"/readyz", http.StatusServiceUnavailable, `"ready":false`)
	down.start()
	waitReady(t, base+"/readyz", http.StatusOK, `"ready":true`)
	if strings.Contains(s.log.String(), "panic") {
		t.Error("a panic in the log")
	}
}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// waitReady polls a readiness URL (answers are cached for a second)
// until it answers code with a body containing want.
func waitReady(t *testing.T, u string, code int, want string) {
	t.Helper()
	var c int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if c, body = get(t, u); c == code && strings.Contains(body, want) {
			return
		}
	}
	t.Fatalf("%s: %d %s, want %d with %s", u, c, body, code, want)
}

func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	_, body := get(t, u)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the metrics do not parse: %v\n%s", err, body)
	}
	return fams
}

func matches(m *dto.Metric, labels map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := labels[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(labels)
}

func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		}
	}
	return 0, false
}

func histogramCount(f *dto.MetricFamily, labels map[string]string) uint64 {
	for _, m := range f.GetMetric() {
		if matches(m, labels) && m.Histogram != nil {
			return m.Histogram.GetSampleCount()
		}
	}
	return 0
}

func attr(sp *tracepb.Span, key string) string {
	for _, a := range sp.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// traceparentTransport sends a W3C traceparent with every request, as an
// instrumented client does.
type traceparentTransport struct {
	base  http.RoundTripper
	value string
}

func (t traceparentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Traceparent", t.value)
	return t.base.RoundTrip(r)
}

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps the spans it
// is sent, decoded with the OTLP protobuf types.
type otlpReceiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		data, _ := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || proto.Unmarshal(data, &msg) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.url = "http://" + ln.Addr().String()
	return r
}

// wait returns the spans once n have come (the exporter sends in batches,
// every few seconds).
func (r *otlpReceiver) wait(t *testing.T, n int) []*tracepb.Span {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r.mu.Lock()
		got := append([]*tracepb.Span(nil), r.spans...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
	}
	t.Fatalf("fewer than %d spans reached the OTLP receiver in 20s", n)
	return nil
}

// switchableProxy stands between aqlguard and an HTTP server, on an
// address of its own that the test takes down and brings back, and
// notes the traceparent of every request.
type switchableProxy struct {
	t     *testing.T
	addr  string
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	srv   *http.Server
	seen  map[string]bool
}

func newSwitchableProxy(t *testing.T, target string) *switchableProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &switchableProxy{t: t, addr: freeAddr(t), seen: map[string]bool{}}
	p.proxy = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: u.Scheme, Host: u.Host}) },
		FlushInterval: -1}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *switchableProxy) url() string { return "http://" + p.addr + "/mcp" }

func (p *switchableProxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			p.mu.Lock()
			p.seen[tp] = true
			p.mu.Unlock()
		}
		p.proxy.ServeHTTP(w, r)
	})}
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.t.Log(err)
		}
	}()
}

func (p *switchableProxy) stop() {
	p.mu.Lock()
	srv := p.srv
	p.mu.Unlock()
	_ = srv.Close()
}

func (p *switchableProxy) traceparents() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]bool{}
	for k := range p.seen {
		out[k] = true
	}
	return out
}

// TestServeCountsRestarts: a server that dies is brought back, and the
// metrics count it.
func TestServeCountsRestarts(t *testing.T) {
	metricsAddr := freeAddr(t)
	s := startServeOn(t, `
mode = "transparent"
[safety]
auto_approve = ["ts_*"]
[serve]
metrics_listen = "`+metricsAddr+`"
[[servers]]
name = "ts"
trust_first_sight = true
command = `+tomlString(bins.testserver)+`
`, "")
	cs, err := connectHTTP(t, s.url, bearerClient(serveTokenOf(t, s.dir)))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if n, _ := sample(scrape(t, "http://"+metricsAddr+"/metrics"), "aqlguard_downstream_restarts_total",
			map[string]string{"server": "ts"}); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restart was not counted within 20s")
		}
	}
	fams := scrape(t, "http://"+metricsAddr+"/metrics")
	if n, _ := sample(fams, "aqlguard_calls_total", map[string]string{"server": "ts", "decision": "allow", "outcome": "failed"}); n != 1 {
		t.Errorf("the crashed call is not counted as allowed and failed: %v", n)
	}
}
