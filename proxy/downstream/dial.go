package downstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/internal/owned"

	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/remoteauth"
	"github.com/aqlguard/aqlguard/sandbox"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// conn is a connection to a server and what must be torn down with it.
type conn struct {
	mcp.Connection
	// stop ends the server behind the connection (a stdio child and its
	// process group); nil for remote servers.
	stop func()
	// exited is closed when a stdio child has exited; exitErr then says how.
	exited  chan struct{}
	exitErr error
	// stderr holds a stdio child's last lines; env is its configured
	// environment, whose secrets its cause must not show.
	stderr *lineLogger
	env    map[string]string
	// sandbox watches a confined stdio child for what it was refused;
	// nil for one that is not confined, and for remote servers.
	sandbox *sandbox.Watch
}

// PushTo passes the Peer's receive to a connection that pushes (a stdio
// child's lines, link.LineConn): each answer reaches its caller from the
// goroutine that read it. The others (remote servers) go on through Read.
func (c *conn) PushTo(receive func(jsonrpc.Message) bool) {
	if p, ok := c.Connection.(link.Pusher); ok {
		p.PushTo(receive)
	}
}

// cause is what a stdio child's stderr says went wrong ("" if nothing),
// and whether it reads as an error.
func (c *conn) cause() (string, bool) {
	if c.stderr == nil {
		return "", false
	}
	return c.stderr.cause(knownSecrets(c.env, nil, os.Environ()))
}

// closeAll closes the connection and stops what is behind it.
func (c *conn) closeAll() {
	_ = c.Connection.Close()
	if c.stop != nil {
		c.stop()
	}
}

// dial connects to one configured server. ctx bounds only the dialing;
// the connection lives until closed.
func dial(ctx context.Context, cfg config.Server, auth *remoteauth.Manager, rec SandboxRecorder, log *slog.Logger) (*conn, error) {
	switch cfg.Transport {
	case "streamable", "sse":
		return dialHTTP(ctx, cfg, auth)
	case "stdio", "":
		return dialStdio(cfg, rec, log)
	}
	return nil, fmt.Errorf("unknown transport %q", cfg.Transport)
}

// terminateAfter is how long a stdio server gets to exit after its stdin
// closes, and again after SIGTERM, before its process group is killed.
const terminateAfter = 2 * time.Second

