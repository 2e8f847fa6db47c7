package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/aqlguard/aqlguard/app"
	"github.com/aqlguard/aqlguard/clientconfig"
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy/link"
	"github.com/aqlguard/aqlguard/proxy/relay"
)

// cmdRun serves MCP over stdio. stdout carries only the MCP stream; every
// log line, ours and the downstream servers', goes to stderr.
func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("run", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if !noWords("run", fs.Args(), stderr) {
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	return serveStdio(g, cfg, func() (*config.Config, error) { return loadConfig(g) }, stdin, stdout, stderr)
}

// cmdWrap is `aqlguard wrap [--name N] -- CMD ARGS...`: one stdio server
// behind the guard, in transparent mode, on the config's policy (or the
// embedded defaults), over stdio. This is what `aqlguard init` puts in
// a client's config in place of the server's own command.
func cmdWrap(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("wrap", stderr)
	name := fs.String("name", "", "the server's name (as the client config calls it)")
	url := fs.String("url", "", "a remote server's URL (Streamable HTTP), instead of a command")
	auth := fs.String("auth", "oauth", `with --url: "oauth" (authorize in the browser when the server asks) or "none"`)
	trust := fs.Bool("trust-first-sight", false, "pin the server's tools as it first lists them, without a human's review (trust_first_sight)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: aqlguard wrap [--name NAME] [--agent AGENT] [--config FILE] [--state-dir DIR] [--trust-first-sight] -- COMMAND [ARGS...]\n"+
			"       aqlguard wrap --name NAME --url URL [--auth oauth|none] [--trust-first-sight]   (headers: "+clientconfig.WrapHeadersEnv+", a JSON object)\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	argv := fs.Args()
	var headers map[string]string
	if h := os.Getenv(clientconfig.WrapHeadersEnv); h != "" {
		if err := json.Unmarshal([]byte(h), &headers); err != nil {
			fmt.Fprintf(stderr, "aqlguard wrap: %s is not a JSON object of strings\n", clientconfig.WrapHeadersEnv)
			return 2
		}
	}
	wrap := func(base *config.Config) (*config.Config, error) {
		var cfg *config.Config
		var err error
		switch {
		case *url != "" && len(argv) > 0:
			return nil, errors.New("give --url or a command after --, not both")
		case *url != "":
			cfg, err = policy.WrapRemote(base, *name, *url, *auth, headers)
		default:
			cfg, err = policy.Wrap(base, *name, argv)
		}
		if err == nil {
			cfg.Servers[0].TrustFirstSight = *trust
		}
		return cfg, err
	}
	base, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	cfg, err := wrap(base)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard wrap: %v\n", err)
		return 2
	}
	build := func() (*config.Config, error) {
		base, err := loadConfig(g)
		if err != nil {
			return nil, err
		}
		return wrap(base)
	}
	return serveStdio(g, cfg, build, stdin, stdout, stderr)
}

// serveStdio runs one aqlguard on cfg over stdio until stdin closes or a
// signal arrives; build reads the configuration again on a reload.
func serveStdio(g *globals, cfg *config.Config, build func() (*config.Config, error), stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, cancel := signalContext()
	defer cancel()
	if isTerminal(stdin) {
		fmt.Fprintln(stderr, "aqlguard: waiting for an MCP client on stdin (this command is meant to be started by your MCP client; Ctrl-C to stop)")
	}
	in, code := start(ctx, g, cfg, stderr, false)
	if in == nil {
		return code
	}
	defer in.Close()
	go in.WatchConfig(ctx, build)
	// A client that closes stdin right after its last request (a script
	// piping requests in) gets the answers, as from the server itself.
	in.Relay.FinishOnEOF = true
	conn := link.NewLineConn(stdin, stdout, nil)
	// A client's bad line gets the JSON-RPC error for it; the session
	// goes on.
	conn.AnswerBadLines = true
	conn.OnBadLine = func(start []byte, why string) {
		in.Log.Warn("a line from the client is not a JSON-RPC message; answered with an error", "why", why, "start", string(start))
	}
	if err := relay.Serve(ctx, conn, in.Relay); err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		in.Log.Error("MCP session ended with an error", "err", err)
		return 1
	}
	in.Log.Info("aqlguard stopped")
	return 0
}

// isTerminal reports whether r is a terminal (a character device): a
// person, not an MCP client, is at the other end.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// start makes the process's logger, hardens the process and starts one
// aqlguard on cfg (app.Start). On failure it returns nil and the exit
// code.
func start(ctx context.Context, g *globals, cfg *config.Config, stderr io.Writer, waitForState bool) (*app.Instance, int) {
	log, err := newLogger(stderr, g.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return nil, 2
	}
	if err := harden(); err != nil {
		log.Warn("could not make the process non-dumpable; verification codes in its memory are less protected", "err", err)
	}
	in, err := app.Start(ctx, cfg, app.Options{Log: log, Version: version(), WaitForState: waitForState})
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return nil, 1
	}
	return in, 0
}
