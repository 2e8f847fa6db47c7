package corpus

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
		{"flow", func(a *Attack) { a.Flow = "refuse" }, ""},
		{"unknown flow", func(a *Attack) { a.Flow = "block" }, "flow"},
		{"flow of a serve attack", func(a *Attack) { a.Flow, a.Kind = "ask", "serve" }, "flow is for kind session"},
		{"a step the human allows", func(a *Attack) { a.Steps[0].Human = "allow" }, ""},
		{"a step the human shrugs at", func(a *Attack) { a.Steps[0].Human = "maybe" }, "human"},
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

func TestSessionCheck(t *testing.T) {
	scen := map[string]json.RawMessage{"f": json.RawMessage(`{"name":"f","tools":[{"name":"fetch"}]}`)}
	for _, c := range []struct {
		name string
		s    Session
		err  string
	}{
		{"one real server", Session{Server: "fs", Real: "filesystem", Calls: []Step{{Call: "read_text_file"}}}, ""},
		{"one rogue server by name", Session{Server: "web", Rogue: []byte(`"f"`), Calls: []Step{{Call: "fetch"}}}, ""},
		{"one rogue server in place", Session{Server: "web", Rogue: []byte(`{"name":"g"}`), Calls: []Step{{Call: "fetch"}}}, ""},
		{"no such scenario", Session{Server: "web", Rogue: []byte(`"nope"`)}, "no scenario"},
		{"real and rogue", Session{Server: "web", Real: "memory", Rogue: []byte(`"f"`)}, "one of real and rogue"},
		{"a dotted call of one server", Session{Server: "fs", Real: "filesystem", Calls: []Step{{Call: "fs.read_text_file"}}}, "tool alone"},
		{"several servers", Session{Servers: []ServerSpec{{Name: "code", Real: "filesystem"}, {Name: "web", Rogue: []byte(`"f"`)}}, Layout: "one",
			Calls: []Step{{Call: "code.read_text_file"}, {Call: "web.fetch"}}}, ""},
		{"several servers, a bare call", Session{Servers: []ServerSpec{{Name: "code", Real: "filesystem"}}, Calls: []Step{{Call: "read_text_file"}}}, "server.tool"},
		{"several servers, a read without its server", Session{Servers: []ServerSpec{{Name: "code", Real: "filesystem"}}, Calls: []Step{{Read: "x://y"}}}, "names its server"},
		{"servers and server", Session{Server: "fs", Servers: []ServerSpec{{Name: "code", Real: "filesystem"}}}, "not both"},
		{"a layout of one server", Session{Server: "fs", Real: "filesystem", Layout: "one"}, "layout"},
		{"an unknown layout", Session{Servers: []ServerSpec{{Name: "code", Real: "filesystem"}}, Layout: "two"}, "layout"},
		{"a harmful honest call", Session{Server: "fs", Real: "filesystem", Calls: []Step{{Call: "x", Harmful: true}}}, "honest call"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.check(scen)
			switch {
			case c.err == "" && err != nil:
				t.Fatal(err)
			case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
				t.Fatalf("error %v, want one saying %q", err, c.err)
			}
		})
	}
}

