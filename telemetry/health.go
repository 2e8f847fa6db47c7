package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// Health answers /healthz (the process serves HTTP) and /readyz (the
// state can be read and every configured server can be reached).
type Health struct {
	// State reads the state; an error makes aqlguard unready.
	State func(ctx context.Context) error
	// Servers are the servers in the configuration in force.
	Servers func() []config.Server
	// Log gets why a check failed (the answer says only that it did),
	// once each time a check goes from passing to failing.
	Log *slog.Logger
	// Timeout bounds one readiness check (default 2 s).
	Timeout time.Duration

	mu     sync.Mutex
	last   time.Time
	cached Readiness
}

// Readiness is /readyz's answer. Its words are fixed phrases: the
// endpoint needs no credential, so it names no address and no error.
type Readiness struct {
	Ready   bool              `json:"ready"`
	State   string            `json:"state"`
	Servers map[string]string `json:"servers"`
}

// What /readyz says of a check.
const (
	checkOK          = "ok"
	checkUnreachable = "unreachable"
	checkNotFound    = "command not found"
	checkUnavailable = "unavailable"
)

// cacheFor is how long one readiness answer is reused: a probe that
// comes often (or a client that calls it in a loop) does not become a
// dial to every server each time.
const cacheFor = time.Second

// Healthz answers 200 while the process serves HTTP.
func Healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte(`{"alive":true}` + "\n"))
}

// ServeHTTP answers /readyz: 200 when ready, else 503, with what was
// checked as JSON.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rd := h.Check(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(rd)
}

// Check runs the readiness checks, or returns the answer of one that ran
// less than a second ago.
func (h *Health) Check(ctx context.Context) Readiness {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.last.IsZero() && time.Since(h.last) < cacheFor {
		return h.cached
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	rd := Readiness{Ready: true, State: checkOK, Servers: map[string]string{}}
	var servers []config.Server
	if h.Servers != nil {
		servers = h.Servers()
	}
	words := make([]string, len(servers))
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, s := range servers {
		wg.Go(func() { words[i], errs[i] = checkServer(ctx, s) })
	}
	if h.State != nil {
		if err := h.State(ctx); err != nil {
			rd.Ready, rd.State = false, checkUnavailable
			if h.cached.State != checkUnavailable { // said once, when it changes
				h.log().Warn("readiness: the state cannot be read", "err", err)
			}
		}
	}
	wg.Wait()
	for i, s := range servers {
		rd.Servers[s.Name] = words[i]
		if words[i] != checkOK {
			rd.Ready = false
			if h.cached.Servers[s.Name] != words[i] {
				h.log().Warn("readiness: a server cannot be started", "server", s.Name, "check", words[i], "err", errs[i])
			}
		}
	}
	h.last, h.cached = time.Now(), rd
	return rd
}

// checkServer says whether a session could start s: a remote server's
// address takes a TCP connection, a local server's command is there.
func checkServer(ctx context.Context, s config.Server) (string, error) {
	if s.URL != "" {
		addr, err := dialAddress(s.URL)
		if err != nil {
			return checkUnreachable, err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return checkUnreachable, err
		}
		_ = c.Close()
		return checkOK, nil
	}
	cmd := s.Command
	if s.Cwd != "" && strings.Contains(cmd, "/") && !filepath.IsAbs(cmd) {
		cmd = filepath.Join(s.Cwd, cmd) // started from there
	}
	if _, err := exec.LookPath(cmd); err != nil {
		return checkNotFound, err
	}
	return checkOK, nil
}

// dialAddress is HOST:PORT of an http(s) URL, with the scheme's port
// when it names none.
func dialAddress(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Hostname() == "" {
		return "", errors.New("no host")
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

func (h *Health) log() *slog.Logger {
	if h.Log != nil {
		return h.Log
	}
	return slog.New(slog.DiscardHandler)
}
