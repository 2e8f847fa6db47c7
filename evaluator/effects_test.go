package evaluator

import (
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// defaultPolicy is the embedded defaults, compiled: what a new user runs.
func defaultPolicy(t testing.TB) *policy.Policy {
	t.Helper()
	p, err := policy.Compile(policy.Default(), "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func effects(t testing.TB, text string) policy.Effects {
	t.Helper()
	e, err := policy.ParseEffects(text)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEffectsDecide (issue 29, item 1): under the default policy a
// modelled tool is judged by what it does, whatever its name or its
// server's annotations say.
func TestEffectsDecide(t *testing.T) {
	p := defaultPolicy(t)
	yes := true
	cases := []struct {
		name     string
		tool     string
		effects  string
		source   policy.EffectSource
		readOnly bool
		roles    map[string]policy.Role
		args     map[string]any
		want     Decision
	}{
		{"a read runs", "read_text_file", "read", policy.SourceProfile, false,
			map[string]policy.Role{"path": policy.RolePath}, map[string]any{"path": "/proj/a.txt"}, Allow},
		{"a write runs (its place is judged apart)", "write_file", "write", policy.SourceProfile, false,
			map[string]policy.Role{"path": policy.RolePath, "content": policy.RoleContent},
			map[string]any{"path": "/proj/a.txt", "content": "DROP TABLE users; rm -rf --force"}, Allow},
		{"sending data out runs under moderate", "fetch", "send", policy.SourceProfile, false,
			map[string]policy.Role{"url": policy.RoleURL}, map[string]any{"url": "https://go.dev/doc"}, Allow},
		{"a tool that does nothing runs", "echo", "none", policy.SourceProfile, false, nil, map[string]any{}, Allow},
		{"deleting asks", "delete_entities", "delete", policy.SourceProfile, false, nil, map[string]any{}, NeedsConfirm},
		{"running a command asks, whatever the name and readOnlyHint say", "get_info", "read, execute", policy.SourceSchema, true,
			map[string]policy.Role{"command": policy.RoleCommand}, map[string]any{"command": "ls"}, NeedsConfirm},
		{"the same with a catastrophic command blocks", "check_status", "read, execute", policy.SourceSchema, true,
			map[string]policy.Role{"command": policy.RoleCommand}, map[string]any{"command": "rm -rf ~"}, Block},
		{"what could do anything asks, readOnlyHint or not", "show_stuff", "unknown", policy.SourceUnknown, true, nil,
			map[string]any{}, NeedsConfirm},
		{"a guess from the name is only a guess, but a read guess runs", "list_things", "read", policy.SourceGuess, false, nil,
			map[string]any{}, Allow},
		{"an extra path sent to a command runner does not make its text content", "exec", "execute", policy.SourceSchema, false,
			map[string]policy.Role{"content": policy.RoleOther}, map[string]any{"content": "rm -rf ~", "path": "/tmp/x"}, Block},
		{"an undeclared argument named like a command is still seen", "show", "read", policy.SourceSchema, false,
			map[string]policy.Role{"id": policy.RoleIdentifier}, map[string]any{"id": "1", "command": "mkfs.ext4 /dev/sda"}, Block},
		{"searching for text that names a danger runs nothing", "search_files", "read", policy.SourceProfile, false,
			map[string]policy.Role{"path": policy.RolePath, "pattern": policy.RoleQuery},
			map[string]any{"path": "/proj", "pattern": "drop table"}, Allow},
		{"the same query to a tool that writes asks", "run_query", "read, write", policy.SourceProfile, false,
			map[string]policy.Role{"sql": policy.RoleQuery}, map[string]any{"sql": "DROP TABLE users"}, NeedsConfirm},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Step{Principal: "default", Operation: "srv_" + c.tool, Server: "srv", Tool: c.tool, Category: policy.Read,
				Effects: effects(t, c.effects), EffectSource: c.source, Roles: c.roles, Modeled: true, Arguments: c.args, StepNumber: 1}
			if c.readOnly {
				s.Annotations.ReadOnly = &yes
			}
			d := Evaluate(p, s)
			if d.Decision != c.want {
				t.Errorf("%s, want %s: %s %v", d.Decision, c.want, d.Reason, d.Factors)
			}
		})
	}
}

// TestUnmodelledStepsKeepTheirCategory: a step without an effect model
// (a reported step, a policy test case) is scored by its category, as
// before.
func TestUnmodelledStepsKeepTheirCategory(t *testing.T) {
	p := defaultPolicy(t)
	d := Evaluate(p, Step{Principal: "default", Operation: "srv_update_thing", Server: "srv", Tool: "update_thing",
		Category: policy.Update, StepNumber: 1})
	if d.Risk != 40 || d.Decision != NeedsConfirm {
		t.Errorf("an UPDATE without a model: risk %d, %s", d.Risk, d.Decision)
	}
}
