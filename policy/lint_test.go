package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/config"
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
		// The shipped auto_approve entries decide first too (issue 29, item 8).
		{"shadowed by a shipped auto_approve, against the tools", "[[safety.risk_rules]]\npattern = \"*.env\"\nargument = \"path\"\nscore = 70\n", tools,
			[]string{`auto_approve "read_*" (default.toml safety.auto_approve[0]) decides first for fs.read_file`}},
		{"but not statically", "[[safety.risk_rules]]\npattern = \"*.env\"\nargument = \"path\"\nscore = 70\n", nil, nil},
		// A wait for a human the client would not sit out (issue 31, item 2).
		{"a wait longer than the client's", "[verify]\ntimeout = \"2m\"\ninline_wait = \"59s\"\n", nil,
			[]string{`verify.timeout: warning: 2m0s is not below the 1m0s most MCP clients wait for a call`}},
		{"an inline wait as long as the client's", "[verify]\ninline_wait = \"60s\"\n", nil,
			[]string{`verify.inline_wait: warning: 1m0s is not below`}},
		{"nor with inherit = false", "[safety]\ninherit = false\n[[safety.risk_rules]]\npattern = \"*.env\"\nargument = \"path\"\nscore = 70\n", tools, nil},
		// Names that collide (issue 19, item 4).
		{"a server named like a verb", "[safety]\nauto_approve = [\"search_*\"]\n" + serverTables("fs", "search"), nil,
			[]string{`servers[1].name: warning: the server name "search" is also a verb of tool names`}},
		{"a pattern that starts like a server's name", "[safety]\nauto_approve = [\"fs*\"]\n" + serverTables("fs", "fs2"), nil,
			[]string{`"fs*" starts like the name of server fs but reads every name: it also matches any tool whose own name starts with "fs" and the tools of server(s) fs2; write fs.* (or fs_*)`}},
		{"a server.tool pattern for no server", "[safety]\nauto_approve = [\"repo.*\"]\n" + serverTables("fs"), nil,
			[]string{`"repo.*" reads as server.tool of a server named "repo", and no server has that name`}},
		{"qualified patterns for configured servers", "[safety]\nauto_approve = [\"fs.*\", \"fs_*\", \"*.read_*\"]\n" + serverTables("fs"), nil, nil},
		{"tools of another server start with a server's name", "[safety]\ndeny = [\"fs_*\"]\n" + serverTables("fs", "shell"),
			append(tools[:3:3], Tool{Server: "shell", Name: "fs.sync_to_remote", Operation: "shell_fs_sync_to_remote"}),
			[]string{`servers[0].name: warning: tools of other servers start with this server's name "fs": shell.fs.sync_to_remote; the patterns fs.* and fs_* mean this server`}},
		{"a server pattern against the tools reads that server only", "[safety]\ndeny = [\"shell_*\"]\n" + serverTables("fs", "shell"),
			[]Tool{{Server: "fs", Name: "shell_run", Operation: "fs_shell_run"}},
			[]string{`"shell_*" matches none of the 1 tools of the configured servers (it is read against that server's operation names)`, `servers[1].name: warning: tools of other servers start with this server's name "shell": fs.shell_run`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withShipped(t, "[safety]\nauto_approve = [\"read_*\", \"list_*\"]\n")
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

// serverTables are [[servers]] tables of these names.
func serverTables(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString("[[servers]]\nname = \"" + n + "\"\ncommand = \"true\"\n")
	}
	return b.String()
}

func TestDefaultAndExampleLintClean(t *testing.T) {
	shippedFile, err := Parse(defaultTOML, config.ShippedName)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []*config.Config{shippedFile, Default(), mustLoad(t, "../config.example.toml"), exampleWithExamples(t)} {
		for _, p := range []string{cfg.Agent, "ci-bot"} {
			if w := Lint(cfg, p, nil); len(w) > 0 {
				t.Errorf("%s (%s): %v", cfg.Path, p, w)
			}
		}
	}
}

func mustLoad(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// No call outwaits its client by default (issue 31, item 2): both waits
// for a human answer before the TypeScript SDK's 60 s request timeout.
func TestDefaultWaitsAreBelowTheClientTimeout(t *testing.T) {
	cfg, err := Parse(nil, "empty.toml")
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]time.Duration{"verify.timeout": cfg.Verify.Timeout.Duration,
		"verify.inline_wait": cfg.Verify.InlineWait.Duration} {
		if d <= 0 || d > 50*time.Second || d >= ClientTimeout {
			t.Errorf("%s defaults to %s; want at most 50s, below the clients' %s", name, d, ClientTimeout)
		}
	}
}
