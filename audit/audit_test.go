package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

func TestOCSF(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		r          store.Record
		status     int
		severity   int
		activity   string
		wantDetail string
	}{
		{store.Record{Seq: 7, Time: at, Kind: "decision", Principal: "claude", Session: "s-1", Process: "host/42", Server: "fs",
			Operation: "fs_write_file", Decision: "block", Tier: "danger_zone", Risk: 100, Result: "PERMISSION_AGENT_BLOCKED",
			Args: json.RawMessage(`{"path":"/x"}`), Prev: "p", Hash: "h"}, 2, 4, "Decision", "PERMISSION_AGENT_BLOCKED"},
		{store.Record{Seq: 8, Time: at, Kind: "decision", Principal: "claude", Operation: "fs_read_file", Decision: "allow", Tier: "advisory", Risk: 10}, 1, 1, "Decision", "allow"},
		{store.Record{Seq: 9, Time: at, Kind: "outcome", Principal: "claude", Operation: "fs_read_file", Result: "ok"}, 1, 1, "Call Outcome", "ok"},
		{store.Record{Seq: 10, Time: at, Kind: "verification", Principal: "claude", Result: "wrong_code"}, 2, 3, "Verification Attempt", "wrong_code"},
		{store.Record{Seq: 11, Time: at, Kind: "confirmation", Principal: "claude", Decision: "approved_for_session", Tier: "confirm"}, 1, 2, "Human Answer", "approved_for_session"},
		{store.Record{Seq: 12, Time: at, Kind: "admin", Principal: "claude", Decision: "unblock", Result: "unblocked"}, 1, 3, "Admin Action", "unblocked"},
	}
	for _, tt := range tests {
		ev := OCSF(tt.r, "v1")
		// The attributes API Activity and the base event require.
		for _, k := range []string{"category_uid", "class_uid", "activity_id", "type_uid", "time", "severity_id", "metadata", "actor", "api", "src_endpoint"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("record %d: no %s", tt.r.Seq, k)
			}
		}
		if ev["class_uid"] != 6003 || ev["category_uid"] != 6 || ev["type_uid"] != 600399 || ev["activity_id"] != 99 {
			t.Errorf("record %d: class %v", tt.r.Seq, ev)
		}
		if ev["status_id"] != tt.status || ev["severity_id"] != tt.severity || ev["activity_name"] != tt.activity || ev["status_detail"] != tt.wantDetail {
			t.Errorf("record %d: status %v severity %v activity %v detail %v", tt.r.Seq, ev["status_id"], ev["severity_id"], ev["activity_name"], ev["status_detail"])
		}
		if ev["time"] != at.UnixMilli() || ev["metadata"].(map[string]any)["uid"] == "" {
			t.Errorf("record %d: time/uid", tt.r.Seq)
		}
		if api := ev["api"].(map[string]any); api["operation"] != tt.r.Operation {
			t.Errorf("record %d: api %v", tt.r.Seq, api)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if tt.r.Seq == 7 && (!strings.Contains(string(b), `"args":{"path":"/x"}`) || !strings.Contains(string(b), `"pid":42`) ||
			!strings.Contains(string(b), `"hostname":"host"`) || !strings.Contains(string(b), `"hash":"h"`)) {
			t.Errorf("the event lost something: %s", b)
		}
	}
}

func TestFilter(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	since, err := ParseTime("2h", now)
	if err != nil || !since.Equal(now.Add(-2*time.Hour)) {
		t.Fatalf("2h: %v %v", since, err)
	}
	until, err := ParseTime("2026-11-22T11:30:00Z", now)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"yesterday", "-2h", "2026-11-22"} {
		if _, err := ParseTime(bad, now); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	f := Filter{Since: since, Until: until, Agent: "a", Kind: "decision"}
	for _, tc := range []struct {
		r    store.Record
		want bool
	}{
		{store.Record{Time: now.Add(-time.Hour), Principal: "a", Kind: "decision"}, true},
		{store.Record{Time: now.Add(-3 * time.Hour), Principal: "a", Kind: "decision"}, false},
		{store.Record{Time: now.Add(-10 * time.Minute), Principal: "a", Kind: "decision"}, false},
		{store.Record{Time: now.Add(-time.Hour), Principal: "b", Kind: "decision"}, false},
		{store.Record{Time: now.Add(-time.Hour), Principal: "a", Kind: "outcome"}, false},
	} {
		if got := f.Match(tc.r); got != tc.want {
			t.Errorf("%+v: %v", tc.r, got)
		}
	}
	if !(Filter{}).Match(store.Record{}) || !(Filter{}).Empty() {
		t.Error("the zero filter selects everything")
	}
}
