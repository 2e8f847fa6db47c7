// Command testserver is a small, deterministic MCP server used by aqlguard's
// end-to-end tests as a downstream server. Its tools never do anything real:
// they echo, pretend and fail on purpose, with schemas chosen to exercise
// schema derivation, naming and classification in the proxy.
//
// Tools are registered with the raw Server.AddTool, so the SDK never validates
// arguments: whatever the proxy forwards reaches the handler (and the call
// log) exactly as sent.
//
// Usage:
//
//	testserver [-http ADDR [-require-header NAME=VALUE]] [-log FILE] [-list-log FILE] [-name NAME] [-named-tools NAMES] [-prompts NAMES] [-rug-pull] [-storm] [-fail-start] [-hang-start] [-stderr-noise] [-exit-after D]
//
// Without -http it serves MCP over stdio. With -http it serves Streamable HTTP
// at /mcp and prints "listening on http://HOST:PORT/mcp" to stderr, so
// "-http 127.0.0.1:0" picks a free port.
//
// -log FILE (or $AQLGUARD_TESTSERVER_LOG) appends one JSON line per tools/call
// received, {"tool":NAME,"arguments":RAW}, fsync'd before the call is
// answered: a call absent from the log never reached this server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hangLimit bounds -hang-start so that a proxy that fails to kill its child
// cannot leave this process behind forever.
const hangLimit = 2 * time.Minute

func main() {
	var (
		httpAddr    = flag.String("http", "", "serve Streamable HTTP at `ADDR` (path /mcp) instead of stdio")
		logPath     = flag.String("log", os.Getenv("AQLGUARD_TESTSERVER_LOG"), "append one JSON line per tools/call to `FILE` (default $AQLGUARD_TESTSERVER_LOG)")
		name        = flag.String("name", "aqlguard-testserver", "server info name")
		failStart   = flag.Bool("fail-start", false, "print an error to stderr and exit 3 at once")
		hangStart   = flag.Bool("hang-start", false, "never answer anything (read stdin and block)")
		stderrNoise = flag.Bool("stderr-noise", false, "print a few lines to stderr at start")
		stateless   = flag.Bool("stateless", false, "with -http: stateless Streamable HTTP")
		sse         = flag.Bool("sse", false, "with -http: the legacy HTTP+SSE transport instead of Streamable HTTP")
		rugPull     = flag.Bool("rug-pull", false, "offer change_echo, which changes echo's definition (tool pinning tests)")
		echoDesc    = flag.String("echo-desc", "", "start with this description of echo instead of its own")
		detached    = flag.Bool("spawn-detached", false, "start a `sleep 600` in a session of its own, as a server that leaves a daemon behind would")
		orphan      = flag.Bool("spawn-orphan", false, "leave an orphan behind at start (`sh -c 'sleep 1 &'` in a session of its own) that ends soon after")
		resources   = flag.Bool("resources", false, "offer the resource template file:///{+path} (its text names the URI read) and the prompt greet(name)")
		wireLog     = flag.String("wire-log", "", "with stdio: append every message received, as the SDK reads it (params as sent), to `FILE`")
		toolPrefix  = flag.String("tool-prefix", "", "put `PREFIX` before every tool's name (\"fs.\": fs.echo, ...)")
		namedTools  = flag.String("named-tools", "", "also offer the tools `NAMES` (comma-separated, no prefix), each an echo of its message")
		prompts     = flag.String("prompts", "", "offer the prompts `NAMES` (comma-separated), each answering \"<-name>:<prompt>\"")
		listLog     = flag.String("list-log", "", "append one line per tools/list received to `FILE` (fsync'd before the answer)")
		stormMode   = flag.Bool("storm", false, "serve storm, storm_stop, stats and echo over stdio, sending tools/list_changed in a loop on request")
		sessionTls  = flag.Bool("session-tools", false, "offer ask, log, touch, roots and pid, and resource subscriptions (what MCP scopes to a session)")
		exitAfter   = flag.Duration("exit-after", 0, "serve, then exit with code 1 this long after starting (a crash loop)")
		required    headerFlag
	)
	flag.Var(&required, "require-header", "with -http: answer 401 to a request without the header `NAME=VALUE` (repeatable)")
	flag.Parse()

	if *failStart {
		fmt.Fprintln(os.Stderr, "testserver: deliberate start failure (-fail-start)")
		os.Exit(3)
	}
	if *stderrNoise {
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(os.Stderr, "testserver: stderr noise line %d (not MCP)\n", i)
		}
	}
	if *hangStart {
		hang()
	}
	if *exitAfter > 0 {
		time.AfterFunc(*exitAfter, func() {
			fmt.Fprintln(os.Stderr, "testserver: exiting on purpose (-exit-after)")
			os.Exit(1)
		})
	}
	if *detached {
		spawnDetached()
	}
	if *orphan {
		spawnOrphan()
	}

	if *stormMode {
		if err := serveStorm(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "testserver:", err)
			os.Exit(1)
		}
		return
	}
	calls, err := openCallLog(*logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}
	lists, err := openCallLog(*listLog)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(2)
	}

	newServer := func() *mcp.Server {
		var opts *mcp.ServerOptions
		if *sessionTls {
			opts = sessionOptions()
		}
		s := mcp.NewServer(&mcp.Implementation{Name: *name, Version: "1.0.0"}, opts)
		addTools(s, calls, *echoDesc, *toolPrefix)
		if *sessionTls {
			addSessionTools(s, calls)
		}
		if *rugPull {
			addRugPull(s, calls)
		}
		if *resources {
			addResources(s)
		}
		addNamed(s, calls, *name, *namedTools, *prompts)
		if lists != nil {
			s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "tools/list" {
						if err := lists.record("tools/list", nil); err != nil {
							return nil, err
						}
					}
					return next(ctx, method, req)
				}
			})
		}
		return s
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *httpAddr == "" {
		// Run returns nil when stdin reaches EOF. stdin and stdout are
		// read and written through the runtime's poller, as aqlguard does
		// its own (docs/design.md, "No thread blocked on a pipe"): a
		// go-sdk server reading a blocking stdin can freeze for as long
		// as no byte arrives when a GC stops the world.
		in, restoreIn, err := link.Pollable(os.Stdin)
		if err != nil {
			in, restoreIn = os.Stdin, func() {}
		}
		defer restoreIn()
		out, restoreOut, err := link.Pollable(os.Stdout)
		if err != nil {
			out, restoreOut = os.Stdout, func() {}
		}
		defer restoreOut()
		var transport mcp.Transport = &mcp.IOTransport{Reader: in, Writer: out}
		if *wireLog != "" {
			f, err := os.OpenFile(*wireLog, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				fmt.Fprintln(os.Stderr, "testserver:", err)
				os.Exit(2)
			}
			defer f.Close()
			transport = &mcp.LoggingTransport{Transport: transport, Writer: f}
		}
		if err := newServer().Run(ctx, transport); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "testserver:", err)
			os.Exit(1)
		}
		return
	}
	if err := serveHTTP(ctx, *httpAddr, newServer(), *stateless, *sse, required); err != nil {
		fmt.Fprintln(os.Stderr, "testserver:", err)
		os.Exit(1)
	}
}

