package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func script(t *testing.T, body string) (argv []string, seen string) {
	t.Helper()
	dir := t.TempDir()
	seen = filepath.Join(dir, "stdin.json")
	path := filepath.Join(dir, "human.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\ncat > "+seen+"\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return []string{path}, seen
}

func TestCommandAsk(t *testing.T) {
	req := Request{Kind: KindConfirmation, Agent: "a", Operation: "op", Action: "srv.tool {}", Token: "conf_x",
		ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	tests := []struct {
		body string
		want Answer
	}{
		{"echo allow", Allow},
		{"echo '  ALLOW '", Allow},
		{"echo deny", Deny},
		{"echo maybe", None},
		{"true", None},
		{"echo allow; exit 3", None}, // a failing command approves nothing
		{"sleep 30; echo allow", None},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			argv, seen := script(t, tt.body)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			began := time.Now()
			got, _ := NewCommand(argv).Ask(ctx, req)
			if got != tt.want {
				t.Errorf("answer %q, want %q", got, tt.want)
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("took %s: the command must die with the context", d)
			}
			var m map[string]any
			b, _ := os.ReadFile(seen)
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("stdin was %q", b)
			}
			want := map[string]any{"kind": "confirmation", "token": "conf_x", "agent": "a", "operation": "op",
				"action": "srv.tool {}", "expires_at": "2026-01-02T03:04:05Z"}
			for k, v := range want {
				if m[k] != v {
					t.Errorf("%s = %v, want %v", k, m[k], v)
				}
			}
		})
	}
}

func TestCommandShow(t *testing.T) {
	argv, seen := script(t, "exit 0")
	err := NewCommand(argv).Show(context.Background(), Request{Kind: KindChallenge, Agent: "a", Action: "x",
		Challenge: "id-1", Code: "SECRET-CODE", Tier: "danger_zone", ExpiresAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(seen)
	if !strings.Contains(string(b), `"code":"SECRET-CODE"`) || !strings.Contains(string(b), `"challenge_id":"id-1"`) {
		t.Errorf("stdin %s", b)
	}
	failing, _ := script(t, "exit 4")
	err = NewCommand(failing).Show(context.Background(), Request{Code: "SECRET-CODE"})
	if err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("a failing command is an error that never carries the code: %v", err)
	}
	if err := NewCommand([]string{"/nonexistent/pager"}).Show(context.Background(), Request{Code: "SECRET-CODE"}); err == nil {
		t.Error("a missing command is an error")
	}
}
