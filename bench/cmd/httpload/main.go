// Command httpload drives MCP Streamable HTTP endpoints with many
// concurrent clients, each making tools/calls back to back, and reports
// calls per second and latency for each endpoint, in interleaved rounds
// of one run: aqlguard serve against another proxy on the same
// downstream, and the downstream itself.
//
//	httpload -target direct=http://127.0.0.1:9001/mcp -target aqlguard=http://127.0.0.1:9002/mcp \
//	  -target other=http://127.0.0.1:9003/ts/mcp -clients 32 -duration 5s -rounds 3 -tool echo
//
// A target of several URLs (NAME=URL1|URL2|URL3) is replicas of one
// proxy: the clients are spread over them, one session each, as a load
// balancer with session affinity spreads them.
//
// With -cpu (Linux) it also says where the machine's CPU went while each
// endpoint was driven: every process's user+system time over the timed
// part of its rounds, summed by process name, per call. On a machine
// that the load saturates, calls/s is bound by the sum, so the table
// says which process a proxy's calls/s is lost in: its own, its
// servers', or the load generator's.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
	"github.com/aqlguard/aqlguard/bench/internal/procstat"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type targets []string

func (t *targets) String() string     { return strings.Join(*t, ",") }
func (t *targets) Set(v string) error { *t = append(*t, v); return nil }

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "httpload:", err)
		os.Exit(1)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("httpload", flag.ContinueOnError)
	var ts targets
	fs.Var(&ts, "target", "NAME=URL of a Streamable HTTP MCP endpoint (repeat); NAME=URL#TOKEN sends a bearer token; "+
		"NAME=URL1|URL2|... spreads the clients over replicas (client i connects to URL i mod n, as a load balancer would)")
	clients := fs.Int("clients", 32, "concurrent clients per endpoint")
	duration := fs.Duration("duration", 5*time.Second, "how long each endpoint is driven per round")
	rounds := fs.Int("rounds", 3, "rounds (the endpoints' order rotates)")
	tool := fs.String("tool", "echo", "tool to call")
	argsJSON := fs.String("args", `{"message":"hello"}`, "the tool's arguments")
	ownConns := fs.Bool("own-conns", false, "each client its own HTTP transport, its connections kept as a client process of its own keeps them "+
		"(default: all clients share http.DefaultTransport, which keeps 2 idle connections per host and so closes and dials "+
		"most of 32 clients' connections call by call)")
	cpu := fs.Bool("cpu", false, "report the CPU time of every process, by name, per call (Linux /proc)")
	labels := pidLabels{}
	fs.Var(labels, "label", "PID=NAME: with -cpu, report process PID as NAME, apart from others of its name (repeat)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &args); err != nil {
		return err
	}
	type endpoint struct {
		name, token string
		urls        []string
		rates       []float64
		lat         []time.Duration
		errors      int
		calls       int
		seconds     float64
		cpu         map[string]*cpuUse // by process name, over the timed part of its rounds
	}
	var eps []*endpoint
	for _, t := range ts {
		name, rest, ok := strings.Cut(t, "=")
		if !ok {
			return fmt.Errorf("-target %q: want NAME=URL", t)
		}
		urls, token, _ := strings.Cut(rest, "#")
		eps = append(eps, &endpoint{name: name, urls: strings.Split(urls, "|"), token: token, cpu: map[string]*cpuUse{}})
	}
	if len(eps) == 0 {
		return fmt.Errorf("no -target")
	}
	for r := range *rounds {
		order := append(slices.Clone(eps[r%len(eps):]), eps[:r%len(eps)]...)
		for _, ep := range order {
			hc := &http.Client{Transport: http.DefaultTransport}
			if ep.token != "" {
				hc.Transport = harness.Bearer{Token: ep.token, Base: http.DefaultTransport}
			}
			ctx := context.Background()
			sessions := make([]*mcp.ClientSession, *clients)
			var owned []*http.Transport // with -own-conns, closed with the round
			for i := range sessions {
				c := mcp.NewClient(&mcp.Implementation{Name: "httpload", Version: "1"}, nil)
				hc := hc
				if *ownConns {
					own := http.DefaultTransport.(*http.Transport).Clone()
					owned = append(owned, own)
					hc = &http.Client{Transport: own}
					if ep.token != "" {
						hc.Transport = harness.Bearer{Token: ep.token, Base: own}
					}
				}
				s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.urls[i%len(ep.urls)], HTTPClient: hc},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					return fmt.Errorf("%s: connecting client %d: %w", ep.name, i+1, err)
				}
				sessions[i] = s
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			calls := 0
			var before map[int]procstat.Proc
			if *cpu {
				before = procTimes()
			}
			deadline := time.Now().Add(*duration)
			began := time.Now()
			for _, s := range sessions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					errs := 0
					for time.Now().Before(deadline) {
						t0 := time.Now()
						res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: *tool, Arguments: args})
						if err != nil || res.IsError {
							errs++
							continue
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					calls += len(mine)
					ep.lat = append(ep.lat, mine...)
					ep.errors += errs
					mu.Unlock()
				}()
			}
			wg.Wait()
			elapsed := time.Since(began).Seconds()
			if *cpu {
				addCPU(ep.cpu, before, procTimes(), labels)
			}
			ep.rates = append(ep.rates, float64(calls)/elapsed)
			ep.calls += calls
			ep.seconds += elapsed
			for _, s := range sessions {
				_ = s.Close()
			}
			for _, t := range owned {
				t.CloseIdleConnections()
			}
		}
	}
	fmt.Printf("%d clients per endpoint, %s per round, %d rounds, tools/call %s\n\n", *clients, *duration, *rounds, *tool)
	fmt.Println("| endpoint | calls/s (median of rounds) | rounds | p50 ms | p99 ms | errors |")
	fmt.Println("|---|---:|---|---:|---:|---:|")
	for _, ep := range eps {
		slices.Sort(ep.lat)
		rates := slices.Clone(ep.rates)
		slices.Sort(rates)
		pct := func(p float64) float64 {
			if len(ep.lat) == 0 {
				return 0
			}
			return float64(ep.lat[min(len(ep.lat)-1, int(p*float64(len(ep.lat))))].Microseconds()) / 1000
		}
		var rs []string
		for _, r := range ep.rates {
			rs = append(rs, fmt.Sprintf("%.0f", r))
		}
		fmt.Printf("| %s | %.0f | %s | %.2f | %.2f | %d |\n", ep.name, rates[len(rates)/2], strings.Join(rs, ", "), pct(0.5), pct(0.99), ep.errors)
	}
	if *cpu {
		fmt.Println("\nCPU per call while each endpoint was driven (user+system, all rounds; processes under 1% of the total left out):")
		fmt.Println("\n| endpoint | process (count) | cores | µs per call |")
		fmt.Println("|---|---|---:|---:|")
		for _, ep := range eps {
			var total float64
			for _, u := range ep.cpu {
				total += u.seconds
			}
			names := slices.SortedFunc(maps.Keys(ep.cpu), func(a, b string) int { return cmp.Compare(ep.cpu[b].seconds, ep.cpu[a].seconds) })
			for _, n := range names {
				u := ep.cpu[n]
				if u.seconds < total/100 {
					continue
				}
				fmt.Printf("| %s | %s (%d) | %.2f | %.0f |\n", ep.name, n, len(u.pids), u.seconds/ep.seconds, u.seconds/float64(max(ep.calls, 1))*1e6)
			}
			fmt.Printf("| %s | **all** | %.2f | %.0f |\n", ep.name, total/ep.seconds, total/float64(max(ep.calls, 1))*1e6)
		}
	}
	return nil
}

