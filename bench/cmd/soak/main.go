// Command soak makes many tools/calls through one aqlguard (transparent
// mode, audit on, default sync), one after another or -c at a time as a
// client that calls tools in parallel does, and reports how many took
// longer than a bound — a stall such as a lost wakeup shows up here and
// nowhere in a percentile — and the slowest.
//
//	soak -aqlguard BIN -server BIN [-server-args "..."] -tool echo -args '{"message":"hello"}' -n 500000 [-c 8]
//
// With -principals N it soaks `aqlguard serve` instead: N distinct JWT
// principals (an identity provider of its own) each open a session, make
// one call and close it, -c at a time, and the serve process's RSS (from
// /proc) and its count of guards (from its metrics) are printed every
// -every principals (principals.go).
//
//	soak -principals 10000 -aqlguard BIN -server BIN [-principal-idle 2s] [-every 500] [-settle 10s]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	var (
		aqlguard   = fs.String("aqlguard", "", "aqlguard binary")
		server     = fs.String("server", "", "MCP server binary (stdio)")
		serverArgs = fs.String("server-args", "", "the server's arguments, space separated")
		name       = fs.String("name", "ev", "the server's name in the config")
		tool       = fs.String("tool", "echo", "tool to call")
		argsJSON   = fs.String("args", `{"message":"hello"}`, "the tool's arguments (JSON object)")
		n          = fs.Int("n", 500000, "calls")
		slow       = fs.Duration("slow", time.Second, "a call that takes longer is counted as slow")
		callTO     = fs.Duration("call-timeout", time.Minute, "timeout of one call")
		parallel   = fs.Int("c", 1, "calls in flight at once (one session)")
		principals = fs.Int("principals", 0, "soak `aqlguard serve` with this many distinct JWT principals instead (principals.go)")
		every      = fs.Int("every", 500, "with -principals: sample the memory every this many principals")
		idle       = fs.Duration("principal-idle", 2*time.Second, "with -principals: [serve] principal_idle_timeout (0: left out, for a binary that predates it)")
		settle     = fs.Duration("settle", 10*time.Second, "with -principals: sample once more this long after the last principal")
	)
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *aqlguard == "" || *server == "" {
		return fmt.Errorf("-aqlguard and -server are required")
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &args); err != nil {
		return fmt.Errorf("-args: %w", err)
	}
	if *principals > 0 {
		p := &principalsSoak{aqlguard: *aqlguard, server: *server, serverArgs: strings.Fields(*serverArgs), tool: *tool, args: args,
			principals: *principals, parallel: *parallel, every: max(1, *every), idle: *idle, callTimeout: *callTO, settle: *settle}
		return p.run(context.Background())
	}
	dir, err := os.MkdirTemp("", "aqlguard-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv := harness.Server{Name: *name, Argv: append([]string{*server}, strings.Fields(*serverArgs)...)}
	cfg, err := harness.WriteConfig(dir, "transparent", []harness.Server{srv})
	if err != nil {
		return err
	}
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	s, err := harness.Start(startCtx, harness.AqlguardArgv(*aqlguard, cfg))
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	durs := make([]time.Duration, 0, *n)
	var slowCalls []string
	var (
		mu      sync.Mutex
		next    atomic.Int64
		firstEr error
		wg      sync.WaitGroup
	)
	began := time.Now()
	for range max(1, *parallel) {
		wg.Go(func() {
			for {
				i := int(next.Add(1))
				if i > *n {
					return
				}
				callCtx, cancel := context.WithTimeout(ctx, *callTO)
				t0 := time.Now()
				_, err := s.CallText(callCtx, *tool, args)
				d := time.Since(t0)
				cancel()
				mu.Lock()
				if err != nil && firstEr == nil {
					firstEr = fmt.Errorf("call %d: %w", i, s.Errorf("%v", err))
					next.Store(int64(*n)) // the others stop
				}
				durs = append(durs, d)
				if d > *slow {
					slowCalls = append(slowCalls, fmt.Sprintf("call %d: %s", i, d.Round(time.Millisecond)))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstEr != nil {
		return firstEr
	}
	total := time.Since(began)
	slices.Sort(durs)
	pct := func(p float64) time.Duration { return durs[min(len(durs)-1, int(p*float64(len(durs))))] }
	fmt.Printf("%d tools/call %s, %d at a time, through aqlguard transparent in %s (%.0f calls/s)\n", *n, *tool, max(1, *parallel), total.Round(time.Second), float64(*n)/total.Seconds())
	fmt.Printf("p50 %s  p99 %s  p99.9 %s  p99.99 %s  max %s\n", pct(0.5).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		pct(0.999).Round(time.Microsecond), pct(0.9999).Round(time.Microsecond), durs[len(durs)-1].Round(time.Microsecond))
	fmt.Printf("calls slower than %s: %d\n", *slow, len(slowCalls))
	for _, c := range slowCalls {
		fmt.Println("  " + c)
	}
	if len(slowCalls) > 0 {
		os.Exit(3)
	}
	return nil
}
