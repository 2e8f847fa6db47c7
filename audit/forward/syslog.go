package forward

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/store"
)

// Syslog sends records as RFC 5424 messages over TCP, or TLS (RFC 5425),
// framed by octet counting (RFC 6587 3.4.1), on one connection kept
// open. Plain syslog has no acknowledgement, and a clean close proves
// nothing (a buffering proxy such as haproxy accepts a connection,
// reads it, and closes it cleanly when it cannot reach the collector),
// so a batch counts as delivered only once the connection it went on
// has stayed up for Settle after it: a collector that dies, and a proxy
// that gives up on one, close the connection sooner. When the
// connection is lost, everything not delivered by that rule is sent
// again on a new one (Send's error): at least once, and a collector may
// get records twice (each carries its seq and hash to drop them by).
//
// Each message: facility 13 (log audit), severity warning for a refused
// or blocked call and notice otherwise; timestamp, host and process id
// from the record; APP-NAME aqlguard; MSGID the record's kind; the
// structured data [aqlguard@32473 seq="N" hash="…" prev="…" state="…"];
// and as MSG the record's JSON line exactly as stored (after a UTF-8
// BOM), so the receiver can check its hash. (32473 is the enterprise
// number RFC 5612 reserves for documentation.)
type Syslog struct {
	Address string // tcp://HOST:PORT or tls://HOST:PORT
	TLS     *tls.Config
	State   string // the state's id, in every message
	// Settle is how long a connection must stay up after a batch before
	// the batch counts as delivered (default DefaultSettle; [audit.forward]
	// assume_delivered_after). It must be
	// longer than a proxy in front of the collector takes to give up on
	// it (haproxy: timeout connect times retries+1, plus a second between
	// tries), and shorter than the proxy's idle timeout.
	Settle time.Duration

	conn *syslogConn
}

// DefaultSettle is Syslog.Settle's default ([audit.forward]
// assume_delivered_after's).
const DefaultSettle = config.DefaultAssumeDeliveredAfter

// syslogConn is the connection kept open, and what went on it.
type syslogConn struct {
	net.Conn
	mu     sync.Mutex
	lostAt time.Time // when the peer closed it (zero: open)
	lost   error
	wrote  time.Time // the last batch written
	sent   []syslogSent
}

type syslogSent struct {
	seq uint64
	at  time.Time
}

// watch reads the connection until it ends: a syslog collector never
// writes, so the end of reading is the peer closing it (or a reset).
func (c *syslogConn) watch() {
	_, err := io.Copy(io.Discard, c.Conn)
	if err == nil {
		err = io.EOF
	}
	c.mu.Lock()
	c.lostAt, c.lost = time.Now(), err
	c.mu.Unlock()
}

// idleHint is how long a connection must have been quiet before its
// loss is said to look like an idle timeout.
const idleHint = 5 * time.Second

// quiet is how long the connection had been without a write when it was
// lost.
func (c *syslogConn) quiet() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wrote.IsZero() || c.lostAt.IsZero() {
		return 0
	}
	return c.lostAt.Sub(c.wrote)
}

// settled drops the batches that stayed on an open connection for
// settle and returns the last of them (0: none).
func (c *syslogConn) settled(settle time.Duration) (delivered uint64, lost error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	until := time.Now()
	if c.lost != nil {
		until = c.lostAt
	}
	for len(c.sent) > 0 && until.Sub(c.sent[0].at) >= settle {
		delivered = c.sent[0].seq
		c.sent = c.sent[1:]
	}
	return delivered, c.lost
}

// NewSyslog builds the sink for address; caFile ("" for none) adds
// certificate authorities to the system's for tls://.
func NewSyslog(address, caFile, state string) (*Syslog, error) {
	cfg, err := syslogAddress(address, caFile, "tcp", "tls")
	if err != nil {
		return nil, err
	}
	return &Syslog{Address: address, State: state, TLS: cfg}, nil
}

// NewRELP builds the RELP sink for address (relp:// or relp+tls://).
func NewRELP(address, caFile, state string) (*RELP, error) {
	cfg, err := syslogAddress(address, caFile, "relp", "relp+tls")
	if err != nil {
		return nil, err
	}
	return &RELP{Address: address, State: state, TLS: cfg}, nil
}

// NewSyslogSink is the sink for a syslog address: RELP for relp:// and
// relp+tls://, plain syslog for tcp:// and tls://.
func NewSyslogSink(address, caFile, state string) (Sink, error) {
	if u, err := url.Parse(address); err == nil && (u.Scheme == "relp" || u.Scheme == "relp+tls") {
		return NewRELP(address, caFile, state)
	}
	return NewSyslog(address, caFile, state)
}

// syslogAddress checks address's scheme (plain or secure, the latter
// over TLS) and builds the TLS configuration for the secure one.
func syslogAddress(address, caFile, plain, secure string) (*tls.Config, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != plain && u.Scheme != secure) || u.Host == "" {
		return nil, fmt.Errorf("syslog address %q: want %s://HOST:PORT or %s://HOST:PORT", address, plain, secure)
	}
	if u.Scheme == plain {
		return nil, nil
	}
	cfg, err := tlsConfig(caFile)
	if err != nil {
		return nil, err
	}
	cfg.ServerName = u.Hostname()
	return cfg, nil
}

