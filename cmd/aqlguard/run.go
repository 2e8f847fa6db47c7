package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/proxy"
	"github.com/aqlguard/aqlguard/proxy/aql"
	"github.com/aqlguard/aqlguard/proxy/catalog"
	"github.com/aqlguard/aqlguard/proxy/downstream"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cmdRun serves MCP over stdio. stdout carries only the MCP stream; every
// log line, ours and the downstream servers', goes to stderr.
func cmdRun(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, g := newFlags("run", stderr)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	log, err := newLogger(stderr, g.logLevel)
	if err != nil {
		fmt.Fprintln(stderr, "aqlguard:", err)
		return 2
	}
	cfg, err := loadConfig(g)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	pol, err := policy.Compile(cfg, cfg.Agent)
	if err != nil {
		fmt.Fprintf(stderr, "aqlguard: %v\n", err)
		return 1
	}
	ctx, cancel := signalContext()
	defer cancel()

	source := cfg.Path
	if source == "" {
		source = "embedded defaults"
	}
	log.Info("aqlguard starting", "version", version(), "config", source, "mode", cfg.Mode,
		"principal", pol.Principal, "loop", pol.Loop, "servers", len(cfg.Servers))

	pool := downstream.Start(ctx, cfg.Servers, version(), log)
	defer func() {
		if err := pool.Close(); err != nil {
			log.Warn("closing downstream servers", "err", err)
		}
	}()

	front, err := buildFront(cfg, pol, pool, log)
	if err != nil {
		log.Error("building the operation catalog", "err", err)
		return 1
	}
	transport := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
	if err := front.Server().Run(ctx, transport); err != nil && ctx.Err() == nil {
		log.Error("MCP session ended with an error", "err", err)
		return 1
	}
	log.Info("aqlguard stopped")
	return 0
}

// buildFront derives the catalog from what the servers offered and wires
// the front to the guard.
func buildFront(cfg *policy.Config, pol *policy.Policy, pool *downstream.Pool, log *slog.Logger) (*proxy.Front, error) {
	cat := catalog.New()
	if err := cat.Add(catalog.IntrospectOperation()); err != nil {
		return nil, err
	}
	for i, s := range pool.Servers() {
		if s.Status != downstream.Ready {
			continue
		}
		cat.AddServer(catalog.ServerTools{Server: s.Name, Tools: s.Tools, Categories: cfg.Servers[i].Categories})
	}
	for _, n := range cat.Notes {
		log.Warn("catalog", "note", n)
	}
	log.Info("operation catalog ready", "operations", len(cat.Operations()))
	lim := aql.Limits{
		MaxRequestSize:   cfg.Limits.MaxRequestSize,
		MaxResponseSize:  cfg.Limits.MaxResponseSize,
		MaxStringLength:  cfg.Limits.MaxStringLength,
		MaxArrayElements: cfg.Limits.MaxArrayElements,
		MaxNestingDepth:  cfg.Limits.MaxNestingDepth,
	}
	return &proxy.Front{
		Mode:    cfg.Mode,
		Catalog: cat,
		Guard:   &proxy.Guard{Policy: pol, Downstream: pool, Log: log},
		Limits:  lim,
		Log:     log,
		Servers: pool.Servers(),
		Version: version(),
	}, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
