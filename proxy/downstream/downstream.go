// Package downstream connects aqlguard to the MCP servers it guards: it
// launches stdio servers and connects to Streamable HTTP and SSE ones, all
// in parallel and each under its own start timeout, and forwards calls.
// A server that fails to start is kept, marked failed, so introspection
// can report it while the others serve.
package downstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolVersion is the MCP version aqlguard asks downstream servers for.
// 2025-11-25 is the newest version an initialize handshake negotiates;
// asking for 2026-07-28 would first send server/discover, which older
// servers (most of npm today) do not know, and that version drops the
// initialized notification and server-to-client requests we may forward.
const ProtocolVersion = "2025-11-25"

// Status is a server's state.
type Status string

const (
	Ready  Status = "ready"
	Failed Status = "failed"
)

// Server is one downstream server.
type Server struct {
	Name      string
	Transport string
	Status    Status
	// Problem is a user-facing description of a start failure: fixed
	// phrases only, so it can be shown in introspection. The full error
	// is in the log.
	Problem  string
	Tools    []*mcp.Tool
	Protocol string
	// Init is the server's answer to initialize: its name, version,
	// instructions and capabilities, which transparent mode passes on.
	Init *mcp.InitializeResult

	cfg     policy.Server
	session *mcp.ClientSession
}

// Pool is the set of downstream servers.
type Pool struct {
	servers []*Server
	byName  map[string]*Server
	log     *slog.Logger
	closing atomic.Bool
}

// Start connects to every configured server in parallel. It returns when
// each has either listed its tools or failed (or hit its start timeout);
// it never fails as a whole.
func Start(ctx context.Context, cfgs []policy.Server, version string, log *slog.Logger) *Pool {
	p := &Pool{byName: map[string]*Server{}, log: log}
	var wg sync.WaitGroup
	for _, c := range cfgs {
		s := &Server{Name: c.Name, Transport: c.Transport, cfg: c}
		p.servers = append(p.servers, s)
		p.byName[c.Name] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.start(ctx, s, version)
		}()
	}
	wg.Wait()
	return p
}

func (p *Pool) start(ctx context.Context, s *Server, version string) {
	log := p.log.With("server", s.Name)
	timeout := s.cfg.StartTimeout.Duration
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	err := p.connect(sctx, s, version, log)
	if err != nil {
		s.Status = Failed
		s.Problem = describe(sctx, err, timeout)
		log.Error("downstream server failed to start", "problem", s.Problem, "err", err)
		if s.session != nil {
			_ = s.session.Close()
			s.session = nil
		}
		return
	}
	s.Status = Ready
	log.Info("downstream server ready", "tools", len(s.Tools), "protocol", s.Protocol,
		"transport", s.Transport, "elapsed", time.Since(began).Round(time.Millisecond))
}

func (p *Pool) connect(ctx context.Context, s *Server, version string, log *slog.Logger) error {
	transport, err := p.transport(s, log)
	if err != nil {
		return err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "aqlguard", Version: version},
		&mcp.ClientOptions{Logger: log, Capabilities: &mcp.ClientCapabilities{}})
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		// A stdio server that died during the handshake shows up as EOF;
		// its exit status is the useful part, once the SDK has reaped it.
		if ct, ok := transport.(*mcp.CommandTransport); ok && ct.Command.ProcessState != nil {
			return fmt.Errorf("connect: %w (%w)", err, &exec.ExitError{ProcessState: ct.Command.ProcessState})
		}
		return fmt.Errorf("connect: %w", err)
	}
	s.session = cs
	if r := cs.InitializeResult(); r != nil {
		s.Protocol = r.ProtocolVersion
		s.Init = r
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("tools/list: %w", err)
		}
		s.Tools = append(s.Tools, t)
	}
	go func() {
		// The session ends when the server goes away. Outside shutdown
		// that is news: calls to it will fail until aqlguard restarts.
		err := cs.Wait()
		if p.closing.Load() {
			log.Debug("downstream connection closed", "err", err)
			return
		}
		log.Warn("downstream server went away; its operations fail until aqlguard restarts", "err", err)
	}()
	return nil
}

func (p *Pool) transport(s *Server, log *slog.Logger) (mcp.Transport, error) {
	switch s.cfg.Transport {
	case "streamable", "sse":
		hc := &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: s.cfg.Headers}}
		if s.cfg.Transport == "sse" {
			return &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil
	case "stdio", "":
		cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
		cmd.Dir = s.cfg.Cwd
		cmd.Env = os.Environ()
		for k, v := range s.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		// stdout is the MCP stream; stderr is the server's log and goes to
		// ours, line by line, never to the client.
		cmd.Stderr = newLineLogger(log)
		// Grandchildren (npx → node) may hold stderr open after the child
		// exits; do not let Close wait on them forever.
		cmd.WaitDelay = 2 * time.Second
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	return nil, fmt.Errorf("unknown transport %q", s.cfg.Transport)
}

// describe turns a start error into a fixed, user-facing phrase.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	var exitErr *exec.ExitError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("start timed out after %s", timeout)
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, os.ErrNotExist):
		return "command not found"
	case errors.As(err, &exitErr):
		return fmt.Sprintf("process exited during start (exit code %d)", exitErr.ExitCode())
	}
	return "could not connect or initialize (see aqlguard's log)"
}

// Servers returns every configured server, in config order.
func (p *Pool) Servers() []*Server { return p.servers }

// ErrUnavailable is returned for calls to a server that is not ready.
var ErrUnavailable = errors.New("downstream server unavailable")

// Call forwards one tools/call.
func (p *Pool) Call(ctx context.Context, server, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	s, ok := p.byName[server]
	if !ok || s.Status != Ready || s.session == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, server)
	}
	if args == nil {
		args = map[string]any{}
	}
	res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("server %s: tools/call %s: %w", server, tool, err)
	}
	return res, nil
}

// Close ends every session (and so every stdio child process).
func (p *Pool) Close() error {
	p.closing.Store(true)
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range p.servers {
		if s.session == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.session.Close(); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("server %s: %w", s.Name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
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
