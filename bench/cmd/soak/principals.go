package main

// soak -principals N: many distinct JWT principals call in turn against a
// real `aqlguard serve`, and the serve process's memory is sampled as they
// come: it must follow the principals that are active, not every
// principal ever seen (issue 32, item 6).

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
	"github.com/aqlguard/aqlguard/bench/internal/procstat"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// principalsSoak is the -principals mode.
type principalsSoak struct {
	aqlguard, server string
	serverArgs       []string
	tool             string
	args             map[string]any
	principals       int
	parallel         int
	every            int           // sample every this many principals
	idle             time.Duration // [serve] principal_idle_timeout; 0: left out (a binary that predates it)
	callTimeout      time.Duration
	settle           time.Duration // after the last principal, wait this long and sample again
}

func (p *principalsSoak) run(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "aqlguard-soak-principals-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	idp, err := newIssuer()
	if err != nil {
		return err
	}
	defer idp.Close()
	listen, err := freeAddr()
	if err != nil {
		return err
	}
	metrics, err := freeAddr()
	if err != nil {
		return err
	}
	resource := "http://" + listen + "/mcp"
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(p.config(dir, idp.URL, resource, metrics)), 0o600); err != nil {
		return err
	}
	cmd := exec.Command(p.aqlguard, "serve", "--listen", listen, "--config", cfg, "--log-level", "warn")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir)
	stderr := &harness.Tail{Max: 64 << 10}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	if err := waitListening(listen, exited, 30*time.Second); err != nil {
		return fmt.Errorf("aqlguard serve: %w\n%s", err, stderr.String())
	}
	pid := realAqlguard(cmd.Process.Pid)
	fmt.Printf("%d distinct JWT principals, %d at a time, each: initialize, one tools/call %s, close; aqlguard serve pid %d (its supervisor %d); principal_idle_timeout %s\n",
		p.principals, p.parallel, p.tool, pid, cmd.Process.Pid, idleWords(p.idle))
	fmt.Println()
	fmt.Println("| principals seen | elapsed | RSS MiB | guards |")
	fmt.Println("|---:|---:|---:|---:|")
	began := time.Now()
	row := func(seen int) {
		rss, err := rssOf(pid)
		if err != nil {
			fmt.Printf("| %d | %s | (%v) | |\n", seen, time.Since(began).Round(time.Second), err)
			return
		}
		fmt.Printf("| %d | %s | %.1f | %s |\n", seen, time.Since(began).Round(time.Second), float64(rss)/(1<<20), guardsOf(metrics))
	}
	row(0)
	var (
		next, seen atomic.Int64
		firstErr   error
		errOnce    sync.Once
		wg         sync.WaitGroup
		sampleMu   sync.Mutex
	)
	for range max(1, p.parallel) {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > p.principals || ctx.Err() != nil {
					return
				}
				if err := p.one(ctx, idp, resource, fmt.Sprintf("p%06d", i)); err != nil {
					errOnce.Do(func() { firstErr = fmt.Errorf("principal %d: %w\n%s", i, err, stderr.String()) })
					next.Store(int64(p.principals))
					return
				}
				if n := seen.Add(1); n%int64(p.every) == 0 {
					sampleMu.Lock()
					row(int(n))
					sampleMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if p.settle > 0 {
		time.Sleep(p.settle)
		fmt.Printf("| %d, %s later | %s | ", seen.Load(), p.settle, time.Since(began).Round(time.Second))
		if rss, err := rssOf(pid); err == nil {
			fmt.Printf("%.1f | %s |\n", float64(rss)/(1<<20), guardsOf(metrics))
		} else {
			fmt.Printf("(%v) | |\n", err)
		}
	}
	if hwm, err := statusField(pid, "VmHWM:"); err == nil {
		fmt.Printf("\npeak RSS (VmHWM) %.1f MiB\n", float64(hwm)/(1<<20))
	}
	return nil
}

// one is one principal's visit: a session, one call, the session closed.
func (p *principalsSoak) one(ctx context.Context, idp *issuer, resource, sub string) error {
	ctx, cancel := context.WithTimeout(ctx, p.callTimeout)
	defer cancel()
	hc := &http.Client{Transport: harness.Bearer{Token: idp.sign(sub, resource), Base: http.DefaultTransport}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "soak", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: hc, MaxRetries: -1},
			// A session that the client ends (DELETE); a 2026-07-28
			// client's lives until [serve] session_idle_timeout.
			&mcp.ClientSessionOptions{ProtocolVersion: harness.ProtocolVersion})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p.tool, Arguments: p.args})
	if err != nil {
		return fmt.Errorf("call: %w", err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("refused: %s", b)
	}
	return nil
}

