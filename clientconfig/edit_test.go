package clientconfig

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pelletier/go-toml/v2"
	"github.com/tailscale/hujson"
)

const self = "/opt/aqlguard/bin/aqlguard"

var fixtures = []struct {
	file, client string
	format       Format
	layout       Layout
	wrapped      []string // entry labels init must wrap
	skipped      []string // entry labels it must leave, saying why
}{
	{"claude_desktop_config.json", "claude-desktop", JSON, MCPServers, []string{"filesystem", "github", "memory", "remote"}, nil},
	{".claude.json", "claude-code", JSON, MCPServers, []string{"sentry", "airtable", "pg (project /home/alice/src/app)"}, []string{"linear"}},
	{".mcp.json", "claude-code", JSON, MCPServers, []string{"shared-server"}, nil},
	{"cursor-mcp.json", "cursor", JSON, MCPServers, []string{"puppeteer", "remote", "local-tool"}, nil},
	{"vscode-mcp.json", "vscode", JSON, VSCodeServers, []string{"Perplexity", "github", "fetch"}, nil},
	{"mcp_config.json", "windsurf", JSON, MCPServers, []string{"brave-search"}, nil},
	{"zed-settings.json", "zed", JSON, ZedServers, []string{"postgres-context-server", "mcp-server-time"}, []string{"some-extension"}},
	{"config.toml", "codex", TOML, CodexServers, []string{"context7", "figma", "noargs", "subenv", "remote", "linear"}, []string{"login", "dollar", "inline"}},
	{"gemini-settings.json", "gemini", JSON, MCPServers, []string{"pythonTools", "httpServer"}, []string{"gcp"}},
	{"config.yaml", "continue", YAML, ContinueServers, []string{"SQLite", "Playwright", "bare", "remote", "linear", "untyped"}, []string{"legacy", "insecure"}},
}

func fixture(t *testing.T, name string) (File, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, fx := range fixtures {
		if fx.file == name {
			return File{Path: "/cfg/" + name, Client: fx.client, Format: fx.format, Layout: fx.layout}, data
		}
	}
	t.Fatalf("no fixture %s", name)
	return File{}, nil
}

func TestWrapAndUnwrapEveryClient(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			f, orig := fixture(t, fx.file)
			before, err := Entries(f, orig)
			if err != nil {
				t.Fatal(err)
			}
			recs := &Records{Entries: map[string]Record{}}
			out, results, err := Wrap(f, orig, self, recs, now)
			if err != nil {
				t.Fatal(err)
			}
			var wrapped, skipped []string
			for _, r := range results {
				switch r.Action {
				case "wrapped":
					wrapped = append(wrapped, r.Entry)
				case "skipped":
					if r.Why == "" {
						t.Errorf("%s skipped without a reason", r.Entry)
					}
					skipped = append(skipped, r.Entry)
				}
			}
			if !slices.Equal(wrapped, fx.wrapped) || !slices.Equal(skipped, fx.skipped) {
				t.Fatalf("wrapped %q skipped %q, want %q and %q\n%s", wrapped, skipped, fx.wrapped, fx.skipped, out)
			}
			// Every wrapped entry runs aqlguard wrap with the original
			// command and args after --, and keeps its name.
			after, err := Entries(f, out)
			if err != nil {
				t.Fatalf("the wrapped file does not parse: %v\n%s", err, out)
			}
			if len(after) != len(before) {
				t.Fatalf("%d entries before, %d after", len(before), len(after))
			}
			for i, e := range after {
				b := before[i]
				if e.Name != b.Name {
					t.Errorf("entry %d renamed %q -> %q", i, b.Name, e.Name)
				}
				if !slices.Contains(fx.wrapped, b.Label()) {
					if !bytes.Equal(out[e.Start:e.End], orig[b.Start:b.End]) {
						t.Errorf("%s changed although not wrapped", b.Label())
					}
					continue
				}
				want := WrapArgs(b.Name, fx.client, b.Command, b.Args)
				if b.Remote { // a local aqlguard connecting to the URL
					want = []string{"wrap", "--name", b.Name, "--agent", fx.client, "--url", b.URL, "--auth", e.Args[len(e.Args)-1]}
				}
				if !e.Wrapped(self) || e.Command != self || !slices.Equal(e.Args, want) {
					t.Errorf("%s wrapped as %q %q, want %q %q", b.Label(), e.Command, e.Args, self, want)
				}
			}
			// A client that reads plain JSON still can.
			if json.Valid(orig) && !json.Valid(out) {
				t.Errorf("plain JSON became JSONC:\n%s", out)
			}
			// Outside the entries, nothing changed.
			if got, want := outside(out, after), outside(orig, before); got != want {
				t.Errorf("bytes outside the entries changed:\n%s\nwas\n%s", got, want)
			}
			// Twice changes nothing.
			again, results2, err := Wrap(f, out, self, recs, now)
			if err != nil || !bytes.Equal(again, out) {
				t.Errorf("wrapping twice changed the file: %v", err)
			}
			for _, r := range results2 {
				if r.Action == "wrapped" {
					t.Errorf("%s wrapped twice", r.Entry)
				}
			}
			// Unwrap restores every byte.
			restored, _, err := Unwrap(f, out, recs, false)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(restored, orig) {
				t.Errorf("unwrap is not byte-identical:\n%q\nwant\n%q", restored, orig)
			}
			if len(recs.Entries) != 0 {
				t.Errorf("records left after unwrap: %v", recs.Entries)
			}
		})
	}
}

