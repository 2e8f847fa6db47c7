package evaluator

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

func compile(t testing.TB, doc, principal string) *policy.Policy {
	t.Helper()
	cfg, err := policy.Parse([]byte(doc), "test.toml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Compile(cfg, principal)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

const testPolicy = `
[safety]
max_autonomous_steps = 10
risk_tolerance = "moderate"
deny = ["drop_*", "*.drop_*", "*drop table*", "*rm -rf /"]
requires_approval = ["delete_*", "*.delete_*", "*git push*"]
auto_approve = ["get_*", "*.get_*", "*.read_*", "delete_tmp_*"]

[[safety.rules]]
action = "deny"
operation = "shell.*"
argument = "command"
pattern = "*rm -rf*"

[[safety.rules]]
action = "requires_approval"
operation = "fs.write_*"
argument = "path"
pattern = "*/.ssh/*"

[[safety.rules]]
action = "auto_approve"
operation = "shell.*"
argument = "command"
pattern = "{ls,git status}"

[[safety.rules]]
action = "deny"
argument = "options"
pattern = '*"recursive":true*'

[[safety.risk_rules]]
pattern = "*production*"
score = 80
reason = "touches production"

[[safety.risk_rules]]
argument = "path"
pattern = "*.env"
score = 65
`

func step(mut ...func(*Step)) Step {
	s := Step{
		Principal:  "default",
		Operation:  "fs_write_file",
		Server:     "fs",
		Tool:       "write_file",
		Category:   policy.Create,
		ActionHint: "calling write_file on /tmp/notes.txt",
		StepNumber: 1,
	}
	for _, m := range mut {
		m(&s)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func TestEvaluateStages(t *testing.T) {
	p := compile(t, testPolicy, "")
	tests := []struct {
		name     string
		step     Step
		decision Decision
		stage    Stage
		tier     Tier
		risk     int
		matched  string
		reason   string
	}{
		{"plain create is allowed", step(), Allow, StageTolerance, Advisory, 25, "", "within the moderate risk tolerance"},
		{"step limit", step(func(s *Step) { s.StepNumber = 11; s.Operation = "drop_everything" }), NeedsConfirm, StageStepLimit, "", 0, "", "Step limit exceeded"},
		{"at the step limit is fine", step(func(s *Step) { s.StepNumber = 10 }), Allow, StageTolerance, Advisory, 25, "", ""},
		{"previous failure", step(func(s *Step) { s.Outcome = "failure"; s.Operation = "drop_everything" }), NeedsConfirm, StageOutcome, "", 0, "", "Previous step failed"},
		{"previous success", step(func(s *Step) { s.Outcome = "success" }), Allow, StageTolerance, Advisory, 25, "", ""},
		{"previous skipped", step(func(s *Step) { s.Outcome = "skipped" }), Allow, StageTolerance, Advisory, 25, "", ""},
		{"deny on operation", step(func(s *Step) { s.Operation = "drop_table" }), Block, StagePattern, DangerZone, 100, "drop_*", `deny pattern "drop_*"`},
		{"deny on server.tool", step(func(s *Step) { s.Operation = "db_drop_table"; s.Server = "db"; s.Tool = "drop_table" }), Block, StagePattern, DangerZone, 100, "*.drop_*", ""},
		{"deny on hint, folded", step(func(s *Step) { s.ActionHint = "run  DROP\tTABLE users" }), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"requires approval", step(func(s *Step) { s.Operation = "fs_delete_file"; s.Tool = "delete_file" }), NeedsConfirm, StagePattern, Confirm, 0, "*.delete_*", "requires approval"},
		{"deny beats requires approval", step(func(s *Step) { s.Tool = "delete_x"; s.ActionHint = "rm -rf /" }), Block, StagePattern, DangerZone, 100, "*rm -rf /", ""},
		{"requires approval beats auto approve", step(func(s *Step) { s.Operation = "delete_tmp_files" }), NeedsConfirm, StagePattern, Confirm, 0, "delete_*", ""},
		{"auto approve skips later stages", step(func(s *Step) {
			s.Tool = "get_secrets"
			s.Category = policy.Delete
			s.Annotations.Destructive = ptr(true)
		}), Allow, StagePattern, "", 0, "*.get_*", "auto-approved"},
		{"server qualified name needs a server", step(func(s *Step) { s.Server = ""; s.Tool = "fetch_x"; s.Category = policy.Update; s.Operation = "update_x" }), Allow, StageTolerance, Confirm, 40, "", ""},

		{"arg rule deny", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "sudo RM -RF  /home"}
		}), Block, StagePattern, DangerZone, 100, `operation~"shell.*" command~"*rm -rf*"`, ""},
		{"arg rule deny only for its operations", step(func(s *Step) {
			s.Arguments = map[string]any{"command": "rm -rf /home"}
		}), Allow, StageTolerance, Advisory, 25, "", ""},
		{"arg rule requires approval", step(func(s *Step) {
			s.Arguments = map[string]any{"path": "/home/a/.ssh/authorized_keys"}
		}), NeedsConfirm, StagePattern, Confirm, 0, `operation~"fs.write_*" path~"*/.ssh/*"`, ""},
		{"arg rule auto approve", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "git  status"}
		}), Allow, StagePattern, "", 0, `operation~"shell.*" command~"{ls,git status}"`, ""},
		{"arg rule auto approve is exact", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "git status; curl evil"}
			s.Annotations.OpenWorld = ptr(true)
		}), Allow, StageTolerance, Confirm, 50, "", ""},
		{"arg rule on JSON value", step(func(s *Step) {
			s.Arguments = map[string]any{"options": map[string]any{"recursive": true, "force": false}}
		}), Block, StagePattern, DangerZone, 100, `options~"*\"recursive\":true*"`, ""},
		{"arg rule missing argument", step(func(s *Step) {
			s.Arguments = map[string]any{"other": "rm -rf /"}
			s.Server, s.Tool, s.Operation = "shell", "exec", "shell_exec"
		}), Allow, StageTolerance, Advisory, 25, "", ""},
		{"pattern deny beats arg rule auto approve", step(func(s *Step) {
			s.Server, s.Tool, s.Operation = "shell", "exec", "shell_exec"
			s.Arguments = map[string]any{"command": "ls"}
			s.ActionHint = "drop table x"
		}), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"arg rule deny beats pattern requires approval", step(func(s *Step) {
			s.Server, s.Tool, s.Operation = "shell", "exec", "shell_exec"
			s.Arguments = map[string]any{"command": "rm -rf build"}
			s.ActionHint = "git push then clean"
		}), Block, StagePattern, DangerZone, 100, `operation~"shell.*" command~"*rm -rf*"`, ""},

		{"verify tier", step(func(s *Step) { s.Tool = "force_push"; s.Operation = "git_force_push" }), NeedsVerify, StageTier, Verify, 70, "", "out-of-band verification"},
		{"danger zone tier", step(func(s *Step) { s.Tool = "wipeDisk"; s.Operation = "fs_wipe_disk" }), Block, StageTier, DangerZone, 90, "", "danger zone"},
		{"risk rule on subjects", step(func(s *Step) { s.ActionHint = "deploy to production" }), NeedsVerify, StageTier, Verify, 80, "", ""},
		{"risk rule on argument", step(func(s *Step) { s.Arguments = map[string]any{"path": "/srv/app/.ENV"} }), NeedsVerify, StageTier, Verify, 65, "", ""},
		{"tolerance exceeded", step(func(s *Step) { s.Category = policy.Delete; s.Operation = "fs_remove"; s.Tool = "remove" }), NeedsConfirm, StageTolerance, Confirm, 55, "", "exceeds the moderate risk tolerance (50)"},
		{"tolerance boundary", step(func(s *Step) { s.Category = policy.Execute; s.Annotations.OpenWorld = ptr(true) }), Allow, StageTolerance, Confirm, 50, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Evaluate(p, tt.step)
			if d.Decision != tt.decision || d.Stage != tt.stage || d.Tier != tt.tier || d.Risk != tt.risk {
				t.Errorf("got decision=%s stage=%s tier=%q risk=%d, want %s %s %q %d\nfactors: %q", d.Decision, d.Stage, d.Tier, d.Risk, tt.decision, tt.stage, tt.tier, tt.risk, d.Factors)
			}
			if d.Matched != tt.matched {
				t.Errorf("Matched = %q, want %q", d.Matched, tt.matched)
			}
			if !strings.Contains(d.Reason, tt.reason) || d.Reason == "" {
				t.Errorf("Reason = %q, want it to contain %q", d.Reason, tt.reason)
			}
			checkInvariants(t, p, tt.step, d)
		})
	}
}

