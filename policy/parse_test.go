package policy

import (
	"github.com/aqlguard/aqlguard/config"
	"github.com/aqlguard/aqlguard/internal/fixture/exampleconfig"

	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// want is one expected problem: its line, key, and a fragment of its message.
type want struct {
	line int
	key  string
	msg  string
}

func parseErrors(t *testing.T, doc string) config.Errors {
	t.Helper()
	cfg, err := Parse([]byte(doc), "test.toml")
	if err == nil {
		t.Fatalf("Parse succeeded, want errors; config: %+v", cfg)
	}
	if cfg != nil {
		t.Errorf("Parse returned a config alongside errors")
	}
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("error is %T, want Errors: %v", err, err)
	}
	return errs
}

func checkErrors(t *testing.T, got config.Errors, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Errorf("got %d errors, want %d:\n%v", len(got), len(wants), got)
	}
	for i := range min(len(got), len(wants)) {
		g, w := got[i], wants[i]
		if g.Line != w.line || g.Key != w.key || !strings.Contains(g.Msg, w.msg) {
			t.Errorf("error %d = %d %q %q, want %d %q containing %q", i, g.Line, g.Key, g.Msg, w.line, w.key, w.msg)
		}
		if g.File != "test.toml" {
			t.Errorf("error %d: File = %q", i, g.File)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []want
	}{
		{"syntax: unclosed header", "mode = \"all\"\n[safety\n", []want{{2, "", "invalid TOML: expected ']'"}}},
		{"syntax: missing value", "[safety]\ndeny = \n", []want{{2, "", "invalid TOML"}}},
		{"syntax: unterminated array at EOF", "[safety]\ndeny = [\"a\",\n", []want{{2, "", "invalid TOML"}}},
		{"syntax: bad escape", "agent = \"a\\q\"\n", []want{{1, "", "invalid TOML: invalid escape"}}},
		{"syntax: invalid UTF-8", "agent = \"\xff\"\n", []want{{1, "", "invalid TOML"}}},
		{"syntax error keeps earlier problems", "colour = 1\n[safety\n", []want{
			{1, "colour", "unknown key"},
			{2, "", "invalid TOML"},
		}},

		{"unknown top-level key", "# c\ncolour = \"blue\"\n", []want{{2, "colour", "unknown key"}}},
		{"unknown key suggests", "mdoe = \"all\"\n", []want{{1, "mdoe", `did you mean "mode"`}}},
		{"keys are case-sensitive", "[safety]\nDeny = [\"x\"]\n", []want{{2, "safety.Deny", `did you mean "deny"`}}},
		{"unknown dotted key", "[safety]\nbogus.nested = true\n", []want{{2, "safety.bogus", "unknown key"}}},
		{"unknown table", "[unknown]\nx = 1\ny = 2\n", []want{{1, "unknown", "unknown table"}}},
		{"unknown key in second array table", "[[servers]]\nname = \"a\"\ncommand = \"x\"\n\n[[servers]]\nname = \"b\"\ncommand = \"y\"\nextra = 42\n",
			[]want{{8, "servers[1].extra", "unknown key"}}},
		{"unknown key in sub-table of array table", "[[servers]]\nname = \"a\"\ncommand = \"x\"\n[[servers]]\nname = \"b\"\ncommand = \"y\"\n[servers.env]\nA = \"1\"\n[servers.meta]\nowner = \"me\"\n",
			[]want{{9, "servers[1].meta", "unknown table"}}},
		{"unknown key in inline table", "[[servers]]\nname = \"a\"\ncommand = \"x\"\n[[safety.rules]]\naction = \"deny\"\nargument = \"a\"\npattern = \"b\"\n[agents.ci]\nrules = [\n  {action = \"deny\", argument = \"a\", pattern = \"b\"},\n  {action = \"deny\", argument = \"a\", pattern = \"b\", extra = 1},\n]\n",
			[]want{{11, "agents.ci.rules[1].extra", "unknown key"}}},

		{"wrong type: string for list", "[safety]\ndeny = \"drop_*\"\n", []want{{2, "safety.deny", "expected an array of strings, got a string"}}},
		{"wrong type: element of list", "[safety]\ndeny = [\n  \"a\",\n  2,\n  \"b\",\n  true,\n]\n", []want{
			{4, "safety.deny[1]", "expected a string, got an integer"},
			{6, "safety.deny[3]", "expected a string, got a boolean"},
		}},
		{"wrong type: int as string", "[safety]\nmax_autonomous_steps = \"100\"\n", []want{{2, "safety.max_autonomous_steps", "expected an integer, got a string"}}},
		{"wrong type: float", "[limits]\nmax_nesting_depth = 8.5\n", []want{{2, "limits.max_nesting_depth", "expected an integer, got a float"}}},
		{"wrong type: table for scalar", "[mode]\nx = 1\n", []want{{1, "mode", "expected a string, not a table"}}},
		{"wrong type: [servers] not [[servers]]", "[servers]\nname = \"a\"\n", []want{{1, "servers", "write [[servers]]"}}},
		{"wrong type: [[safety]]", "[[safety]]\nloop = \"x\"\n", []want{{1, "safety", "expected a table, not an array of tables"}}},
		{"wrong type: sub-table before array entry", "[servers.env]\nA = \"b\"\n", []want{{1, "servers", "add a [[servers]] entry"}}},
		{"wrong type: env value", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nenv = { A = \"1\", B = 2 }\n", []want{{4, "servers[0].env.B", "expected a string, got an integer"}}},
		{"wrong type: duration as number", "[verify]\ntimeout = 120\n", []want{{2, "verify.timeout", `expected a duration string such as "30s", got an integer`}}},
		{"bad duration", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nstart_timeout = \"30\"\n", []want{{4, "servers[0].start_timeout", `invalid duration "30"`}}},
		{"all type errors reported at once", "agent = 1\nmode = 2\n[verify]\nchannel = 3\n", []want{
			{1, "agent", "expected a string"},
			{2, "mode", "expected a string"},
			{4, "verify.channel", "expected a string"},
		}},
		{"type and semantic errors together", "mode = \"fast\"\n[safety]\nloop = 1\nrisk_tolerance = \"yolo\"\n", []want{
			{1, "mode", `"fast" is not valid`},
			{3, "safety.loop", "expected a string"},
			{4, "safety.risk_tolerance", `"yolo" is not valid`},
		}},
		{"duplicate key", "mode = \"all\"\nagent = \"x\"\nmode = \"single\"\n", []want{{3, "mode", "defined more than once"}}},
		{"duplicate key in array table", "[[servers]]\nname = \"a\"\ncommand = \"x\"\n[[servers]]\nname = \"b\"\nname = \"c\"\ncommand = \"y\"\n", []want{{6, "servers[1].name", "defined more than once"}}},
		{"duplicate table", "[safety]\nloop = \"enforcing\"\n[safety]\nloop = \"oops\"\n", []want{{3, "safety", "defined more than once"}}},
		{"integer overflow", "[safety]\nmax_autonomous_steps = 99999999999999999999\n", []want{{2, "safety.max_autonomous_steps", "too large"}}},

		{"mode", "mode = \"strict\"\n", []want{{1, "mode", `"semantic", "single", "all" or "passthrough"`}}},
		{"mode empty", "mode = \"\"\n", []want{{1, "mode", `"" is not valid`}}},
		{"agent empty", "agent = \"\"\n", []want{{1, "agent", "must not be empty"}}},
		{"agent pattern", "agent = \"-bad\"\n", []want{{1, "agent", "not a valid agent name"}}},
		{"agent too long", "agent = \"" + strings.Repeat("a", 65) + "\"\n", []want{{1, "agent", "not a valid agent name"}}},
		{"loop", "[safety]\nloop = \"strict\"\n", []want{{2, "safety.loop", `"enforcing", "monitoring", "logging" or "disabled"`}}},
		{"max steps zero", "[safety]\nmax_autonomous_steps = 0\n", []want{{2, "safety.max_autonomous_steps", "at least 1"}}},
		{"max steps negative", "[safety]\nmax_autonomous_steps = -5\n", []want{{2, "safety.max_autonomous_steps", "at least 1"}}},
		{"risk tolerance", "[safety]\nrisk_tolerance = \"reckless\"\n", []want{{2, "safety.risk_tolerance", `"conservative", "moderate" or "aggressive"`}}},
		{"bad patterns", "[safety]\ndeny = [\"ok_*\", \"{a,b\"]\nrequires_approval = [\n  \"[c-a]\",\n]\nauto_approve = [\"\", \"   \"]\n", []want{
			{2, "safety.deny[1]", "unclosed"},
			{4, "safety.requires_approval[0]", "range hi character is less than lo"},
			{6, "safety.auto_approve[0]", "is required"},
			{6, "safety.auto_approve[1]", "pattern is empty"},
		}},
		{"rules", "[[safety.rules]]\naction = \"block\"\nargument = \"\"\npattern = \"[\"\noperation = \"a\\\\\"\n[[safety.rules]]\nargument = \"cmd\"\n", []want{
			{2, "safety.rules[0].action", `"block" is not valid`},
			{3, "safety.rules[0].argument", "is required"},
			{4, "safety.rules[0].pattern", "invalid glob"},
			{5, "safety.rules[0].operation", "trailing backslash"},
			{6, "safety.rules[1].action", "is required"},
			{6, "safety.rules[1].pattern", "is required"},
		}},
		{"risk rules", "[[safety.risk_rules]]\npattern = \"x\"\nscore = 101\n[[safety.risk_rules]]\npattern = \"y\"\n[[safety.risk_rules]]\nscore = 5\n", []want{
			{3, "safety.risk_rules[0].score", "out of range: use 0 to 100"},
			{4, "safety.risk_rules[1].score", "is required"},
			{6, "safety.risk_rules[2].pattern", "is required"},
		}},
		{"limits", "[limits]\nmax_request_size = 1024\nmax_response_size = 0\nmax_string_length = 20971520\nmax_array_elements = 99\nmax_nesting_depth = 65\n", []want{
			{2, "limits.max_request_size", "65536 (64 KiB) to 10485760 (10 MiB)"},
			{3, "limits.max_response_size", "1048576 (1 MiB) to 104857600 (100 MiB)"},
			{4, "limits.max_string_length", "out of range"},
			{5, "limits.max_array_elements", "100 to 100000"},
			{6, "limits.max_nesting_depth", "8 to 64"},
		}},
		{"verify", "[verify]\nchannel = \"sms\"\ntimeout = \"0s\"\n", []want{
			{2, "verify.channel", `"dialog" or "command"`},
			{3, "verify.timeout", "not positive"},
		}},
		{"state", "[state]\nbackend = \"etcd\"\n", []want{{2, "state.backend", `"bbolt" or "postgres"`}}},
		{"state dsn without postgres", "[state]\ndsn = \"host=db\"\nschema = \"x\"\n", []want{
			{2, "state.dsn", `is for backend = "postgres"`},
			{3, "state.schema", `is for backend = "postgres"`},
		}},
		{"state schema", "[state]\nbackend = \"postgres\"\nschema = \"Robert'); DROP\"\n", []want{{3, "state.schema", "is not a schema name"}}},
		{"verify command required", "[verify]\nchannel = \"command\"\n", []want{{1, "verify.command", "is required when channel"}}},
		{"verify command blank", "[verify]\nchannel = \"command\"\ncommand = [\"\"]\n", []want{{3, "verify.command", "is required when channel"}}},

		{"server name required", "[[servers]]\ncommand = \"x\"\n", []want{{1, "servers[0].name", "is required"}}},
		{"server name underscore", "[[servers]]\nname = \"my_fs\"\ncommand = \"x\"\n", []want{{2, "servers[0].name", "operation names are <server>_<tool>"}}},
		{"server name upper, dash, digit, long", "[[servers]]\nname = \"FS\"\ncommand = \"x\"\n[[servers]]\nname = \"a-b\"\ncommand = \"x\"\n[[servers]]\nname = \"1fs\"\ncommand = \"x\"\n[[servers]]\nname = \"" + strings.Repeat("a", 33) + "\"\ncommand = \"x\"\n", []want{
			{2, "servers[0].name", "not a valid server name"},
			{5, "servers[1].name", "not a valid server name"},
			{8, "servers[2].name", "not a valid server name"},
			{11, "servers[3].name", "not a valid server name"},
		}},
		{"server name duplicate", "[[servers]]\nname = \"fs\"\ncommand = \"x\"\n[[servers]]\nname = \"fs\"\nurl = \"https://h/\"\n", []want{{5, "servers[1].name", "already the name of servers[0]"}}},
		{"server needs command or url", "[[servers]]\nname = \"a\"\n", []want{{1, "servers[0]", "needs command"}}},
		{"server both command and url", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nurl = \"https://h/\"\n", []want{{4, "servers[0].url", "not both"}}},
		{"server bad url", "[[servers]]\nname = \"a\"\nurl = \"ftp://h/\"\n[[servers]]\nname = \"b\"\nurl = \"https://\"\n[[servers]]\nname = \"c\"\nurl = \"/just/a/path\"\n", []want{
			{3, "servers[0].url", "not an http:// or https:// URL"},
			{6, "servers[1].url", "not an http:// or https:// URL"},
			{9, "servers[2].url", "not an http:// or https:// URL"},
		}},
		{"server transport", "[[servers]]\nname = \"a\"\ncommand = \"x\"\ntransport = \"websocket\"\n[[servers]]\nname = \"b\"\nurl = \"https://h/\"\ntransport = \"stdio\"\n[[servers]]\nname = \"c\"\ncommand = \"x\"\ntransport = \"sse\"\n[[servers]]\nname = \"d\"\ncommand = \"x\"\ntransport = \"\"\n", []want{
			{4, "servers[0].transport", `"stdio", "streamable" or "sse"`},
			{8, "servers[1].transport", `"stdio" needs command`},
			{12, "servers[2].transport", `"sse" needs url`},
			{16, "servers[3].transport", `"" is not valid`},
		}},
		{"server fields for the other transport", "[[servers]]\nname = \"a\"\nurl = \"https://h/\"\nargs = [\"x\"]\nenv = { A = \"b\" }\ncwd = \"/\"\n[[servers]]\nname = \"b\"\ncommand = \"x\"\nheaders = { A = \"b\" }\n", []want{
			{4, "servers[0].args", "only applies to servers started with command"},
			{5, "servers[0].env", "only applies to servers started with command"},
			{6, "servers[0].cwd", "only applies to servers started with command"},
			{10, "servers[1].headers", "only applies to servers with url"},
		}},
		{"server env and header names", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nenv = { \"A=B\" = \"1\" }\n[[servers]]\nname = \"b\"\nurl = \"https://h/\"\nheaders = { \"Bad Header\" = \"1\" }\n", []want{
			{4, `servers[0].env."A=B"`, "not a valid environment variable name"},
			{8, `servers[1].headers."Bad Header"`, "not a valid HTTP header name"},
		}},
		{"server share and roots", "[[servers]]\nname = \"a\"\nurl = \"https://h/\"\nshare = true\n[[servers]]\nname = \"b\"\ncommand = \"x\"\nprotocol = \"2026-07-28\"\nshare = true\n[[servers]]\nname = \"c\"\ncommand = \"x\"\nroots = [\"file:///a\", \"file://otherhost/a\"]\n[[servers]]\nname = \"d\"\ncommand = \"x\"\nshare = true\nroots = [\"file:///a\", \"relative/path\"]\n", []want{
			{4, "servers[0].share", "only applies to stdio servers"},
			{9, "servers[1].share", `cannot be shared with protocol = "2026-07-28"`},
			{13, "servers[2].roots[1]", "another host"}, // roots apply to every server
			{18, "servers[3].roots[1]", "not an absolute URI"},
		}},
		{"server allow_undeclared_arguments", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nallow_undeclared_arguments = \"yes\"\n", []want{{4, "servers[0].allow_undeclared_arguments", "expected a boolean"}}},
		{"server start timeout", "[[servers]]\nname = \"a\"\ncommand = \"x\"\nstart_timeout = \"-1s\"\n", []want{{4, "servers[0].start_timeout", "not positive"}}},
		{"server categories", "[[servers]]\nname = \"a\"\ncommand = \"x\"\n[servers.categories]\nok = \"read\"\nbad = \"WRITE\"\n", []want{{6, "servers[0].categories.bad", `"CREATE", "READ", "UPDATE", "DELETE" or "EXECUTE"`}}},

		{"agent override name", "[agents.\"bad name\"]\nloop = \"monitoring\"\n", []want{{1, `agents."bad name"`, "not a valid agent name"}}},
		{"agent override values", "[agents.ci]\nloop = \"\"\nmax_autonomous_steps = 0\nrisk_tolerance = \"x\"\ndeny = [\"{\"]\n[[agents.ci.rules]]\naction = \"deny\"\nargument = \"a\"\npattern = \"[\"\n[[agents.ci.risk_rules]]\npattern = \"p\"\nscore = -1\n", []want{
			{2, "agents.ci.loop", `"" is not valid`},
			{3, "agents.ci.max_autonomous_steps", "at least 1"},
			{4, "agents.ci.risk_tolerance", `"x" is not valid`},
			{5, "agents.ci.deny[0]", "invalid glob"},
			{9, "agents.ci.rules[0].pattern", "invalid glob"},
			{12, "agents.ci.risk_rules[0].score", "out of range"},
		}},
		{"agent override via dotted keys", "[agents]\nci.loop = \"sometimes\"\n", []want{{2, "agents.ci.loop", `"sometimes" is not valid`}}},
		{"agent override unknown key", "[agents.ci]\nmode = \"all\"\n", []want{{2, "agents.ci.mode", "unknown key"}}},
		{"a bad value does not also report as missing", "[[servers]]\nname = 5\ncommand = \"x\"\n[[safety.risk_rules]]\npattern = \"x\"\nscore = \"high\"\n", []want{
			{2, "servers[0].name", "expected a string"},
			{6, "safety.risk_rules[0].score", "expected an integer"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, tt.doc), tt.want)
		})
	}
}

func TestParseDefaults(t *testing.T) {
	cfg, err := Parse([]byte("[[servers]]\nname = \"fs\"\ncommand = \"npx\"\n[[servers]]\nname = \"gh\"\nurl = \"https://h/mcp\"\n[[servers]]\nname = \"old\"\nurl = \"http://localhost/sse\"\ntransport = \"sse\"\n"), "d.toml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != "d.toml" {
		t.Errorf("Path = %q", cfg.Path)
	}
	if cfg.Mode != "semantic" || cfg.Agent != "default" || cfg.StateDir != "" {
		t.Errorf("top level = %q %q %q", cfg.Mode, cfg.Agent, cfg.StateDir)
	}
	wantLimits := config.Limits{MaxRequestSize: 1 << 20, MaxResponseSize: 10 << 20, MaxStringLength: 1 << 20, MaxArrayElements: 10000, MaxNestingDepth: 32}
	if cfg.Limits != wantLimits {
		t.Errorf("Limits = %+v, want %+v", cfg.Limits, wantLimits)
	}
	s := cfg.Safety
	if s.Loop != "enforcing" || s.MaxAutonomousSteps != 100 || s.RiskTolerance != "moderate" {
		t.Errorf("Safety = %+v", s)
	}
	if cfg.Verify.Channel != "dialog" || cfg.Verify.Timeout.Duration != 50*time.Second {
		t.Errorf("Verify = %+v", cfg.Verify)
	}
	for i, want := range []string{"stdio", "streamable", "sse"} {
		if got := cfg.Servers[i].Transport; got != want {
			t.Errorf("servers[%d].Transport = %q, want %q", i, got, want)
		}
		if got := cfg.Servers[i].StartTimeout.Duration; got != 30*time.Second {
			t.Errorf("servers[%d].StartTimeout = %v", i, got)
		}
	}
}

func TestParseLineEndingsAndBOM(t *testing.T) {
	for name, doc := range map[string]string{
		"CRLF": "mode = \"all\"\r\n[safety]\r\nloop = 1\r\nrisk_tolerance = \"y\"\r\n",
		"BOM":  "\ufeffmode = \"all\"\n[safety]\nloop = 1\nrisk_tolerance = \"y\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			checkErrors(t, parseErrors(t, doc), []want{
				{3, "safety.loop", "expected a string"},
				{4, "safety.risk_tolerance", `"y" is not valid`},
			})
		})
	}
	if _, err := Parse([]byte("\ufeffmode = \"all\"\r\n"), "bom.toml"); err != nil {
		t.Error(err)
	}
}

