// Command latency measures the latency aqlguard adds to a tools/call or a
// resources/read.
//
// It starts the same stdio MCP server four times: directly, through
// aqlguard in mode "transparent" (the server's own tool, as it is), in
// mode "single" (the call goes to mcp_aql as an MCP-AQL operation) and in
// mode "passthrough" (the call goes to the re-exported <server>_<tool>
// with the original arguments). The safety loop is enforcing and
// auto-approves everything, so each proxied call takes the full path:
// validation, evaluator, durable audit record, forward, audit of the
// outcome. With -read URI it reads that resource instead, directly and
// through transparent mode (the other modes relay reads the same way).
//
// The same sequential call runs against each variant in rounds, with the
// order rotated every round, so that drifting machine load hits all variants
// alike. The added latency is computed per round (through minus direct) and
// then summarised over rounds.
//
// Usage:
//
//	latency -aqlguard BIN -server BIN [-server-args "ARGS"] [-tool NAME] [-args JSON] [-read URI]
//	        [-n 2000] [-warmup 200] [-rounds 10] [-out FILE.json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
	"github.com/aqlguard/aqlguard/bench/internal/procstat"
)

type variant struct {
	Name string `json:"name"`
	Tool string `json:"tool"`
	Args any    `json:"args"`
	// Read, when set, is the URI to read instead of calling Tool.
	Read string `json:"read,omitempty"`

	sess *harness.Session
	// neighbour, when set, is a second aqlguard process on the same state
	// directory, kept busy while this variant is measured.
	neighbour *harness.Session
	all       []time.Duration
	byRound   [][]time.Duration
	// cpu is what the proxy's own processes (the child and its
	// descendants but the server) spent on CPU over the measured calls.
	cpu time.Duration
}

// Stats summarises a set of latencies, in microseconds.
type Stats struct {
	Calls int     `json:"calls"`
	P50   float64 `json:"p50_us"`
	P90   float64 `json:"p90_us"`
	P99   float64 `json:"p99_us"`
	Mean  float64 `json:"mean_us"`
	Min   float64 `json:"min_us"`
	Max   float64 `json:"max_us"`
}

// Added is the latency a proxied variant adds over direct.
type Added struct {
	// Median over rounds of (round p50 through - round p50 direct), and the
	// same for p99; min and max over rounds show the spread.
	P50, P50Min, P50Max float64
	P99, P99Min, P99Max float64
	// Ratios of the whole-run statistics, through / direct.
	RatioP50, RatioMean float64
}

// MarshalJSON keeps the JSON field names explicit and unit-suffixed.
func (a Added) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]float64{
		"added_p50_us": a.P50, "added_p50_min_us": a.P50Min, "added_p50_max_us": a.P50Max,
		"added_p99_us": a.P99, "added_p99_min_us": a.P99Min, "added_p99_max_us": a.P99Max,
		"ratio_p50": a.RatioP50, "ratio_mean": a.RatioMean,
	})
}

// Report is the JSON output.
type Report struct {
	Time        string               `json:"time"`
	GoVersion   string               `json:"go_version"`
	NumCPU      int                  `json:"num_cpu"`
	Server      []string             `json:"server"`
	Tool        string               `json:"tool"`
	Read        string               `json:"read,omitempty"`
	Operation   string               `json:"operation"`
	Args        json.RawMessage      `json:"args"`
	N           int                  `json:"n"`
	Warmup      int                  `json:"warmup"`
	Rounds      int                  `json:"rounds"`
	Variants    []string             `json:"variants"`
	Stats       map[string]Stats     `json:"stats"`
	Added       map[string]Added     `json:"added"`
	RoundOrders [][]string           `json:"round_orders"`
	RoundP50    map[string][]float64 `json:"round_p50_us"`
	RoundP99    map[string][]float64 `json:"round_p99_us"`
	// ProxyCPU is each proxied variant's own CPU time per call (user and
	// system, every thread of its processes but the server's), µs.
	ProxyCPU map[string]float64 `json:"proxy_cpu_us_per_call"`
}

// do makes the variant's measured request once.
func (v *variant) do(ctx context.Context) (string, error) {
	if v.Read != "" {
		return v.sess.ReadText(ctx, v.Read)
	}
	return v.sess.CallText(ctx, v.Tool, v.Args)
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "latency:", err)
		os.Exit(1)
	}
}

