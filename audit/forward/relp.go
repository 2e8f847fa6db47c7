package forward

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// RELP sends records as RFC 5424 messages (the same as Syslog's) over
// RELP, the Reliable Event Logging Protocol of rsyslog (imrelp) and
// others: the collector answers each message once it has taken it, so a
// batch is delivered when every one of its messages is answered "200",
// whatever proxies sit between (they pass the answers through, and an
// answer never comes from a proxy). A connection lost before every
// answer came is a failed batch, sent again.
//
// The session: "open" offering relp_version=0 and commands=syslog, one
// "syslog" command per record (pipelined: the batch is written, then
// its answers read), and "close" when the forwarder stops.
type RELP struct {
	Address string // relp://HOST:PORT or relp+tls://HOST:PORT
	TLS     *tls.Config
	State   string
	// Confirm bounds the wait for the collector's answers (default 30 s).
	Confirm time.Duration

	conn net.Conn
	rd   *bufio.Reader
	txnr int
}

func (r *RELP) Destination() string { return "syslog " + r.Address }

func (r *RELP) confirm() time.Duration {
	if r.Confirm > 0 {
		return r.Confirm
	}
	return 30 * time.Second
}

// Send sends the batch and waits for the collector's answer to each of
// its records.
func (r *RELP) Send(ctx context.Context, batch []store.LogEntry) (uint64, error) {
	if len(batch) == 0 {
		return 0, nil
	}
	if r.conn == nil {
		if err := r.open(ctx); err != nil {
			r.drop()
			return 0, err
		}
	}
	conn := r.conn
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	msg := Syslog{State: r.State}
	var buf []byte
	first := r.txnr + 1
	for _, e := range batch {
		buf = r.frame(buf, "syslog", msg.message(e))
	}
	_ = conn.SetDeadline(time.Now().Add(r.confirm()))
	if _, err := conn.Write(buf); err != nil {
		r.drop()
		return 0, err
	}
	for i := range batch {
		if err := r.answer(nextTxnr(first, i)); err != nil {
			r.drop()
			return 0, fmt.Errorf("record %d: %w", batch[i].Record.Seq, err)
		}
	}
	return batch[len(batch)-1].Record.Seq, nil
}

// open connects and opens the RELP session.
func (r *RELP) open(ctx context.Context) error {
	conn, err := dial(ctx, r.Address, r.TLS, 0) // RELP's answers have their own deadline
	if err != nil {
		return err
	}
	r.conn, r.rd, r.txnr = conn, bufio.NewReader(conn), 0
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(r.confirm()))
	offers := []byte("relp_version=0\nrelp_software=aqlguard\ncommands=syslog")
	if _, err := conn.Write(r.frame(nil, "open", offers)); err != nil {
		return err
	}
	if err := r.answer(r.txnr); err != nil {
		return fmt.Errorf("opening the RELP session: %w", err)
	}
	return nil
}

// frame appends one RELP frame: TXNR SP COMMAND SP DATALEN [SP DATA] LF.
func (r *RELP) frame(b []byte, command string, data []byte) []byte {
	r.txnr = nextTxnr(r.txnr, 1)
	b = strconv.AppendInt(b, int64(r.txnr), 10)
	b = append(b, ' ')
	b = append(b, command...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(data)), 10)
	if len(data) > 0 {
		b = append(b, ' ')
		b = append(b, data...)
	}
	return append(b, '\n')
}

// nextTxnr is the transaction number n after txnr: they run from 1 to
// 999,999,999 and wrap to 1.
func nextTxnr(txnr, n int) int {
	return (txnr+n-1)%999_999_999 + 1
}

// answer reads the collector's answer to txnr: it must be "rsp" with
// code 200.
func (r *RELP) answer(txnr int) error {
	f, err := readRELPFrame(r.rd)
	if err != nil {
		return fmt.Errorf("no answer from the collector: %w", err)
	}
	if f.command == "serverclose" {
		return errors.New("the collector closed the session (serverclose) before it answered")
	}
	if f.command != "rsp" || f.txnr != txnr {
		return fmt.Errorf("the collector answered %q to transaction %d, want rsp to %d", f.command, f.txnr, txnr)
	}
	code, text, _ := bytes.Cut(f.data, []byte(" "))
	if string(code) != "200" {
		text, _, _ = bytes.Cut(text, []byte("\n"))
		return fmt.Errorf("the collector refused it: %s %.200s", printable(string(code), 3), printable(string(text), 200))
	}
	return nil
}

// relpFrame is one frame read.
type relpFrame struct {
	txnr    int
	command string
	data    []byte
}

// maxRELPAnswer bounds the data of an answer read from a collector.
const maxRELPAnswer = 64 << 10

// readRELPFrame reads one frame from a collector.
func readRELPFrame(rd *bufio.Reader) (relpFrame, error) {
	var f relpFrame
	field := func(max int) (string, error) {
		var b []byte
		for {
			c, err := rd.ReadByte()
			if err != nil {
				return "", err
			}
			if c == ' ' || c == '\n' {
				if c == '\n' {
					_ = rd.UnreadByte()
				}
				return string(b), nil
			}
			if len(b) == max {
				return "", fmt.Errorf("a RELP header field longer than %d bytes", max)
			}
			b = append(b, c)
		}
	}
	num := func(s, what string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || strings.Trim(s, "0123456789") != "" || (s[0] == '0' && len(s) > 1) {
			return 0, fmt.Errorf("RELP %s %q is not a number", what, printable(s, 16))
		}
		return n, nil
	}
	s, err := field(9)
	if err != nil {
		return f, err
	}
	if f.txnr, err = num(s, "transaction number"); err != nil {
		return f, err
	}
	if f.command, err = field(32); err != nil {
		return f, err
	}
	if f.command == "" || strings.Trim(f.command, "abcdefghijklmnopqrstuvwxyz") != "" {
		return f, fmt.Errorf("RELP command %q", printable(f.command, 32))
	}
	if s, err = field(9); err != nil {
		return f, err
	}
	n, err := num(s, "data length")
	if err != nil {
		return f, err
	}
	if n > maxRELPAnswer {
		return f, fmt.Errorf("a RELP answer of %d bytes (at most %d)", n, maxRELPAnswer)
	}
	if n > 0 {
		f.data = make([]byte, n)
		if _, err := io.ReadFull(rd, f.data); err != nil {
			return f, err
		}
	}
	if c, err := rd.ReadByte(); err != nil {
		return f, err
	} else if c != '\n' {
		return f, errors.New("a RELP frame without its trailing newline")
	}
	return f, nil
}

// drop forgets the connection (what was not answered is sent again).
func (r *RELP) drop() {
	if r.conn != nil {
		r.conn.Close()
	}
	r.conn, r.rd = nil, nil
}

// Close ends the session politely: "close", and its answer awaited
// briefly.
func (r *RELP) Close() error {
	if r.conn == nil {
		return nil
	}
	_ = r.conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.conn.Write(r.frame(nil, "close", nil)); err == nil {
		_, _ = readRELPFrame(r.rd)
	}
	err := r.conn.Close()
	r.conn, r.rd = nil, nil
	return err
}