func TestParseNormalisesCategories(t *testing.T) {
	cfg, err := Parse([]byte("[[servers]]\nname = \"fs\"\ncommand = \"x\"\ncategories = { a = \"read\", b = \" Delete \", c = \"EXECUTE\" }\n"), "c.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "READ", "b": "DELETE", "c": "EXECUTE"}
	if got := cfg.Servers[0].Categories; !reflect.DeepEqual(got, want) {
		t.Errorf("Categories = %v, want %v", got, want)
	}
}

func TestParseExplicitValuesKept(t *testing.T) {
	doc := `mode = "passthrough"
agent = "ci.bot-1"
state_dir = "/var/lib/aqlguard"
[limits]
max_request_size = 65536
max_response_size = 104857600
max_string_length = 10485760
max_array_elements = 100
max_nesting_depth = 64
[safety]
loop = "monitoring"
max_autonomous_steps = 1
risk_tolerance = "aggressive"
[verify]
channel = "command"
command = ["/usr/local/bin/page", "--now"]
timeout = "90s"
`
	cfg, err := Parse([]byte(doc), "x")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != "passthrough" || cfg.Agent != "ci.bot-1" || cfg.StateDir != "/var/lib/aqlguard" {
		t.Errorf("top level = %+v", cfg)
	}
	if cfg.Limits != (config.Limits{MaxRequestSize: 65536, MaxResponseSize: 104857600, MaxStringLength: 10485760, MaxArrayElements: 100, MaxNestingDepth: 64}) {
		t.Errorf("Limits = %+v", cfg.Limits)
	}
	if cfg.Safety.Loop != "monitoring" || cfg.Safety.MaxAutonomousSteps != 1 || cfg.Safety.RiskTolerance != "aggressive" {
		t.Errorf("Safety = %+v", cfg.Safety)
	}
	if cfg.Verify.Channel != "command" || !reflect.DeepEqual(cfg.Verify.Command, []string{"/usr/local/bin/page", "--now"}) || cfg.Verify.Timeout.Duration != 90*time.Second {
		t.Errorf("Verify = %+v", cfg.Verify)
	}
}

func TestExampleConfig(t *testing.T) {
	cfg := exampleWithExamples(t)
	// Every documented table is exercised, so the example cannot rot.
	if len(cfg.Servers) != 3 || cfg.Servers[0].Transport != "stdio" || cfg.Servers[1].Transport != "streamable" {
		t.Errorf("servers = %+v", cfg.Servers)
	}
	if len(cfg.Servers[0].Env) == 0 || cfg.Servers[0].Cwd == "" || len(cfg.Servers[0].Categories) == 0 || len(cfg.Servers[1].Headers) == 0 {
		t.Errorf("example servers lack env/cwd/categories/headers: %+v", cfg.Servers)
	}
	if len(cfg.Safety.Rules) == 0 || len(cfg.Safety.RiskRules) == 0 || len(cfg.Agents) == 0 || len(cfg.Verify.Command) == 0 {
		t.Errorf("example lacks rules, risk rules, agents or verify.command")
	}
	for name := range cfg.Agents {
		if _, err := Compile(cfg, name); err != nil {
			t.Errorf("Compile(%q): %v", name, err)
		}
	}
	if _, err := Compile(cfg, ""); err != nil {
		t.Errorf("Compile(default principal): %v", err)
	}
}

// exampleWithExamples is config.example.toml with its examples turned
// on (alice's state directory, servers, rules: exampleconfig).
func exampleWithExamples(t *testing.T) *config.Config {
	t.Helper()
	data, err := exampleconfig.WithExamples()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, "config.example.toml (examples on)")
	if err != nil {
		t.Fatalf("config.example.toml with its examples on: %v", err)
	}
	return cfg
}

