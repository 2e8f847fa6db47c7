// Command corpus runs aqlguard's attack corpus and precision corpus
// (bench/corpus) against an aqlguard binary under its default policy and
// reports what it stopped, flagged and let pass, and what honest work it
// asked about, refused or blocked (bench/RESULTS.md; issue 29's targets).
//
// Usage (from the repository root, after building the binaries as
// bench/README.md says):
//
//	bench/out/bin/corpus -aqlguard bench/out/bin/aqlguard -rogueserver bench/out/bin/rogueserver \
//	    -testserver bench/out/bin/testserver -md bench/out/corpus.md -json bench/out/corpus.json
//
// The npm servers come from -node, -fs-server, -everything-server and
// -memory-server, by default AQLGUARD_E2E_NODE, AQLGUARD_E2E_FS_SERVER,
// AQLGUARD_E2E_EVERYTHING_SERVER and AQLGUARD_E2E_MEMORY_SERVER (.ci/env.sh).
// It exits 3 when -check is given and a target is missed: an attack
// variant neither stopped nor flagged or whose exit did not do what its
// flow says, more than 2 asks per 100 honest calls (each session a client
// of its own), or any honest call refused or blocked.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/corpus"
)

func main() {
	var (
		env       corpus.Env
		dir       = flag.String("corpus", "", "the corpus `DIR` (default: bench/corpus, or corpus from inside bench/)")
		scratch   = flag.String("out", "", "keep every run's files under `DIR` (default: a temporary directory, removed)")
		jsonOut   = flag.String("json", "", "write the full report as JSON to `FILE`")
		mdOut     = flag.String("md", "", "write the tables as Markdown to `FILE` (default: stdout)")
		passes    = flag.String("passes", corpus.FirstSight+","+corpus.Trusted, "the passes to run: first-sight, trusted")
		jobs      = flag.Int("j", 2, "attack variants run at once")
		only      = flag.String("only", "", "run only these attacks, variants or classes (comma-separated)")
		noAttacks = flag.Bool("no-attacks", false, "skip the attack corpus")
		noHonest  = flag.Bool("no-honest", false, "skip the precision corpus")
		oneClient = flag.Bool("one-client", true, "also run the honest sessions as one client all day, one state directory (reported, not a target)")
		verbose   = flag.Bool("v", false, "a line per variant and per honest session on stderr")
		check     = flag.Bool("check", false, "exit 3 when a target is missed")
		extra     = flag.String("extra-config", "", "add the TOML in `FILE` to every config (a comparison: no longer the default policy)")
	)
	flag.IntVar(&env.GTFOBinsEvery, "gtfobins-every", 1, "run every `N`th GTFOBins program only (a quicker run)")
	flag.StringVar(&env.Aqlguard, "aqlguard", "bench/out/bin/aqlguard", "the aqlguard `BINARY` under test")
	flag.StringVar(&env.Rogue, "rogueserver", "bench/out/bin/rogueserver", "internal/fixture/rogueserver's `BINARY`")
	flag.StringVar(&env.Testserver, "testserver", "bench/out/bin/testserver", "internal/fixture/testserver's `BINARY`")
	flag.StringVar(&env.Node, "node", os.Getenv("AQLGUARD_E2E_NODE"), "Node.js >= 22 (`BINARY`)")
	flag.StringVar(&env.FSServer, "fs-server", os.Getenv("AQLGUARD_E2E_FS_SERVER"), "server-filesystem's dist/index.js (`FILE`)")
	flag.StringVar(&env.Everything, "everything-server", os.Getenv("AQLGUARD_E2E_EVERYTHING_SERVER"), "server-everything's dist/index.js (`FILE`)")
	flag.StringVar(&env.Memory, "memory-server", os.Getenv("AQLGUARD_E2E_MEMORY_SERVER"), "server-memory's dist/index.js (`FILE`)")
	flag.Parse()
	if *extra != "" {
		b, err := os.ReadFile(*extra)
		if err != nil {
			fmt.Fprintln(os.Stderr, "corpus:", err)
			os.Exit(1)
		}
		env.ExtraConfig = string(b)
	}
	if err := run(env, *dir, *scratch, *jsonOut, *mdOut, *passes, *jobs, *only, !*noAttacks, !*noHonest, *oneClient, *verbose, *check); err != nil {
		fmt.Fprintln(os.Stderr, "corpus:", err)
		if err == errMissed {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

var errMissed = fmt.Errorf("a target is missed")

func run(env corpus.Env, dir, scratch, jsonOut, mdOut, passes string, jobs int, only string, attacks, honest, oneClient, verbose, check bool) error {
	for _, p := range []*string{&env.Aqlguard, &env.Rogue, &env.Testserver} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (bench/README.md says how to build it)", err)
		}
		*p = abs
	}
	if dir == "" {
		dir = "bench/corpus"
		if _, err := os.Stat(dir); err != nil {
			dir = "corpus"
		}
	}
	c, err := corpus.Load(dir)
	if err != nil {
		return err
	}
	if verbose {
		env.Logf = func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	}
	if scratch == "" {
		d, err := os.MkdirTemp("", "aqlguard-corpus-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		scratch = d
	} else if scratch, err = filepath.Abs(scratch); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &corpus.Report{Aqlguard: env.Aqlguard, Passes: strings.Split(passes, ","), Config: corpus.ConfigNote}
	start := time.Now()
	if attacks {
		var filter []string
		if only != "" {
			filter = strings.Split(only, ",")
		}
		rep.Attacks = corpus.RunAttacks(ctx, env, c, filepath.Join(scratch, "attacks"), rep.Passes, jobs, filter)
	}
	if honest {
		h, err := corpus.RunHonest(ctx, env, c, filepath.Join(scratch, "honest"), false)
		if err != nil {
			return err
		}
		rep.Honest = &h
		if oneClient {
			h, err := corpus.RunHonest(ctx, env, c, filepath.Join(scratch, "honest-one-client"), true)
			if err != nil {
				return err
			}
			rep.HonestOneClient = &h
		}
	}
	if verbose {
		fmt.Fprintf(os.Stderr, "corpus: done in %s\n", time.Since(start).Round(time.Millisecond))
	}
	if jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	out := os.Stdout
	if mdOut != "" {
		f, err := os.Create(mdOut)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	rep.WriteMarkdown(out)
	if check && !corpus.Met(rep) {
		return errMissed
	}
	return nil
}
