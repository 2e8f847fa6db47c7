package aql

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestPermissionDenied(t *testing.T) {
	tests := []struct {
		why     string
		details map[string]any
		want    map[string]any
	}{
		{"a human denied this action", nil, map[string]any{"reason": "a human denied this action"}},
		{"too many", map[string]any{"operation": "op"}, map[string]any{"reason": "too many", "operation": "op"}},
		// The cause is the reason, whatever the caller put there.
		{"x", map[string]any{"reason": "y"}, map[string]any{"reason": "x"}},
	}
	for _, tt := range tests {
		before := clone(tt.details)
		e := PermissionDenied(tt.why, tt.details)
		if e.Code != CodePermissionDenied || e.Message != "Permission denied: '"+tt.why+"'" || !reflect.DeepEqual(e.Details, tt.want) {
			t.Errorf("PermissionDenied(%q, %v) = %+v", tt.why, tt.details, e)
		}
		if !reflect.DeepEqual(tt.details, before) {
			t.Errorf("the caller's details changed: %v", tt.details)
		}
	}
}

func clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// TestConfirmationRequired: the token travels in the error's details and
// in the result's confirmation, and they agree.
func TestConfirmationRequired(t *testing.T) {
	for _, r := range []ConfirmationRequest{
		{Operation: "fs_write", Token: "conf_1", ExpiresAt: "2026-11-24T12:00:00Z", Message: "ask", Reasons: []string{"r"},
			DangerLevel: "destructive", Tier: "confirm", Stage: "pattern"},
		{Operation: "fs_write", Token: "conf_2", ExpiresAt: "2026-11-24T12:00:00Z", Message: "wait", DangerLevel: "unknown"},
	} {
		res := ConfirmationRequired(r)
		d := res.Err.Details
		if res.Err.Code != CodeConfirmation || d["confirmation_token"] != r.Token || res.Confirmation.Token != r.Token ||
			d["expires_at"] != res.Confirmation.ExpiresAt || d["confirmation_message"] != res.Confirmation.Message {
			t.Errorf("%+v: %+v %+v", r, res.Err, res.Confirmation)
		}
		if _, ok := d["tier"]; ok != (r.Tier != "") {
			t.Errorf("tier present %v for %q", ok, r.Tier)
		}
		if _, err := json.Marshal(res.Err); err != nil {
			t.Error(err)
		}
	}
}
