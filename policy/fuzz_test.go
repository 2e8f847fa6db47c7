package policy

import (
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/fixture/exampleconfig"

	"errors"
	"os"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, path := range []string{"../config.example.toml", "default.toml"} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	if data, err := exampleconfig.WithExamples(); err == nil {
		f.Add(data)
	}
	for _, s := range []string{
		"",
		"mode = \"all\"\nmode = \"x\"\n",
		"[safety\n",
		"[[servers]]\nname = \"a\"\n[servers.env]\nA = 1\n[[servers]]\nextra = 2\n",
		"[servers]\n[safety.deny]\n[[safety]]\n",
		"[agents.\"a.b\"]\nci.loop = 1\n[[agents.x.rules]]\npattern = \"{\"\n",
		"safety = { deny = [\"a\", 1, [2]], rules = [{ action = \"deny\", x = 1 }] }\n",
		"[limits]\nmax_request_size = 99999999999999999999\nmax_nesting_depth = -1\n",
		"[verify]\ntimeout = \"x\"\ncommand = [[1]]\n",
		"[[servers]]\nname = \"a\"\nurl = \"http://[::1\"\ncategories = { \"\" = \"read\" }\n",
		"a.b.c.d = 1\n\"\\u0000\" = 2\n",
		"[safety]\ndeny = '''\nmulti\nline'''\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.toml")
		if err == nil {
			if cfg == nil {
				t.Fatal("nil config and nil error")
			}
			// A config that parsed compiles for its own agent and every
			// agent table it declares.
			if _, err := Compile(cfg, ""); err != nil {
				t.Fatalf("parsed config does not compile: %v", err)
			}
			for name := range cfg.Agents {
				if _, err := Compile(cfg, name); err != nil {
					t.Fatalf("agent %q does not compile: %v", name, err)
				}
			}
			return
		}
		if cfg != nil {
			t.Fatal("config returned with an error")
		}
		var errs config.Errors
		if !errors.As(err, &errs) || len(errs) == 0 {
			t.Fatalf("error is not a non-empty Errors: %#v", err)
		}
		for _, e := range errs {
			if strings.HasPrefix(e.Msg, "internal error") {
				t.Fatalf("recovered panic: %s", e.Msg)
			}
			if e.Msg == "" || e.File != "fuzz.toml" {
				t.Fatalf("malformed error %+v", e)
			}
		}
	})
}