// childEnv is a server's environment: aqlguard's own without its
// AQLGUARD_* variables (AQLGUARD_SERVE_TOKEN is the bearer token of
// serve: a tool that prints its environment would hand it to the model),
// and then what the server's config sets, which may name any variable.
func childEnv(inherited []string, configured map[string]string) []string {
	env := make([]string, 0, len(inherited)+len(configured))
	for _, kv := range inherited {
		if !strings.HasPrefix(kv, "AQLGUARD_") {
			env = append(env, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(configured)) {
		env = append(env, k+"="+configured[k])
	}
	return env
}

func dialStdio(cfg config.Server, rec SandboxRecorder, log *slog.Logger) (*conn, error) {
	g := sandbox.Derive(cfg, sandbox.CurrentEnv(cfg))
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Cwd
	cmd.Env = childEnv(os.Environ(), cfg.Env)
	lines := newLineLogger(log)
	c := &conn{exited: make(chan struct{}), stderr: lines, env: cfg.Env}
	if !g.Off {
		tmp, err := sandbox.Prepare(&g)
		if err != nil {
			return nil, err
		}
		defer func() {
			if c.stop == nil { // not started
				_ = os.RemoveAll(tmp)
			}
		}()
		if _, set := cfg.Env["TMPDIR"]; !set {
			cmd.Env = append(cmd.Env, "TMPDIR="+tmp, "TMP="+tmp, "TEMP="+tmp)
		}
		c.sandbox = sandbox.NewWatch(g)
		lines.onLine = func(line string) {
			_, fresh := c.sandbox.Read(line)
			for _, r := range fresh {
				reportRefusal(r, rec, log)
			}
			if c.sandbox.Full() {
				log.Warn("the server's sandbox refused it so many things that no more are logged or recorded for this process")
			}
		}
	}
	reportGrant(g, rec, log)
	// stdout is the MCP stream; stderr is the server's log and goes to
	// ours, line by line, never to the client.
	cmd.Stderr = lines
	// Grandchildren (npx → node) may hold stderr open after the child
	// exits; do not let Wait block on them forever.
	cmd.WaitDelay = terminateAfter
	ownProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Started from a thread confined to the grant, which waits for it
	// (sandbox.Launch).
	err = sandbox.Launch(g, cmd, func() error { return owned.Start(cmd) }, func() {
		c.exitErr = owned.Wait(cmd)
		close(c.exited)
	})
	if err != nil {
		return nil, err
	}
	reportGroup(cmd.Process.Pid, true) // its group's id is its pid (ownProcessGroup)
	mc := link.NewLineConn(stdout, stdin, func() error { return errors.Join(stdin.Close(), stdout.Close()) })
	mc.OnBadLine = func(start []byte, why string) {
		log.Warn("the server wrote a line to stdout that is not a JSON-RPC message; it is skipped (servers log to stderr)",
			"why", why, "start", string(start))
	}
	var once sync.Once
	c.Connection = mc
	c.stop = func() {
		once.Do(func() {
			_ = stdin.Close() // a well-behaved server exits on EOF
			select {
			case <-c.exited:
			case <-time.After(terminateAfter):
				terminateGroup(cmd)
				select {
				case <-c.exited:
				case <-time.After(terminateAfter):
				}
			}
			// Whatever the server left behind in its group goes too.
			killGroup(cmd)
			reportGroup(cmd.Process.Pid, false)
			if g.TempDir != "" {
				_ = os.RemoveAll(g.TempDir)
			}
		})
	}
	return c, nil
}

// httpTransport carries the requests to every HTTP server, of every
// session, so their connections are kept and reused across sessions.
// http.DefaultTransport keeps two idle connections per host: with more
// requests in flight to one server than that, each POST beyond the two
// closed its connection when answered and the next one dialled anew —
// under 32 clients, ~9,000 sockets in TIME_WAIT within seconds, a TCP
// (for https, also a TLS) handshake per call, and a machine's ephemeral
// ports run out at a few hundred calls a second held for a minute.
var httpTransport = newHTTPTransport()

// maxIdlePerServer bounds the idle connections kept to one server: as
// many as the calls that were in flight to it at once, up to this many.
const maxIdlePerServer = 256

func newHTTPTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone() // proxies from the environment, timeouts, HTTP/2
	t.MaxIdleConns = 0                                   // no bound across servers: each has its own
	t.MaxIdleConnsPerHost = maxIdlePerServer
	return t
}

func dialHTTP(ctx context.Context, cfg config.Server, auth *remoteauth.Manager) (*conn, error) {
	headers, err := expandHeaders(cfg.Headers)
	if err != nil {
		return nil, err
	}
	var rt http.RoundTripper = headerTransport{base: httpTransport, headers: headers}
	if cfg.Auth == "oauth" {
		if auth == nil {
			return nil, errors.New("the server needs OAuth authorization, which this command does not do")
		}
		if rt, err = auth.Transport(cfg.Name, cfg.URL, cfg.OAuthClientID, rt); err != nil {
			return nil, err
		}
	}
	hc := &http.Client{Transport: rt}
	if cfg.Transport == "streamable" {
		sc := newStreamableConn(cfg.URL, hc)
		return &conn{Connection: sc, stop: func() { _ = sc.Close() }}, nil
	}
	var t mcp.Transport = &mcp.SSEClientTransport{Endpoint: cfg.URL, HTTPClient: hc}
	// The SSE transport ties its event stream to the context it connects
	// with: give it one that lives as long as the connection, and bound
	// the dialing separately.
	life, cancel := context.WithCancel(context.Background())
	type result struct {
		c   mcp.Connection
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := t.Connect(life)
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		return &conn{Connection: r.c, stop: cancel}, nil
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

// expandHeaders puts the environment's values in for ${NAME} in header
// values (headers = {Authorization = "Bearer ${API_KEY}"}), so a key need
// not be written in the config. A variable that is not set is an error:
// a request without its key would only be refused later, less clearly.
// The values live in this connection only, never in a log.
func expandHeaders(headers map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(headers))
	for k, v := range headers {
		var missing []string
		out[k] = os.Expand(v, func(name string) string {
			val, ok := os.LookupEnv(name)
			if !ok {
				missing = append(missing, name)
			}
			return val
		})
		if len(missing) > 0 {
			return nil, fmt.Errorf("the header %s needs the environment variable %s, which is not set", k, strings.Join(missing, ", "))
		}
	}
	return out, nil
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// exitDescription says how a stdio child ended, for people.
func exitDescription(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exited"
	case errors.As(err, &ee):
		if ee.ExitCode() >= 0 {
			return fmt.Sprintf("exited with code %d", ee.ExitCode())
		}
		return "was killed (" + ee.String() + ")"
	case errors.Is(err, io.EOF):
		return "closed its connection"
	}
	return "ended"
}
