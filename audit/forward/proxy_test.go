package forward_test

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/internal/fixture/collectortest"
	"github.com/aqlguard/aqlguard/store"
)

// haproxy runs Debian's haproxy in TCP mode in the foreground, in front
// of backend, and returns the address it listens on. It skips, loudly,
// where haproxy is not installed (.ci/run installs it, so CI runs it).
func haproxy(t *testing.T, backend string) string {
	t.Helper()
	bin, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("SKIPPED: haproxy is not installed (.ci/run installs Debian's haproxy): the fault test of syslog behind a TCP proxy did not run")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := ln.Addr().String()
	ln.Close()
	// A buffering TCP proxy as deployments run it: it accepts the
	// sender's connection before it has one to the collector, reads what
	// the sender writes, and when the collector cannot be reached (after
	// its retries) closes the sender's connection cleanly.
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	err = os.WriteFile(cfg, []byte(`global
    maxconn 100
defaults
    mode tcp
    timeout connect 500ms
    timeout client 30s
    timeout server 30s
    retries 2
listen syslog
    bind `+listen+`
    server collector `+backend+`
`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", cfg)
	var out logBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("haproxy:\n%s", out.String())
		}
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", listen); err == nil {
			c.Close()
			return listen
		}
		if time.Now().After(deadline) {
			t.Fatalf("haproxy does not listen on %s:\n%s", listen, out.String())
		}
	}
}

// TestSyslogBehindAProxyOutage: plain syslog over TCP through haproxy,
// the collector crashed while records are written and started again
// later: not one record is lost. The proxy closes the sender's
// connections cleanly while the collector is away, which a sender that
// took a clean close for the collector's word counted as delivered (24
// of 24 lost); the forwarder instead sends again, after reconnecting,
// everything not yet known delivered.
func TestSyslogBehindAProxyOutage(t *testing.T) {
	c, err := collectortest.StartSyslog("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	proxyOutage(t, c, func(proxy string) forward.Sink {
		sink, err := forward.NewSyslog("tcp://"+proxy, "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		sink.Settle = 4 * time.Second // above haproxy's time to give up (3 tries of 500 ms and its 1 s pauses)
		return sink
	})
}

// TestRELPBehindAProxyOutage: the same through RELP, whose answers come
// from the collector alone.
func TestRELPBehindAProxyOutage(t *testing.T) {
	c, err := collectortest.StartRELP("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	proxyOutage(t, c, func(proxy string) forward.Sink {
		sink, err := forward.NewRELP("relp://"+proxy, "", "state-1")
		if err != nil {
			t.Fatal(err)
		}
		sink.Confirm = 3 * time.Second
		return sink
	})
}

// proxyOutage runs c behind haproxy, writes records, crashes c, writes
// 24 records, starts c again, writes more, and checks that c got every
// one of them.
func proxyOutage(t *testing.T, c *collectortest.Syslog, sink func(proxy string) forward.Sink) {
	proxy := haproxy(t, c.Addr())
	w := newState(t)
	run(t, w, sink(proxy))
	const before, during, after = 10, 24, 6
	w.write(t, before, 0)
	waitFor(t, c, before)

	c.Stop()
	w.write(t, during, 40*time.Millisecond) // about a second
	time.Sleep(2 * time.Second)             // the proxy takes them, and gives up on the collector
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.write(t, after, 0)

	const n = before + during + after
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if len(missing(c.Got(), n)) == 0 {
			break
		}
	}
	if lost := missing(c.Got(), n); len(lost) > 0 {
		t.Fatalf("%d of the %d records written while the collector was down never reached it (and %d in all): %v",
			len(inRange(lost, before+1, before+during)), during, len(lost), lost)
	}
	checkReceived(t, c, n)
}

// missing is the records of 1 to n the collector does not have.
func missing(got []collectortest.Received, n uint64) []uint64 {
	seen := map[uint64]bool{}
	for _, r := range got {
		seen[r.Seq] = true
	}
	var out []uint64
	for s := uint64(1); s <= n; s++ {
		if !seen[s] {
			out = append(out, s)
		}
	}
	return out
}

func inRange(seqs []uint64, lo, hi uint64) []uint64 {
	var out []uint64
	for _, s := range seqs {
		if s >= lo && s <= hi {
			out = append(out, s)
		}
	}
	return out
}

// TestSyslogCleanCloseConfirmsNothing: a peer that reads a batch and
// closes the connection cleanly (as a proxy does that cannot reach the
// collector) has confirmed nothing: the next Send says the connection
// was lost; a batch on a connection that stays up is delivered once it
// has stayed up for Settle, and not before.
func TestSyslogCleanCloseConfirmsNothing(t *testing.T) {
	w := newState(t)
	w.write(t, 3, 0)
	batch, err := store.NewLogReader(w.dir).Read(store.LogPosition{}, 3)
	if err != nil || len(batch) != 3 {
		t.Fatal(len(batch), err)
	}
	for _, tc := range []struct {
		name      string
		closeSoon bool
		want      uint64
		lost      bool
	}{
		{"a peer that closes cleanly after reading", true, 0, true},
		{"a peer that keeps the connection", false, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				conn, err := ln.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				if tc.closeSoon {
					conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				}
				io.Copy(io.Discard, conn)
			}()
			sink, _ := forward.NewSyslog("tcp://"+ln.Addr().String(), "", "")
			sink.Settle = 400 * time.Millisecond
			defer sink.Close()
			if got, err := sink.Send(context.Background(), batch); got != 0 || err != nil {
				t.Fatalf("the first Send confirmed %d (%v), want nothing yet", got, err)
			}
			time.Sleep(600 * time.Millisecond)
			got, err := sink.Send(context.Background(), nil)
			if got != tc.want || (err != nil) != tc.lost {
				t.Fatalf("after Settle: delivered %d, err %v; want %d, lost %v", got, err, tc.want, tc.lost)
			}
		})
	}
}