// tlsConfig trusts the system's roots and those in caFile.
func tlsConfig(caFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile == "" {
		return cfg, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ca_file: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ca_file %s holds no PEM certificate", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

func (s *Syslog) Destination() string { return "syslog " + s.Address }

func (s *Syslog) Close() error {
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

func (s *Syslog) settle() time.Duration {
	if s.Settle > 0 {
		return s.Settle
	}
	return DefaultSettle
}

// Send writes the batch on the connection (opened first if need be) and
// returns the last record of the batches that have settled. A lost
// connection is an error, after which the forwarder sends everything
// not yet delivered again (on a new connection).
func (s *Syslog) Send(ctx context.Context, batch []store.LogEntry) (uint64, error) {
	var delivered uint64
	if s.conn != nil {
		var lost error
		if delivered, lost = s.conn.settled(s.settle()); lost != nil {
			hint := ""
			if quiet := s.conn.quiet(); quiet >= idleHint {
				hint = fmt.Sprintf(" (it was closed %s after the last write: if this repeats, something closes quiet connections "+
					"sooner than assume_delivered_after, and the last records are sent again each time)", quiet.Round(time.Second))
			}
			s.Close()
			return delivered, fmt.Errorf("the collector, or a proxy before it, closed the connection, "+
				"so the records sent on it less than %s before it closed are not known delivered%s: %w", s.settle(), hint, lost)
		}
	}
	if len(batch) == 0 {
		return delivered, nil
	}
	if s.conn == nil {
		if err := s.dial(ctx); err != nil {
			return 0, err
		}
	}
	var buf []byte
	for _, e := range batch {
		msg := s.message(e)
		buf = strconv.AppendInt(buf, int64(len(msg)), 10)
		buf = append(buf, ' ')
		buf = append(buf, msg...)
	}
	conn := s.conn
	stop := context.AfterFunc(ctx, func() { conn.SetWriteDeadline(time.Now()) })
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_, err := conn.Write(buf)
	stop()
	if err != nil {
		s.Close()
		return delivered, err
	}
	conn.mu.Lock()
	conn.sent = append(conn.sent, syslogSent{seq: batch[len(batch)-1].Record.Seq, at: time.Now()})
	conn.wrote = time.Now()
	conn.mu.Unlock()
	return delivered, nil
}

func (s *Syslog) dial(ctx context.Context) error {
	// Data a frozen collector never acknowledges ends the connection
	// well within Settle, so it is not counted as delivered.
	conn, err := dial(ctx, s.Address, s.TLS, s.settle()/2)
	if err != nil {
		return err
	}
	s.conn = &syslogConn{Conn: conn}
	go s.conn.watch()
	return nil
}

// dial connects to address's host, over TLS when cfg is not nil; unacked
// (when not 0) bounds how long sent data may stay unacknowledged before
// the connection counts as lost (userTimeout).
func dial(ctx context.Context, address string, cfg *tls.Config, unacked time.Duration) (net.Conn, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if unacked > 0 {
		d.Control = userTimeout(unacked)
	}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return conn, nil
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return tc, nil
}

// message renders one record as an RFC 5424 message.
func (s *Syslog) message(e store.LogEntry) []byte {
	r := e.Record
	host, pid := "-", "-"
	if h, p, ok := strings.Cut(r.Process, "/"); ok {
		host, pid = printable(h, 255), printable(p, 128)
	}
	sev := 5 // notice
	switch r.Decision {
	case "block", "refuse", "deny", "verify", "denied":
		sev = 4 // warning
	}
	b := make([]byte, 0, len(e.Raw)+256)
	b = append(b, '<')
	b = strconv.AppendInt(b, int64(13*8+sev), 10)
	b = append(b, ">1 "...)
	b = r.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
	b = append(b, ' ')
	b = append(b, host...)
	b = append(b, " aqlguard "...)
	b = append(b, pid...)
	b = append(b, ' ')
	b = append(b, printable(r.Kind, 32)...)
	b = append(b, ` [aqlguard@32473 seq="`...)
	b = strconv.AppendUint(b, r.Seq, 10)
	b = append(b, `" hash="`...)
	b = append(b, sdEscape(r.Hash)...)
	b = append(b, `" prev="`...)
	b = append(b, sdEscape(r.Prev)...)
	if s.State != "" {
		b = append(b, `" state="`...)
		b = append(b, sdEscape(s.State)...)
	}
	b = append(b, `"] `...)
	b = append(b, 0xEF, 0xBB, 0xBF) // BOM: MSG is UTF-8
	return append(b, e.Raw...)
}

// printable is s as RFC 5424's PRINTUSASCII, at most n bytes; "-" when
// nothing is left.
func printable(s string, n int) string {
	out := make([]byte, 0, min(len(s), n))
	for i := 0; i < len(s) && len(out) < n; i++ {
		if c := s[i]; c >= 33 && c <= 126 {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return string(out)
}

// sdEscape escapes a structured data parameter's value (RFC 5424 6.3.3).
func sdEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `]`, `\]`).Replace(s)
}
