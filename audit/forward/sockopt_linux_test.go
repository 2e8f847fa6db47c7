package forward

import (
	"context"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSyslogUserTimeout: plain syslog's connection carries
// TCP_USER_TIMEOUT at half of Settle, so data a frozen collector never
// acknowledges ends the connection before it could count as delivered.
func TestSyslogUserTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	s := &Syslog{Address: "tcp://" + ln.Addr().String(), Settle: 8 * time.Second}
	if err := s.dial(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := s.conn.Conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var got int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if got != 4000 {
		t.Fatalf("TCP_USER_TIMEOUT %d ms, want 4000", got)
	}
}
