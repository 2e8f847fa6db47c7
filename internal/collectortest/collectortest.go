// Package collectortest holds the collectors the audit forwarding tests
// ship to: a syslog receiver over TCP (RFC 5424 messages framed by
// octet counting, RFC 6587) or over RELP (each message answered once it
// is received), an OTLP/HTTP logs receiver and a Splunk
// HEC receiver, each of which a test can stop as a crashed collector
// stops (connections reset, what was not read lost) and start again on
// the same address; and the receiver's side of the bargain, Check: every
// record at least once, in order, the chain verified.
package collectortest

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/store"
	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"
)

// Received is one record as a collector got it.
type Received struct {
	Seq  uint64 // as the transport's own fields say (syslog SD, OTLP attribute, HEC field)
	Raw  []byte // the record's JSON line as stored
	Hash string
}

// collector is what the receivers share: what arrived, and the listener.
type collector struct {
	mu       sync.Mutex
	addr     string
	tls      *tls.Config // nil: plain TCP
	ln       net.Listener
	conns    map[net.Conn]bool
	got      []Received
	problems []string
}

func (c *collector) add(r Received) {
	c.mu.Lock()
	c.got = append(c.got, r)
	c.mu.Unlock()
}

func (c *collector) problem(format string, args ...any) {
	c.mu.Lock()
	c.problems = append(c.problems, fmt.Sprintf(format, args...))
	c.mu.Unlock()
}

// Got is every record received so far, in arrival order.
func (c *collector) Got() []Received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Received(nil), c.got...)
}

// Problems are the malformed messages seen.
func (c *collector) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.problems...)
}

// Addr is host:port.
func (c *collector) Addr() string { return c.addr }

func (c *collector) listen() error {
	var err error
	for range 50 { // the port of a stopped collector can take a moment to free
		var ln net.Listener
		if ln, err = net.Listen("tcp", c.addr); err == nil {
			if c.tls != nil {
				ln = tls.NewListener(ln, c.tls)
			}
			c.mu.Lock()
			c.ln, c.addr = ln, ln.Addr().String()
			c.mu.Unlock()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// crash closes the listener and resets every connection, as a killed
// collector does.
func (c *collector) crash() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
		c.ln = nil
	}
	for conn := range c.conns {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	}
	c.conns = map[net.Conn]bool{}
}

func (c *collector) track(conn net.Conn, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conns == nil {
		c.conns = map[net.Conn]bool{}
	}
	if on {
		c.conns[conn] = true
	} else {
		delete(c.conns, conn)
	}
}

// ---------------------------------------------------------------------------
// syslog

// Syslog receives RFC 5424 messages over TCP, octet-counted, and closes
// a connection once the sender closed its side and everything is read.
type Syslog struct {
	collector
	relp bool
	// Structured are the structured data parameters of every message.
	structured []map[string]string
}

// StartSyslog listens on addr ("127.0.0.1:0" for any port).
func StartSyslog(addr string) (*Syslog, error) {
	s := &Syslog{collector: collector{addr: addr}}
	return s, s.Start()
}

// StartSyslogTLS is StartSyslog over TLS (RFC 5425) with cfg's
// certificate.
func StartSyslogTLS(addr string, cfg *tls.Config) (*Syslog, error) {
	s := &Syslog{collector: collector{addr: addr, tls: cfg}}
	return s, s.Start()
}

// StartRELP receives the same messages over RELP, answering each
// "syslog" command with "200 OK" once the message is received; cfg
// (nil for none) puts it behind TLS.
func StartRELP(addr string, cfg *tls.Config) (*Syslog, error) {
	s := &Syslog{collector: collector{addr: addr, tls: cfg}, relp: true}
	return s, s.Start()
}

// Start listens again on the same address.
func (s *Syslog) Start() error {
	if err := s.listen(); err != nil {
		return err
	}
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.track(conn, true)
			if s.relp {
				go s.serveRELP(conn)
			} else {
				go s.serve(conn)
			}
		}
	}()
	return nil
}