// TestExampleConfigIsNeutral (issue 31, item 5): config.example.toml,
// copied as it ships, is the embedded defaults: every setting it leaves
// on is the default, and every choice of a user (a state directory, an
// agent, servers, rules, a token file, a metrics port) is commented, so
// copying it changes nothing a user did not choose.
func TestExampleConfigIsNeutral(t *testing.T) {
	cfg, err := Load("../config.example.toml")
	if err != nil {
		t.Fatalf("config.example.toml: %v", err)
	}
	def := Default()
	cfg.Path = ""
	cfg.ClearLines()
	def.ClearLines()
	if i := cfg.Safety.Inherit; i != nil && *i {
		cfg.Safety.Inherit = nil // inherit = true is the default, written out
	}
	if !reflect.DeepEqual(cfg, def) {
		got, _ := json.MarshalIndent(cfg, "", " ")
		want, _ := json.MarshalIndent(def, "", " ")
		t.Errorf("config.example.toml is not the defaults:\n%s\nwant:\n%s", got, want)
	}
	data, err := os.ReadFile("../config.example.toml")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") && (strings.Contains(line, "/home/") || strings.Contains(line, "alice")) {
			t.Errorf("config.example.toml:%d: a user's own value is on: %s", i+1, line)
		}
	}
}

