package mcpmethod

import (
	"reflect"
	"slices"
	"testing"
)

// TestTableIsWhole: each row is one method, says what its route needs,
// and belongs to a revision.
func TestTableIsWhole(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name] {
			t.Errorf("%s: two rows", m.Name)
		}
		seen[m.Name] = true
		if m.Route == Unknown {
			t.Errorf("%s: no route", m.Name)
		}
		if m.Route == Merged && m.Items == "" {
			t.Errorf("%s: a merged list without its member", m.Name)
		}
		if m.Inside != nil && len(m.Judged) == 0 {
			t.Errorf("%s: judged inside nothing", m.Name)
		}
		if m.Guarded && m.Subject == "" {
			t.Errorf("%s: guarded, but names nothing for Mcp-Name", m.Name)
		}
		if m.Subject != "" && !slices.Contains(m.Judged, m.Subject) {
			t.Errorf("%s: its subject %q is not judged", m.Name, m.Subject)
		}
		if !m.Before2026 && !m.Since2026 {
			t.Errorf("%s: in no revision", m.Name)
		}
	}
	if u := Lookup("vendor/x"); u.Route != Unknown || !u.Before2026 || !u.Since2026 || u.Guarded {
		t.Errorf("an unknown method: %+v", u)
	}
}

// TestTableKeepsWhatTheRelayDid: the sets the relay, the HTTP front and
// the downstream side each spelled out before the table (issue 33) are
// what the table says, so no client sees a byte change.
func TestTableKeepsWhatTheRelayDid(t *testing.T) {
	judged := map[string][]string{
		"initialize":               {"protocolVersion", "capabilities", "clientInfo"},
		"tools/call":               {"name", "arguments"},
		"resources/read":           {"uri"},
		"resources/subscribe":      {"uri"},
		"resources/unsubscribe":    {"uri"},
		"prompts/get":              {"name", "arguments"},
		"completion/complete":      {"ref", "argument", "context"},
		"logging/setLevel":         {"level"},
		"tools/list":               {"cursor"},
		"resources/list":           {"cursor"},
		"resources/templates/list": {"cursor"},
		"prompts/list":             {"cursor"},
		"subscriptions/listen":     {"notifications"},
		"tasks/get":                {"taskId"},
		"tasks/result":             {"taskId"},
		"tasks/cancel":             {"taskId"},
		"tasks/update":             {"taskId"},
		"tasks/list":               {"cursor"},
	}
	inside := map[string][]string{
		"completion/complete":  {"type", "name", "uri"},
		"subscriptions/listen": {"toolsListChanged", "promptsListChanged", "resourcesListChanged", "resourceSubscriptions"},
	}
	removed := []string{"initialize", "logging/setLevel", "ping", "resources/subscribe", "resources/unsubscribe"}
	only2026 := []string{"server/discover", "subscriptions/listen"}
	cacheable := []string{"prompts/list", "resources/list", "resources/read", "resources/templates/list", "server/discover", "tools/list"}
	guarded := []string{"prompts/get", "resources/read", "tools/call"}
	subject := map[string]string{"tools/call": "name", "prompts/get": "name", "resources/read": "uri",
		"tasks/get": "taskId", "tasks/update": "taskId", "tasks/cancel": "taskId", "tasks/result": "taskId"}

	var gotRemoved, gotOnly, gotCacheable, gotGuarded []string
	for _, m := range All() {
		if !reflect.DeepEqual(m.Judged, judged[m.Name]) {
			t.Errorf("%s: judged %v, was %v", m.Name, m.Judged, judged[m.Name])
		}
		if !reflect.DeepEqual(m.Inside, inside[m.Name]) {
			t.Errorf("%s: inside %v, was %v", m.Name, m.Inside, inside[m.Name])
		}
		if m.Subject != subject[m.Name] {
			t.Errorf("%s: Mcp-Name from %q, was %q", m.Name, m.Subject, subject[m.Name])
		}
		if m.ParamHeaders != (m.Name == "tools/call") {
			t.Errorf("%s: Mcp-Param-* %v", m.Name, m.ParamHeaders)
		}
		for _, set := range []struct {
			in  bool
			out *[]string
		}{{!m.Since2026, &gotRemoved}, {!m.Before2026, &gotOnly}, {m.Cacheable, &gotCacheable}, {m.Guarded, &gotGuarded}} {
			if set.in {
				*set.out = append(*set.out, m.Name)
			}
		}
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"removed in 2026-07-28", gotRemoved, removed}, {"only in 2026-07-28", gotOnly, only2026},
		{"cacheable", gotCacheable, cacheable}, {"guarded", gotGuarded, guarded}} {
		slices.Sort(c.got)
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s: %v, was %v", c.what, c.got, c.want)
		}
	}
	if len(judged) != len(All())-2 { // ping and server/discover judge nothing
		t.Errorf("%d rows, %d judged before", len(All()), len(judged))
	}
}
