package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/clientauth"
	"github.com/aqlguard/aqlguard/proxy/httpfront"
	"github.com/aqlguard/aqlguard/store"
	"github.com/aqlguard/aqlguard/telemetry"
)

// cmdServe serves MCP over Streamable HTTP at /mcp, on TCP or a unix
// socket. Every client gets its own MCP session, with its own downstream
// servers. Clients authenticate (unless [serve] auth = "none", loopback
// or unix socket only) with a token of [[serve.clients]], the single
// serve token, or an OAuth JWT of [serve.oauth]; each credential has a
// principal, and each principal its own safety loop: a block raised by
// one holds in all of its sessions and in none of another's.
func cmdServe(args []string, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "token" {
		return cmdServeToken(args[1:], os.Stdout, stderr)
	}
	fs, g := newFlags("serve", stderr)
	listen := fs.String("listen", "127.0.0.1:8765", "address to listen on: HOST:PORT, or unix:/path/to/socket (created 0600)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aqlguard serve [--listen ADDR] [--config FILE] [--state-dir DIR]   MCP over Streamable HTTP at /mcp\n"+
			"       aqlguard serve token add|list|revoke ...   each client's own token and principal (aqlguard serve token -h)\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if len(fs.Args()) > 0 {
		fmt.Fprintf(stderr, "aqlguard serve: unexpected %q: serve takes flags, or `token add|list|revoke` first (aqlguard help serve)\n", fs.Arg(0))
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	go app.HeapHeadroom(ctx, app.ServeHeadroom) // fewer collections under load (bench/RESULTS.md (av))
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	// The token exists before the port opens: a client that can connect
	// can read it.
	legacy, legacyFrom := "", "none"
	if cfg.Serve.Auth == "token" {
		legacy, legacyFrom, err = serveToken(cfg)
		if err != nil {
			fmt.Fprintf(stderr, "aqlguard: %v\n", err)
			return 1
		}
	}
	ln, local, err := listenOn(*listen, cfg.Serve.Auth == "none")
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: --listen %s: %v\n", *listen, err)
		return 1
	}
	defer ln.Close()
	if cfg.Serve.Auth == "none" && !local {
		fmt.Fprintf(stderr, "aqlguard: --listen %s is reachable from other machines, and [serve] auth = \"none\": "+
			"refusing to serve without authentication; use auth = \"token\", a loopback address or a unix socket\n", *listen)
		return 1
	}
	// A replica may start before its database (a boot, an outage): it
	// waits for it, saying so, rather than exit and leave the retries to
	// a service manager that gives up.
	in, code := start(ctx, g, cfg, stderr, true)
	if in == nil {
		return code
	}
	defer in.Close()
	stopWatching, err := in.Watch(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	defer stopWatching()
	in.ServePrincipals(ctx, cfg.Serve.PrincipalIdleTimeout.Duration)
	opts := httpfront.Options{MaxBodyBytes: cfg.Limits.MaxRequestSize, MaxSessions: cfg.Serve.MaxSessions,
		IdleTimeout: cfg.Serve.SessionIdleTimeout.Duration, Log: in.Log, RelayFor: in.RelayFor}
	mux := http.NewServeMux()
	if cfg.Serve.Auth == "token" {
		var jwt *clientauth.JWTVerifier
		if o := cfg.Serve.OAuth; o != nil {
			jwt = clientauth.NewJWTVerifier(*o, nil, in.Log.With("oauth_issuer", o.Issuer))
			go func() {
				if err := jwt.Keys().Refresh(ctx); err != nil {
					in.Log.Warn("the identity provider's keys could not be fetched; OAuth tokens are refused until they are", "jwks_url", o.JWKSURL, "err", err)
				}
			}()
			for _, path := range jwt.MetadataPaths() {
				mux.Handle(path, jwt.MetadataHandler())
			}
		}
		opts.Auth = clientauth.New(clientauth.StaticClients(cfg, legacy), cfg.Agent, jwt, in.Log)
		// A reload puts the clients in force: a revoked token is refused
		// from the next request on.
		in.Reloaded = func(c *config.Config) { opts.Auth.SetStatic(clientauth.StaticClients(c, legacy), c.Agent) }
	}
	go in.WatchConfig(ctx, func() (*config.Config, error) { return loadConfig(g) })
	front := httpfront.New(ctx, in.Relay, opts)
	mux.Handle("/mcp", front)
	// The probes need no token: an orchestrator's probe has none, and
	// they say nothing but fixed words (telemetry.Readiness).
	mux.HandleFunc("GET /healthz", telemetry.Healthz)
	mux.Handle("GET /readyz", in.Health())
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: 64 << 10}
	url := "http://" + ln.Addr().String() + "/mcp"
	if ln.Addr().Network() == "unix" {
		url = "http://localhost/mcp over unix socket " + ln.Addr().String()
	}
	oauth := "none"
	if cfg.Serve.OAuth != nil && cfg.Serve.Auth == "token" {
		oauth = cfg.Serve.OAuth.Issuer
	}
	in.Log.Info("listening", "url", url, "auth", cfg.Serve.Auth, "token", legacyFrom, "clients", len(cfg.Serve.Clients), "oauth", oauth,
		"max_sessions", cfg.Serve.MaxSessions, "session_idle_timeout", cfg.Serve.SessionIdleTimeout.Duration,
		"principal_idle_timeout", cfg.Serve.PrincipalIdleTimeout.Duration)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		front.Close()
		in.Log.Error("HTTP server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	front.Close() // ends the sessions, and so their event streams
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		in.Log.Warn("HTTP shutdown", "err", err)
	}
	in.Log.Info("aqlguard stopped")
	return 0
}

