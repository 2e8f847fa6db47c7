package corpus

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestTheCorpus loads bench/corpus and checks what the issue asks of it:
// every class there, a read-only variant of every tool-based attack, at
// least 300 honest calls, and each attack's harm written down.
func TestTheCorpus(t *testing.T) {
	c, err := Load("../../corpus")
	if err != nil {
		t.Fatal(err)
	}
	classes := map[string]int{}
	for _, a := range c.Attacks {
		classes[a.Class]++
	}
	for _, cl := range Classes {
		if classes[cl] == 0 {
			t.Errorf("no attack of class %s", cl)
		}
	}
	ro := map[string]bool{}
	for _, v := range c.Variants() {
		if v.ReadOnly {
			ro[v.Attack.ID] = true
		}
	}
	for _, a := range c.Attacks {
		if a.hasRogueTools() && !ro[a.ID] && (a.ReadOnly == nil || *a.ReadOnly) {
			t.Errorf("%s: no read-only variant", a.ID)
		}
		// A rogue server whose tools already claim readOnlyHint needs no
		// variant: every gtfobins ops tool does.
		if a.ReadOnly != nil && !*a.ReadOnly && a.Kind == "session" && !strings.Contains(a.Title, "readOnlyHint") {
			t.Errorf("%s: no read-only variant, and its title does not say its tools claim it already", a.ID)
		}
	}
	calls := 0
	servers := map[string]bool{}
	for _, s := range c.Honest {
		calls += len(s.Calls)
		servers[s.Real] = true
	}
	if calls < 300 {
		t.Errorf("%d honest calls, want at least 300", calls)
	}
	for _, s := range []string{"filesystem", "memory", "everything", "testserver"} {
		if !servers[s] {
			t.Errorf("no honest session with %s", s)
		}
	}
	if c.Home["project/README.md"] == "" || c.Home[".ssh/id_rsa"] == "" {
		t.Error("home.json lacks the project or the secrets the attacks read")
	}
}

