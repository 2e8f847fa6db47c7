package policy

import (
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// interpreter_code is read, checked with lines and merged like the other
// scalars of [safety].
func TestInterpreterCodeKey(t *testing.T) {
	checkErrors(t, parseErrors(t, "[safety]\nloop = \"enforcing\"\ninterpreter_code = \"block\"\n"),
		[]want{{3, "safety.interpreter_code", `"block" is not valid; use "ask", "deny", "refuse" or "allow"`}})
	checkErrors(t, parseErrors(t, "[safety]\ninterpreter_code = 1\n"),
		[]want{{2, "safety.interpreter_code", "expected a string, got an integer"}})
	checkErrors(t, parseErrors(t, "[agents.ci]\nrisk_tolerance = \"moderate\"\ninterpreter_code = \"\"\n"),
		[]want{{3, "agents.ci.interpreter_code", `"" is not valid`}})

	for _, tt := range []struct {
		doc, agent string
		want       InterpreterCode
	}{
		{"", "", CodeAsk},
		{"[safety]\ninterpreter_code = \"deny\"\n", "", CodeDeny},
		{"[safety]\ninterpreter_code = \"allow\"\n", "", CodeAllow},
		{"[safety]\ninterpreter_code = \"deny\"\n[agents.ci]\ninterpreter_code = \"ask\"\n", "ci", CodeAsk},
		{"[safety]\ninterpreter_code = \"deny\"\n[agents.ci]\ninterpreter_code = \"ask\"\n", "other", CodeDeny},
	} {
		cfg, err := Parse([]byte(tt.doc), "t.toml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(cfg, tt.agent)
		if err != nil {
			t.Fatal(err)
		}
		if p.InterpreterCode != tt.want {
			t.Errorf("%q as %q: %q, want %q", tt.doc, tt.agent, p.InterpreterCode, tt.want)
		}
	}
	// A hand-built config gets the default.
	p, err := Compile(&config.Config{}, "")
	if err != nil || p.InterpreterCode != CodeAsk {
		t.Errorf("Compile(&Config{}) = %v, %v", p.InterpreterCode, err)
	}
}

// The default leaves a policy's version as it was; another value is
// another policy.
func TestInterpreterCodeVersion(t *testing.T) {
	version := func(doc string) string {
		cfg, err := Parse([]byte(doc), "t.toml")
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		return p.Version
	}
	base := version("[safety]\ndeny = [\"x\"]\n")
	if v := version("[safety]\ndeny = [\"x\"]\ninterpreter_code = \"ask\"\n"); v != base {
		t.Errorf("explicit ask changed the version")
	}
	if v := version("[safety]\ndeny = [\"x\"]\ninterpreter_code = \"deny\"\n"); v == base {
		t.Errorf("deny kept the version")
	}
}
