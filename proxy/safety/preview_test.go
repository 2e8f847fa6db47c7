package safety

import (
	"strings"
	"testing"
)

func TestPreview(t *testing.T) {
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"none", nil, ""},
		{"plain", map[string]any{"path": "/tmp/a", "n": 3}, `{"n":3,"path":"/tmp/a"}`},
		{"secret keys", map[string]any{"password": "hunter2", "API_Key": "k", "auth_header": "Bearer x", "code": "ABCD-EFGH"},
			`{"API_Key":"[redacted]","auth_header":"[redacted]","code":"[redacted]","password":"[redacted]"}`},
		{"nested", map[string]any{"headers": map[string]any{"Cookie": "c", "accept": "json"}, "list": []any{map[string]any{"token": "t"}}},
			`{"headers":{"Cookie":"[redacted]","accept":"json"},"list":[{"token":"[redacted]"}]}`},
		{"long string", map[string]any{"content": long}, `{"content":"` + strings.Repeat("x", previewValue) + `…"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Preview(tt.args); got != tt.want {
				t.Errorf("Preview = %s\nwant      %s", got, tt.want)
			}
		})
	}
	big := map[string]any{}
	for i := range 100 {
		big[strings.Repeat("k", i+1)] = long
	}
	if got := Preview(big); len(got) > previewTotal+len("…") {
		t.Errorf("preview of large arguments is %d bytes, want at most %d", len(got), previewTotal)
	}
}