func run(argv []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	var (
		aqlguard   = fs.String("aqlguard", "", "aqlguard binary (required)")
		server     = fs.String("server", "", "stdio MCP server binary (required)")
		serverArgs = fs.String("server-args", "", "arguments for the server, split on white space")
		name       = fs.String("name", "ev", "server name in the aqlguard config")
		tool       = fs.String("tool", "test_simple_text", "tool to call")
		argsJSON   = fs.String("args", "{}", "tool arguments (JSON object)")
		op         = fs.String("op", "", "operation name (default NAME_snake(TOOL))")
		n          = fs.Int("n", 2000, "measured calls per variant")
		warmup     = fs.Int("warmup", 200, "unmeasured calls per variant before the first round")
		rounds     = fs.Int("rounds", 10, "rounds; each variant makes n/rounds calls per round")
		out        = fs.String("out", "", "write the JSON report to FILE (the markdown table goes to stdout)")
		callTO     = fs.Duration("call-timeout", 30*time.Second, "timeout of one call")
		totalTO    = fs.Duration("timeout", 20*time.Minute, "timeout of the whole run")
		logLevel   = fs.String("aqlguard-log-level", "", "pass --log-level to aqlguard (default: aqlguard's own default)")
		contend    = fs.Bool("contend", false, "add a variant measured while a second aqlguard process on the same state directory serves calls non-stop")
		read       = fs.String("read", "", "measure resources/read of this URI instead of tools/call (direct and transparent only)")
		baseline   = fs.String("baseline-aqlguard", "", "another aqlguard binary (an earlier commit) to measure in transparent mode in the same run")
		legacy     = fs.Bool("baseline-legacy", false, "the -baseline-aqlguard binary predates trust_first_sight (before 2026-11-28): its config leaves the key out")
		floor      = fs.String("floor", "", "a line copier (bench/cmd/linecopy) to measure in front of the server: the floor of any stdio proxy")
		fwd        = fs.Bool("forward", false, "add a transparent variant whose audit log is shipped ([audit.forward], OTLP/HTTP) to a collector in this process")
		modeList   = fs.String("modes", "transparent,single,passthrough", "the aqlguard modes to measure (comma separated)")
		also       multiFlag
	)
	fs.Var(&also, "also", "NAME=BIN: another aqlguard binary measured in transparent mode as variant NAME, in the same run (repeatable)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	switch {
	case *aqlguard == "" || *server == "":
		return fmt.Errorf("-aqlguard and -server are required")
	case *n <= 0 || *rounds <= 0 || *n%*rounds != 0 || *warmup < 0:
		return fmt.Errorf("want n > 0, rounds > 0, n divisible by rounds, warmup >= 0")
	case *read != "" && *contend:
		return fmt.Errorf("-contend measures tool calls; it does not go with -read")
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &args); err != nil || args == nil {
		return fmt.Errorf("-args must be a JSON object: %v", err)
	}
	if *op == "" {
		*op = *name + "_" + harness.SnakeCase(*tool)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *totalTO)
	defer cancel()

	dir, err := os.MkdirTemp("", "aqlguard-latency-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	srv := harness.Server{Name: *name, Argv: append([]string{*server}, strings.Fields(*serverArgs)...)}
	var extra []string
	if *logLevel != "" {
		extra = []string{"--log-level", *logLevel}
	}
	variants := []*variant{{Name: "direct", Tool: *tool, Args: args}}
	var modes []string
	for _, mode := range strings.Split(*modeList, ",") {
		if *read != "" && mode != "transparent" {
			continue // a read is measured in transparent mode only
		}
		switch mode {
		case "transparent":
			variants = append(variants, &variant{Name: "aqlguard transparent", Tool: *tool, Args: args})
		case "single":
			variants = append(variants, &variant{Name: "aqlguard single", Tool: "mcp_aql", Args: map[string]any{"operation": *op, "params": args}})
		case "passthrough":
			variants = append(variants, &variant{Name: "aqlguard passthrough", Tool: *op, Args: args})
		default:
			return fmt.Errorf("-modes: %q is not transparent, single or passthrough", mode)
		}
		modes = append(modes, mode)
	}
	if *contend && !slices.Contains(modes, "single") {
		return fmt.Errorf("-contend measures single mode: put it in -modes")
	}
	for _, v := range variants {
		v.Read = *read
	}
	argvs := [][]string{srv.Argv}
	for _, mode := range modes {
		cfg, err := harness.WriteConfig(dir, mode, []harness.Server{srv})
		if err != nil {
			return err
		}
		argvs = append(argvs, harness.AqlguardArgv(*aqlguard, cfg, extra...))
	}
	if *baseline != "" {
		if err := os.MkdirAll(dir+"/baseline", 0o700); err != nil {
			return err
		}
		write := harness.WriteConfig
		if *legacy {
			write = harness.WriteLegacyConfig
		}
		cfg, err := write(dir+"/baseline", "transparent", []harness.Server{srv})
		if err != nil {
			return err
		}
		v := &variant{Name: "baseline aqlguard transparent", Tool: *tool, Args: args, Read: *read}
		variants = append(variants, v)
		argvs = append(argvs, harness.AqlguardArgv(*baseline, cfg, extra...))
	}
	for i, nb := range also {
		name, bin, ok := strings.Cut(nb, "=")
		if !ok || name == "" || bin == "" {
			return fmt.Errorf("-also wants NAME=BIN, not %q", nb)
		}
		sub := fmt.Sprintf("%s/also%d", dir, i)
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return err
		}
		cfg, err := harness.WriteConfig(sub, "transparent", []harness.Server{srv})
		if err != nil {
			return err
		}
		variants = append(variants, &variant{Name: name + " transparent", Tool: *tool, Args: args, Read: *read})
		argvs = append(argvs, harness.AqlguardArgv(bin, cfg, extra...))
	}
	var forwarded *collector
	if *fwd {
		if forwarded, err = startCollector(); err != nil {
			return err
		}
		defer forwarded.close()
		if err := os.MkdirAll(dir+"/forward", 0o700); err != nil {
			return err
		}
		cfg, err := harness.WriteConfig(dir+"/forward", "transparent", []harness.Server{srv})
		if err != nil {
			return err
		}
		if err := appendFile(cfg, "\n[audit.forward]\nto = \"otlp\"\nurl = \"http://"+forwarded.addr+"/v1/logs\"\n"); err != nil {
			return err
		}
		variants = append(variants, &variant{Name: "aqlguard transparent, audit forwarded", Tool: *tool, Args: args, Read: *read})
		argvs = append(argvs, harness.AqlguardArgv(*aqlguard, cfg, extra...))
	}
	if *floor != "" {
		variants = append(variants, &variant{Name: "floor: line copier", Tool: *tool, Args: args, Read: *read})
		argvs = append(argvs, append([]string{*floor, "--"}, srv.Argv...))
	}
	if *contend {
		// Same config and state directory as "aqlguard single"; its
		// neighbour is a third process on that directory.
		variants = append(variants, &variant{Name: "aqlguard single, busy neighbour", Tool: "mcp_aql",
			Args: map[string]any{"operation": *op, "params": args}})
		argvs = append(argvs, argvs[1+slices.Index(modes, "single")])
	}

	// Start every variant and check that it answers with what direct answers.
	var want string
	for i, v := range variants {
		startCtx, c := context.WithTimeout(ctx, time.Minute)
		v.sess, err = harness.Start(startCtx, argvs[i])
		c()
		if err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		defer v.sess.Close()
		callCtx, c := context.WithTimeout(ctx, *callTO)
		got, err := v.do(callCtx)
		c()
		if err != nil {
			return fmt.Errorf("%s: first call: %w", v.Name, err)
		}
		if v.Read != "" {
			if i == 0 {
				want = got
			} else if got != want {
				return fmt.Errorf("%s: the read differs from direct: %.500s vs %.500s", v.Name, got, want)
			}
		} else if i == 0 {
			want = firstText(got)
			if want == "" {
				return fmt.Errorf("direct: first call returned no text content: %s", got)
			}
		} else if !strings.Contains(got, mustJSONInner(want)) {
			return fmt.Errorf("%s: result does not carry the direct result %q: %.1000s", v.Name, want, got)
		}
		v.byRound = make([][]time.Duration, *rounds)
	}
	if *contend {
		v := variants[len(variants)-1]
		startCtx, c := context.WithTimeout(ctx, time.Minute)
		v.neighbour, err = harness.Start(startCtx, argvs[len(argvs)-1])
		c()
		if err != nil {
			return fmt.Errorf("neighbour: %w", err)
		}
		defer v.neighbour.Close()
	}
	// busy keeps v's neighbour calling until the returned stop is called.
	busy := func(v *variant) (stop func() error) {
		if v.neighbour == nil {
			return func() error { return nil }
		}
		done := make(chan struct{})
		errc := make(chan error, 1)
		go func() {
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				callCtx, c := context.WithTimeout(ctx, *callTO)
				_, err := v.neighbour.CallText(callCtx, v.Tool, v.Args)
				c()
				if err != nil {
					errc <- fmt.Errorf("neighbour: %w", err)
					return
				}
			}
		}()
		return func() error { close(done); return <-errc }
	}

	call := func(v *variant) (time.Duration, error) {
		callCtx, c := context.WithTimeout(ctx, *callTO)
		defer c()
		start := time.Now()
		_, err := v.do(callCtx)
		return time.Since(start), err
	}
	for _, v := range variants {
		for range *warmup {
			if _, err := call(v); err != nil {
				return fmt.Errorf("%s: warmup: %w", v.Name, err)
			}
		}
	}

	per := *n / *rounds
	rep := Report{
		Time: time.Now().UTC().Format(time.RFC3339), GoVersion: runtime.Version(), NumCPU: runtime.NumCPU(),
		Server: srv.Argv, Tool: *tool, Read: *read, Operation: *op, Args: json.RawMessage(*argsJSON),
		N: *n, Warmup: *warmup, Rounds: *rounds,
		Stats: map[string]Stats{}, Added: map[string]Added{},
		RoundP50: map[string][]float64{}, RoundP99: map[string][]float64{}, ProxyCPU: map[string]float64{},
	}
	serverComm := filepath.Base(srv.Argv[0])
	serverComm = serverComm[:min(len(serverComm), 15)] // the kernel keeps 15 bytes of a command's name
	for r := range *rounds {
		order := append(slices.Clone(variants[r%len(variants):]), variants[:r%len(variants)]...)
		var names []string
		for _, v := range order {
			names = append(names, v.Name)
			cpuBefore := proxyCPU(v.sess.Pid, serverComm)
			stop := busy(v)
			for range per {
				d, err := call(v)
				if err != nil {
					return fmt.Errorf("%s: round %d: %w", v.Name, r+1, err)
				}
				v.byRound[r] = append(v.byRound[r], d)
				v.all = append(v.all, d)
			}
			if err := stop(); err != nil {
				return err
			}
			v.cpu += proxyCPU(v.sess.Pid, serverComm) - cpuBefore
		}
		rep.RoundOrders = append(rep.RoundOrders, names)
	}
	for _, v := range variants {
		if err := v.sess.Close(); err != nil {
			return fmt.Errorf("%s: %w", v.Name, err)
		}
		if v.neighbour != nil {
			if err := v.neighbour.Close(); err != nil {
				return fmt.Errorf("%s: neighbour: %w", v.Name, err)
			}
		}
	}

	direct := variants[0]
	for _, v := range variants {
		rep.Variants = append(rep.Variants, v.Name)
		rep.Stats[v.Name] = summarise(v.all)
		for _, d := range v.byRound {
			s := summarise(d)
			rep.RoundP50[v.Name] = append(rep.RoundP50[v.Name], s.P50)
			rep.RoundP99[v.Name] = append(rep.RoundP99[v.Name], s.P99)
		}
		if v == direct {
			continue
		}
		rep.ProxyCPU[v.Name] = float64(v.cpu.Microseconds()) / float64(len(v.all))
		var d50, d99 []float64
		for r := range *rounds {
			d50 = append(d50, rep.RoundP50[v.Name][r]-rep.RoundP50[direct.Name][r])
			d99 = append(d99, rep.RoundP99[v.Name][r]-rep.RoundP99[direct.Name][r])
		}
		s, ds := rep.Stats[v.Name], rep.Stats[direct.Name]
		rep.Added[v.Name] = Added{
			P50: median(d50), P50Min: slices.Min(d50), P50Max: slices.Max(d50),
			P99: median(d99), P99Min: slices.Min(d99), P99Max: slices.Max(d99),
			RatioP50: s.P50 / ds.P50, RatioMean: s.Mean / ds.Mean,
		}
	}

	writeMarkdown(stdout, &rep)
	if forwarded != nil {
		fmt.Fprintf(stdout, "audit forwarded: %d OTLP requests, %d bytes received by the collector\n",
			forwarded.requests.Load(), forwarded.bytes.Load())
	}
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func writeMarkdown(w io.Writer, rep *Report) {
	what := fmt.Sprintf("tools/call %s %s", rep.Tool, rep.Args)
	if rep.Read != "" {
		what = "resources/read " + rep.Read
	}
	fmt.Fprintf(w, "%s via %s; %d calls per variant in %d interleaved rounds (+%d warmup); %s, %d CPUs\n\n",
		what, strings.Join(rep.Server, " "), rep.N, rep.Rounds, rep.Warmup, rep.GoVersion, rep.NumCPU)
	fmt.Fprintln(w, "| variant | p50 µs | p90 µs | p99 µs | mean µs | added p50 µs (range over rounds) | added p99 µs (range over rounds) | ratio p50 | ratio mean | proxy CPU µs/call |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, name := range rep.Variants {
		s := rep.Stats[name]
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.0f |", name, s.P50, s.P90, s.P99, s.Mean)
		if a, ok := rep.Added[name]; ok {
			fmt.Fprintf(w, " %+.0f (%+.0f … %+.0f) | %+.0f (%+.0f … %+.0f) | %.2f× | %.2f× | %.0f |\n",
				a.P50, a.P50Min, a.P50Max, a.P99, a.P99Min, a.P99Max, a.RatioP50, a.RatioMean, rep.ProxyCPU[name])
		} else {
			fmt.Fprintln(w, " — | — | 1.00× | 1.00× | — |")
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "added = median over rounds of (variant round percentile − direct round percentile); ratio = whole-run variant / direct;")
	fmt.Fprintln(w, "proxy CPU = on-CPU time of the proxy's processes (every thread, the server's process excluded) over the measured calls, per call.")
}

func summarise(ds []time.Duration) Stats {
	us := make([]float64, len(ds))
	var sum float64
	for i, d := range ds {
		us[i] = float64(d.Nanoseconds()) / 1e3
		sum += us[i]
	}
	slices.Sort(us)
	return Stats{Calls: len(us), P50: pct(us, 50), P90: pct(us, 90), P99: pct(us, 99),
		Mean: sum / float64(len(us)), Min: us[0], Max: us[len(us)-1]}
}

// pct is the nearest-rank percentile of sorted values.
func pct(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// firstText returns the first text content of a marshalled CallToolResult.
func firstText(result string) string {
	var r struct {
		Content []struct {
			Type, Text string
		}
	}
	_ = json.Unmarshal([]byte(result), &r)
	for _, c := range r.Content {
		if c.Type == "text" {
			return c.Text
		}
	}
	return ""
}

// mustJSONInner is s as it appears inside a JSON string (escaped, no quotes),
// which is how a wrapped result carries it.
func mustJSONInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// collector is an OTLP/HTTP logs endpoint that counts what it is sent:
// the other end of the forwarded variant's [audit.forward].
type collector struct {
	addr     string
	srv      *http.Server
	requests atomic.Int64
	bytes    atomic.Int64
}

func startCollector() (*collector, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &collector{addr: ln.Addr().String()}
	c.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		c.requests.Add(1)
		c.bytes.Add(n)
	})}
	go c.srv.Serve(ln)
	return c, nil
}