// TestReferencesDocumentEveryKey keeps config.example.toml and the policy
// reference (docs/policy.md, where a key is written `key`) complete: every
// key of the Config schema must appear in both.
func TestReferencesDocumentEveryKey(t *testing.T) {
	for _, ref := range []struct{ path, quote string }{
		{"../config.example.toml", ""},
		{"../docs/policy.md", "`"},
	} {
		t.Run(ref.path, func(t *testing.T) { documentsEveryKey(t, ref.path, ref.quote) })
	}
}

// mentions reports whether doc names key: as it is (quote ""), or as
// `key`, a [table] or a [dotted.table].
func mentions(doc, key, quote string) bool {
	if quote == "" {
		return strings.Contains(doc, key)
	}
	for _, form := range []string{quote + key, "[" + key, "." + key} {
		if strings.Contains(doc, form) {
			return true
		}
	}
	return false
}

func documentsEveryKey(t *testing.T, path, quote string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	var walk func(prefix string, typ reflect.Type)
	walk = func(prefix string, typ reflect.Type) {
		typ = deref(typ)
		if typ.Kind() != reflect.Struct || isTextual(typ) {
			return
		}
		for f := range typ.Fields() {
			name := tomlName(f)
			if name == "" {
				continue
			}
			if !mentions(string(data), name, quote) {
				missing = append(missing, prefix+name)
			}
			ft := deref(f.Type)
			switch ft.Kind() {
			case reflect.Slice, reflect.Map:
				walk(prefix+name+".", ft.Elem())
			case reflect.Struct:
				walk(prefix+name+".", ft)
			}
		}
	}
	walk("", configType)
	if len(missing) > 0 {
		t.Errorf("%s does not mention: %v", path, missing)
	}
}