func TestLoadRefuses(t *testing.T) {
	scen := map[string]json.RawMessage{"s": json.RawMessage(`{"name":"s","tools":[{"name":"t"}]}`)}
	base := func() *Attack {
		return &Attack{ID: "a", Class: "gtfobins", Title: "t", Source: "https://x", Expected: "e",
			Servers: []ServerSpec{{Name: "s", Rogue: []byte(`"s"`)}}, Steps: []Step{{Call: "s.t", Harmful: true}}}
	}
	for _, c := range []struct {
		name string
		edit func(a *Attack)
		err  string
	}{
		{"fine", func(*Attack) {}, ""},
		{"unknown class", func(a *Attack) { a.Class = "x" }, "class"},
		{"bad id", func(a *Attack) { a.ID = "A b" }, "id"},
		{"no https source", func(a *Attack) { a.Source = "http://x" }, "source"},
		{"no harmful step", func(a *Attack) { a.Steps[0].Harmful = false }, "no harmful"},
		{"unknown scenario", func(a *Attack) { a.Servers[0].Rogue = []byte(`"nope"`) }, "no scenario"},
		{"call of no server", func(a *Attack) { a.Steps[0].Call = "x.t" }, "no server"},
		{"call without a server", func(a *Attack) { a.Steps[0].Call = "t" }, "server.tool"},
		{"two things in a step", func(a *Attack) { a.Steps[0].Read = "x://y" }, "exactly one"},
		{"server name", func(a *Attack) { a.Servers[0].Name = "S_1" }, "server name"},
		{"unknown real", func(a *Attack) { a.Servers[0].Rogue, a.Servers[0].Real = nil, "x" }, "unknown real"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := base()
			c.edit(a)
			err := a.resolve(scen)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	reached := StepResult{Step: "s.t", Harmful: true, Reached: true, Visible: true, Verdict: Passed}
	asked := StepResult{Step: "s.u", Harmful: true, Visible: true, Asked: []Question{{Kind: "confirmation", Server: "s"}}, Verdict: Flagged}
	withheld := StepResult{Step: "s.v", Harmful: true, Verdict: Flagged}
	refused := StepResult{Step: "s.w", Harmful: true, Visible: true, Answer: "PERMISSION_DENIED", Verdict: Stopped}
	setupAsked := StepResult{Step: "r changes its tools", Asked: []Question{{Kind: "confirmation", Operation: "tool change", Server: "r"}}}
	setupAskedHonest := StepResult{Step: "h.x", Asked: []Question{{Kind: "confirmation", Server: "h"}}}
	for _, c := range []struct {
		name     string
		steps    []StepResult
		first    []Question
		warnings []string
		want     string
	}{
		{"every harmful step reached", []StepResult{reached, reached}, nil, nil, Passed},
		{"a chain broken by a human", []StepResult{asked, reached}, nil, nil, Flagged},
		{"withheld", []StepResult{withheld}, nil, nil, Flagged},
		{"refused", []StepResult{refused}, nil, nil, Stopped},
		{"refused, then reached", []StepResult{refused, reached}, nil, nil, Stopped},
		{"first sight", []StepResult{reached}, []Question{{Kind: "confirmation"}}, nil, Flagged},
		{"a warning names it", []StepResult{reached}, nil, []string{"level=WARN msg=collision tool=t"}, Flagged},
		{"a rogue server's change asked about", []StepResult{setupAsked, reached}, nil, nil, Flagged},
		{"an honest server's setup call asked about", []StepResult{setupAskedHonest, reached}, nil, nil, Passed},
		{"broken", []StepResult{{Step: "s.t", Harmful: true, Verdict: Broken}}, nil, nil, Broken},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{Steps: c.steps, FirstSight: c.first, Warnings: c.warnings, rogue: []string{"r", "s"}}.judge()
			if r.Verdict != c.want {
				t.Errorf("verdict %s (%s), want %s", r.Verdict, r.Why, c.want)
			}
		})
	}
}

func TestNaming(t *testing.T) {
	lines := []string{
		`level=WARN msg="tool names collide" tool=check servers="signer compute"`,
		`level=WARN msg="something about checksum"`,
		`level=WARN msg="server rogue-x is slow"`,
	}
	if got := naming(lines, []string{"check"}); len(got) != 1 || got[0] != lines[0] {
		t.Errorf("check: %q", got)
	}
	if got := naming(lines, []string{"rogue"}); len(got) != 0 {
		t.Errorf("rogue is not rogue-x: %q", got)
	}
	if !machineWarning(`level=WARN msg="audit anchors are off: ... nothing to check"`) {
		t.Error("the audit anchors warning is the machine's")
	}
}

func TestSnake(t *testing.T) {
	for in, want := range map[string]string{"echo": "echo", "get-sum": "get_sum", "fetchRemoteData": "fetch_remote_data", "read_file": "read_file", "Read_File": "read_file"} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVariants(t *testing.T) {
	one := &Attack{ID: "one", Kind: "session", Servers: []ServerSpec{{Name: "a", scenario: []byte(`{"tools":[{"name":"t"}]}`)}}}
	two := &Attack{ID: "two", Kind: "session", Servers: []ServerSpec{{Name: "a", scenario: []byte(`{"tools":[{"name":"t"}]}`)}, {Name: "b", Real: "testserver"}}}
	none := &Attack{ID: "none", Kind: "session", Servers: []ServerSpec{{Name: "b", Real: "testserver"}}}
	var ids []string
	for _, v := range (&Corpus{Attacks: []*Attack{one, two, none}}).Variants() {
		ids = append(ids, v.ID())
	}
	want := []string{"one", "one+ro", "two", "two@one", "two+ro", "two+ro@one", "none"}
	if !slices.Equal(ids, want) {
		t.Errorf("variants %q, want %q", ids, want)
	}
}
