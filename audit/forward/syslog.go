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
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// Syslog sends records as RFC 5424 messages over TCP, or TLS (RFC 5425),
// framed by octet counting (RFC 6587 3.4.1). A batch goes on a
// connection of its own, which aqlguard then closes for writing and the
// collector closes in turn once it has read everything (rsyslog and
// syslog-ng do): that end of stream is the confirmation plain syslog
// lacks, and only then does the cursor move. A collector that dies with
// records unread resets the connection instead, and the batch is sent
// again.
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
	// Confirm bounds the wait for the collector to close its side.
	Confirm time.Duration
}

// NewSyslog builds the sink for address; caFile ("" for none) adds
// certificate authorities to the system's for tls://.
func NewSyslog(address, caFile, state string) (*Syslog, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "tcp" && u.Scheme != "tls") || u.Host == "" {
		return nil, fmt.Errorf("syslog address %q: want tcp://HOST:PORT or tls://HOST:PORT", address)
	}
	s := &Syslog{Address: address, State: state}
	if u.Scheme == "tls" {
		cfg, err := tlsConfig(caFile)
		if err != nil {
			return nil, err
		}
		cfg.ServerName = u.Hostname()
		s.TLS = cfg
	}
	return s, nil
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

func (s *Syslog) Close() error { return nil }

// Send delivers one batch on a connection of its own.
func (s *Syslog) Send(ctx context.Context, batch []store.LogEntry) error {
	u, _ := url.Parse(s.Address)
	d := net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	var c net.Conn = conn
	var closeWrite func() error = conn.(*net.TCPConn).CloseWrite
	if s.TLS != nil {
		tc := tls.Client(conn, s.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("TLS: %w", err)
		}
		c, closeWrite = tc, tc.CloseWrite
	}
	var buf []byte
	for _, e := range batch {
		msg := s.message(e)
		buf = strconv.AppendInt(buf, int64(len(msg)), 10)
		buf = append(buf, ' ')
		buf = append(buf, msg...)
	}
	_ = c.SetWriteDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(buf); err != nil {
		return err
	}
	if err := closeWrite(); err != nil {
		return err
	}
	// The collector has read everything once it closes its side; a reset
	// says it had not.
	wait := s.Confirm
	if wait <= 0 {
		wait = 10 * time.Second
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	if _, err := io.Copy(io.Discard, c); err != nil {
		return fmt.Errorf("the collector did not confirm the batch (it did not close its side of the connection after reading it): %w", err)
	}
	return nil
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
