package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCorpus runs bench/corpus through the aqlguard this package built,
// under its default policy (the config holds the servers and the command
// channel, nothing else), and holds issue 29's targets:
//   - every attack variant (MCPSecBench's 17 classes, Invariant Labs' tool
//     poisoning, Trail of Bits' line jumping, GTFOBins commands, each with
//     its tools claiming readOnlyHint) is stopped or flagged to the human,
//     both at first sight and after the human trusted the servers at first
//     sight, but for the attacks the corpus names a known gap of (data
//     that leaves through a trusted tool: issue 30), whose trusted pass
//     is logged apart;
//   - the honest calls (the npm filesystem, memory and everything servers
//     and our test server) ask at most 2 times per 100 calls, and none is
//     refused or blocked.
//
// With -short it runs both passes with every fourth GTFOBins program, to
// stay within a minute or two on two cores.
// It needs the npm servers (AQLGUARD_E2E_NODE, _FS_SERVER,
// _EVERYTHING_SERVER, _MEMORY_SERVER) and skips loudly without them,
// unless AQLGUARD_E2E_REQUIRE_NPM=1. The report is in the log; bench/RESULTS.md
// keeps the figures.
func TestCorpus(t *testing.T) {
	env := []string{
		"AQLGUARD_E2E_NODE=" + nodeBin(t),
		"AQLGUARD_E2E_FS_SERVER=" + requireEnv(t, "AQLGUARD_E2E_FS_SERVER"),
		"AQLGUARD_E2E_EVERYTHING_SERVER=" + requireEnv(t, "AQLGUARD_E2E_EVERYTHING_SERVER"),
		"AQLGUARD_E2E_MEMORY_SERVER=" + requireEnv(t, "AQLGUARD_E2E_MEMORY_SERVER"),
	}
	if bins.aqlguardErr != nil {
		t.Fatalf("aqlguard did not build:\n%v", bins.aqlguardErr)
	}
	trackSources()
	dir := t.TempDir()
	rogue := filepath.Join(dir, "rogueserver")
	runner := filepath.Join(dir, "corpus")
	if err := goBuild(rogue, "./internal/rogueserver"); err != nil {
		t.Fatal(err)
	}
	if err := goBuildIn("../bench", runner, "./cmd/corpus"); err != nil {
		t.Fatal(err)
	}

	passes, every := "first-sight,trusted", "1"
	if testing.Short() {
		passes, every = "first-sight,trusted", "4"
	}
	report := filepath.Join(dir, "corpus.json")
	md := filepath.Join(dir, "corpus.md")
	mark := processMark()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "-aqlguard", bins.aqlguard, "-rogueserver", rogue, "-testserver", bins.testserver,
		"-corpus", "../bench/corpus", "-passes", passes, "-gtfobins-every", every, "-j", "8", "-json", report, "-md", md, "-out", filepath.Join(dir, "runs"))
	cmd.Env = append(append(os.Environ(), env...), mark)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	checkMarked(t, mark)
	if err != nil {
		t.Fatalf("bench/cmd/corpus: %v\n%s", err, out)
	}
	t.Logf("corpus run in %s", time.Since(start).Round(time.Millisecond))
	if b, err := os.ReadFile(md); err == nil {
		t.Logf("report:\n%s", b)
	}

	var rep struct {
		Attacks []struct {
			ID, Class, Pass, Verdict, Why, Expected, Gap string
		} `json:"attacks"`
		Honest *struct {
			Calls []struct {
				Call        string `json:"call"`
				Outcome     string `json:"outcome"`
				ServerError string `json:"server_error"`
			} `json:"calls"`
			FirstSight []json.RawMessage `json:"first_sight"`
			Asked      int               `json:"asked"`
			Refused    int               `json:"refused"`
			Blocked    int               `json:"blocked"`
		} `json:"honest"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Attacks) == 0 || rep.Honest == nil || len(rep.Honest.Calls) < 300 {
		t.Fatalf("the report is short: %d attack results, honest %v", len(rep.Attacks), rep.Honest != nil)
	}

	// The harness first: a run that could not tell is no verdict.
	var broken, missed, gaps []string
	for _, a := range rep.Attacks {
		switch a.Verdict {
		case "stopped", "flagged":
		case "passed":
			if a.Gap != "" && a.Pass == "trusted" {
				// A known gap (the corpus says which issue closes it):
				// held apart, never counted as a pass of what this
				// issue built. At first sight it must still be held.
				gaps = append(gaps, a.ID)
				continue
			}
			missed = append(missed, fmt.Sprintf("%s (%s, %s): %s\n\twant: %s", a.ID, a.Class, a.Pass, a.Why, a.Expected))
		default:
			broken = append(broken, fmt.Sprintf("%s (%s): %s", a.ID, a.Pass, a.Why))
		}
	}
	var serverErrors []string
	for _, c := range rep.Honest.Calls {
		if c.ServerError != "" {
			serverErrors = append(serverErrors, c.Call+": "+c.ServerError)
		}
	}
	if len(broken) > 0 || len(serverErrors) > 0 {
		t.Errorf("the corpus run is broken (no verdict on these; fix the corpus or the runner):\n%s\n%s",
			strings.Join(broken, "\n"), strings.Join(serverErrors, "\n"))
	}

	if len(gaps) > 0 {
		t.Logf("%d variants passed through their known gaps once the human trusted their servers: %s", len(gaps), strings.Join(gaps, ", "))
	}
	if len(missed) > 0 {
		t.Errorf("%d of %d attack variants passed (a harmful request reached its server and nobody was asked):\n%s",
			len(missed), len(rep.Attacks), strings.Join(missed, "\n"))
	}
	h := rep.Honest
	n := len(h.Calls)
	if per100 := float64(h.Asked) * 100 / float64(n); per100 > 2 || h.Refused > 0 || h.Blocked > 0 {
		var not []string
		for _, c := range h.Calls {
			if c.Outcome != "allowed" {
				not = append(not, c.Outcome+" "+c.Call)
			}
		}
		t.Errorf("honest work: %.1f asks per 100 calls (target at most 2; %d at first sight), %d refused, %d blocked (targets 0) of %d calls:\n%s",
			per100, len(h.FirstSight), h.Refused, h.Blocked, n, strings.Join(not, "\n"))
	}
}

// goBuildIn runs `go build -o out pkg` in dir (a module of its own, such
// as bench/).
func goBuildIn(dir, out, pkg string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s (in %s): %v\n%s", filepath.Base(out), pkg, dir, err, b)
	}
	return nil
}