// serveHTTP serves s over Streamable HTTP (or HTTP+SSE) at
// http://addr/mcp until ctx ends.
func serveHTTP(ctx context.Context, addr string, s *mcp.Server, stateless, sse bool, required headerFlag) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()

	if sse {
		mux.Handle("/mcp", mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
	} else {
		mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
			&mcp.StreamableHTTPOptions{Stateless: stateless}))
	}
	var handler http.Handler = mux
	if len(required) > 0 {
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for _, h := range required {
				if r.Header.Get(h.name) != h.value {
					http.Error(w, "missing or wrong "+h.name, http.StatusUnauthorized)
					return
				}
			}
			mux.ServeHTTP(w, r)
		})
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "listening on http://%s/mcp\n", ln.Addr())
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// headerFlag is -require-header NAME=VALUE, repeated.
type headerFlag []struct{ name, value string }

func (h *headerFlag) String() string { return fmt.Sprint(len(*h), " headers") }

func (h *headerFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return errors.New("want NAME=VALUE")
	}
	*h = append(*h, struct{ name, value string }{name, value})
	return nil
}

// hang reads and discards stdin without ever answering, so the peer's start
// (initialize) timeout fires. It keeps blocking after stdin's EOF, like a
// wedged server, until it is signalled, or until hangLimit passes.
func hang() {
	go func() { _, _ = io.Copy(io.Discard, os.Stdin) }()
	time.Sleep(hangLimit)
	fmt.Fprintln(os.Stderr, "testserver: -hang-start limit reached; nobody killed me")
	os.Exit(4)
}

// callLog appends one JSON line per tools/call and fsyncs it. A nil *callLog
// records nothing.
type callLog struct {
	mu sync.Mutex
	f  *os.File
}

func openCallLog(path string) (*callLog, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening call log: %w", err)
	}
	return &callLog{f: f}, nil
}

// record writes {"tool":NAME,"arguments":RAW} and syncs it to disk.
// Arguments that are absent are logged as null; bytes that are not valid JSON
// are logged as a JSON string so the line stays parseable.
func (l *callLog) record(tool string, args json.RawMessage) error {
	if l == nil {
		return nil
	}
	var raw json.RawMessage
	switch {
	case len(args) == 0:
		raw = json.RawMessage("null")
	case json.Valid(args):
		raw = args
	default:
		raw, _ = json.Marshal(string(args))
	}
	line, err := json.Marshal(struct {
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
	}{tool, raw})
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return err
	}
	return l.f.Sync()
}

// spawnDetached starts a process that escapes this server's process group
// and session and ignores its closed stdin, so only its supervisor's
// subreaper duty can find it.
func spawnDetached() {
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver: spawning the detached sleeper:", err)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "testserver: detached sleeper pid %d\n", cmd.Process.Pid)
}

// spawnOrphan leaves behind a short-lived process whose parent is gone
// at once (the shell that started it in the background exits), as a
// server that daemonises a helper would: a subreaper adopts it, and must
// collect its exit status when it ends.
func spawnOrphan() {
	cmd := exec.Command("sh", "-c", "sleep 1 &")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver: spawning the orphan:", err)
		os.Exit(2)
	}
}