// checkInvariants holds for every directive in every mode.
func checkInvariants(t testing.TB, p *policy.Policy, s Step, d Directive) {
	t.Helper()
	if len(d.Factors) == 0 {
		t.Error("no factors")
	}
	if d.Risk < 0 || d.Risk > 100 {
		t.Errorf("risk %d out of range", d.Risk)
	}
	if want := max(0, p.MaxSteps-max(s.StepNumber, 0)); d.StepsRemaining != want {
		t.Errorf("StepsRemaining = %d, want %d", d.StepsRemaining, want)
	}
	switch p.Loop {
	case policy.LoopMonitoring:
		if !d.Continue || d.Stopped || d.Enforced {
			t.Errorf("monitoring: continue=%v stopped=%v enforced=%v", d.Continue, d.Stopped, d.Enforced)
		}
	case policy.LoopLogging, policy.LoopDisabled:
		if !d.Continue || d.Stopped || d.Enforced || d.Decision != Allow || d.Stage != StageNone {
			t.Errorf("%s: %+v", p.Loop, d)
		}
	default:
		if !d.Enforced {
			t.Error("enforcing: not enforced")
		}
		if d.Stopped && d.Continue {
			t.Error("stopped but continue")
		}
		if d.Continue != (d.Decision == Allow) {
			t.Errorf("continue=%v with decision %s", d.Continue, d.Decision)
		}
		if d.Stopped != (d.Decision == Block) {
			t.Errorf("stopped=%v with decision %s", d.Stopped, d.Decision)
		}
	}
	if d.Tier != "" && d.Stage != StagePattern && d.Tier != TierFor(d.Risk) {
		t.Errorf("tier %s does not match risk %d", d.Tier, d.Risk)
	}
}

