package evaluator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// benchPolicy builds a policy with n patterns in a realistic mix: 30% deny,
// 30% requires_approval, 30% auto_approve (prefix, suffix and infix globs,
// some with alternatives) and 10% argument rules.
func benchPolicy(b *testing.B, n int) *policy.Policy {
	b.Helper()
	var deny, approve, auto []string
	var rules strings.Builder
	for i := range n {
		switch i % 10 {
		case 0, 1, 2:
			deny = append(deny, []string{"drop_%d_*", "*.wipe%d_*", "*rm -rf /%d*"}[i%3])
		case 3, 4, 5:
			approve = append(approve, []string{"delete%d_*", "*.deploy%d_*", "*git push origin b%d*"}[i%3])
		case 6, 7, 8:
			auto = append(auto, []string{"get%d_*", "*.{list,search}%d_*", "read%d_*"}[i%3])
		case 9:
			fmt.Fprintf(&rules, "[[safety.rules]]\naction = %q\noperation = \"shell.*\"\nargument = \"command\"\npattern = \"*danger%d *\"\n",
				[]string{"deny", "requires_approval", "auto_approve"}[i%3], i)
		}
	}
	for _, l := range [][]string{deny, approve, auto} {
		for i := range l {
			if strings.Contains(l[i], "%d") {
				l[i] = fmt.Sprintf(l[i], i)
			}
		}
	}
	q := func(l []string) string { return "[\"" + strings.Join(l, "\", \"") + "\"]" }
	doc := fmt.Sprintf("[safety]\nmax_autonomous_steps = 1000\ndeny = %s\nrequires_approval = %s\nauto_approve = %s\n[[safety.risk_rules]]\npattern = \"*production*\"\nscore = 80\n%s",
		q(deny), q(approve), q(auto), rules.String())
	return compile(b, doc, "")
}

func BenchmarkEvaluate(b *testing.B) {
	steps := map[string]Step{
		// Matches nothing, so every pattern and rule is tried and the step
		// goes on to risk scoring.
		"nomatch": {
			Operation: "shell_exec", Server: "shell", Tool: "exec", Category: policy.Execute,
			ActionHint: "running the unit tests with go test ./...", StepNumber: 5,
			Arguments: map[string]any{"command": "go test ./...", "timeout": 120.0},
		},
		// Matches the first deny pattern.
		"deny": {
			Operation: "drop_0_table", Server: "db", Tool: "drop_0_table", Category: policy.Delete,
			ActionHint: "dropping table 0", StepNumber: 5,
		},
	}
	for _, n := range []int{10, 100, 1000} {
		p := benchPolicy(b, n)
		for _, name := range []string{"nomatch", "deny"} {
			s := steps[name]
			b.Run(fmt.Sprintf("patterns=%d/%s", n, name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					_ = Evaluate(p, s)
				}
			})
		}
	}
}
