package forward_test

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/internal/fixture/collectortest"
	"github.com/aqlguard/aqlguard/store"
)

// collector is a receiver the test can crash and start again.
type collector interface {
	Start() error
	Stop()
	Got() []collectortest.Received
	Problems() []string
}

// writer appends n audit records to a fresh state, a few milliseconds
// apart, as calls would.
type writer struct {
	dir string
	st  *store.Store
}

func newState(t *testing.T) *writer {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(context.Background(), dir, store.Options{SegmentBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &writer{dir: dir, st: st}
}

func (w *writer) write(t *testing.T, n int, every time.Duration) {
	t.Helper()
	for i := range n {
		err := w.st.Append(context.Background(), store.Record{Time: time.Now(), Kind: "decision", Principal: "agent",
			Process: "host/42", Server: "shell", Operation: "shell_run_command", Decision: "allow",
			Args: json.RawMessage(`{"command":"echo ` + strings.Repeat("x", i%50) + `"}`)})
		if err != nil {
			t.Error(err)
			return
		}
		time.Sleep(every)
	}
}

func run(t *testing.T, w *writer, sink forward.Sink) (stop func()) {
	stop, _ = runFW(t, w, sink)
	return stop
}

func runFW(t *testing.T, w *writer, sink forward.Sink) (stop func(), fw *forward.Forwarder) {
	t.Helper()
	fw = &forward.Forwarder{Log: store.NewLogReader(w.dir), Cursors: store.ForwardCursors{Dir: w.dir}, Sink: sink,
		Batch: 25, Poll: 20 * time.Millisecond, Retry: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := fw.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop, fw
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// waitFor waits until the collector has every record from 1 to n.
func waitFor(t *testing.T, c collector, n uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		seen := map[uint64]bool{}
		for _, r := range c.Got() {
			seen[r.Seq] = true
		}
		if uint64(len(seen)) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the collector got %d records, want %d", len(c.Got()), n)
}

// outage writes n records while the collector is crashed and started
// again, twice, mid-stream, and while the forwarder itself is stopped
// and started again (a restart of aqlguard) once: every record arrives
// at least once, in order, and the chain verifies at the receiver.
func outage(t *testing.T, c collector, sink func() forward.Sink) {
	w := newState(t)
	stop, fw := runFW(t, w, sink())
	const n = 300
	done := make(chan struct{})
	go func() { defer close(done); w.write(t, n, 2*time.Millisecond) }()
	time.Sleep(150 * time.Millisecond)
	c.Stop()
	time.Sleep(400 * time.Millisecond)
	// A delivery fails while it is down (how soon depends on the
	// machine's load: wait for it, up to a bound).
	for deadline := time.Now().Add(10 * time.Second); fw.Status().Failing == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the collector was down while records were written, and no delivery failed")
		}
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stop() // aqlguard stops ...
	time.Sleep(100 * time.Millisecond)
	run(t, w, sink()) // ... and starts again: from the cursor
	time.Sleep(100 * time.Millisecond)
	c.Stop()
	time.Sleep(300 * time.Millisecond)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-done
	waitFor(t, c, n)
	checkReceived(t, c, n)
}

// checkReceived checks, as the receiver does, that c got records 1 to n
// at least once, in order, their chain whole, and nothing malformed.
func checkReceived(t *testing.T, c collector, n uint64) {
	t.Helper()
	dups, err := collectortest.Check(c.Got(), n)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Problems(); len(p) > 0 {
		t.Fatalf("malformed messages: %v", p)
	}
	t.Logf("%d records, %d sent twice", n, dups)
}

func TestSyslogOutage(t *testing.T) {
	c, err := collectortest.StartSyslog("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	outage(t, c, func() forward.Sink {
		s, err := forward.NewSyslog("tcp://"+c.Addr(), "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if sd := c.Structured(); sd[0]["state"] != "state-1" || sd[0]["prev"] == "" {
		t.Fatalf("structured data: %v", sd[0])
	}
}

func TestRELPOutage(t *testing.T) {
	c, err := collectortest.StartRELP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	outage(t, c, func() forward.Sink {
		s, err := forward.NewSyslogSink("relp://"+c.Addr(), "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestOTLPOutage(t *testing.T) {
	c, err := collectortest.StartHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	t.Setenv("OTLP_TOKEN", "s3cret")
	outage(t, c, func() forward.Sink {
		s, err := forward.NewHTTP("otlp", "http://"+c.Addr()+"/v1/logs", map[string]string{"Authorization": "Bearer ${OTLP_TOKEN}"}, "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	if got := c.Headers().Get("Authorization"); got != "Bearer s3cret" {
		t.Fatalf("header from the environment: %q", got)
	}
}

func TestSplunkOutage(t *testing.T) {
	c, err := collectortest.StartHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	outage(t, c, func() forward.Sink {
		s, err := forward.NewHTTP("splunk", "http://"+c.Addr()+"/services/collector/event", nil, "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestTLS: syslog over TLS (RFC 5425) and OTLP over HTTPS, each
// collector's certificate trusted through ca_file, not the system's.
func TestTLS(t *testing.T) {
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS() // a certificate for 127.0.0.1, and its TLS config
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := collectortest.StartSyslogTLS("127.0.0.1:0", srv.TLS)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if _, err := forward.NewSyslog("tls://"+c.Addr(), "", ""); err != nil {
		t.Fatal(err)
	}
	w := newState(t)
	w.write(t, 1, 0)
	one, err := store.NewLogReader(w.dir).Read(store.LogPosition{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	untrusted, _ := forward.NewSyslog("tls://"+c.Addr(), "", "")
	if _, err := untrusted.Send(context.Background(), one); err == nil {
		t.Fatal("a collector whose certificate nobody trusts was sent to")
	}
	sink, err := forward.NewSyslog("tls://"+c.Addr(), ca, "")
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, sink)
	w.write(t, 49, 0)
	waitFor(t, c, 50)
	if _, err := collectortest.Check(c.Got(), 50); err != nil {
		t.Fatal(err)
	}

	relp, err := collectortest.StartRELP("127.0.0.1:0", srv.TLS)
	if err != nil {
		t.Fatal(err)
	}
	defer relp.Stop()
	untrustedRELP, _ := forward.NewRELP("relp+tls://"+relp.Addr(), "", "")
	if _, err := untrustedRELP.Send(context.Background(), one); err == nil {
		t.Fatal("a RELP collector whose certificate nobody trusts was sent to")
	}
	relpSink, err := forward.NewRELP("relp+tls://"+relp.Addr(), ca, "")
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, relpSink)
	waitFor(t, relp, 50)
	if _, err := collectortest.Check(relp.Got(), 50); err != nil {
		t.Fatal(err)
	}

	hs := httptest.NewUnstartedServer(nil)
	hs.TLS = srv.TLS
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) })
	hs.StartTLS()
	defer hs.Close()
	https, err := forward.NewHTTP("otlp", hs.URL+"/v1/logs", nil, ca, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := https.Send(context.Background(), one); err != nil {
		t.Fatalf("HTTPS with ca_file: %v", err)
	}
}

// TestCollectorRefusing: a collector that answers 503 gets nothing
// counted as delivered; once it accepts, everything arrives.
func TestCollectorRefusing(t *testing.T) {
	c, err := collectortest.StartHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	c.FailWith(503)
	w := newState(t)
	s, _ := forward.NewHTTP("otlp", "http://"+c.Addr()+"/v1/logs", nil, "", "")
	run(t, w, s)
	w.write(t, 40, 0)
	time.Sleep(500 * time.Millisecond)
	if len(c.Got()) != 0 {
		t.Fatal("records counted while the collector refused them")
	}
	c.FailWith(0)
	waitFor(t, c, 40)
	if _, err := collectortest.Check(c.Got(), 40); err != nil {
		t.Fatal(err)
	}
}

// TestOTLPPartialSuccess: a 200 whose partial_success rejects records
// delivers nothing; once the collector takes them, everything arrives.
func TestOTLPPartialSuccess(t *testing.T) {
	c, err := collectortest.StartHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	c.RejectOTLP(3)
	w := newState(t)
	s, _ := forward.NewHTTP("otlp", "http://"+c.Addr()+"/v1/logs", nil, "", "")
	_, fw := runFW(t, w, s)
	w.write(t, 20, 0)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(fw.Status().Failing, "rejected 3 of the"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("status %+v: want the rejection said", fw.Status())
		}
	}
	if st := fw.Status(); st.Delivered != 0 {
		t.Fatalf("a partial success counted as delivered: %+v", st)
	}
	c.RejectOTLP(0)
	waitFor(t, c, 20)
	if _, err := collectortest.Check(c.Got(), 20); err != nil {
		t.Fatal(err)
	}
}

// TestFileOCSF: the file holds one OCSF event per record, each with its
// seq, hash and prev; a torn last line (a crash mid-write) is cut away
// when the forwarder opens it again.
func TestFileOCSF(t *testing.T) {
	w := newState(t)
	path := filepath.Join(t.TempDir(), "audit.ocsf.jsonl")
	stop := run(t, w, &forward.File{Path: path, Product: "test"})
	w.write(t, 30, 0)
	waitLines(t, path, 30)
	stop()
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"class_uid":6003,"meta`)
	f.Close()
	// The cursor says 30 were delivered; write 5 more.
	run(t, w, &forward.File{Path: path, Product: "test"})
	w.write(t, 5, 0)
	lines := waitLines(t, path, 35)
	var got []collectortest.Received
	for i, l := range lines {
		var ev struct {
			ClassUID int `json:"class_uid"`
			Unmapped struct {
				Seq  uint64 `json:"seq"`
				Hash string `json:"hash"`
				Prev string `json:"prev"`
			} `json:"unmapped"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.ClassUID != 6003 || ev.Unmapped.Hash == "" {
			t.Fatalf("line %d is not a whole OCSF event: %q (%v)", i+1, l, err)
		}
		got = append(got, collectortest.Received{Seq: ev.Unmapped.Seq})
	}
	for i, r := range got {
		if r.Seq != uint64(i+1) {
			t.Fatalf("line %d holds record %d", i+1, r.Seq)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
}

func waitLines(t *testing.T, path string, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var lines []string
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			f.Close()
		}
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d", path, len(lines), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNewestStartsAtTheEnd: start = "newest" sends nothing written
// before the destination had a cursor.
func TestNewestStartsAtTheEnd(t *testing.T) {
	c, err := collectortest.StartHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	w := newState(t)
	w.write(t, 10, 0)
	s, _ := forward.NewHTTP("splunk", "http://"+c.Addr()+"/services/collector/event", nil, "", "")
	fw := &forward.Forwarder{Log: store.NewLogReader(w.dir), Cursors: store.ForwardCursors{Dir: w.dir}, Sink: s,
		Newest: true, Poll: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); fw.Run(ctx) }()
	time.Sleep(200 * time.Millisecond)
	w.write(t, 3, 0)
	deadline := time.Now().Add(10 * time.Second)
	for len(c.Got()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	got := c.Got()
	if len(got) != 3 || got[0].Seq != 11 {
		t.Fatalf("got %d records from %v", len(got), got)
	}
	if st := fw.Status(); st.Delivered != 13 {
		t.Fatalf("status %+v", st)
	}
}
