package policy_test

import (
	"testing"

	"github.com/aqlguard/aqlguard/evaluator"
	"github.com/aqlguard/aqlguard/policy"
)

// TestDefaultsStayOn is issue 29's item 8 as a user meets it, through the
// evaluator and only the API f3570ff had: there, a configuration file
// replaced the shipped rules, so a two-line file (an agent and a server)
// let `rm -rf /` through to the risk stages (one question, then it ran)
// and a drop_* tool was judged by its name alone. Now each call is
// decided by the shipped rule, whatever the file adds.
func TestDefaultsStayOn(t *testing.T) {
	const twoLines = "agent = \"me\"\n[[servers]]\nname = \"shell\"\ncommand = \"mcp-shell\"\n"
	rmRoot := map[string]any{"command": "rm -rf /"}
	tests := []struct {
		name, doc, tool string
		category        policy.Category
		args            map[string]any
		want, matched   string
	}{
		{"a two-line file keeps the shipped deny", twoLines, "run_command", policy.Execute, rmRoot, "blocks", "*rm -rf /"},
		{"and the shipped refuse", twoLines, "drop_table", policy.Delete, nil, "refuses", "drop_*"},
		{"and the shipped requires_approval", twoLines, "deploy_app", policy.Execute, map[string]any{"path": "/tmp/x"}, "asks", "deploy_*"},
		{"an auto_approve of the file does not lift a shipped deny",
			twoLines + "[safety]\nauto_approve = [\"shell.*\"]\n", "run_command", policy.Execute, rmRoot, "blocks", "*rm -rf /"},
		{"nor a shipped requires_approval",
			twoLines + "[safety]\nauto_approve = [\"deploy_*\"]\n", "deploy_app", policy.Execute, nil, "asks", "deploy_*"},
		{"nor an agent table's auto_approve rule",
			twoLines + "[[agents.me.rules]]\naction = \"auto_approve\"\nargument = \"command\"\npattern = \"*\"\n",
			"run_command", policy.Execute, rmRoot, "blocks", "*rm -rf /"},
		{"a file's own restriction is added", twoLines + "[safety]\nrefuse = [\"*shutdown*\"]\n",
			"run_command", policy.Execute, map[string]any{"command": "shutdown -h now"}, "refuses", "*shutdown*"},
		{"inherit = false starts from nothing", twoLines + "[safety]\ninherit = false\n",
			"run_command", policy.Execute, rmRoot, "asks", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := policy.Parse([]byte(tt.doc), "config.toml")
			if err != nil {
				t.Fatal(err)
			}
			p, err := policy.Compile(cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			d := evaluator.Evaluate(p, evaluator.Step{Principal: "me", StepNumber: 1, Server: "shell", Tool: tt.tool,
				Operation: "shell_" + tt.tool, Category: tt.category, Arguments: tt.args})
			if d.Outcome() != tt.want || d.Matched != tt.matched {
				t.Errorf("%s: %s by %q, want %s by %q (%v)", tt.tool, d.Outcome(), d.Matched, tt.want, tt.matched, d.Factors)
			}
		})
	}
}