// Stop crashes the collector.
func (s *Syslog) Stop() { s.crash() }

var sdParam = regexp.MustCompile(`([a-z]+)="((?:[^"\\\]]|\\.)*)"`)

// header is an RFC 5424 header: <PRI>1 TIMESTAMP HOST APP PROCID MSGID.
var header = regexp.MustCompile(`^<([0-9]{1,3})>1 [0-9T:.\-]+Z [!-~]+ aqlguard [!-~]+ [!-~]{1,32} \[aqlguard@32473 `)

func (s *Syslog) serve(conn net.Conn) {
	defer s.track(conn, false)
	defer conn.Close()
	rd := bufio.NewReader(conn)
	for {
		lenText, err := rd.ReadString(' ')
		if err != nil {
			return // EOF: the sender is done; closing confirms
		}
		n, err := strconv.Atoi(lenText[:len(lenText)-1])
		if err != nil || n <= 0 || n > 64<<20 {
			s.problem("bad frame length %q", lenText)
			return
		}
		msg := make([]byte, n)
		if _, err := io.ReadFull(rd, msg); err != nil {
			return // cut off: not received
		}
		s.message(msg)
	}
}

// serveRELP is a RELP server's side of a session: open, syslog
// commands, close.
func (s *Syslog) serveRELP(conn net.Conn) {
	defer s.track(conn, false)
	defer conn.Close()
	rd := bufio.NewReader(conn)
	answer := func(txnr int, data string) bool {
		frame := strconv.Itoa(txnr) + " rsp " + strconv.Itoa(len(data))
		if data != "" {
			frame += " " + data
		}
		_, err := io.WriteString(conn, frame+"\n")
		return err == nil
	}
	opened := false
	for {
		txnr, command, data, err := readFrame(rd)
		if err != nil {
			var bad frameError
			if errors.As(err, &bad) {
				s.problem("RELP: %v", err)
			}
			return // otherwise the connection ended: what was not answered was not received
		}
		switch {
		case command == "open" && !opened:
			if !bytes.Contains(data, []byte("commands=syslog")) {
				s.problem("RELP open without commands=syslog: %q", data)
			}
			opened = true
			if !answer(txnr, "200 OK\nrelp_version=0\nrelp_software=collectortest\ncommands=syslog") {
				return
			}
		case command == "syslog" && opened:
			s.message(data)
			if !answer(txnr, "200 OK") {
				return
			}
		case command == "close":
			answer(txnr, "")
			return
		default:
			s.problem("RELP command %q (opened: %v)", command, opened)
			answer(txnr, "500 unexpected command")
			return
		}
	}
}

// frameError is a malformed frame (other errors are the connection's).
type frameError string

func (e frameError) Error() string { return string(e) }

// readFrame reads TXNR SP COMMAND SP DATALEN [SP DATA] LF.
func readFrame(rd *bufio.Reader) (txnr int, command string, data []byte, err error) {
	head, err := rd.ReadString(' ')
	if err != nil {
		return 0, "", nil, err
	}
	if txnr, err = strconv.Atoi(head[:len(head)-1]); err != nil {
		return 0, "", nil, frameError(fmt.Sprintf("transaction number %q", head))
	}
	if command, err = rd.ReadString(' '); err != nil {
		return 0, "", nil, err
	}
	command = command[:len(command)-1]
	var lenText []byte
	for {
		c, err := rd.ReadByte()
		if err != nil {
			return 0, "", nil, err
		}
		if c == ' ' || c == '\n' {
			n, err := strconv.Atoi(string(lenText))
			if err != nil || n < 0 || n > 64<<20 {
				return 0, "", nil, frameError(fmt.Sprintf("data length %q", lenText))
			}
			if c == '\n' {
				if n != 0 {
					return 0, "", nil, frameError(fmt.Sprintf("data length %d and no data", n))
				}
				return txnr, command, nil, nil
			}
			data = make([]byte, n)
			if _, err := io.ReadFull(rd, data); err != nil {
				return 0, "", nil, err
			}
			if c, err := rd.ReadByte(); err != nil {
				return 0, "", nil, err
			} else if c != '\n' {
				return 0, "", nil, frameError("no newline after the data")
			}
			return txnr, command, data, nil
		}
		lenText = append(lenText, c)
	}
}

