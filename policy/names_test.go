package policy

import "testing"

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
	}
}