func (p *principalsSoak) config(dir, issuerURL, resource, metrics string) string {
	args := make([]string, len(p.serverArgs))
	for i, a := range p.serverArgs {
		args[i] = q(a)
	}
	idle := ""
	if p.idle > 0 {
		idle = "principal_idle_timeout = " + q(p.idle.String()) + "\n"
	}
	return `mode = "transparent"
agent = "soak-agent"
state_dir = ` + q(filepath.Join(dir, "state")) + `

[safety]
max_autonomous_steps = 1000000
auto_approve = ["*"]

[verify]
channel = "command"
command = ["/bin/false"]

[serve]
max_sessions = 64
metrics_listen = ` + q(metrics) + `
` + idle + `
[serve.oauth]
issuer = ` + q(issuerURL) + `
jwks_url = ` + q(issuerURL+"/jwks") + `
resource = ` + q(resource) + `
scopes = ["mcp"]

[[servers]]
name = "ev"
trust_first_sight = true
share = true
command = ` + q(p.server) + `
args = [` + strings.Join(args, ", ") + `]
`
}

func idleWords(d time.Duration) string {
	if d <= 0 {
		return "not set (a binary that predates it)"
	}
	return d.String()
}

// q quotes s as a TOML basic string (JSON string escapes are valid TOML).
func q(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}

// issuer is an identity provider of the soak's own: an RSA key whose
// public half is served as a JWKS, and the RS256 access tokens it signs
// (the bench module does not reach the main module's internal/fixture/testidp).
type issuer struct {
	*httptest.Server
	key *rsa.PrivateKey
}

func newIssuer() (*issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "RSA", "kid": "soak", "alg": "RS256", "use": "sig",
		"n": b64(key.N.Bytes()), "e": b64(big.NewInt(int64(key.E)).Bytes())}}})
	mux := http.NewServeMux()
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	})
	return &issuer{Server: httptest.NewServer(mux), key: key}, nil
}

// sign is an access token of sub for the resource, valid for an hour.
func (i *issuer) sign(sub, aud string) string {
	b64 := base64.RawURLEncoding.EncodeToString
	now := time.Now().Unix()
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "soak", "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": i.URL, "sub": sub, "aud": aud, "client_id": "soak", "scope": "mcp",
		"iat": now, "nbf": now, "exp": now + 3600})
	signing := b64(header) + "." + b64(claims)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, i.key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return signing + "." + b64(sig)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitListening waits until addr takes connections, the process exits
// or within passes.
func waitListening(addr string, exited <-chan struct{}, within time.Duration) error {
	for deadline := time.Now().Add(within); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %s", addr, within)
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it listened on %s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// realAqlguard is the process that serves: aqlguard runs itself under a
// supervisor of its own (proxy/downstream Supervise), the process that
// was started, whose one child is the real aqlguard.
func realAqlguard(started int) int {
	for _, p := range procstat.All() {
		if p.Ppid == started {
			return p.Pid
		}
	}
	return started
}

// rssOf is the process's resident set size in bytes (/proc/PID/status).
func rssOf(pid int) (int64, error) { return statusField(pid, "VmRSS:") }

func statusField(pid int, field string) (int64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// guardsOf counts the principals' guards in the process: the metrics
// list one aqlguard_blocked sample per guard.
func guardsOf(metrics string) string {
	res, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		return "?"
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	n := 0
	for line := range strings.SplitSeq(string(body), "\n") {
		if strings.HasPrefix(line, "aqlguard_blocked{") {
			n++
		}
	}
	return strconv.Itoa(n)
}
