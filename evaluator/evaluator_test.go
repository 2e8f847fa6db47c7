package evaluator

import (
	"encoding/json"
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
inherit = false # these cases are about the rules below alone
max_autonomous_steps = 10
risk_tolerance = "moderate"
deny = ["drop_*", "*.drop_*", "*drop table*", "rm -rf /"]
requires_approval = ["delete_*", "*git push*"]
auto_approve = ["get_*", "*.read_*", "delete_tmp_*"]

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
argument = "options.recursive"
pattern = "true"

[[safety.rules]]
action = "deny"
operation = "db.*"
argument = "count"
pattern = "100"

[[safety.rules]]
action = "requires_approval"
argument = "target_env"
pattern = "prod*"

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

		{"deny on the tool's own name", step(func(s *Step) { s.Operation, s.Tool = "fs_drop_table", "drop_table" }), Block, StagePattern, DangerZone, 100, "drop_*", `deny pattern "drop_*"`},
		// A verb pattern reads the tool's own name: a server named "drop"
		// does not make its list_items a drop (nor one named "get" its
		// run_command an auto-approved get).
		{"a verb pattern does not read the server's name", step(func(s *Step) { s.Operation, s.Server, s.Tool = "drop_list_items", "drop", "list_items" }), Allow, StageTolerance, Advisory, 15, "", ""},
		{"a server named like an auto-approved verb", step(func(s *Step) {
			s.Operation, s.Server, s.Tool, s.Category = "get_run_command", "get", "run_command", policy.Execute
		}), NeedsConfirm, StageTolerance, Confirm, 45, "", ""},
		{"bare pattern on the bare tool name", step(func(s *Step) { s.Operation = "db_drop_table"; s.Server = "db"; s.Tool = "drop_table" }), Block, StagePattern, DangerZone, 100, "drop_*", ""},
		{"bare pattern on the server's spelling", step(func(s *Step) { s.Operation = "db_drop_table"; s.Server = "db"; s.Tool = "dropTable" }), Block, StagePattern, DangerZone, 100, "drop_*", ""},
		{"snake-cased server spelling", step(func(s *Step) { s.Operation = "db_x"; s.Server = "db"; s.Tool = "Drop-Table" }), Block, StagePattern, DangerZone, 100, "drop_*", ""},
		{"qualified pattern", step(func(s *Step) { s.Operation = "fs_read_notes"; s.Tool = "readNotes"; s.Category = policy.Update }), Allow, StagePattern, "", 0, "*.read_*", ""},
		{"text pattern on an argument, folded", step(func(s *Step) { s.Arguments = map[string]any{"sql": "run  DROP\tTABLE users"} }), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"text pattern on a nested argument", step(func(s *Step) {
			s.Arguments = map[string]any{"batch": []any{map[string]any{"sql": "<DROP TABLE x>"}}}
		}), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"text pattern on a key", step(func(s *Step) { s.Arguments = map[string]any{"env": map[string]any{"DROP TABLE x": "1"}} }), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"end-anchored text pattern", step(func(s *Step) { s.Arguments = map[string]any{"cmd": "RM  -rf\t/"} }), Block, StagePattern, DangerZone, 100, "rm -rf /", ""},
		{"text pattern does not look at names", step(func(s *Step) { s.Tool = "drop table" }), Block, StagePattern, DangerZone, 100, "drop_*", ""},
		{"reported step: every pattern on the hint", Step{StepNumber: 1, ActionHint: "run  DROP\tTABLE users"}, Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"reported step: name pattern on the hint", Step{StepNumber: 1, ActionHint: "delete_file /tmp/x"}, NeedsConfirm, StagePattern, Confirm, 45, "delete_*", ""},

		{"requires approval", step(func(s *Step) { s.Operation = "fs_delete_file"; s.Tool = "delete_file" }), NeedsConfirm, StagePattern, Confirm, 31, "delete_*", "requires approval"},
		{"requires approval reports the call's risk", step(func(s *Step) {
			s.Tool, s.Category, s.Annotations.Destructive = "delete_file", policy.Delete, ptr(true)
		}), NeedsConfirm, StagePattern, Confirm, 55, "delete_*", ""},
		{"deny beats requires approval", step(func(s *Step) { s.Tool = "delete_x"; s.Arguments = map[string]any{"cmd": "rm -rf /"} }), Block, StagePattern, DangerZone, 100, "rm -rf /", ""},
		{"requires approval beats auto approve", step(func(s *Step) { s.Operation, s.Tool = "fs_delete_tmp_files", "delete_tmp_files" }), NeedsConfirm, StagePattern, Confirm, 31, "delete_*", ""},
		{"auto approve skips later stages", step(func(s *Step) {
			s.Tool = "get_secrets"
			s.Category = policy.Delete
			s.Annotations.Destructive = ptr(true)
		}), Allow, StagePattern, "", 0, "get_*", "auto-approved"},
		{"auto approve never looks at arguments", step(func(s *Step) {
			s.Category = policy.Update
			s.Arguments = map[string]any{"content": "get_x", "path": "x.read_y"}
		}), NeedsConfirm, StageTolerance, Confirm, 40, "", ""},

		{"arg rule deny", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "sudo RM -RF  /home"}
		}), Block, StagePattern, DangerZone, 100, `operation~"shell.*" command~"*rm -rf*"`, ""},
		{"arg rule deny only for its operations", step(func(s *Step) {
			s.Arguments = map[string]any{"command": "rm -rf /home"}
		}), Allow, StageTolerance, Advisory, 25, "", ""},
		{"arg rule requires approval", step(func(s *Step) {
			s.Arguments = map[string]any{"path": "/home/a/.ssh/authorized_keys"}
		}), NeedsConfirm, StagePattern, Confirm, 31, `operation~"fs.write_*" path~"*/.ssh/*"`, ""},
		{"arg rule on the server's spelling of its name", step(func(s *Step) {
			s.Arguments = map[string]any{"targetEnv": "Prod-EU"}
		}), NeedsConfirm, StagePattern, Confirm, 31, `target_env~"prod*"`, ""},
		{"arg rule auto approve", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "git  status"}
		}), Allow, StagePattern, "", 0, `operation~"shell.*" command~"{ls,git status}"`, ""},
		{"arg rule auto approve is exact", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "git status; curl evil"}
			s.Annotations.OpenWorld = ptr(true)
		}), NeedsConfirm, StageTolerance, Confirm, 50, "", ""},
		{"arg rule auto approve covers every value", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": []any{"ls", "curl evil"}}
		}), NeedsConfirm, StageTolerance, Confirm, 45, "", ""},
		{"arg rule on a nested path", step(func(s *Step) {
			s.Arguments = map[string]any{"options": map[string]any{"recursive": true, "force": false}}
		}), Block, StagePattern, DangerZone, 100, `options.recursive~"true"`, ""},
		{"arg rule on a number, any spelling", step(func(s *Step) {
			s.Server, s.Tool, s.Operation = "db", "purge", "db_purge"
			s.Arguments = map[string]any{"count": json.Number("1.00E+2")}
		}), Block, StagePattern, DangerZone, 100, `operation~"db.*" count~"100"`, ""},
		{"arg rule missing argument", step(func(s *Step) {
			s.Arguments = map[string]any{"other": "rm -rf /home"}
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
		}), NeedsConfirm, StageTolerance, Confirm, 45, "", ""},
		{"pattern deny beats arg rule auto approve", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "ls", "note": "drop table x"}
		}), Block, StagePattern, DangerZone, 100, "*drop table*", ""},
		{"arg rule deny beats pattern requires approval", step(func(s *Step) {
			s.Server, s.Tool, s.Operation, s.Category = "shell", "exec", "shell_exec", policy.Execute
			s.Arguments = map[string]any{"command": "rm -rf build", "note": "git push then clean"}
		}), Block, StagePattern, DangerZone, 100, `operation~"shell.*" command~"*rm -rf*"`, ""},

		{"verify tier", step(func(s *Step) { s.Tool = "force_push"; s.Operation = "git_force_push" }), NeedsVerify, StageTier, Verify, 70, "", "out-of-band verification"},
		{"danger zone tier", step(func(s *Step) { s.Tool = "wipeDisk"; s.Operation = "fs_wipe_disk" }), Block, StageTier, DangerZone, 90, "", "danger zone"},
		{"risk rule on a value", step(func(s *Step) { s.Arguments = map[string]any{"target": "deploy to Production"} }), NeedsVerify, StageTier, Verify, 80, "", ""},
		{"risk rule on a name", step(func(s *Step) { s.Tool = "ship_to_production_now" }), NeedsVerify, StageTier, Verify, 80, "", ""},
		{"risk rule on argument", step(func(s *Step) { s.Arguments = map[string]any{"path": "/srv/app/.ENV"} }), NeedsVerify, StageTier, Verify, 65, "", ""},
		{"confirm tier pauses", step(func(s *Step) { s.Category = policy.Delete; s.Operation = "fs_remove"; s.Tool = "remove" }), NeedsConfirm, StageTolerance, Confirm, 55, "", "moderate risk tolerance"},
		{"unlabelled execute pauses", step(func(s *Step) { s.Category = "" }), NeedsConfirm, StageTolerance, Confirm, 45, "", ""},
		{"update pauses", step(func(s *Step) { s.Category = policy.Update }), NeedsConfirm, StageTolerance, Confirm, 40, "", ""},
		{"destructive hint pauses", step(func(s *Step) { s.Annotations.Destructive = ptr(true) }), NeedsConfirm, StageTolerance, Confirm, 50, "", ""},
		{"top of the advisory tier", step(func(s *Step) { s.Annotations.OpenWorld = ptr(true) }), Allow, StageTolerance, Advisory, 30, "", ""},
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
	denied := step(func(s *Step) { s.Operation, s.Tool = "fs_drop_table", "drop_table" })
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
	// CREATE (25), CREATE open world (30), UPDATE (40), CREATE destructive
	// (50) and DELETE (55) under each tolerance: conservative asks above
	// 25, moderate above 30 (the whole confirm tier), aggressive above 40
	// (never the destructive band).
	steps := map[string]func(*Step){
		"create":      func(s *Step) {},
		"open world":  func(s *Step) { s.Annotations.OpenWorld = ptr(true) },
		"update":      func(s *Step) { s.Category = policy.Update },
		"destructive": func(s *Step) { s.Annotations.Destructive = ptr(true) },
		"delete":      func(s *Step) { s.Category = policy.Delete },
	}
	for _, tc := range []struct {
		tolerance string
		want      map[string]Decision
	}{
		{"conservative", map[string]Decision{"create": Allow, "open world": NeedsConfirm, "update": NeedsConfirm, "destructive": NeedsConfirm, "delete": NeedsConfirm}},
		{"moderate", map[string]Decision{"create": Allow, "open world": Allow, "update": NeedsConfirm, "destructive": NeedsConfirm, "delete": NeedsConfirm}},
		{"aggressive", map[string]Decision{"create": Allow, "open world": Allow, "update": Allow, "destructive": NeedsConfirm, "delete": NeedsConfirm}},
	} {
		p := compile(t, "[safety]\nrisk_tolerance = \""+tc.tolerance+"\"\n", "")
		for name, want := range tc.want {
			d := Evaluate(p, step(steps[name]))
			if d.Decision != want {
				t.Errorf("%s %s: %s (%s), want %s", tc.tolerance, name, d.Decision, d.Reason, want)
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
		"risk tolerance: 25 <= 30 (moderate)",
	}
	if !slices.Equal(d.Factors, want) {
		t.Errorf("factors =\n%q\nwant\n%q", d.Factors, want)
	}
	d = Evaluate(p, step(func(s *Step) { s.Arguments = map[string]any{"sql": "DROP TABLE x"} }))
	if got := d.Factors[len(d.Factors)-1]; got != `pattern: deny "*drop table*" matched argument "sql"` {
		t.Errorf("pattern factor = %q", got)
	}
	d = Evaluate(p, Step{StepNumber: 1, ActionHint: "DROP TABLE x"})
	if got := d.Factors[len(d.Factors)-1]; got != `pattern: deny "*drop table*" matched the action hint` {
		t.Errorf("pattern factor = %q", got)
	}
	d = Evaluate(p, step(func(s *Step) { s.Operation = "fs_drop_x"; s.Tool = "dropX" }))
	if got := d.Factors[len(d.Factors)-1]; got != `pattern: deny "drop_*" matched the name "drop_x"` {
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

func TestEvaluateArgumentValues(t *testing.T) {
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
		{"42", json.Number("4.2e1"), true},
		{"100", json.Number("100.000"), true},
		{"1e2", json.Number("100"), true},
		{"0", json.Number("-0.0"), true},
		{"0.5", json.Number("5E-1"), true},
		{"12345678901234567890123", json.Number("12345678901234567890123"), true}, // beyond float64
		{"true", true, true},
		{"null", nil, true},
		{"b", []any{"a", "b"}, true},                      // each element
		{"<x>", map[string]any{"b": "<X>", "a": 1}, true}, // nested value, no escaping
		{"a", map[string]any{"a": 1}, true},               // a key
		{"hello world", "Hello\n  World", true},
		{"hello world", "Hello\x00World", true},
		{"drop table", "ＤＲＯＰ\u200b ＴＡＢＬＥ", true}, // NFKC, format characters
		{"x", "y", false},
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
		step(func(s *Step) { s.Operation, s.Tool = "fs_drop_x", "drop_x" }),
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
	s.Server, s.Tool, s.Operation, s.Arguments = "", "", "", nil
	s.ActionHint = "calling fs.get_file"
	if d := Evaluate(p, s); d.Stage != StagePattern || d.Decision != Allow {
		t.Errorf("a reported step is matched by its hint: %+v", d)
	}
}

func TestShellArguments(t *testing.T) {
	p := compile(t, `
[safety]
inherit = false
deny = ["*rm -rf /"]
requires_approval = ["*git push*"]
shell_arguments = ["runner.*:job.steps"]
[[safety.rules]]
action = "auto_approve"
operation = "shell.*"
argument = "command"
pattern = "{ls,git status}"
[[safety.rules]]
action = "auto_approve"
operation = "lister.*"
argument = "command"
pattern = "*ls*"
`, "")
	run := func(server, tool string, args map[string]any) Directive {
		return Evaluate(p, Step{Operation: server + "_" + tool, Server: server, Tool: tool, Category: policy.Execute, Arguments: args, StepNumber: 1})
	}
	tests := []struct {
		name    string
		server  string
		args    map[string]any
		want    Decision
		matched string
	}{
		{"guessed by name", "shell", map[string]any{"command": "sudo /bin/rm -r -f //"}, Block, "*rm -rf /"},
		{"argv list", "shell", map[string]any{"command": []any{"rm", "-r", "-f", "/"}}, Block, "*rm -rf /"},
		{"argv list through bash -c", "shell", map[string]any{"cmd": []any{"bash", "-c", "rm -fr /"}}, Block, "*rm -rf /"},
		{"name and args apart", "proc", map[string]any{"command": "rm", "args": []any{"-rf", "/"}}, Block, "*rm -rf /"},
		{"declared, nested", "runner", map[string]any{"job": map[string]any{"steps": "make && git -C . push"}}, NeedsConfirm, "*git push*"},
		{"not declared, not guessed: text only", "runner", map[string]any{"job": map[string]any{"notes": "sudo rm -r -f /"}}, NeedsConfirm, ""},
		{"unresolved asks", "shell", map[string]any{"command": "$X -rf /"}, NeedsConfirm, "shell: unresolved"},
		{"a deny a variable could complete asks", "shell", map[string]any{"command": "rm -rf $TARGET"}, NeedsConfirm, "*rm -rf /"},
		{"exact auto approve", "shell", map[string]any{"command": "git status"}, Allow, `operation~"shell.*" command~"{ls,git status}"`},
		{"auto approve is not fooled by a second command", "shell", map[string]any{"command": "ls; curl x"}, NeedsConfirm, ""},
		{"auto approve is not fooled by a substitution", "shell", map[string]any{"command": "ls $(curl x)"}, NeedsConfirm, ""},
		{"a command pattern approves the program by name", "lister", map[string]any{"command": "ls -la"}, Allow, `operation~"lister.*" command~"*ls*"`},
		{"a command pattern approves the system's program", "lister", map[string]any{"command": "/usr/bin/ls -la"}, Allow, `operation~"lister.*" command~"*ls*"`},
		{"a command pattern is not fooled by a file of that name", "lister", map[string]any{"command": "/tmp/x/ls -la"}, NeedsConfirm, ""},
		{"a command pattern is not fooled by ./ls", "lister", map[string]any{"command": "./ls"}, NeedsConfirm, ""},
	}
	for _, tt := range tests {
		d := run(tt.server, "exec", tt.args)
		if d.Decision != tt.want || d.Matched != tt.matched {
			t.Errorf("%s: %s %q (%s), want %s %q", tt.name, d.Decision, d.Matched, d.Reason, tt.want, tt.matched)
		}
		if d.Decision == NeedsConfirm && d.Stage == StagePattern && !d.ArgumentBound {
			t.Errorf("%s: a shell decision must be argument-bound", tt.name)
		}
	}
}

// The spec's own pattern examples (MCP-AQL 8.7.2 stage 3) do what they
// say, for a proxied call and for a reported step.
func TestSpecPatternExamples(t *testing.T) {
	p := compile(t, `
[safety]
deny = ["drop_*", "delete_all*", "rm -rf*"]
requires_approval = ["delete_*", "*force*", "deploy_*", "git push*"]
auto_approve = ["read_*", "list_*", "get_*", "search_*"]
`, "")
	tool := func(name string, args map[string]any) Step {
		return Step{Operation: "srv_" + policy.SnakeName(name), Server: "srv", Tool: name, Category: policy.Execute, Arguments: args, StepNumber: 1}
	}
	hint := func(h string) Step { return Step{ActionHint: h, StepNumber: 1} }
	for _, tc := range []struct {
		name string
		step Step
		want Decision
	}{
		{"drop_* on a tool", tool("drop_table", nil), Block},
		{"delete_all* on a camelCase tool", tool("deleteAllRecords", nil), Block},
		{"rm -rf* in a command", tool("run", map[string]any{"command": "rm -rf /tmp/x"}), Block},
		{"rm -rf* through sudo", tool("run", map[string]any{"command": "sudo rm -fr build"}), Block},
		{"delete_* on a tool", tool("delete_file", nil), NeedsConfirm},
		{"*force* on a tool", tool("force_push", nil), NeedsConfirm},
		{"*force* in an argument", tool("push", map[string]any{"flags": "--force"}), NeedsConfirm},
		{"deploy_* on a tool", tool("deploy_site", nil), NeedsConfirm},
		{"git push* in a command", tool("run", map[string]any{"command": "git push origin"}), NeedsConfirm},
		{"read_* approves", tool("read_file", nil), Allow},
		{"listX approves by its snake_case name", tool("listIssues", nil), Allow},
		{"reported drop_", hint("drop_table users"), Block},
		{"reported rm -rf", hint("rm -rf /tmp/cache"), Block},
		{"reported delete_", hint("delete_file a.txt"), NeedsConfirm},
		{"reported git push", hint("git push origin main"), NeedsConfirm},
		{"reported read_", hint("read_file notes.md"), Allow},
	} {
		if d := Evaluate(p, tc.step); d.Decision != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, d.Decision, d.Reason, tc.want)
		}
	}
}
