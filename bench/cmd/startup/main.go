// Command startup measures how soon aqlguard is ready and how much memory
// it holds idle, against the servers it fronts, in one run: the time from
// spawning to the answer to initialize, directly for each server (the
// slowest is the baseline: aqlguard starts them side by side) and through
// aqlguard with all of them, in interleaved rounds; then the resident
// memory of the idle aqlguard process, and of the other aqlguard
// processes below it (the supervised aqlguard; in older versions, one
// supervisor per stdio server).
//
//	startup -aqlguard BIN -server BIN [-servers 3] [-rounds 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
	"github.com/aqlguard/aqlguard/bench/internal/procstat"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "startup:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("startup", flag.ContinueOnError)
	aqlguard := fs.String("aqlguard", "", "aqlguard binary")
	server := fs.String("server", "", "MCP server binary (stdio)")
	count := fs.Int("servers", 3, "how many copies of the server aqlguard fronts")
	rounds := fs.Int("rounds", 10, "rounds")
	idle := fs.Duration("idle", 2*time.Second, "how long aqlguard idles before its memory is read")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *aqlguard == "" || *server == "" {
		return fmt.Errorf("-aqlguard and -server are required")
	}
	dir, err := os.MkdirTemp("", "aqlguard-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var servers []harness.Server
	for i := range *count {
		servers = append(servers, harness.Server{Name: "s" + strconv.Itoa(i+1), Argv: []string{*server}})
	}
	cfg, err := harness.WriteConfig(dir, "transparent", servers)
	if err != nil {
		return err
	}
	ready := func(argv []string) (time.Duration, *harness.Session, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		t0 := time.Now()
		s, err := harness.Start(ctx, argv)
		if err != nil {
			return 0, nil, err
		}
		if _, err := s.ListTools(ctx, nil); err != nil {
			s.Close()
			return 0, nil, err
		}
		return time.Since(t0), s, nil
	}
	var direct, guarded []time.Duration
	var rss, pss, supervisors, supervisorsPSS []int
	for r := range *rounds {
		slowest := time.Duration(0)
		for range *count {
			d, s, err := ready([]string{*server})
			if err != nil {
				return fmt.Errorf("direct: %w", err)
			}
			s.Close()
			slowest = max(slowest, d)
		}
		direct = append(direct, slowest)
		d, s, err := ready(harness.AqlguardArgv(*aqlguard, cfg))
		if err != nil {
			return fmt.Errorf("aqlguard: %w", err)
		}
		guarded = append(guarded, d)
		if r == *rounds-1 {
			time.Sleep(*idle)
			rss = append(rss, rssKB(s.Pid))
			pss = append(pss, pssKB(s.Pid))
			for _, pid := range aqlguardsBelow(s.Pid, *aqlguard) {
				supervisors = append(supervisors, rssKB(pid))
				supervisorsPSS = append(supervisorsPSS, pssKB(pid))
			}
		}
		s.Close()
	}
	med := func(ds []time.Duration) time.Duration {
		c := slices.Clone(ds)
		slices.Sort(c)
		return c[len(c)/2]
	}
	var added []time.Duration
	for i := range direct {
		added = append(added, guarded[i]-direct[i])
	}
	fmt.Printf("ready (spawn → initialize answered → tools listed), %d rounds, %d servers:\n", *rounds, *count)
	fmt.Printf("  slowest server directly: median %s\n", med(direct).Round(time.Microsecond))
	fmt.Printf("  aqlguard with all of them: median %s\n", med(guarded).Round(time.Microsecond))
	fmt.Printf("  added: median %s (max %s)\n", med(added).Round(time.Microsecond), slices.Max(added).Round(time.Microsecond))
	total := func(kbs []int) float64 {
		sum := 0
		for _, kb := range kbs {
			sum += kb
		}
		return float64(sum) / 1024
	}
	fmt.Printf("idle memory after %s (RSS; PSS, which splits the pages the processes share, such as the binary's):\n", *idle)
	fmt.Printf("  aqlguard (the process its client started): %.1f MB; %.1f MB\n", float64(rss[0])/1024, float64(pss[0])/1024)
	fmt.Printf("  its %d other aqlguard processes together (supervisors, or the supervised aqlguard): %.1f MB; %.1f MB\n", len(supervisors), total(supervisors), total(supervisorsPSS))
	fmt.Printf("  all of them: %.1f MB; %.1f MB\n", float64(rss[0])/1024+total(supervisors), float64(pss[0])/1024+total(supervisorsPSS))
	return nil
}

// pssKB is a process's proportional set size.
func pssKB(pid int) int { return procKB(pid, "smaps_rollup", "Pss:") }

// rssKB is a process's resident set size.
func rssKB(pid int) int { return procKB(pid, "status", "VmRSS:") }

// procKB reads the "KEY: N kB" line of /proc/PID/FILE (0 when absent).
func procKB(pid int, file, key string) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return n
		}
	}
	return 0
}

// children are the direct children of pid.
func children(pid int) []int {
	var out []int
	for _, p := range procstat.All() {
		if p.Ppid == pid {
			out = append(out, p.Pid)
		}
	}
	return out
}

// aqlguardsBelow lists the processes below pid that run the binary bin.
func aqlguardsBelow(pid int, bin string) []int {
	want, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil
	}
	want, _ = filepath.Abs(want)
	var out []int
	for _, c := range children(pid) {
		if exe, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(c), "exe")); err == nil && exe == want {
			out = append(out, c)
		}
		out = append(out, aqlguardsBelow(c, bin)...)
	}
	return out
}