func TestDefault(t *testing.T) {
	a := Default()
	if a.Path != "" || a.Mode != "semantic" || a.Agent != "default" || len(a.Servers) != 0 || a.Safety.Loop != "enforcing" {
		t.Errorf("Default() = %+v", a)
	}
	// No file holds none of its own rules: the shipped ones are beneath it.
	if len(a.Safety.Deny)+len(a.Safety.RequiresApproval)+len(a.Safety.AutoApprove) > 0 {
		t.Errorf("Default() has rules of its own: %+v", a.Safety)
	}
	if _, wrote := a.Wrote("safety.deny"); wrote {
		t.Error("Default() says it wrote safety.deny")
	}
	p, err := Compile(a, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Deny) == 0 || len(p.RequiresApproval) == 0 {
		t.Errorf("Default() compiles to empty pattern lists: %+v", p)
	}
	// Names never approve by default: a rogue get_* runs commands as
	// well as any (issue 29).
	if len(p.AutoApprove) != 0 {
		t.Errorf("Default() auto-approves by name: %v", p.AutoApprove)
	}
	for _, r := range p.InForce {
		if r.Origin.Layer != LayerShipped || r.Origin.File != config.ShippedName || r.Origin.Line == 0 || len(r.Also) > 0 {
			t.Errorf("%s: want the shipped file's line, once", r)
		}
	}
	a.Agent = "mutated"
	if b := Default(); b.Agent == "mutated" {
		t.Error("Default() shares state between calls")
	}
}