func TestEvaluateModes(t *testing.T) {
	denied := step(func(s *Step) { s.Operation = "drop_table" })
	allowed := step()

	t.Run("enforcing", func(t *testing.T) {
		p := compile(t, testPolicy, "")
		d := Evaluate(p, denied)
		if d.Continue || !d.Stopped || !d.Enforced || d.Decision != Block {
			t.Errorf("%+v", d)
		}
	})

	t.Run("monitoring", func(t *testing.T) {
		p := compile(t, testPolicy+"\n[agents.watch]\nloop = \"monitoring\"\n", "watch")
		d := Evaluate(p, denied)
		if !d.Continue || d.Stopped || d.Enforced {
			t.Errorf("monitoring must not pause or stop: %+v", d)
		}
		if d.Decision != Block || d.Tier != DangerZone || d.Risk != 100 || d.Stage != StagePattern || d.Matched != "drop_*" {
			t.Errorf("monitoring must report the enforcing decision: %+v", d)
		}
		last := d.Factors[len(d.Factors)-1]
		if last != `monitoring: enforcing would have block (Action matches deny pattern "drop_*")` {
			t.Errorf("last factor = %q", last)
		}
		d = Evaluate(p, allowed)
		if !d.Continue || d.Decision != Allow || !strings.HasPrefix(d.Factors[len(d.Factors)-1], "monitoring: enforcing would have allow (") {
			t.Errorf("%+v", d)
		}
		checkInvariants(t, p, denied, Evaluate(p, denied))
		over := step(func(s *Step) { s.StepNumber = 1000 })
		if d := Evaluate(p, over); !d.Continue || d.Decision != NeedsConfirm || d.Stage != StageStepLimit {
			t.Errorf("%+v", d)
		}
	})

	for _, mode := range []string{"logging", "disabled"} {
		t.Run(mode, func(t *testing.T) {
			p := compile(t, testPolicy+"\n[agents.x]\nloop = \""+mode+"\"\n", "x")
			for _, s := range []Step{denied, allowed, step(func(s *Step) { s.StepNumber = 99; s.Outcome = "failure" })} {
				d := Evaluate(p, s)
				if !d.Continue || d.Stopped || d.Enforced || d.Decision != Allow || d.Stage != StageNone || d.Risk != 0 || d.Tier != "" || d.Matched != "" {
					t.Errorf("%+v", d)
				}
				if len(d.Factors) != 1 || !strings.Contains(d.Factors[0], mode) {
					t.Errorf("factors = %q", d.Factors)
				}
				checkInvariants(t, p, s, d)
			}
		})
	}

	t.Run("unknown mode is enforced", func(t *testing.T) {
		p := compile(t, testPolicy, "")
		p.Loop = "sometimes"
		if d := Evaluate(p, denied); d.Continue || !d.Stopped || !d.Enforced {
			t.Errorf("%+v", d)
		}
	})

	t.Run("nil policy pauses", func(t *testing.T) {
		d := Evaluate(nil, allowed)
		if d.Continue || d.Decision != NeedsConfirm || !d.Enforced || len(d.Factors) == 0 {
			t.Errorf("%+v", d)
		}
	})
}