func (s *Syslog) message(msg []byte) {
	if !header.Match(msg) {
		s.problem("not an RFC 5424 message from aqlguard: %.80q", msg)
		return
	}
	bom := bytes.Index(msg, []byte("\xEF\xBB\xBF"))
	end := bytes.Index(msg, []byte(`"] `))
	if bom < 0 || end < 0 || end > bom {
		s.problem("no structured data or BOM: %.80q", msg)
		return
	}
	params := map[string]string{}
	for _, m := range sdParam.FindAllSubmatch(msg[:end+2], -1) {
		params[string(m[1])] = string(m[2])
	}
	seq, err := strconv.ParseUint(params["seq"], 10, 64)
	if err != nil {
		s.problem("no seq: %.80q", msg)
		return
	}
	s.mu.Lock()
	s.structured = append(s.structured, params)
	s.mu.Unlock()
	s.add(Received{Seq: seq, Raw: msg[bom+3:], Hash: params["hash"]})
}

// Structured are the structured data parameters of every message.
func (s *Syslog) Structured() []map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]string(nil), s.structured...)
}

// ---------------------------------------------------------------------------
// HTTP: OTLP logs and Splunk HEC

// HTTP receives OTLP/HTTP logs (protobuf) at /v1/logs and Splunk HEC
// events at /services/collector/event.
type HTTP struct {
	collector
	srv *http.Server
	// Fail, when set, answers a request with this status instead.
	fail int
	// reject, when set, is OTLP's partial success: so many records
	// rejected, none kept.
	reject int64
	// Headers are the last request's headers.
	headers http.Header
}

// StartHTTP listens on addr.
func StartHTTP(addr string) (*HTTP, error) {
	h := &HTTP{collector: collector{addr: addr}}
	return h, h.Start()
}

// Start listens again on the same address.
func (h *HTTP) Start() error {
	if err := h.listen(); err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/logs", h.otlp)
	mux.HandleFunc("POST /services/collector/event", h.hec)
	h.mu.Lock()
	h.srv = &http.Server{Handler: mux, ConnState: func(c net.Conn, st http.ConnState) {
		h.track(c, st != http.StateClosed && st != http.StateHijacked)
	}}
	srv, ln := h.srv, h.ln
	h.mu.Unlock()
	go srv.Serve(ln)
	return nil
}

// Stop crashes the collector.
func (h *HTTP) Stop() {
	h.mu.Lock()
	srv := h.srv
	h.mu.Unlock()
	h.crash()
	if srv != nil {
		srv.Close()
	}
}

// FailWith makes the collector answer status (0: accept again).
func (h *HTTP) FailWith(status int) {
	h.mu.Lock()
	h.fail = status
	h.mu.Unlock()
}

// RejectOTLP makes the OTLP receiver answer 200 with a partial success
// that rejects n records, and keep none of the request's (0: accept
// again).
func (h *HTTP) RejectOTLP(n int64) {
	h.mu.Lock()
	h.reject = n
	h.mu.Unlock()
}

// Headers are the last request's headers.
func (h *HTTP) Headers() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.headers.Clone()
}

func (h *HTTP) failing(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.headers = r.Header.Clone()
	if h.fail != 0 {
		http.Error(w, "collector unavailable", h.fail)
		return true
	}
	return false
}

