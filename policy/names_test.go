package policy

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSnakeName(t *testing.T) {
	for in, want := range map[string]string{
		"":                "",
		"drop_table":      "drop_table",
		"dropTable":       "drop_table",
		"DropTable":       "drop_table",
		"DROP_TABLE":      "drop_table",
		"drop-table":      "drop_table",
		"drop table":      "drop_table",
		"drop.table":      "drop_table",
		"__drop__table__": "drop_table",
		"HTTPServerStart": "http_server_start",
		"getHTTP":         "get_http",
		"v2DeleteAll":     "v2_delete_all",
		"deleteAll2Users": "delete_all2_users",
		"ÉcoleDrop":       "école_drop",
		"a1b2":            "a1b2",
		"_":               "",
		"x__y":            "x_y",
	} {
		if got := SnakeName(in); got != want {
			t.Errorf("SnakeName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"password": true, "Password": true, "dbPassword": true, "db_password": true, "API_KEY": true, "apiKey": true,
		"x-api-key": true, "Authorization": true, "client_secret": true, "githubToken": true, "GITHUB_TOKEN": true,
		"stripe_secret_key": true, "ssh_private_key": true, "refreshToken": true,
		"code": false, "key": false, "monkey": false, "max_tokens": false, "token_count": false, "keyword": false,
		"author": false, "passage": false, "secretary": false, "path": false, "command": false, "next_page_token": false,
	} {
		if got := SecretName(name); got != want {
			t.Errorf("SecretName(%q) = %v, want %v", name, got, want)
		}
		// The guard asks with the snake_case spelling.
		if got := SecretName(SnakeName(name)); got != want {
			t.Errorf("SecretName(SnakeName(%q)) = %v, want %v", name, got, want)
		}
	}
}

func TestServerNameFrom(t *testing.T) {
	for in, want := range map[string]string{
		"github": "github", "github-mcp": "githubmcp", "My Server!": "myserver", "@scope/pkg": "scopepkg",
		"7zip": "s7zip", "": "server", "___": "server", "ÉCOLE": "cole", strings.Repeat("a", 40): strings.Repeat("a", 32),
	} {
		got := ServerNameFrom(in)
		if got != want || !ValidServerName(got) {
			t.Errorf("ServerNameFrom(%q) = %q, want %q (valid %v)", in, got, want, ValidServerName(got))
		}
	}
}

func TestWrap(t *testing.T) {
	cfg, err := Wrap(Default(), "Files", []string{"npx", "-y", "server-filesystem", "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if cfg.Mode != "transparent" || s.Name != "files" || s.Command != "npx" || len(s.Args) != 3 || s.Transport != "stdio" || s.StartTimeout.Duration == 0 {
		t.Errorf("%+v %+v", cfg.Mode, s)
	}
	if len(Default().Servers) != 0 {
		t.Error("Wrap modified its base")
	}
	if _, err := Wrap(Default(), "x", nil); err == nil {
		t.Error("no command accepted")
	}
}

// TestSecretArgument: the one notion of a secret argument, as the
// catalog (with a schema) and the guard (nested paths) ask it.
func TestSecretArgument(t *testing.T) {
	cfg, err := Parse([]byte("[safety]\nsecret_arguments = [\"db.*:conn.dsn\", \"token_hint\"]\n"), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	db := NameForms("db_query", "db", "query")
	fs := NameForms("fs_read", "fs", "read")
	tests := []struct {
		pol    *Policy
		names  CallNames
		path   []string
		schema map[string]any
		want   bool
	}{
		{nil, db, []string{"password"}, nil, true},
		{nil, db, []string{"conn", "api_key"}, nil, true}, // by name, at any depth
		{nil, db, []string{"max_tokens"}, nil, false},     // no substring
		{nil, db, []string{"hint"}, map[string]any{"format": "password"}, true},
		{nil, db, []string{"hint"}, map[string]any{"writeOnly": true}, true},
		{nil, db, []string{"hint"}, map[string]any{"writeOnly": false}, false},
		{nil, db, []string{"conn", "dsn"}, nil, false}, // no policy: not declared
		{pol, db, []string{"conn", "dsn"}, nil, true},  // secret_arguments, that tool
		{pol, fs, []string{"conn", "dsn"}, nil, false}, // another tool
		{pol, db, []string{"dsn"}, nil, false},         // another path
		{pol, fs, []string{"token_hint"}, nil, true},   // every tool
		{pol, fs, nil, nil, false},
	}
	for _, tt := range tests {
		if got := tt.pol.SecretArgument(tt.names, tt.path, tt.schema); got != tt.want {
			t.Errorf("SecretArgument(%v, %v, %v) with policy %v = %v, want %v", tt.names.Forms[0], tt.path, tt.schema, tt.pol != nil, got, tt.want)
		}
	}
}

// TestNameReadings: a name pattern matches the names it speaks of
// (issue 19, item 4). Its literal head says which: "fs." a server's
// server.tool names, "*." any server's by the tool's own name, a verb and
// '_' the tool's own name, a configured server and '_' that server's
// operation names; anything else every name.
func TestNameReadings(t *testing.T) {
	type call struct{ op, server, tool string }
	tests := []struct {
		pattern string
		servers []string
		call    call
		want    bool
	}{
		// server.tool: the real server only, never a tool whose own name
		// starts with "fs.".
		{"fs.*", []string{"fs", "other"}, call{"fs_write_file", "fs", "write_file"}, true},
		{"fs.*", []string{"fs", "other"}, call{"other_fs_sync_to_remote", "other", "fs.sync_to_remote"}, false},
		{"fs.*", nil, call{"other_fs_sync_to_remote", "other", "fs.sync_to_remote"}, false},
		{"fs.write_file", []string{"fs"}, call{"fs_write_file", "fs", "writeFile"}, true},
		{"fs.read_*", []string{"fs"}, call{"fs_fs_read_evil", "fs", "fs.read_evil"}, false}, // the server's own tool "fs.read_evil" is not read_*
		{"other.fs.sync_to_remote", []string{"fs", "other"}, call{"other_fs_sync_to_remote", "other", "fs.sync_to_remote"}, true},
		// Any server, by the tool's own name.
		{"*.write_*", nil, call{"fs_write_file", "fs", "write_file"}, true},
		{"*.write_*", nil, call{"fs_write_file", "fs", "writeFile"}, true},
		{"*.write_*", nil, call{"other_x_write_y", "other", "x.write_y"}, false},
		{"*.get_*", nil, call{"evil_a_get_b", "evil", "a.get_b"}, false},
		{"*.run_tests", nil, call{"ci_run_tests", "ci", "run_tests"}, true},
		{"*.*", nil, call{"ci_run", "ci", "run"}, true},
		// A verb: the tool's own name, never the server's.
		{"search_*", []string{"search", "fs"}, call{"search_run_command", "search", "run_command"}, false},
		{"search_*", []string{"search", "fs"}, call{"fs_search_files", "fs", "search_files"}, true},
		{"search_*", []string{"search"}, call{"search_search_docs", "search", "search_docs"}, true},
		{"get_*", nil, call{"gh_get_issue", "gh", "getIssue"}, true},
		{"delete_*", []string{"delete"}, call{"delete_list", "delete", "list"}, false},
		{"read_file", nil, call{"fs_read_file", "fs", "read_file"}, true},
		// A configured server and '_': its operation names only.
		{"fs_*", []string{"fs", "other"}, call{"fs_write_file", "fs", "write_file"}, true},
		{"fs_*", []string{"fs", "other"}, call{"other_fs_sync", "other", "fs_sync"}, false},
		{"fs_write_file", []string{"fs", "other"}, call{"other_fs_write_file", "other", "fs_write_file"}, false},
		{"ts_echo", []string{"ts"}, call{"ts_echo", "ts", "echo"}, true},
		// ...but a word that is no configured server's: every name.
		{"fs_*", []string{"other"}, call{"other_fs_sync", "other", "fs_sync"}, true},
		// Every name: no separator after the head, or no head.
		{"echo", []string{"ts"}, call{"ts_echo", "ts", "echo"}, true},
		{"*_echo", []string{"ts"}, call{"ts_echo", "ts", "echo"}, true},
		{"fs*", []string{"fs", "fs2"}, call{"fs2_x", "fs2", "x"}, true},
		{"*write*", nil, call{"other_x_write_y", "other", "x.write_y"}, true},
		// Resources and prompts.
		{"*.resource:file:///etc/*", nil, call{"fs.resource:file:///etc/passwd", "fs", "resource:file:///etc/passwd"}, true},
		{"*.resource:file:///etc/*", nil, call{"fs.resource:x", "fs", "resource:file:///tmp/a.resource:file:///etc/x"}, false},
		{"fs.resource:file:///etc/*", []string{"fs"}, call{"fs.resource:file:///etc/passwd", "fs", "resource:file:///etc/passwd"}, true},
		{"fs.resource:file:///etc/*", []string{"fs"}, call{"db.resource:file:///etc/passwd", "db", "resource:file:///etc/passwd"}, false},
		{"resource:file:///etc/*", nil, call{"db.resource:file:///etc/passwd", "db", "resource:file:///etc/passwd"}, true},
	}
	for _, tt := range tests {
		checkReading(t, tt.pattern, tt.servers, tt.call.op, tt.call.server, tt.call.tool, tt.want)
	}
}

// checkReading compiles pattern in a policy with these servers and checks
// whether it matches the call's names.
func checkReading(t *testing.T, pattern string, servers []string, op, server, tool string, want bool) {
	t.Helper()
	pol := compileDoc(t, "[safety]\nauto_approve = ["+strconv.Quote(pattern)+"]\n"+serverTables(servers...))
	pat := pol.AutoApprove[slices.IndexFunc(pol.AutoApprove, func(p Pattern) bool { return p.norm == Normalize(pattern) })]
	names := NameForms(op, server, tool)
	if got := pat.MatchesName(names); got != want {
		t.Errorf("%q (servers %v, read against %s) on %v = %v, want %v", pattern, servers, pat.Reading(), names.Forms, got, want)
	}
	// A reading only ever narrows the plain glob.
	if pat.MatchesName(names) {
		plain := false
		for _, n := range names.Forms {
			plain = plain || pat.MatchNormalized(n)
		}
		if !plain {
			t.Errorf("%q matches %v as read but not as a glob", pattern, names.Forms)
		}
	}
}

// TestDocumentedNameReadings checks the examples of docs/policy.md's
// "Which names a name pattern reads".
func TestDocumentedNameReadings(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- name-readings")
	if !ok {
		t.Fatal("docs/policy.md has no name-readings table")
	}
	rows := 0
	for i, line := range strings.Split(table, "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if i > 2 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) != 4 || cells[0] == "pattern" || strings.HasPrefix(cells[0], "---") {
			continue
		}
		unquote := func(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }
		call := strings.Split(cells[2], ", ")
		if len(call) != 3 {
			t.Fatalf("docs/policy.md: a call is operation, server, tool: %q", line)
		}
		var servers []string
		for _, s := range strings.Split(cells[1], ", ") {
			servers = append(servers, unquote(s))
		}
		checkReading(t, unquote(cells[0]), servers, unquote(call[0]), unquote(call[1]), unquote(call[2]), cells[3] == "yes")
		rows++
	}
	if rows < 10 {
		t.Errorf("only %d examples found in docs/policy.md", rows)
	}
}

// TestDigestOfServerReadings: what the configured servers decide about a
// pattern ("fs_*" with or without a server fs) is part of the policy's
// version; a server that changes no pattern's reading is not.
func TestDigestOfServerReadings(t *testing.T) {
	version := func(doc string) string { return compileDoc(t, doc).Version }
	reads := "[safety]\nauto_approve = [\"fs_*\"]\n"
	plain := "[safety]\nauto_approve = [\"get_*\"]\n"
	fs, db := serverTables("fs"), serverTables("db")
	if version(reads) == version(reads+fs) {
		t.Error(`adding the server fs changed what "fs_*" reads but not the policy's version`)
	}
	if version(reads+fs) != version(reads+fs+db) || version(plain) != version(plain+fs) {
		t.Error("a server that changes no pattern's reading changed the policy's version")
	}
}

// compileDoc parses and compiles a configuration.
func compileDoc(t *testing.T, doc string) *Policy {
	t.Helper()
	cfg, err := Parse([]byte(doc), "t.toml")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := Compile(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	return pol
}
