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

	"github.com/aqlguard/aqlguard/effects"
)

// TestCorpus runs bench/corpus through the aqlguard this package built,
// under its default policy (the config holds the servers and the command
// channel, nothing else), and holds issue 29's and issue 30's targets:
//   - every attack variant (MCPSecBench's 17 classes, Invariant Labs' tool
//     poisoning, Trail of Bits' line jumping, GTFOBins commands, the flows
//     of issue 30, each with its tools claiming readOnlyHint) is stopped
//     or flagged, both at first sight and after the human trusted the
//     servers at first sight, but for the attacks the corpus names a known
//     gap of (what no guard of results can see: a key the user typed, the
//     model's own words), whose trusted pass is logged apart;
//   - the indirect-injection, tool-poisoning and prompt-injection attacks
//     are held in every variant and pass, no gap allowed (issue 30);
//   - every attack that says what following the session's data does at
//     its exit (flow: the human asked, the call refused, the model told by
//     aqlguard's notice) does it wherever nothing was denied before the
//     exit, and in the trusted pass nothing may be;
//   - the honest calls (the npm filesystem, memory and everything servers,
//     our test server, .env files and a config with a token read and
//     edited inside the roots, public pages fetched through a server with
//     the fetch server's own definition, files read and then docs
//     fetched) ask at most 2 times per 100 calls, and none is refused or
//     blocked.
//
// With -short it runs both passes with every fourth GTFOBins program and
// without the honest sessions as one client, to stay within two or three
// minutes on two cores (158 s in the e2e package with both).
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
	if err := goBuild(rogue, "./internal/fixture/rogueserver"); err != nil {
		t.Fatal(err)
	}
	if err := goBuildIn("../bench", runner, "./cmd/corpus"); err != nil {
		t.Fatal(err)
	}

	passes, every, oneClient := "first-sight,trusted", "1", "true"
	if testing.Short() {
		// The honest sessions as one client all day are reported, not a
		// target, and nothing below reads them: a full run has them.
		passes, every, oneClient = "first-sight,trusted", "4", "false"
	}
	report := filepath.Join(dir, "corpus.json")
	md := filepath.Join(dir, "corpus.md")
	mark := processMark()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runner, "-aqlguard", bins.aqlguard, "-rogueserver", rogue, "-testserver", bins.testserver,
		"-corpus", "../bench/corpus", "-passes", passes, "-gtfobins-every", every, "-one-client="+oneClient, "-j", "8", "-json", report, "-md", md, "-out", filepath.Join(dir, "runs"))
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
			Flow                                         string `json:"flow"`
			FlowGot                                      string `json:"flow_got"`
			FlowMet                                      bool   `json:"flow_met"`
		} `json:"attacks"`
		Honest *struct {
			Calls []struct {
				Server      string `json:"server"`
				Call        string `json:"call"`
				Outcome     string `json:"outcome"`
				ServerError string `json:"server_error"`
				Notice      bool   `json:"notice"`
				NoticeText  string `json:"notice_text"`
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
	var broken, missed, gaps, flows []string
	heldAlways := map[string]bool{"indirect-prompt-injection": true, "tool-poisoning": true, "prompt-injection": true}
	for _, a := range rep.Attacks {
		gapPassed := a.Gap != "" && a.Pass == "trusted" && a.Verdict == "passed" && !heldAlways[a.Class]
		switch {
		case a.Flow != "" && a.FlowGot != "" && !a.FlowMet && !gapPassed:
			flows = append(flows, fmt.Sprintf("%s (%s): want %s at the exit, got %s: %s", a.ID, a.Pass, a.Flow, a.FlowGot, a.Why))
		case a.Flow != "" && a.FlowGot == "" && a.Pass == "trusted" && a.Verdict != "broken":
			broken = append(broken, fmt.Sprintf("%s (%s): its flow cannot be told (a question denied before the exit): %s", a.ID, a.Pass, a.Why))
		}
		switch a.Verdict {
		case "stopped", "flagged":
		case "passed":
			if a.Gap != "" && a.Pass == "trusted" && !heldAlways[a.Class] {
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
	if len(flows) > 0 {
		t.Errorf("%d attack variants' exits did not do what following the session's data should (issue 30):\n%s",
			len(flows), strings.Join(flows, "\n"))
	}
	servers := map[string]int{}
	var notices []string
	for _, c := range rep.Honest.Calls {
		servers[c.Server]++
		if c.Notice {
			notices = append(notices, c.Call+": "+c.NoticeText)
		}
	}
	for _, s := range []string{"fsenv", "fetch", "code", "web"} {
		if servers[s] == 0 {
			t.Errorf("no honest call to %s (the sessions of issue 30: secrets read locally, public pages fetched, files read then docs fetched)", s)
		}
	}
	if len(notices) > 0 {
		t.Logf("%d honest results came back with aqlguard's notice to the model (no question was asked; each is a text an honest server returned that the scan reads as instructions to the assistant):\n%s",
			len(notices), strings.Join(notices, "\n"))
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

// TestCorpusClonesMatchProfiles: the rogue servers of issue 30's attacks
// and honest sessions that call themselves by a profiled server's name
// (the fetch server, the GitHub server) reproduce its definitions, so
// that its shipped profile, not a first-sight review, says what their
// tools do. A clone that drifted from its capture would test a server no
// profile knows.
func TestCorpusClonesMatchProfiles(t *testing.T) {
	profiled := map[string]bool{"mcp-fetch": true, "github-mcp-server": true}
	type scenario struct {
		Name  string `json:"name"`
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	var scenarios []scenario
	var af struct {
		Scenarios map[string]scenario `json:"scenarios"`
	}
	b, err := os.ReadFile("../bench/corpus/attacks/flows.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &af); err != nil {
		t.Fatal(err)
	}
	for _, sc := range af.Scenarios {
		scenarios = append(scenarios, sc)
	}
	files, _ := filepath.Glob("../bench/corpus/honest/*.json")
	for _, f := range files {
		var s struct {
			Rogue   json.RawMessage `json:"rogue"`
			Servers []struct {
				Rogue json.RawMessage `json:"rogue"`
			} `json:"servers"`
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		raws := []json.RawMessage{s.Rogue}
		for _, sp := range s.Servers {
			raws = append(raws, sp.Rogue)
		}
		for _, raw := range raws {
			var sc scenario
			if len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &sc) == nil {
				scenarios = append(scenarios, sc)
			}
		}
	}
	n := 0
	for _, sc := range scenarios {
		if !profiled[sc.Name] {
			continue
		}
		for _, tool := range sc.Tools {
			n++
			if _, _, ok := effects.Match(effects.Definition{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema}); !ok {
				t.Errorf("scenario %s: tool %s matches no shipped profile", sc.Name, tool.Name)
			}
		}
	}
	if n == 0 {
		t.Fatal("no clone of a profiled server in the corpus")
	}
}