func TestEvaluateTolerances(t *testing.T) {
	// CREATE (25), UPDATE (40) and DELETE (55) under each tolerance.
	for _, tc := range []struct {
		tolerance string
		want      map[policy.Category]Decision
	}{
		{"conservative", map[policy.Category]Decision{policy.Create: Allow, policy.Update: NeedsConfirm, policy.Delete: NeedsConfirm}},
		{"moderate", map[policy.Category]Decision{policy.Create: Allow, policy.Update: Allow, policy.Delete: NeedsConfirm}},
		{"aggressive", map[policy.Category]Decision{policy.Create: Allow, policy.Update: Allow, policy.Delete: Allow}},
	} {
		p := compile(t, "[safety]\nrisk_tolerance = \""+tc.tolerance+"\"\n", "")
		for cat, want := range tc.want {
			d := Evaluate(p, step(func(s *Step) { s.Category = cat }))
			if d.Decision != want {
				t.Errorf("%s %s: %s (%s), want %s", tc.tolerance, cat, d.Decision, d.Reason, want)
			}
		}
	}
}

func TestEvaluateFactorsExplainEveryStage(t *testing.T) {
	p := compile(t, testPolicy, "")
	d := Evaluate(p, step(func(s *Step) { s.StepNumber = 3; s.Outcome = "success" }))
	want := []string{
		"step limit: step 3 of 10",
		"previous outcome: success",
		"patterns: no deny, requires_approval or auto_approve pattern matched",
		"risk: category CREATE base 25",
		"safety tier: risk 25 is advisory",
		"risk tolerance: 25 <= 50",
	}
	if !slices.Equal(d.Factors, want) {
		t.Errorf("factors =\n%q\nwant\n%q", d.Factors, want)
	}
	d = Evaluate(p, step(func(s *Step) { s.ActionHint = "DROP TABLE x" }))
	if got := d.Factors[len(d.Factors)-1]; got != `pattern: deny "*drop table*" matched the action hint` {
		t.Errorf("pattern factor = %q", got)
	}
	d = Evaluate(p, step(func(s *Step) { s.Operation = "fs_drop_x"; s.Tool = "drop_x" }))
	if got := d.Factors[len(d.Factors)-1]; got != `pattern: deny "*.drop_*" matched the tool "fs.drop_x"` {
		t.Errorf("pattern factor = %q", got)
	}
}