func TestLoad(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.toml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want fs.ErrNotExist", err)
	}
	path := filepath.Join(t.TempDir(), "c.toml")
	if err := os.WriteFile(path, []byte("mode = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	var errs config.Errors
	if !errors.As(err, &errs) || len(errs) != 1 || errs[0].File != path || errs[0].Line != 1 {
		t.Errorf("Load(bad) = %#v", err)
	}
	if !strings.HasPrefix(err.Error(), path+":1: mode: ") {
		t.Errorf("message = %q", err.Error())
	}
}

func TestErrorsFormat(t *testing.T) {
	es := config.Errors{
		{File: "c.toml", Line: 3, Key: "safety.loop", Msg: "bad"},
		{File: "c.toml", Line: 1, Msg: "invalid TOML: x"},
		{File: "c.toml", Key: "agent", Msg: "no line"},
	}
	got := es.Error()
	want := "3 problems in c.toml:\nc.toml:3: safety.loop: bad\nc.toml:1: invalid TOML: x\nc.toml: agent: no line"
	if got != want {
		t.Errorf("Errors.Error() =\n%s\nwant\n%s", got, want)
	}
	if got := es[:1].Error(); got != "c.toml:3: safety.loop: bad" {
		t.Errorf("single = %q", got)
	}
	var one config.Error
	if !errors.As(error(es), &one) || one.Key != "safety.loop" {
		t.Errorf("errors.As(Error) = %+v", one)
	}
}

func TestDuration(t *testing.T) {
	var d config.Duration
	if err := d.UnmarshalText([]byte("1m30s")); err != nil || d.Duration != 90*time.Second {
		t.Errorf("UnmarshalText = %v, %v", d, err)
	}
	if err := d.UnmarshalText([]byte("90")); err == nil {
		t.Error("bare number accepted")
	}
	b, err := config.Duration{Duration: 90 * time.Second}.MarshalText()
	if err != nil || string(b) != "1m30s" {
		t.Errorf("MarshalText = %q, %v", b, err)
	}
}

func TestParentKey(t *testing.T) {
	for in, want := range map[string]string{
		"servers[1].url":       "servers[1]",
		"servers[1]":           "servers",
		"servers":              "",
		`agents."a.b".loop`:    `agents."a.b"`,
		`agents."a.b"`:         "agents",
		`x."q\"uo.te".y`:       `x."q\"uo.te"`,
		"safety.rules[0].args": "safety.rules[0]",
		"safety.deny[2]":       "safety.deny",
		`servers[0].env."A=B"`: "servers[0].env",
	} {
		if got := parentKey(in); got != want {
			t.Errorf("parentKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestVerifyCommandMustBeAbsolute(t *testing.T) {
	_, err := Parse([]byte("[verify]\nchannel = \"command\"\ncommand = [\"page-oncall\", \"-x\"]\n"), "v.toml")
	if err == nil || !strings.Contains(err.Error(), "v.toml:3") || !strings.Contains(err.Error(), "absolute path") {
		t.Errorf("a relative command: %v", err)
	}
}
