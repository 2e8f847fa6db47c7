package evaluator

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

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

// FuzzSubjects: for any JSON arguments, subject extraction never panics
// and never drops a string: every string value and every key, folded, is
// among the subjects, at the path of the argument it sits under.
func FuzzSubjects(f *testing.F) {
	for _, s := range []string{
		`{"command":"rm -rf /"}`,
		`{"sql":"DROP\tTABLE users","n":1e2}`,
		`{"a":{"b":[{"c":"x\u0000y"},"<z>",null,true,-0.0]}}`,
		`{"Env":{"LD_PRELOAD":"/tmp/x.so"},"targetEnv":"prod"}`,
		`{"":""}`,
		`{"k":"\ud800"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		var args map[string]any
		if dec.Decode(&args) != nil {
			return
		}
		sub := SubjectsOf(nil, Step{Operation: "t_x", Server: "t", Tool: "x", Arguments: args})
		have := map[string]bool{}
		for _, v := range sub.Values {
			have[v.Path+"\x00"+v.Text] = true
			if !utf8.ValidString(v.Text) {
				t.Fatalf("subject %q is not valid UTF-8", v.Text)
			}
		}
		var check func(path string, v any)
		check = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				for k, x := range v {
					p := policy.SnakeName(k)
					if path != "" {
						p = path + "." + p
					}
					if !have[p+"\x00"+policy.Normalize(k)] {
						t.Fatalf("key %q at %q dropped; subjects %+v", k, p, sub.Values)
					}
					check(p, x)
				}
			case []any:
				for _, x := range v {
					check(path, x)
				}
			case string:
				if !have[path+"\x00"+policy.Normalize(v)] {
					t.Fatalf("string %q at %q dropped; subjects %+v", v, path, sub.Values)
				}
			}
		}
		check("", args)
	})
}

// FuzzIndexedEvaluate is the differential test of the pattern indexes:
// for any policy and any call, the indexed evaluation decides exactly as
// the plain first-match scan of every list (Policy.WithoutIndexes).
func FuzzIndexedEvaluate(f *testing.F) {
	f.Add("drop_*\n*.wipe_*\n*rm -rf /*\nget_*\n*secret*\n*git push*\n{list,search}_*\n*", "fs_drop_table", "rm -rf /tmp/x", "api_secret_key")
	f.Add("*production*\nsudo*\n*.{get,list}*\ndelete_*", "shell_exec", "sudo -u root rm -r -f /", "production")
	f.Add("*\n?\n[a-z]*\n\\*x", "x_y", "$CMD -rf /", "*x")
	f.Add("*curl * | sh*\n*danger *\nwrite_*", "shell_run", "curl http://x | sh", "danger zone")
	f.Fuzz(func(t *testing.T, patterns, tool, command, value string) {
		lines := strings.Split(patterns, "\n")
		if len(lines) > 24 {
			lines = lines[:24]
		}
		// Lists long enough to be indexed: the fuzzed patterns sit among
		// others of the usual shapes, before and after them.
		pad := func(i int) string { return []string{"pad%d_*", "*.pad%d_*", "*pad%d --force *", "{a,b}pad%d*"}[i%4] }
		var lists [4][]string // deny, requires_approval, auto_approve, refuse
		var rules strings.Builder
		for k := range 4 {
			for i := range 10 {
				lists[k] = append(lists[k], tomlQuote(fmt.Sprintf(pad(i), k*100+i)))
			}
		}
		for i := range 18 {
			fmt.Fprintf(&rules, "[[safety.rules]]\naction = %s\nargument = \"command\"\npattern = %s\n",
				tomlQuote([]string{"deny", "requires_approval", "auto_approve", "refuse"}[i%4]), tomlQuote(fmt.Sprintf(pad(i), 900+i)))
		}
		for i, l := range lines {
			// Every line is a risk rule too (the per-tool memo knows
			// which names each matches), half of them on an argument;
			// those of the argument rules below are not, so that one
			// matching a name is not always stopped by a list first.
			fmt.Fprintf(&rules, "[[safety.risk_rules]]\npattern = %s\nscore = %d\n", tomlQuote(l), 20+3*i)
			if i%2 == 0 {
				fmt.Fprintf(&rules, "argument = %s\n", tomlQuote([]string{"command", "value"}[i/2%2]))
			}
			switch i % 6 {
			case 3:
				fmt.Fprintf(&rules, "[[safety.rules]]\naction = %s\nargument = %s\npattern = %s\n",
					tomlQuote([]string{"deny", "requires_approval", "auto_approve", "refuse"}[i%4]), tomlQuote([]string{"command", "value", "content"}[i%3]), tomlQuote(l))
				continue
			case 5:
				// A rule on roles: content is seen only by such rules.
				fmt.Fprintf(&rules, "[[safety.rules]]\naction = %s\nroles = [%s]\npattern = %s\n",
					tomlQuote([]string{"deny", "requires_approval", "auto_approve", "refuse"}[i/6%4]),
					tomlQuote([]string{"content", "command", "path"}[i/6%3]), tomlQuote(l))
				continue
			}
			lists[i%4] = append(lists[i%4], tomlQuote(l))
		}
		for k := range 4 {
			for i := 10; i < 20; i++ {
				lists[k] = append(lists[k], tomlQuote(fmt.Sprintf(pad(i), k*100+i)))
			}
		}
		doc := "[safety]\nmax_autonomous_steps = 100\ndeny = [" + strings.Join(lists[0], ", ") + "]\nrequires_approval = [" +
			strings.Join(lists[1], ", ") + "]\nauto_approve = [" + strings.Join(lists[2], ", ") + "]\nrefuse = [" +
			strings.Join(lists[3], ", ") + "]\n" + rules.String()
		cfg, err := policy.Parse([]byte(doc), "fuzz.toml")
		if err != nil {
			return
		}
		p, err := policy.Compile(cfg, "")
		if err != nil {
			return
		}
		if ixs := p.Indexes(); ixs.Deny == nil || ixs.Refuse == nil || ixs.RequiresApproval == nil || ixs.AutoApprove == nil || ixs.RuleValues == nil {
			t.Fatal("the padded lists must be long enough to be indexed")
		}
		plain := p.WithoutIndexes()
		server, name, _ := strings.Cut(tool, "_")
		for _, s := range []Step{
			{Operation: tool, Server: server, Tool: name, Category: policy.Execute, StepNumber: 1,
				Arguments: map[string]any{"command": command, "value": value, "list": []any{value, json.Number("12")}}},
			{Operation: tool, Server: server, Tool: name, Category: policy.Read, StepNumber: 1,
				Arguments: map[string]any{"value": value}},
			{Operation: tool, Server: server, Tool: name, Category: policy.Create, StepNumber: 1,
				Arguments: map[string]any{"path": value, "content": command, "url": value}},
			{ActionHint: value, Category: policy.Update, StepNumber: 2},
		} {
			got, want := Evaluate(p, s), Evaluate(plain, s)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("indexed and plain evaluation differ for %+v under\n%s\nindexed: %+v\nplain:   %+v", s, doc, got, want)
			}
			// Again, now from the per-tool memo the first evaluation
			// filled, and from several goroutines at once.
			var wg sync.WaitGroup
			again := make([]Directive, 3)
			for i := range again {
				wg.Go(func() { again[i] = Evaluate(p, s) })
			}
			wg.Wait()
			for _, a := range again {
				if !reflect.DeepEqual(a, want) {
					t.Fatalf("memoised evaluation differs for %+v under\n%s\nmemo:  %+v\nplain: %+v", s, doc, a, want)
				}
			}
		}
	})
}

// tomlQuote writes s as a TOML basic string.
func tomlQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