func (c *collector) close() { c.srv.Close() }

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// multiFlag is a flag that may be given more than once.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, " ") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// proxyCPU is the on-CPU time so far of root and its descendants, but
// the processes named server (the MCP server the proxy runs): every
// thread's, from /proc/PID/task/TID/schedstat (nanoseconds; /proc/PID/stat
// counts in 10 ms ticks, too coarse for a round). Linux only; elsewhere
// it is zero.
func proxyCPU(root int, server string) time.Duration {
	procs := procstat.All()
	children := map[int][]procstat.Proc{}
	var self *procstat.Proc
	for i, p := range procs {
		children[p.Ppid] = append(children[p.Ppid], p)
		if p.Pid == root {
			self = &procs[i]
		}
	}
	if self == nil {
		return 0
	}
	var total time.Duration
	queue := []procstat.Proc{*self}
	for len(queue) > 0 {
		p := queue[0]
		queue = append(queue[1:], children[p.Pid]...)
		if p.Name == server && p.Pid != root {
			continue
		}
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Pid))
		for _, t := range tasks {
			raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", p.Pid, t.Name()))
			if err != nil {
				continue
			}
			if f := strings.Fields(string(raw)); len(f) > 0 {
				ns, _ := strconv.ParseInt(f[0], 10, 64)
				total += time.Duration(ns)
			}
		}
	}
	return total
}
