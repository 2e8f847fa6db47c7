package faultinject

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Relay is a TCP relay between a client and a server that can be told
// to go silent: Stall stops it forwarding, both ways, without closing
// anything, as a cut cable, a firewall that drops a connection's state
// or a frozen VM leave a connection (no FIN, no RST; what was sent is
// never answered). Connections accepted while it is stalled are held
// the same way. Resume forwards again, what waited included.
//
// Its own kernel still acknowledges what it is sent: a peer's TCP
// keepalive and TCP_USER_TIMEOUT do not fire through it; what a server
// does about a client that sends nothing (idle_in_transaction_session_timeout)
// is what it tests.
type Relay struct {
	ln   net.Listener
	dial func() (net.Conn, error)
	mu   sync.Mutex
	open chan struct{} // closed while forwarding
	all  []net.Conn
}

// NewRelay listens on a loopback port and relays every connection to
// what dial connects to. It is closed, with its connections, when the
// test ends.
func NewRelay(t testing.TB, dial func() (net.Conn, error)) *Relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Relay{ln: ln, dial: dial, open: make(chan struct{})}
	close(r.open)
	go r.accept()
	t.Cleanup(r.close)
	return r
}

// Addr is the relay's address (127.0.0.1:port).
func (r *Relay) Addr() *net.TCPAddr { return r.ln.Addr().(*net.TCPAddr) }

// Stall stops forwarding (nothing is closed).
func (r *Relay) Stall() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.open:
		r.open = make(chan struct{})
	default: // stalled already
	}
}

// Resume forwards again.
func (r *Relay) Resume() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.open:
	default:
		close(r.open)
	}
}

// gate is closed while the relay forwards.
func (r *Relay) gate() chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open
}

// keep notes a connection, to close when the test ends.
func (r *Relay) keep(c net.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, c)
}

func (r *Relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.keep(c)
		go func() {
			<-r.gate() // a stalled relay holds a new connection too
			s, err := r.dial()
			if err != nil {
				_ = c.Close()
				return
			}
			r.keep(s)
			go r.pump(s, c)
			go r.pump(c, s)
		}()
	}
}

// pump copies from src to dst, each read waiting for the gate before it
// is written; src's end closes dst's write side.
func (r *Relay) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			<-r.gate()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
		}
		if err != nil {
			<-r.gate()
			if err == io.EOF {
				if tc, ok := dst.(interface{ CloseWrite() error }); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			_ = dst.Close()
			return
		}
	}
}

func (r *Relay) close() {
	_ = r.ln.Close()
	r.Resume()
	r.mu.Lock()
	all := r.all
	r.all = nil
	r.mu.Unlock()
	for _, c := range all {
		_ = c.Close()
	}
}
