// Command httpload drives MCP Streamable HTTP endpoints with many
// concurrent clients, each making tools/calls back to back, and reports
// calls per second and latency for each endpoint, in interleaved rounds
// of one run: aqlguard serve against another proxy on the same
// downstream, and the downstream itself.
//
//	httpload -target direct=http://127.0.0.1:9001/mcp -target aqlguard=http://127.0.0.1:9002/mcp \
//	  -target other=http://127.0.0.1:9003/ts/mcp -clients 32 -duration 5s -rounds 3 -tool echo
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

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

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func run(argv []string) error {
	fs := flag.NewFlagSet("httpload", flag.ContinueOnError)
	var ts targets
	fs.Var(&ts, "target", "NAME=URL of a Streamable HTTP MCP endpoint (repeat); NAME=URL#TOKEN sends a bearer token")
	clients := fs.Int("clients", 32, "concurrent clients per endpoint")
	duration := fs.Duration("duration", 5*time.Second, "how long each endpoint is driven per round")
	rounds := fs.Int("rounds", 3, "rounds (the endpoints' order rotates)")
	tool := fs.String("tool", "echo", "tool to call")
	argsJSON := fs.String("args", `{"message":"hello"}`, "the tool's arguments")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(*argsJSON), &args); err != nil {
		return err
	}
	type endpoint struct {
		name, url, token string
		rates            []float64
		lat              []time.Duration
		errors           int
	}
	var eps []*endpoint
	for _, t := range ts {
		name, rest, ok := strings.Cut(t, "=")
		if !ok {
			return fmt.Errorf("-target %q: want NAME=URL", t)
		}
		url, token, _ := strings.Cut(rest, "#")
		eps = append(eps, &endpoint{name: name, url: url, token: token})
	}
	if len(eps) == 0 {
		return fmt.Errorf("no -target")
	}
	for r := range *rounds {
		order := append(slices.Clone(eps[r%len(eps):]), eps[:r%len(eps)]...)
		for _, ep := range order {
			hc := &http.Client{Transport: http.DefaultTransport}
			if ep.token != "" {
				hc.Transport = bearer{ep.token, http.DefaultTransport}
			}
			ctx := context.Background()
			sessions := make([]*mcp.ClientSession, *clients)
			for i := range sessions {
				c := mcp.NewClient(&mcp.Implementation{Name: "httpload", Version: "1"}, nil)
				s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep.url, HTTPClient: hc},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					return fmt.Errorf("%s: connecting client %d: %w", ep.name, i+1, err)
				}
				sessions[i] = s
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			calls := 0
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
			ep.rates = append(ep.rates, float64(calls)/time.Since(began).Seconds())
			for _, s := range sessions {
				_ = s.Close()
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
	return nil
}
