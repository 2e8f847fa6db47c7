package evaluator

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
	"github.com/aqlguard/aqlguard/policy/paths"
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
		// Its command argument is parsed as a shell command line (the name
		// and the value say so).
		"nomatch": {
			Operation: "shell_exec", Server: "shell", Tool: "exec", Category: policy.Execute,
			StepNumber: 5, Arguments: map[string]any{"command": "go test ./...", "timeout": json.Number("120")},
		},
		// Matches the first deny pattern by name.
		"deny": {
			Operation: "drop_0_table", Server: "db", Tool: "drop_0_table", Category: policy.Delete,
			StepNumber: 5,
		},
		// A file write: no shell, a few string values.
		"write": {
			Operation: "fs_write_file", Server: "fs", Tool: "write_file", Category: policy.Update,
			StepNumber: 5, Arguments: map[string]any{"path": "/home/alice/notes/todo.md", "content": strings.Repeat("- buy milk\n", 20)},
		},
		// A 4 KiB shell script.
		"script4k": {
			Operation: "shell_exec", Server: "shell", Tool: "exec", Category: policy.Execute,
			StepNumber: 5, Arguments: map[string]any{"command": strings.Repeat("cd /srv/app && make test || echo failed; ", 100)},
		},
	}
	for _, n := range []int{10, 100, 1000} {
		indexed := benchPolicy(b, n)
		for _, name := range []string{"nomatch", "deny", "write", "script4k"} {
			s := steps[name]
			// index=off is the plain scan of every list, the baseline the
			// pattern indexes are measured against in the same run.
			// memo=off is the indexed policy without its per-tool memo.
			for _, v := range []struct {
				label string
				p     *policy.Policy
			}{{"index=on/memo=on", indexed}, {"index=on/memo=off", indexed.WithoutToolMemo()}, {"index=off", indexed.WithoutIndexes()}} {
				b.Run(fmt.Sprintf("patterns=%d/%s/%s", n, name, v.label), func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						_ = Evaluate(v.p, s)
					}
				})
			}
		}
	}
}

// BenchmarkSubjects is the cost of extracting and folding the subjects of
// a call, before any pattern is matched.
func BenchmarkSubjects(b *testing.B) {
	for name, args := range map[string]map[string]any{
		"small": {"path": "/home/alice/notes/todo.md", "append": true},
		"4KiB":  {"path": "/tmp/x", "content": strings.Repeat("Lorem ipsum dolor sit amet. ", 146), "tags": []any{"a", "b"}},
		"nested": {"batch": []any{map[string]any{"sql": "select 1", "params": []any{json.Number("1"), "x"}},
			map[string]any{"sql": "update t set a = 2", "params": []any{}}}},
	} {
		s := Step{Operation: "fs_write_file", Server: "fs", Tool: "writeFile", Arguments: args}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = SubjectsOf(nil, s)
			}
		})
	}
}

// BenchmarkValueIndex is the scan of one argument value for the
// literals of every indexed list at 1,000 patterns.
func BenchmarkValueIndex(b *testing.B) {
	vi := benchPolicy(b, 1000).Indexes().Values
	set := make(policy.Candidates, vi.Words())
	for name, s := range map[string]string{
		"path":  "/home/alice/notes/todo.md",
		"shell": "cd /srv/app && make test || echo failed; git push origin main --force",
		"220B":  strings.TrimSpace(strings.Repeat("- buy milk ", 20)),
		"prose": strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. ", 3),
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				vi.Mark(s, set)
			}
		})
	}
}

// BenchmarkEvaluateNewCommands is nomatch with a command line the
// script memo has not seen at every decision: the cost of a command an
// agent runs for the first time.
func BenchmarkEvaluateNewCommands(b *testing.B) {
	p := benchPolicy(b, 1000)
	lines := make([]string, 2*maxMemoScripts) // cycling through more than the memo holds: every line is new to it
	for i := range lines {
		lines[i] = fmt.Sprintf("go test ./pkg%d/...", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = Evaluate(p, Step{
			Operation: "shell_exec", Server: "shell", Tool: "exec", Category: policy.Execute,
			StepNumber: 5, Arguments: map[string]any{"command": lines[i%len(lines)], "timeout": json.Number("120")},
		})
		i++
	}
}

// BenchmarkEvaluateDefaultPolicy is a decision under the embedded
// default policy, what a new user runs.
func BenchmarkEvaluateDefaultPolicy(b *testing.B) {
	p, err := policy.Compile(policy.Default(), "")
	if err != nil {
		b.Fatal(err)
	}
	for name, s := range map[string]Step{
		"read": {Operation: "fs_read_file", Server: "fs", Tool: "read_file", Category: policy.Read,
			StepNumber: 5, Arguments: map[string]any{"path": "/home/alice/notes/todo.md"}},
		"write": {Operation: "fs_write_file", Server: "fs", Tool: "write_file", Category: policy.Update,
			StepNumber: 5, Arguments: map[string]any{"path": "/home/alice/notes/todo.md", "content": strings.Repeat("- buy milk\n", 20)}},
		"shell": {Operation: "shell_exec", Server: "shell", Tool: "exec", Category: policy.Execute,
			StepNumber: 5, Arguments: map[string]any{"command": "go test ./...", "timeout": json.Number("120")}},
		// As the front hands a call of the filesystem server's profiled
		// read_text_file: its effect model and its path read as a place.
		"read modelled": modelledRead(),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Evaluate(p, s)
			}
		})
	}
}

// modelledRead is a read of the filesystem server as the front hands it
// to the guard: the profile's model and the path read as a place.
func modelledRead() Step {
	const path = "/home/alice/notes/todo.md"
	pl := paths.Canonical(path, "/home/alice", "/home/alice")
	return Step{Operation: "fs_read_text_file", Server: "fs", Tool: "read_text_file", Category: policy.Read, StepNumber: 5,
		Arguments: map[string]any{"path": path}, Modeled: true, Effects: policy.Effects(policy.EffectRead),
		EffectSource: policy.SourceProfile, EffectWhy: "reads a file (the filesystem profile)",
		Roles:  map[string]policy.Role{"path": policy.RolePath, "head": policy.RoleOther, "tail": policy.RoleOther},
		Places: []Place{{Arg: "path", Lexical: pl, Resolved: pl}}, Roots: []string{"/home/alice/notes"}, RootsKnown: true,
		Home: "/home/alice"}
}