// outside is the file with every entry cut out.
func outside(data []byte, entries []Entry) string {
	var b bytes.Buffer
	at := 0
	for _, e := range entries {
		b.Write(data[at:e.Start])
		b.WriteString("<entry>")
		at = e.End
	}
	b.Write(data[at:])
	return b.String()
}

func TestUnwrapRefusesAnEditedEntry(t *testing.T) {
	f, orig := fixture(t, "claude_desktop_config.json")
	recs := &Records{Entries: map[string]Record{}}
	out, _, err := Wrap(f, orig, self, recs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(out, []byte(`server-memory"`), []byte(`server-memory@2"`), 1)
	if bytes.Equal(edited, out) {
		t.Fatal("the edit did not apply")
	}
	res, results, err := Unwrap(f, edited, recs, false)
	if err != nil {
		t.Fatal(err)
	}
	var refused int
	for _, r := range results {
		if r.Action == "refused" {
			refused++
			// The diff shows the edit, and only the edit.
			if r.Entry != "memory" || r.Why == "" || !strings.Contains(r.Diff, `-    "@modelcontextprotocol/server-memory"`) ||
				!strings.Contains(r.Diff, `+    "@modelcontextprotocol/server-memory@2"`) || strings.Count(r.Diff, "\n+ ") != 1 {
				t.Errorf("%+v", r)
			}
		}
	}
	if refused != 1 || !bytes.Contains(res, []byte(`server-memory@2"`)) {
		t.Fatalf("refused %d; the edited entry must stay as it is:\n%s", refused, res)
	}
	forced, results, err := Unwrap(f, res, recs, true)
	if err != nil || !bytes.Equal(forced, orig) {
		t.Errorf("--force must restore the original: %v\n%s", err, forced)
	}
	// --force says what it dropped.
	for _, r := range results {
		if r.Entry == "memory" && (r.Action != "restored" || !strings.Contains(r.Diff, "server-memory@2")) {
			t.Errorf("--force: %+v", r)
		}
	}
}

// TestUnwrapAfterTheClientReformatted: a client that rewrites its file
// (Claude Code rewrites ~/.claude.json with its own indentation, without
// comments; others respace lists) changes no entry's content, so unwrap
// restores every entry without --force.
func TestUnwrapAfterTheClientReformatted(t *testing.T) {
	reformat := map[Format]func(t *testing.T, b []byte) []byte{
		JSON: func(t *testing.T, b []byte) []byte {
			std, err := hujson.Standardize(append([]byte(nil), b...))
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := json.Indent(&out, std, "", "    "); err != nil {
				t.Fatal(err)
			}
			return out.Bytes()
		},
		TOML: func(_ *testing.T, b []byte) []byte { return bytes.ReplaceAll(b, []byte(" = "), []byte("=")) },
		YAML: func(_ *testing.T, b []byte) []byte {
			b = bytes.ReplaceAll(b, []byte(`["`), []byte(`[ "`))
			return bytes.ReplaceAll(b, []byte(`"]`), []byte(`" ]`))
		},
	}
	for _, fx := range fixtures {
		t.Run(fx.file, func(t *testing.T) {
			f, orig := fixture(t, fx.file)
			recs := &Records{Entries: map[string]Record{}}
			out, _, err := Wrap(f, orig, self, recs, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			again := reformat[f.Format](t, out)
			if bytes.Equal(again, out) {
				t.Fatal("the reformatting changed nothing")
			}
			back, results, err := Unwrap(f, again, recs, false)
			if err != nil {
				t.Fatal(err)
			}
			restored := 0
			for _, r := range results {
				switch r.Action {
				case "restored":
					restored++
					if r.Diff != "" {
						t.Errorf("%s: a diff for a reformatting: %s", r.Entry, r.Diff)
					}
				case "refused":
					t.Errorf("%s refused after a reformatting: %s\n%s", r.Entry, r.Why, r.Diff)
				}
			}
			if restored != len(fx.wrapped) || len(recs.Entries) != 0 {
				t.Errorf("restored %d of %d; records left: %v\n%s", restored, len(fx.wrapped), recs.Entries, back)
			}
			// What the file says now is what it said before init.
			after, err := Entries(f, back)
			if err != nil {
				t.Fatalf("the unwrapped file does not parse: %v\n%s", err, back)
			}
			before, _ := Entries(f, orig)
			for i := range after {
				if after[i].Command != before[i].Command || !slices.Equal(after[i].Args, before[i].Args) || after[i].URL != before[i].URL {
					t.Errorf("%s: %q %q %q, want %q %q %q", after[i].Label(), after[i].Command, after[i].Args, after[i].URL, before[i].Command, before[i].Args, before[i].URL)
				}
			}
		})
	}
}

func TestForPath(t *testing.T) {
	env := Env{GOOS: "linux", Home: "/home/a"}
	for path, want := range map[string]string{
		"/x/claude_desktop_config.json": "claude-desktop", "/p/.mcp.json": "claude-code", "/home/a/.claude.json": "claude-code",
		"/p/.cursor/mcp.json": "cursor", "/p/.vscode/mcp.json": "vscode", "/h/.codeium/windsurf/mcp_config.json": "windsurf",
		"/h/.config/zed/settings.json": "zed", "/h/.gemini/settings.json": "gemini", "/h/.codex/config.toml": "codex",
		"/h/.continue/config.yaml": "continue",
	} {
		f, ok := ForPath(path, "", env)
		if !ok || f.Client != want {
			t.Errorf("ForPath(%s) = %+v %v, want %s", path, f, ok, want)
		}
	}
	if f, ok := ForPath("/x/whatever.json", "zed", env); !ok || f.Layout != ZedServers {
		t.Errorf("--client zed: %+v", f)
	}
}

func TestClientFiles(t *testing.T) {
	mac := Env{GOOS: "darwin", Home: "/Users/a"}
	if got := Clients[0].Files(mac)[0].Path; got != "/Users/a/Library/Application Support/Claude/claude_desktop_config.json" {
		t.Errorf("Claude Desktop on macOS: %s", got)
	}
	win := Env{GOOS: "windows", Home: `C:\Users\a`, AppData: `C:\Users\a\AppData\Roaming`, LocalAppData: t.TempDir()}
	msix := filepath.Join(win.LocalAppData, "Packages", "Claude_pzs8sxrjxfjjc", "LocalCache", "Roaming", "Claude")
	if err := os.MkdirAll(msix, 0o700); err != nil {
		t.Fatal(err)
	}
	files := Clients[0].Files(win)
	if len(files) != 2 || files[1].Path != filepath.Join(msix, "claude_desktop_config.json") {
		t.Errorf("Claude Desktop on Windows, with the MSIX path: %+v", files)
	}
	linux := Env{GOOS: "linux", Home: "/home/a", CodexHome: "/srv/codex"}
	c, _ := Lookup("codex")
	if got := c.Files(linux)[0].Path; got != "/srv/codex/config.toml" {
		t.Errorf("$CODEX_HOME: %s", got)
	}
}

// FuzzWrapJSONC: any JSONC document with server entries is wrapped
// without a panic, and unwrap gives back every byte.
func FuzzWrapJSONC(f *testing.F) {
	for _, fx := range fixtures {
		if fx.format == JSON {
			b, _ := os.ReadFile(filepath.Join("testdata", fx.file))
			f.Add(b)
		}
	}
	f.Add([]byte(`{"mcpServers":{"a":{"command":"x","args":["1"]},"b":{"command":"y"}}}`))
	f.Add([]byte("{/*c*/\"mcpServers\":{\"a\":{\"command\":\"x\",},},}"))
	f.Add([]byte(`{"mcpServers":{"r":{"type":"http","url":"https://x/mcp" , "headers":{"A":"b"}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file := File{Path: "/f.json", Client: "cursor", Format: JSON, Layout: MCPServers}
		out := fuzzWrap(t, file, data)
		if json.Valid(data) && out != nil && !json.Valid(out) {
			t.Fatalf("plain JSON became JSONC:\n%q\n%q", data, out)
		}
	})
}

// TestWrapTwiceWithARenamedBinary: a binary not called aqlguard recognises
// its own entries and does not wrap them again.
func TestWrapTwiceWithARenamedBinary(t *testing.T) {
	const renamed = "/tmp/tools/aqg"
	f, orig := fixture(t, "claude_desktop_config.json")
	recs := &Records{Entries: map[string]Record{}}
	once, _, err := Wrap(f, orig, renamed, recs, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	twice, results, err := Wrap(f, once, renamed, recs, time.Now())
	if err != nil || !bytes.Equal(twice, once) {
		t.Fatalf("wrapping twice changed the file: %v\n%s", err, twice)
	}
	for _, r := range results {
		if r.Action == "wrapped" {
			t.Errorf("%s wrapped twice", r.Entry)
		}
	}
}

// FuzzWrapTOML and FuzzWrapYAML: any Codex or Continue config is wrapped
// without a panic, every entry wrapped reads back as aqlguard's, and
// unwrap gives back every byte.
func FuzzWrapTOML(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "config.toml"))
	f.Add(b)
	f.Add([]byte("[mcp_servers.a]\nurl = \"https://x/mcp\"\nbearer_token_env_var = \"T\"\n[mcp_servers.a.http_headers]\nX = \"y\" # c\n"))
	f.Add([]byte("[mcp_servers.a]\r\ncommand = \"x\"\r\nargs = [\r\n  \"1\", # one\r\n]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzWrap(t, File{Path: "/config.toml", Client: "codex", Format: TOML, Layout: CodexServers}, data)
	})
}

func FuzzWrapYAML(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join("testdata", "config.yaml"))
	f.Add(b)
	f.Add([]byte("mcpServers:\n  - apiKey: k # c\n    url: \"https://x/mcp\"\n    requestOptions: {headers: {X: y}}\n"))
	f.Add([]byte("mcpServers:\r\n- name: a\r\n  command: x\r\n  args:\r\n  - '1'\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzWrap(t, File{Path: "/config.yaml", Client: "continue", Format: YAML, Layout: ContinueServers}, data)
	})
}

func fuzzWrap(t *testing.T, file File, data []byte) []byte {
	recs := &Records{Entries: map[string]Record{}}
	out, results, err := Wrap(file, data, self, recs, time.Unix(0, 0))
	if err != nil {
		return nil
	}
	after, err := Entries(file, out)
	if err != nil {
		t.Fatalf("the wrapped file does not parse: %v\n%q", err, out)
	}
	for i, r := range results {
		if r.Action == "wrapped" && !after[i].Wrapped(self) {
			t.Fatalf("%s wrapped, but does not read so:\n%q", r.Entry, out)
		}
	}
	back, _, err := Unwrap(file, out, recs, false)
	if err != nil {
		t.Fatalf("unwrap of a wrapped file failed: %v\n%q", err, out)
	}
	if !bytes.Equal(back, data) {
		t.Fatalf("not byte-identical:\n%q\n%q\nwrapped %q", data, back, out)
	}
	return out
}

// TestRemoteEntriesCarryTheirHeaders: a wrapped remote entry sends what
// the client sent, from the environment the client starts it with, and
// asks for OAuth only when it sent no Authorization of its own.
func TestRemoteEntriesCarryTheirHeaders(t *testing.T) {
	for _, c := range []struct {
		file, entry string
		headers     map[string]string
		envVars     []string // Codex: the variables the entry must let through
		auth        string
	}{
		{"cursor-mcp.json", "remote", map[string]string{"Authorization": "Bearer x"}, nil, "none"},
		{"vscode-mcp.json", "github", map[string]string{"X-MCP-Toolsets": "repos,issues"}, nil, "oauth"},
		{"config.toml", "remote", nil, nil, "oauth"},
		{"config.toml", "linear", map[string]string{"Authorization": "Bearer ${LINEAR_TOKEN}", "X-Region": "eu",
			"X-Workspace": "${LINEAR_WORKSPACE}"}, []string{"LINEAR_TOKEN", "LINEAR_WORKSPACE"}, "none"},
		{"config.yaml", "remote", nil, nil, "oauth"},
		{"config.yaml", "linear", map[string]string{"Authorization": "Bearer ${{ secrets.LINEAR_KEY }}", "X-Region": "eu"}, nil, "none"},
	} {
		t.Run(c.file+"/"+c.entry, func(t *testing.T) {
			f, orig := fixture(t, c.file)
			out, _, err := Wrap(f, orig, self, &Records{Entries: map[string]Record{}}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			entries, err := Entries(f, out)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == c.entry })
			e := entries[i]
			if got := e.Args[len(e.Args)-1]; got != c.auth {
				t.Errorf("--auth %s, want %s", got, c.auth)
			}
			var h map[string]string
			if s, ok := e.Env[WrapHeadersEnv]; ok {
				if err := json.Unmarshal([]byte(s), &h); err != nil {
					t.Fatal(err)
				}
			}
			if !maps.Equal(h, c.headers) {
				t.Errorf("headers %v, want %v", h, c.headers)
			}
			if f.Format == TOML {
				var doc struct {
					MCPServers map[string]struct {
						EnvVars []string `toml:"env_vars"`
						URL     *string  `toml:"url"`
					} `toml:"mcp_servers"`
				}
				if err := toml.Unmarshal(out, &doc); err != nil {
					t.Fatal(err)
				}
				s := doc.MCPServers[c.entry]
				if want := union(c.envVars, codexPassEnv); !slices.Equal(s.EnvVars, want) || s.URL != nil {
					t.Errorf("env_vars %q (want %q), url %v (want none: Codex refuses url beside command)", s.EnvVars, want, s.URL)
				}
			}
		})
	}
}

// TestCodexPassesWhatAqlguardNeeds: Codex starts a server with a few
// variables of its own (HOME, PATH, ...) and those env_vars lists; every
// entry init wraps lists the display, bus and browser a dialog and OAuth
// consent need and where aqlguard's config and state are, after any the
// entry listed itself.
func TestCodexPassesWhatAqlguardNeeds(t *testing.T) {
	f := File{Path: "/c.toml", Client: "codex", Format: TOML, Layout: CodexServers}
	orig := []byte("[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.b]\ncommand = \"y\"\nenv_vars = [\"API_KEY\", \"DISPLAY\"] # the key\n\n" +
		"[mcp_servers.c]\ncommand = \"z\"\nenv_vars = [{ name = \"K\", source = \"remote\" }]\n")
	out, _, err := Wrap(f, orig, self, &Records{Entries: map[string]Record{}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		MCPServers map[string]struct {
			EnvVars []any `toml:"env_vars"`
		} `toml:"mcp_servers"`
	}
	if err := toml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for name, want := range map[string][]string{"a": codexPassEnv, "b": union([]string{"API_KEY", "DISPLAY"}, codexPassEnv)} {
		got, _ := stringList(doc.MCPServers[name].EnvVars)
		if !slices.Equal(got, want) {
			t.Errorf("%s: env_vars %q, want %q\n%s", name, got, want, out)
		}
	}
	if len(doc.MCPServers["c"].EnvVars) != 1 {
		t.Errorf("a list aqlguard cannot read is left as it is:\n%s", out)
	}
	if !bytes.Contains(out, []byte("# the key")) {
		t.Errorf("the comment is gone:\n%s", out)
	}
}

// TestWrapChecksTheEditReadsBack: an edit that would not read back as the
// entry aqlguard meant, or that would change how the rest of the file
// reads, is refused before anything is written.
func TestWrapChecksTheEditReadsBack(t *testing.T) {
	f, orig := fixture(t, "config.yaml")
	entries, err := Entries(f, orig)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(entries, func(e Entry) bool { return e.Name == "bare" })
	e := entries[i]
	good, err := WrapEntry(f, orig, e, self, f.Client)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWrapped(f, orig, Replace(orig, e.Start, e.End, good), i, e, self); err != nil {
		t.Fatalf("the editor's own edit: %v", err)
	}
	for name, bad := range map[string]string{
		"another command":         strings.Replace(string(good), self, "/tmp/evil", 1),
		"the next item swallowed": strings.TrimSuffix(string(good), "\n") + "\n      nested: x\n",
		"unindented":              strings.Replace(string(good), "    args:", "  args:", 1),
	} {
		if err := checkWrapped(f, orig, Replace(orig, e.Start, e.End, []byte(bad)), i, e, self); err == nil {
			t.Errorf("%s: accepted\n%s", name, bad)
		}
	}
}
