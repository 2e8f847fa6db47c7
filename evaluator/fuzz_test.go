package evaluator

import (
	"reflect"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

func FuzzEvaluate(f *testing.F) {
	modes := []string{"enforcing", "monitoring", "logging", "disabled"}
	policies := make([]*policy.Policy, len(modes))
	for i, m := range modes {
		policies[i] = compile(f, testPolicy+"\n[agents.fuzz]\nloop = \""+m+"\"\n", "fuzz")
	}
	f.Add(uint8(0), "fs_write_file", "fs", "write_file", "CREATE", "calling write_file", "command", "rm -rf /", "", 1, uint8(0))
	f.Add(uint8(1), "db_drop_table", "db", "dropTable", "DELETE", "DROP TABLE x", "path", "/a/.env", "failure", 3, uint8(7))
	f.Add(uint8(0), "shell_exec", "shell", "exec", "EXECUTE", "", "command", "git status", "success", 11, uint8(0))
	f.Add(uint8(2), "", "", "", "", "", "", "", "", 0, uint8(255))
	f.Add(uint8(0), "x", "shell", "force_push", "read", "deploy to production", "options", `{"recursive":true}`, "skipped", -5, uint8(3))
	f.Fuzz(func(t *testing.T, mode uint8, op, server, tool, category, hint, argName, argValue, outcome string, stepNumber int, ann uint8) {
		p := policies[int(mode)%len(policies)]
		bit := func(i uint) *bool {
			switch (ann >> (2 * i)) & 3 {
			case 1:
				return ptr(true)
			case 2:
				return ptr(false)
			}
			return nil
		}
		s := Step{
			Principal: "fuzz", Operation: op, Server: server, Tool: tool,
			Category:    policy.Category(category),
			Annotations: Annotations{ReadOnly: bit(0), Destructive: bit(1), Idempotent: bit(2), OpenWorld: bit(3)},
			Arguments:   map[string]any{argName: argValue, "n": float64(stepNumber), "list": []any{argValue, true}},
			ActionHint:  hint, Outcome: outcome, StepNumber: stepNumber,
		}
		d := Evaluate(p, s)
		checkInvariants(t, p, s, d)
		if again := Evaluate(p, s); !reflect.DeepEqual(d, again) {
			t.Fatalf("not deterministic:\n%+v\n%+v", d, again)
		}
		score, factors := Risk(p, s)
		if score < 0 || score > 100 || len(factors) == 0 {
			t.Fatalf("Risk = %d, %q", score, factors)
		}
	})
}