func (h *HTTP) otlp(w http.ResponseWriter, r *http.Request) {
	if h.failing(w, r) {
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		h.problem("OTLP content type %q", ct)
		http.Error(w, "want protobuf", http.StatusUnsupportedMediaType)
		return
	}
	var data logspb.LogsData // wire-compatible with ExportLogsServiceRequest
	if err := proto.Unmarshal(body, &data); err != nil {
		h.problem("OTLP body: %v", err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Received
	for _, rl := range data.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			for _, lr := range sl.LogRecords {
				rec := Received{Raw: []byte(lr.Body.GetStringValue())}
				for _, kv := range lr.Attributes {
					switch kv.Key {
					case "aqlguard.seq":
						rec.Seq = uint64(kv.Value.GetIntValue())
					case "aqlguard.hash":
						rec.Hash = kv.Value.GetStringValue()
					}
				}
				if rec.Seq == 0 || lr.TimeUnixNano == 0 {
					h.problem("an OTLP log record without aqlguard.seq or a time")
				}
				got = append(got, rec)
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	h.mu.Lock()
	reject := h.reject
	h.mu.Unlock()
	if reject > 0 {
		answer, _ := proto.Marshal(&collogspb.ExportLogsServiceResponse{PartialSuccess: &collogspb.ExportLogsPartialSuccess{
			RejectedLogRecords: reject, ErrorMessage: "rejected by the test"}})
		w.Write(answer)
		return
	}
	for _, rec := range got {
		h.add(rec)
	}
}

func (h *HTTP) hec(w http.ResponseWriter, r *http.Request) {
	if h.failing(w, r) {
		return
	}
	// The body is read whole first, as for OTLP: a connection the test
	// cuts mid-body (Stop) is an outage, not a malformed message.
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var got []Received
	for {
		var ev struct {
			Time       float64           `json:"time"`
			Sourcetype string            `json:"sourcetype"`
			Event      json.RawMessage   `json:"event"`
			Fields     map[string]string `json:"fields"`
		}
		if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			h.problem("HEC body: %v", err)
			http.Error(w, `{"text":"Invalid data format","code":6}`, http.StatusBadRequest)
			return
		}
		seq, _ := strconv.ParseUint(ev.Fields["seq"], 10, 64)
		if ev.Time == 0 || ev.Sourcetype != "aqlguard:audit" || seq == 0 {
			h.problem("a HEC event without time, sourcetype or seq")
		}
		got = append(got, Received{Seq: seq, Raw: ev.Event, Hash: ev.Fields["hash"]})
	}
	for _, rec := range got {
		h.add(rec)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"text":"Success","code":0}`))
}

// ---------------------------------------------------------------------------
// The receiver's checks

// Check is what a receiver does with what it got: drop the duplicates
// (by seq), check that the first arrival of each record came in order
// and that they are want, 1 to want with no gap, and verify the chain
// over them, each record's hash computed from its own bytes. It returns
// how many duplicates there were.
func Check(got []Received, want uint64) (duplicates int, err error) {
	seen := map[uint64]bool{}
	var inOrder []Received
	var last uint64
	for _, r := range got {
		if seen[r.Seq] {
			duplicates++
			continue
		}
		if r.Seq != last+1 {
			return duplicates, fmt.Errorf("record %d arrived first after %d: a record is missing or out of order", r.Seq, last)
		}
		seen[r.Seq], last = true, r.Seq
		inOrder = append(inOrder, r)
	}
	if last != want {
		return duplicates, fmt.Errorf("got records 1 to %d, want 1 to %d", last, want)
	}
	v := store.NewChainVerifier()
	for _, r := range inOrder {
		rec, err := v.Next(r.Raw)
		if err != nil {
			return duplicates, fmt.Errorf("record %d: %w", r.Seq, err)
		}
		if rec.Seq != r.Seq || (r.Hash != "" && rec.Hash != r.Hash) {
			return duplicates, fmt.Errorf("record %d: the transport says seq %d hash %s, the record %d %s", r.Seq, r.Seq, r.Hash, rec.Seq, rec.Hash)
		}
	}
	return duplicates, nil
}