// listenOn listens on HOST:PORT or unix:PATH and reports whether only
// this machine can connect (a loopback address or a unix socket). With
// checkPeers, a unix socket admits only processes of this user
// (SO_PEERCRED), for serving without a token.
func listenOn(addr string, checkPeers bool) (net.Listener, bool, error) {
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		ln, err := listenUnix(path)
		if err != nil {
			return nil, false, err
		}
		if checkPeers {
			return sameUserOnly{ln}, true, nil
		}
		return ln, true, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, false, err
	}
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	ip := net.ParseIP(host)
	return ln, ip != nil && ip.IsLoopback(), nil
}

// serveToken is the single serve token (the client "serve-token", its
// principal the configured agent): AQLGUARD_SERVE_TOKEN, or the token
// file, created with a fresh token (0600) if it does not exist. When
// [[serve.clients]] or [serve.oauth] are configured, the default token
// file is not read or made: only AQLGUARD_SERVE_TOKEN or an explicit
// token_file keep a single token beside them. It returns where the
// token came from, for the log (never the token itself).
func serveToken(cfg *config.Config) (token, from string, err error) {
	if t := os.Getenv("AQLGUARD_SERVE_TOKEN"); t != "" {
		// Read once, then gone from the environment: nothing this
		// process starts inherits it (downstream strips AQLGUARD_* too).
		_ = os.Unsetenv("AQLGUARD_SERVE_TOKEN")
		if len(t) < 32 {
			return "", "", errors.New("AQLGUARD_SERVE_TOKEN is shorter than 32 characters: too easy to guess")
		}
		return t, "AQLGUARD_SERVE_TOKEN", nil
	}
	path := cfg.Serve.TokenFile
	if path == "" && (len(cfg.Serve.Clients) > 0 || cfg.Serve.OAuth != nil) {
		return "", "none ([[serve.clients]] or [serve.oauth] are configured)", nil
	}
	if path == "" {
		dir := cfg.StateDir
		if dir == "" {
			if dir, err = store.DefaultDir(); err != nil {
				return "", "", err
			}
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", "", err
		}
		path = filepath.Join(dir, "serve.token")
	}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t := rand.Text() + rand.Text() // 2 × 26 base32 characters: 260 bits
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return "", "", fmt.Errorf("creating the serve token %s: %w", path, err)
		}
		_, werr := f.WriteString(t + "\n")
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", "", fmt.Errorf("writing the serve token %s: %w", path, werr)
		}
		return t, path + " (created)", nil
	case err != nil:
		return "", "", fmt.Errorf("reading the serve token: %w", err)
	}
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return "", "", fmt.Errorf("the serve token %s can be read by other users (mode %#o): chmod 600 it", path, fi.Mode().Perm())
	}
	t := strings.TrimSpace(string(data))
	if len(t) < 32 {
		return "", "", fmt.Errorf("the serve token in %s is shorter than 32 characters: too easy to guess", path)
	}
	return t, path, nil
}
