package policy

import (
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
		names  []string
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
			t.Errorf("SecretArgument(%v, %v, %v) with policy %v = %v, want %v", tt.names[0], tt.path, tt.schema, tt.pol != nil, got, tt.want)
		}
	}
}
