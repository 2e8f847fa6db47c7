package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdServe serves MCP over Streamable HTTP at /mcp. Every client gets its
// own MCP session; all of them share one principal, one set of downstream
// servers and one safety loop, so a block raised in one session holds in
// all of them.
func cmdServe(args []string, stderr io.Writer) int {
	fs, g := newFlags("serve", stderr)
	listen := fs.String("listen", "127.0.0.1:8765", "address to listen on (loopback unless you mean otherwise)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: --listen %s: %v\n", *listen, err)
		return 1
	}
	cfg, err := loadConfig(g)
	if err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	in, code := startInstance(ctx, g, cfg, stderr)
	if in == nil {
		ln.Close()
		return code
	}
	defer in.close()
	server := in.front.Server()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Logger: in.log}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	in.log.Info("listening", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		in.log.Error("HTTP server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		in.log.Warn("HTTP shutdown", "err", err)
	}
	in.log.Info("aqlguard stopped")
	return 0
}
