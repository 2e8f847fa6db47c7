package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/aqlguard/aqlguard/proxy/httpfront"
)

// cmdServe serves MCP over Streamable HTTP at /mcp. Every client gets its
// own MCP session, with its own downstream servers; all of them share one
// principal and one safety loop, so a block raised in one session holds
// in all of them.
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
	front := httpfront.New(ctx, in.relay, httpfront.Options{MaxBodyBytes: cfg.Limits.MaxRequestSize, Log: in.log})
	mux := http.NewServeMux()
	mux.Handle("/mcp", front)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute, IdleTimeout: 2 * time.Minute}
	in.log.Info("listening", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		front.Close()
		in.log.Error("HTTP server stopped", "err", err)
		return 1
	case <-ctx.Done():
	}
	front.Close() // ends the sessions, and so their event streams
	shutdown, done := context.WithTimeout(context.Background(), 5*time.Second)
	defer done()
	if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		in.log.Warn("HTTP shutdown", "err", err)
	}
	in.log.Info("aqlguard stopped")
	return 0
}
