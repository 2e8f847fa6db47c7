package doctor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/proxy/names"
	"github.com/aqlguard/aqlguard/store"
)

// TestNameChecks: the servers one client sees side by side are those of
// one agent, started by doctor or recorded by aqlguard processes; what a
// started server offers now stands for what it offered then; another
// agent's servers and a record older than a month are not compared.
func TestNameChecks(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	started := []startedServer{
		{origin{client: "claude-desktop", agent: "claude-desktop", name: "filesystem", entry: "filesystem"},
			names.Listing{Server: "filesystem", Tools: []string{"read_file", "write_file"}}},
		{origin{client: "claude-desktop", agent: "claude-desktop", name: "githb", entry: "githb"},
			names.Listing{Server: "githb", Tools: []string{"create_issue"}}},
	}
	recorded := []store.ServerNames{
		{Principal: "claude-desktop", Server: "filesystem", Tools: []string{"old_tool"}, SeenAt: now},
		{Principal: "claude-desktop", Server: "helper", Tools: []string{"read_file"}, Prompts: []string{"p"}, SeenAt: now.Add(-time.Hour)},
		{Principal: "claude-desktop", Server: "gone", Tools: []string{"write_file"}, SeenAt: now.Add(-40 * 24 * time.Hour)},
		{Principal: "cursor", Server: "notes", Tools: []string{"create_issue"}, SeenAt: now},
		{Principal: "cursor", Server: "other", Prompts: []string{"p"}, SeenAt: now},
	}
	in := Input{Now: now, RecordedNames: func(context.Context) ([]store.ServerNames, error) { return recorded, nil }}
	checks := nameChecks(context.Background(), in, started)
	if len(checks) != 2 || checks[0].Name != "names" || checks[1].Name != "server names" {
		t.Fatalf("checks: %+v", checks)
	}
	if c := checks[0]; c.Level != Warn || c.Detail != `agent claude-desktop: tool "read_file" is offered by servers filesystem and helper`+
		`; the model may call one for the other, and one server may be passing for the other: remove the one you do not trust` {
		t.Errorf("names: %+v", c)
	}
	if c := checks[1]; c.Level != Warn || !strings.Contains(c.Detail, `agent claude-desktop: server name "githb" passes for the well-known server "github"`) ||
		strings.Contains(c.Detail, "cursor") {
		t.Errorf("server names: %+v", c)
	}

	// --client cursor: cursor's servers alone.
	in.Clients = []string{"cursor"}
	checks = nameChecks(context.Background(), in, nil)
	if checks[0].Level != OK || !strings.Contains(checks[0].Detail, "2 server(s) of 1 agent(s)") {
		t.Errorf("one client: %+v", checks)
	}
	in.Clients = nil

	// Nothing to compare, nothing found, a state that cannot be read.
	if checks := nameChecks(context.Background(), Input{}, nil); len(checks) != 1 || checks[0].Level != OK {
		t.Errorf("nothing to compare: %+v", checks)
	}
	in.RecordedNames = func(context.Context) ([]store.ServerNames, error) { return recorded[3:4], nil }
	checks = nameChecks(context.Background(), in, started[:1])
	if checks[0].Level != OK || checks[1].Level != OK || !strings.Contains(checks[0].Detail, "2 server(s) of 2 agent(s)") {
		t.Errorf("nothing found: %+v", checks)
	}
	in.RecordedNames = func(context.Context) ([]store.ServerNames, error) { return nil, errors.New("database\nbusy") }
	checks = nameChecks(context.Background(), in, started[:1])
	if checks[0].Level != Warn || !strings.HasSuffix(checks[0].Detail, "could not be read: database busy") {
		t.Errorf("an unreadable state: %+v", checks)
	}
}
