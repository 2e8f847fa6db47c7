package sandbox

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
)

// BenchmarkStart is the start-up cost of the confinement: a server
// process started and waited for, unconfined ([servers.sandbox] mode =
// "off") and confined (auto: the grant derived, its temporary directory
// made, the Landlock ruleset built and the thread confined, the directory
// removed), in the same run. /bin/true shows the mechanism's own cost;
// node (AQLGUARD_E2E_NODE) shows it with a runtime that opens a few
// hundred files under the grant's rules as it starts.
//
//	go test -run XXX -bench Start -count 10 ./sandbox
func BenchmarkStart(b *testing.B) {
	progs := []struct {
		name string
		argv []string
	}{{"true", []string{"/bin/true"}}}
	if node := os.Getenv("AQLGUARD_E2E_NODE"); node != "" {
		progs = append(progs, struct {
			name string
			argv []string
		}{"node", []string{node, "-e", "require('fs'); require('net'); require('crypto')"}})
	}
	for _, p := range progs {
		// Interleaved: each iteration starts it unconfined, then
		// confined, so a busy machine slows both alike; added-ms/start
		// is the mean of the differences.
		b.Run(p.name+"/interleaved", func(b *testing.B) {
			off := config.Server{Name: "bench", Command: p.argv[0], Args: p.argv[1:], Sandbox: config.Sandbox{Mode: "off"}}
			auto := off
			auto.Sandbox = config.Sandbox{Mode: "auto", Network: "auto"}
			var added time.Duration
			for b.Loop() {
				t0 := time.Now()
				startOnce(b, off)
				t1 := time.Now()
				startOnce(b, auto)
				added += time.Since(t1) - t1.Sub(t0)
			}
			b.ReportMetric(float64(added.Microseconds())/1000/float64(b.N), "added-ms/start")
		})
		for _, mode := range []string{"off", "auto"} {
			b.Run(p.name+"/"+mode, func(b *testing.B) {
				s := config.Server{Name: "bench", Command: p.argv[0], Args: p.argv[1:], Sandbox: config.Sandbox{Mode: mode, Network: "auto"}}
				for b.Loop() {
					startOnce(b, s)
				}
			})
		}
	}
}

// startOnce does what downstream does for one start, and waits for the
// process to end.
func startOnce(b *testing.B, s config.Server) {
	g := Derive(s, CurrentEnv(s))
	if !g.Off {
		tmp, err := Prepare(&g)
		if err != nil {
			b.Fatal(err)
		}
		defer os.RemoveAll(tmp)
	}
	cmd := exec.Command(s.Command, s.Args...)
	done := make(chan error, 1)
	if err := Launch(g, cmd, cmd.Start, func() { done <- cmd.Wait() }); err != nil {
		b.Fatal(err)
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