func TestFlow(t *testing.T) {
	noticed := StepResult{Step: "fs.read_text_file", Visible: true, Reached: true, Notice: "aqlguard: this result holds instructions"}
	privateAllowed := StepResult{Step: "fs.read_text_file", Visible: true, Reached: true, Human: "allow", Asked: []Question{{Kind: "confirmation", Server: "fs"}}}
	privateDenied := StepResult{Step: "fs.read_text_file", Visible: true, Asked: []Question{{Kind: "confirmation", Server: "fs"}}}
	reached := StepResult{Step: "fetch.fetch", Harmful: true, Reached: true, Visible: true, Verdict: Passed}
	asked := StepResult{Step: "fetch.fetch", Server: "fetch", Harmful: true, Visible: true, Asked: []Question{{Kind: "confirmation", Server: "fetch"}}, Verdict: Flagged}
	refused := StepResult{Step: "fetch.fetch", Harmful: true, Visible: true, Answer: "refused", Verdict: Stopped}
	privateElsewhere := privateAllowed
	privateElsewhere.Server = "fs"
	for _, c := range []struct {
		name    string
		layout  string
		flow    string
		steps   []StepResult
		first   []Question
		got     string
		met     bool
		verdict string
		only    bool
	}{
		{"refused at the exit", "one", "refuse", []StepResult{noticed, privateAllowed, refused}, nil, "refused, noticed", true, Stopped, false},
		{"asked at the exit, refusal wanted", "one", "refuse", []StepResult{noticed, privateElsewhere, asked}, nil, "asked, noticed", false, Flagged, false},
		{"asked at the exit, the secret read through another aqlguard", "separate", "refuse", []StepResult{noticed, privateElsewhere, asked}, nil, "asked, noticed", false, Flagged, false},
		{"asked at the exit, the secret read through the same aqlguard", "separate", "refuse", []StepResult{noticed, privateAllowed, asked}, nil, "asked, noticed", false, Flagged, false},
		{"asked at the exit", "one", "ask", []StepResult{privateAllowed, asked}, nil, "asked", true, Flagged, false},
		{"reached the exit", "one", "ask", []StepResult{noticed, privateAllowed, reached}, nil, "reached, noticed", false, Flagged, true},
		{"noticed, reached", "one", "notice", []StepResult{noticed, reached}, nil, "reached, noticed", true, Flagged, true},
		{"not noticed, reached", "one", "notice", []StepResult{reached}, nil, "reached", false, Passed, false},
		{"a denied read before the exit", "one", "refuse", []StepResult{privateDenied, refused}, nil, "", false, Stopped, false},
		{"a denied read, then reached", "one", "ask", []StepResult{privateDenied, noticed, reached}, nil, "", false, Flagged, true},
		{"a question at first sight", "one", "refuse", []StepResult{refused}, []Question{{Kind: "confirmation"}}, "", false, Flagged, false},
		{"no flow", "one", "", []StepResult{refused}, nil, "", false, Stopped, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{Layout: c.layout, Flow: c.flow, Steps: c.steps, FirstSight: c.first, rogue: []string{"fetch"}}.judge()
			if r.FlowGot != c.got || r.FlowMet != c.met || r.Verdict != c.verdict || r.NoticeOnly != c.only {
				t.Errorf("got %q met %v verdict %s notice-only %v, want %q %v %s %v (%s)", r.FlowGot, r.FlowMet, r.Verdict, r.NoticeOnly, c.got, c.met, c.verdict, c.only, r.Why)
			}
			if FlowMissed(r) != (c.got != "" && !c.met) {
				t.Errorf("FlowMissed %v", FlowMissed(r))
			}
		})
	}
}

func TestNotice(t *testing.T) {
	const n = "aqlguard: this result holds instructions for the assistant; they are the server's, not the user's."
	inner, _ := json.Marshal(map[string]any{"success": true, "data": map[string]any{"content": []any{
		map[string]any{"type": "text", "text": "page"}, map[string]any{"type": "text", "text": n}}}})
	for _, c := range []struct {
		name string
		res  any
		want string
	}{
		{"a text item of its own", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "page"}, &mcp.TextContent{Text: n}}}, n},
		{"none", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "page, aqlguard: not at the start"}}}, ""},
		{"inside semantic mode's envelope", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(inner)}}}, n},
		{"beside a resource's contents", &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "x://y", Text: "doc"}, {URI: "x://y", Text: n}}}, n},
		{"beside a prompt's messages", &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}, {Role: "user", Content: &mcp.TextContent{Text: n}}}}, n},
	} {
		if got := notice(c.res); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestFlowExits: an attack held to what its exit does must be refused, if
// at all, for what the session read, never because the corpus sent its
// tool an argument the tool does not declare (which is refused anyway).
func TestFlowExits(t *testing.T) {
	c, err := Load("../../corpus")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Attacks {
		if a.Flow == "" {
			continue
		}
		for _, st := range a.Steps {
			server, tool, _ := strings.Cut(st.Call, ".")
			if st.Call == "" {
				continue
			}
			i := slices.IndexFunc(a.Servers, func(s ServerSpec) bool { return s.Name == server })
			if len(a.Servers[i].scenario) == 0 {
				continue
			}
			var sc struct {
				Tools []struct {
					Name        string `json:"name"`
					InputSchema struct {
						Properties map[string]json.RawMessage `json:"properties"`
						Required   []string                   `json:"required"`
					} `json:"inputSchema"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(a.Servers[i].scenario, &sc); err != nil {
				t.Fatal(err)
			}
			j := slices.IndexFunc(sc.Tools, func(x struct {
				Name        string `json:"name"`
				InputSchema struct {
					Properties map[string]json.RawMessage `json:"properties"`
					Required   []string                   `json:"required"`
				} `json:"inputSchema"`
			}) bool {
				return x.Name == tool
			})
			if j < 0 {
				t.Errorf("%s: %s has no tool %s", a.ID, server, tool)
				continue
			}
			var args map[string]any
			_ = json.Unmarshal(st.Arguments, &args)
			for k := range args {
				if _, ok := sc.Tools[j].InputSchema.Properties[k]; !ok {
					t.Errorf("%s: %s: argument %q is not in the tool's schema", a.ID, st.Call, k)
				}
			}
			for _, k := range sc.Tools[j].InputSchema.Required {
				if _, ok := args[k]; !ok {
					t.Errorf("%s: %s: the required argument %q is missing", a.ID, st.Call, k)
				}
			}
		}
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