func TestEvaluateDeterministicAndPure(t *testing.T) {
	p := compile(t, testPolicy, "")
	args := map[string]any{"command": "rm -rf x", "path": "/a/.env", "n": 3.0}
	s := step(func(s *Step) { s.Arguments = args; s.Server = "shell"; s.Tool = "exec" })
	before := *p
	a, b := Evaluate(p, s), Evaluate(p, s)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("not deterministic:\n%+v\n%+v", a, b)
	}
	if !reflect.DeepEqual(before, *p) {
		t.Error("Evaluate modified the policy")
	}
	if len(args) != 3 || args["command"] != "rm -rf x" {
		t.Error("Evaluate modified the arguments")
	}
}

func TestEvaluateCatchAll(t *testing.T) {
	p := compile(t, "[safety]\ndeny = [\"*\"]\n", "")
	if d := Evaluate(p, Step{StepNumber: 1}); d.Decision != Block {
		t.Errorf("empty step escaped deny = [\"*\"]: %+v", d)
	}
}

func TestEvaluateArgumentRendering(t *testing.T) {
	doc := `
[[safety.rules]]
action = "deny"
argument = "v"
pattern = '%s'
`
	for _, tc := range []struct {
		pattern string
		value   any
		match   bool
	}{
		{"42", 42.0, true},
		{"true", true, true},
		{"null", nil, true},
		{`\["a","b"\]`, []any{"a", "b"}, true},
		{`\{"a":1,"b":"<x>"\}`, map[string]any{"b": "<x>", "a": 1}, true}, // sorted keys, no HTML escaping
		{"hello world", "Hello\n  World", true},
		{"*", struct{ C chan int }{}, false}, // not encodable: never matches
	} {
		p := compile(t, strings.Replace(doc, "%s", tc.pattern, 1), "")
		d := Evaluate(p, step(func(s *Step) { s.Arguments = map[string]any{"v": tc.value} }))
		if got := d.Decision == Block; got != tc.match {
			t.Errorf("pattern %s on %#v: blocked=%v, want %v", tc.pattern, tc.value, got, tc.match)
		}
	}
}

func TestTierFor(t *testing.T) {
	for score, want := range map[int]Tier{0: Advisory, 30: Advisory, 31: Confirm, 60: Confirm, 61: Verify, 85: Verify, 86: DangerZone, 100: DangerZone} {
		if got := TierFor(score); got != want {
			t.Errorf("TierFor(%d) = %s, want %s", score, got, want)
		}
	}
}

func TestEvaluateConcurrent(t *testing.T) {
	p := compile(t, testPolicy, "")
	steps := []Step{
		step(),
		step(func(s *Step) { s.Operation = "drop_x" }),
		step(func(s *Step) { s.Server, s.Tool = "shell", "exec"; s.Arguments = map[string]any{"command": "ls"} }),
		step(func(s *Step) { s.Tool = "forcePush" }),
	}
	want := make([]Directive, len(steps))
	for i, s := range steps {
		want[i] = Evaluate(p, s)
	}
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 200 {
				k := (g + i) % len(steps)
				if d := Evaluate(p, steps[k]); !reflect.DeepEqual(d, want[k]) {
					t.Errorf("concurrent evaluation differs for step %d", k)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
}

// A proxied call's hint carries model-written arguments; auto_approve must
// not be reachable through them.
func TestAutoApproveIgnoresProxiedHint(t *testing.T) {
	p := compile(t, `
[safety]
auto_approve = ["*.get_*"]
`, "a")
	s := Step{Principal: "a", Operation: "fs_write_file", Server: "fs", Tool: "write_file", Category: policy.Update,
		Arguments:  map[string]any{"content": "x.get_y"},
		ActionHint: `fs.write_file {"content":"x.get_y"}`, StepNumber: 1}
	d := Evaluate(p, s)
	if d.Stage == StagePattern {
		t.Fatalf("auto_approve matched through the arguments: %+v", d)
	}
	s.Server, s.Tool, s.Operation = "", "", ""
	s.ActionHint = "calling fs.get_file"
	if d := Evaluate(p, s); d.Stage != StagePattern || d.Decision != Allow {
		t.Errorf("a reported step is matched by its hint: %+v", d)
	}
}
