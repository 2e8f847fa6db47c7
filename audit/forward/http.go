package forward

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/store"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"google.golang.org/protobuf/proto"
)

// HTTP posts batches to an HTTP collector: OTLP/HTTP logs (protobuf) or
// Splunk's HTTP Event Collector (its JSON event shape). A 2xx answer is
// the confirmation (for OTLP, one whose partial_success rejects no
// record; for HEC, one whose code is 0); anything else, and no answer,
// is sent again. A proxy in front answers 502 or 503 for a collector it
// cannot reach, never a 2xx, so the answer is the collector's.
type HTTP struct {
	URL     string
	Format  string // "otlp" or "splunk"
	Headers http.Header
	Client  *http.Client
	State   string
}

// NewHTTP builds the sink. ${NAME} in a header's value is the
// environment variable NAME; one that is not set is an error.
func NewHTTP(format, url string, headers map[string]string, caFile, state string) (*HTTP, error) {
	h := &HTTP{URL: url, Format: format, Headers: http.Header{}, State: state}
	for k, v := range headers {
		val, err := expandEnv(v)
		if err != nil {
			return nil, fmt.Errorf("header %s: %w", k, err)
		}
		h.Headers.Set(k, val)
	}
	tlsCfg, err := tlsConfig(caFile)
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	h.Client = &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return h, nil
}

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

func expandEnv(v string) (string, error) {
	var missing string
	out := envRef.ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val, ok := os.LookupEnv(name)
		if !ok && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("the environment variable %s is not set", missing)
	}
	return out, nil
}

func (h *HTTP) Destination() string { return h.Format + " " + h.URL }

func (h *HTTP) Close() error {
	h.Client.CloseIdleConnections()
	return nil
}

// Send posts one batch; the collector's 2xx answer confirms all of it.
func (h *HTTP) Send(ctx context.Context, batch []store.LogEntry) (uint64, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	if err := h.post(ctx, batch); err != nil {
		return 0, err
	}
	return batch[len(batch)-1].Record.Seq, nil
}

func (h *HTTP) post(ctx context.Context, batch []store.LogEntry) error {
	var body []byte
	var ctype string
	var err error
	switch h.Format {
	case "splunk":
		body, ctype = h.splunk(batch), "application/json"
	default:
		body, err = h.otlp(batch)
		ctype = "application/x-protobuf"
	}
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range h.Headers {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := h.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		// The collector's words, cut short: never our headers.
		return fmt.Errorf("the collector answered %s: %s", resp.Status, strings.TrimSpace(string(answer)))
	}
	if h.Format == "otlp" {
		// A 2xx may still say that some records were rejected (OTLP's
		// partial success): then the batch is not delivered.
		var ack collogspb.ExportLogsServiceResponse
		if len(answer) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-protobuf") {
			if err := proto.Unmarshal(answer, &ack); err != nil {
				return fmt.Errorf("the collector's answer does not read as OTLP: %w", err)
			}
		}
		if p := ack.GetPartialSuccess(); p.GetRejectedLogRecords() > 0 {
			return fmt.Errorf("the collector rejected %d of the %d records: %.200s", p.GetRejectedLogRecords(), len(batch),
				printable(p.GetErrorMessage(), 200))
		}
	}
	if h.Format == "splunk" {
		var ack struct {
			Code *int   `json:"code"`
			Text string `json:"text"`
		}
		if json.Unmarshal(answer, &ack) == nil && ack.Code != nil && *ack.Code != 0 {
			return fmt.Errorf("the collector answered code %d: %s", *ack.Code, ack.Text)
		}
	}
	return nil
}

// splunk renders a batch as HEC events, one JSON object after the other:
// time (seconds), host, source "aqlguard", sourcetype "aqlguard:audit",
// the record as the event, and its seq, hash, prev and state as indexed
// fields.
func (h *HTTP) splunk(batch []store.LogEntry) []byte {
	var b bytes.Buffer
	for _, e := range batch {
		r := e.Record
		host, _, _ := strings.Cut(r.Process, "/")
		ev := map[string]any{
			"time":       float64(r.Time.UnixMicro()) / 1e6,
			"source":     "aqlguard",
			"sourcetype": "aqlguard:audit",
			"event":      json.RawMessage(e.Raw),
			"fields": map[string]string{"seq": strconv.FormatUint(r.Seq, 10), "hash": r.Hash, "prev": r.Prev,
				"kind": r.Kind, "state": h.State},
		}
		if host != "" {
			ev["host"] = host
		}
		line, _ := json.Marshal(ev) // a raw message that is a stored record: valid JSON
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// otlp renders a batch as an OTLP ExportLogsServiceRequest (LogsData is
// the same message on the wire): one log record per audit record, its
// body the record's JSON line as stored, its attributes aqlguard.seq,
// aqlguard.hash, aqlguard.prev, aqlguard.kind, aqlguard.state and the
// principal, operation and decision.
func (h *HTTP) otlp(batch []store.LogEntry) ([]byte, error) {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	host, _ := os.Hostname()
	recs := make([]*logspb.LogRecord, 0, len(batch))
	now := uint64(time.Now().UnixNano())
	for _, e := range batch {
		r := e.Record
		sev, text := logspb.SeverityNumber_SEVERITY_NUMBER_INFO, "INFO"
		switch r.Decision {
		case "block", "refuse", "deny", "verify", "denied":
			sev, text = logspb.SeverityNumber_SEVERITY_NUMBER_WARN, "WARN"
		}
		attrs := []*commonpb.KeyValue{
			{Key: "aqlguard.seq", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(r.Seq)}}},
			str("aqlguard.hash", r.Hash), str("aqlguard.prev", r.Prev), str("aqlguard.kind", r.Kind),
			str("aqlguard.state", h.State), str("aqlguard.principal", r.Principal),
		}
		if r.Operation != "" {
			attrs = append(attrs, str("aqlguard.operation", r.Operation))
		}
		if r.Decision != "" {
			attrs = append(attrs, str("aqlguard.decision", r.Decision))
		}
		recs = append(recs, &logspb.LogRecord{
			TimeUnixNano: uint64(r.Time.UnixNano()), ObservedTimeUnixNano: now,
			SeverityNumber: sev, SeverityText: text,
			Body:       &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: string(e.Raw)}},
			Attributes: attrs, EventName: "aqlguard.audit." + r.Kind,
		})
	}
	data := &logspb.LogsData{ResourceLogs: []*logspb.ResourceLogs{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "aqlguard"), str("host.name", host)}},
		ScopeLogs: []*logspb.ScopeLogs{{Scope: &commonpb.InstrumentationScope{Name: "aqlguard.audit"}, LogRecords: recs}},
	}}}
	return proto.Marshal(data)
}
