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
