package aql

import (
	"encoding/json"
	"testing"
)

func TestSelection(t *testing.T) {
	item := func(id string) map[string]any {
		return map[string]any{"id": id, "name": "n" + id, "secret": "s", "owner": map[string]any{"name": "al", "email": "e"}, "tags": []any{"a"}}
	}
	tests := []struct {
		name   string
		fields any
		data   any
		want   string
	}{
		{name: "paths", fields: []any{"id", "owner.email", "missing"}, data: item("1"), want: `{"id":"1","owner":{"email":"e"}}`},
		{name: "minimal", fields: "minimal", data: item("1"), want: `{"id":"1","name":"n1"}`},
		{name: "standard keeps scalars", fields: "standard", data: item("1"), want: `{"id":"1","name":"n1","secret":"s"}`},
		{name: "full", fields: "full", data: item("1"), want: mustJSONNoT(item("1"))},
		{name: "collection items", fields: []any{"id"}, data: map[string]any{"items": []any{item("1"), item("2")}, "pagination": map[string]any{"page": 1}},
			want: `{"items":[{"id":"1"},{"id":"2"}],"pagination":{"page":1}}`},
		{name: "array data", fields: []any{"name"}, data: []any{item("1")}, want: `[{"name":"n1"}]`},
		{name: "path through array", fields: []any{"rows.a"}, data: map[string]any{"rows": []any{map[string]any{"a": 1, "b": 2}}}, want: `{"rows":[{"a":1}]}`},
		{name: "scalar data untouched", fields: []any{"x"}, data: "text", want: `"text"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ParseSelection(tt.fields)
			if err != nil {
				t.Fatal(err)
			}
			if got := mustJSON(t, s.Apply(tt.data)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	for _, bad := range []any{"everything", []any{1}, []any{""}, 3.0} {
		if _, err := ParseSelection(bad); err == nil {
			t.Errorf("ParseSelection(%v) succeeded", bad)
		}
	}
}

func mustJSONNoT(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