type cpuUse struct {
	seconds float64
	pids    map[int]bool
}

// procTimes is every process by pid, with the CPU it used so far.
func procTimes() map[int]procstat.Proc {
	out := map[int]procstat.Proc{}
	for _, p := range procstat.All() {
		out[p.Pid] = p
	}
	return out
}

// addCPU adds what each process used between two readings to use, by
// name; a process that started in between counts from zero. Kernel
// workers rename themselves as they take work (kworker/0:1-events,
// kworker/0:1-mm_percpu_wq), so they are summed as one name.
func addCPU(use map[string]*cpuUse, before, after map[int]procstat.Proc, labels pidLabels) {
	for pid, a := range after {
		d := a.CPU
		if b, ok := before[pid]; ok && b.CPU <= a.CPU {
			d -= b.CPU
		}
		if d <= 0 {
			continue
		}
		name := a.Name
		if strings.HasPrefix(name, "kworker/") {
			name = "kworker (kernel)"
		}
		// A labelled process's child of its own name (aqlguard serves
		// from a child of its supervisor) is labelled as it is.
		if l, ok := labels[pid]; ok {
			name = l
		} else if l, ok := labels[a.Ppid]; ok && after[a.Ppid].Name == a.Name {
			name = l
		}
		u := use[name]
		if u == nil {
			u = &cpuUse{pids: map[int]bool{}}
		}
		u.seconds += d
		u.pids[pid] = true
		use[name] = u
	}
}

// pidLabels names processes by pid (-label PID=NAME): several processes
// of one name (three aqlguard serves, other users' runs) are then told
// apart.
type pidLabels map[int]string

func (l pidLabels) String() string { return fmt.Sprint(map[int]string(l)) }

func (l pidLabels) Set(v string) error {
	pid, name, ok := strings.Cut(v, "=")
	n, err := strconv.Atoi(pid)
	if !ok || err != nil || name == "" {
		return fmt.Errorf("want PID=NAME, got %q", v)
	}
	l[n] = name
	return nil
}
