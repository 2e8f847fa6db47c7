package forward_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/audit/forward"
	"github.com/aqlguard/aqlguard/internal/fixture/collectortest"
)

// rsyslog is a real rsyslogd receiving RELP (imrelp) on addr and writing
// each message as received, one a line, to out.
type rsyslog struct {
	t    *testing.T
	bin  string
	conf string
	cmd  *exec.Cmd
	log  logBuffer
	out  string
	addr string
}

func startRsyslog(t *testing.T) *rsyslog {
	t.Helper()
	bin, err := exec.LookPath("rsyslogd")
	if err != nil {
		bin = "/usr/sbin/rsyslogd"
	}
	mods, _ := filepath.Glob("/usr/lib/*/rsyslog/imrelp.so")
	if _, err := os.Stat(bin); err != nil || len(mods) == 0 {
		t.Skip("SKIPPED: rsyslogd with imrelp is not installed (.ci/run installs Debian's rsyslog-relp): RELP was not tried against a real collector")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().(*net.TCPAddr)
	ln.Close()
	dir := t.TempDir()
	r := &rsyslog{t: t, bin: bin, conf: filepath.Join(dir, "rsyslog.conf"), out: filepath.Join(dir, "received.log"),
		addr: addr.String()}
	conf := fmt.Sprintf(`global(workDirectory=%q)
module(load="imrelp")
input(type="imrelp" address="127.0.0.1" port="%d")
template(name="raw" type="string" string="%%rawmsg%%\n")
action(type="omfile" file=%q template="raw")
`, dir, addr.Port, r.out)
	if err := os.WriteFile(r.conf, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	r.start()
	t.Cleanup(func() {
		r.stop()
		if t.Failed() {
			t.Logf("rsyslogd:\n%s", r.log.String())
		}
	})
	return r
}

func (r *rsyslog) start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin, "-n", "-f", r.conf, "-i", r.conf+".pid")
	r.cmd.Stdout, r.cmd.Stderr = &r.log, &r.log
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", r.addr); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("rsyslogd does not listen on %s:\n%s", r.addr, r.log.String())
		}
	}
}

// stop stops rsyslogd as its service manager does (SIGTERM).
func (r *rsyslog) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	_ = r.cmd.Wait()
	r.cmd = nil
}

var seqParam = regexp.MustCompile(`seq="([0-9]+)"`)

// received is what rsyslogd wrote: each message's seq and the record
// after the BOM.
func (r *rsyslog) received() []collectortest.Received {
	f, err := os.Open(r.out)
	if err != nil {
		return nil
	}
	defer f.Close()
	var got []collectortest.Received
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		m := seqParam.FindSubmatch(line)
		bom := bytes.Index(line, []byte("\xEF\xBB\xBF"))
		if m == nil || bom < 0 {
			r.t.Errorf("rsyslogd wrote a line that is not a message of aqlguard's: %.100q", line)
			continue
		}
		seq, _ := strconv.ParseUint(string(m[1]), 10, 64)
		got = append(got, collectortest.Received{Seq: seq, Raw: bytes.Clone(line[bom+3:])})
	}
	return got
}

// TestRELPWithRsyslog: RELP against rsyslogd's own imrelp, stopped and
// started again while records are written: every record reaches it, in
// order, and the chain verifies over what it wrote.
func TestRELPWithRsyslog(t *testing.T) {
	r := startRsyslog(t)
	w := newState(t)
	sink, err := forward.NewRELP("relp://"+r.addr, "", "state-1")
	if err != nil {
		t.Fatal(err)
	}
	run(t, w, sink)
	w.write(t, 30, 0)
	waitReceived(t, r, 30)
	r.stop()
	w.write(t, 20, 10*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	r.start()
	w.write(t, 10, 0)
	waitReceived(t, r, 60)
	dups, err := collectortest.Check(r.received(), 60)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("60 records through rsyslogd's imrelp, %d sent twice", dups)
}

func waitReceived(t *testing.T, r *rsyslog, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for len(missing(r.received(), n)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("rsyslogd is missing records %v", missing(r.received(), n))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
