package policy

import (
	"strings"
	"testing"
)

func TestLint(t *testing.T) {
	tools := []Tool{
		{Server: "fs", Name: "read_file", Operation: "fs_read_file", Arguments: []string{"path"}},
		{Server: "fs", Name: "writeFile", Operation: "fs_write_file", Arguments: []string{"path", "content"}},
		{Server: "shell", Name: "exec", Operation: "shell_exec", Arguments: []string{"cmd"}},
	}
	tests := []struct {
		name  string
		doc   string
		tools []Tool
		want  []string // substrings, one per finding, in order
	}{
		{"clean", "[safety]\ndeny = [\"drop_*\"]\nauto_approve = [\"read_*\"]\n", nil, nil},
		{"text auto_approve", "[safety]\nauto_approve = [\"*.env\", \"*read file*\"]\n", nil,
			[]string{`safety.auto_approve[1]: warning: "*read file*" is a text pattern`}},
		{"dot first", "[safety]\ndeny = [\".drop\"]\n", nil, []string{`can match no name`}},
		{"text operation", "[safety]\n[[safety.rules]]\naction = \"deny\"\noperation = \"shell exec\"\nargument = \"cmd\"\npattern = \"x\"\n", nil,
			[]string{`is not a name pattern`}},
		{"risk rule on a file name without argument", "[[safety.risk_rules]]\npattern = \"*.env\"\nscore = 70\n", nil,
			[]string{`set argument = "path"`}},
		{"shadowed risk rule, statically", "[safety]\nauto_approve = [\"read_*\"]\n[[safety.risk_rules]]\npattern = \"*.env\"\nargument = \"path\"\nscore = 70\n", nil,
			[]string{`auto_approve "read_*" (safety.auto_approve[0]) decides first`}},
		{"dead name against the tools", "[safety]\ndeny = [\"drop_*\", \"write_*\"]\n", tools,
			[]string{`"drop_*" matches none of the 3 tools`}},
		{"argument no tool declares", "[[safety.rules]]\naction = \"deny\"\noperation = \"shell.*\"\nargument = \"command\"\npattern = \"x\"\n", tools,
			[]string{`declares an argument "command"`}},
		{"argument in the server's spelling", "[[safety.rules]]\naction = \"deny\"\noperation = \"*.write*\"\nargument = \"Path\"\npattern = \"x\"\n", tools, nil},
		{"shadowed risk rule, against the tools", "[safety]\nauto_approve = [\"read_*\"]\n[[safety.risk_rules]]\npattern = \"*.env\"\nargument = \"path\"\nscore = 70\n", tools,
			[]string{`decides first for fs.read_file`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.doc), "p.toml")
			if err != nil {
				t.Fatal(err)
			}
			got := Lint(cfg, cfg.Agent, tt.tools)
			if len(got) != len(tt.want) {
				t.Fatalf("findings %v, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i].Error(), w) || got[i].Line == 0 {
					t.Errorf("finding %q lacks %q (or its line)", got[i].Error(), w)
				}
			}
		})
	}
}

func TestDefaultAndExampleLintClean(t *testing.T) {
	for _, cfg := range []*Config{Default(), mustLoad(t, "../config.example.toml")} {
		for _, p := range []string{cfg.Agent, "ci-bot"} {
			if w := Lint(cfg, p, nil); len(w) > 0 {
				t.Errorf("%s (%s): %v", cfg.Path, p, w)
			}
		}
	}
}

func mustLoad(t *testing.T, path string) *Config {
	t.Helper()
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
