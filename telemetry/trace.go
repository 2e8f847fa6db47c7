package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/aqlguard/aqlguard/proxy/watch"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Tracer exports one span per guarded call to an OTLP/HTTP
// collector.
type Tracer struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// NewTracer exports spans to endpoint, an OTLP/HTTP traces URL
// (http://collector:4318/v1/traces), in batches. headers go with every
// export (a collector's API key); they are never logged.
func NewTracer(endpoint string, headers map[string]string, version string) (*Tracer, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the traces endpoint %q is not an http:// or https:// URL", endpoint)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	if len(headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(headers))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName("aqlguard"), semconv.ServiceVersion(version))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return &Tracer{tp: tp, tracer: tp.Tracer("github.com/aqlguard/aqlguard")}, nil
}

// Shutdown exports what is left, within ctx.
func (t *Tracer) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// Watch is the guard's Watcher: it counts each call in Metrics and gives
// it a span of Tracer. Either may be nil.
type Watch struct {
	Metrics *Metrics
	Tracer  *Tracer
}

var _ watch.Watcher = (*Watch)(nil)

// CallBegins starts the call's span (tools/call <server>,
// resources/read <server>, prompts/get <server>). Its parent is the client's trace:
// traceparent in the call's _meta if there is one (MCP's place for it,
// whatever the transport), else the one of the HTTP request that carried
// it (already in ctx).
func (w *Watch) CallBegins(ctx context.Context, c watch.Call) context.Context {
	if w.Tracer == nil {
		return ctx
	}
	if parent, ok := metaTraceContext(ctx, c.Params); ok {
		ctx = parent
	}
	method := methodLabel(c.Method)
	attrs := []attribute.KeyValue{
		attribute.String("aqlguard.server", c.Server),
		attribute.String("mcp.method.name", method),
	}
	switch method {
	case watch.MethodToolsCall:
		attrs = append(attrs, attribute.String("aqlguard.operation", c.Operation), attribute.String("gen_ai.tool.name", c.Tool))
	case watch.MethodPromptsGet:
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.Tool))
	} // a read's URI is the client's, and may say more than a trace should
	ctx, _ = w.Tracer.tracer.Start(ctx, method+" "+c.Server, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs...))
	return ctx
}

// CallEnded counts the call and ends its span with the decision.
func (w *Watch) CallEnded(ctx context.Context, c watch.Call, end watch.End) {
	if w.Metrics != nil {
		w.Metrics.callEnded(c, end)
	}
	if w.Tracer == nil {
		return
	}
	span := trace.SpanFromContext(ctx)
	d := end.Directive
	span.SetAttributes(
		attribute.String("aqlguard.decision", string(d.Decision)),
		attribute.String("aqlguard.stage", string(d.Stage)),
		attribute.String("aqlguard.tier", string(d.Tier)),
		attribute.Int("aqlguard.risk", d.Risk),
		attribute.Bool("aqlguard.enforced", d.Enforced),
		attribute.String("aqlguard.outcome", end.Outcome),
	)
	if end.Outcome != watch.OutcomeRefused {
		span.SetAttributes(attribute.Float64("aqlguard.downstream_seconds", end.Downstream.Seconds()))
	}
	switch end.Outcome {
	case watch.OutcomeFailed, watch.OutcomeUnrecorded:
		span.SetStatus(codes.Error, end.Outcome)
	}
	span.End()
}

// metaTraceContext is ctx with the trace context of the call's
// _meta.traceparent (and tracestate), if it has a valid one.
func metaTraceContext(ctx context.Context, params json.RawMessage) (context.Context, bool) {
	if len(params) == 0 {
		return ctx, false
	}
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
			Tracestate  string `json:"tracestate"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta.Traceparent == "" {
		return ctx, false
	}
	carrier := propagation.MapCarrier{"traceparent": p.Meta.Traceparent}
	if p.Meta.Tracestate != "" {
		carrier["tracestate"] = p.Meta.Tracestate
	}
	out := propagation.TraceContext{}.Extract(ctx, carrier)
	if !trace.SpanContextFromContext(out).IsValid() {
		return ctx, false
	}
	return out, true
}
