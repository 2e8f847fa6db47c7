// Package audit renders and selects audit records for the tools security
// teams use: JSON lines exactly as stored, or OCSF (the Open
// Cybersecurity Schema Framework, https://schema.ocsf.io) API Activity
// events, filtered by time, agent and kind.
package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/store"
)

// Filter selects records. Zero fields select everything.
type Filter struct {
	Since, Until time.Time
	Agent        string
	Kind         string
}

// Match reports whether r is selected.
func (f Filter) Match(r store.Record) bool {
	switch {
	case !f.Since.IsZero() && r.Time.Before(f.Since):
		return false
	case !f.Until.IsZero() && !r.Time.Before(f.Until):
		return false
	case f.Agent != "" && r.Principal != f.Agent:
		return false
	case f.Kind != "" && r.Kind != f.Kind:
		return false
	}
	return true
}

// Empty reports whether the filter selects every record.
func (f Filter) Empty() bool { return f == Filter{} }

// ParseTime reads a --since/--until value: RFC 3339, or a Go duration
// meaning that long before now ("2h", "90m"), or a number of days ("7d").
func ParseTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 && n <= 36600 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-22T10:00:00Z) nor a duration back from now (2h, 90m, 7d)", s)
}

// OCSFVersion is the OCSF version the events follow.
const OCSFVersion = "1.6.0"

// OCSF API Activity (class 6003, category 6 "Application Activity").
const (
	ocsfCategory  = 6
	ocsfClass     = 6003
	activityOther = 99
)

// OCSF renders a record as an OCSF API Activity event. Every field of the
// record that OCSF has no attribute for is kept under unmapped, so
// nothing is lost.
func OCSF(r store.Record, product string) map[string]any {
	host, pid := splitProcess(r.Process)
	status, statusID := outcome(r)
	ev := map[string]any{
		"category_uid":  ocsfCategory,
		"category_name": "Application Activity",
		"class_uid":     ocsfClass,
		"class_name":    "API Activity",
		"activity_id":   activityOther,
		"activity_name": activityName(r.Kind),
		"type_uid":      ocsfClass*100 + activityOther,
		"type_name":     "API Activity: " + activityName(r.Kind),
		"time":          r.Time.UnixMilli(),
		"severity_id":   severity(r),
		"severity":      severityName[severity(r)],
		"status_id":     statusID,
		"status":        status,
		"message":       message(r),
		"metadata": map[string]any{
			"version":       OCSFVersion,
			"uid":           strconv.FormatUint(r.Seq, 10),
			"original_time": r.Time.Format(time.RFC3339Nano),
			"log_name":      "aqlguard audit",
			"product":       map[string]any{"name": "aqlguard", "vendor_name": "aqlguard", "version": product},
		},
		"actor": map[string]any{
			"user":    map[string]any{"name": r.Principal, "type_id": 99, "type": "AI agent"},
			"session": map[string]any{"uid": r.Session},
		},
		"api": map[string]any{
			"operation": r.Operation,
			"service":   map[string]any{"name": r.Server},
		},
		"src_endpoint": map[string]any{"hostname": host},
	}
	if pid != 0 {
		ev["actor"].(map[string]any)["process"] = map[string]any{"pid": pid, "name": "aqlguard"}
	}
	if r.Result != "" || r.Decision != "" {
		detail := r.Result
		if detail == "" {
			detail = r.Decision
		}
		ev["status_detail"] = detail
		ev["api"].(map[string]any)["response"] = map[string]any{"message": detail}
	}
	if r.Token != "" {
		ev["api"].(map[string]any)["request"] = map[string]any{"uid": r.Token}
	}
	if r.DurationMS > 0 {
		ev["duration"] = int64(r.DurationMS)
	}
	unmapped := map[string]any{"kind": r.Kind, "seq": r.Seq, "prev": r.Prev, "hash": r.Hash}
	set := func(k string, v any, ok bool) {
		if ok {
			unmapped[k] = v
		}
	}
	set("decision", r.Decision, r.Decision != "")
	set("stage", r.Stage, r.Stage != "")
	set("layer", r.Layer, r.Layer != "")
	set("tool", r.Tool, r.Tool != "")
	set("tier", r.Tier, r.Tier != "")
	set("risk", r.Risk, r.Tier != "" || r.Risk != 0)
	set("factors", r.Factors, len(r.Factors) > 0)
	set("findings", r.Findings, len(r.Findings) > 0)
	set("args", r.Args, len(r.Args) > 0)
	set("args_text", r.ArgsText, r.ArgsText != "")
	set("args_bytes", r.ArgsBytes, r.ArgsBytes > 0)
	set("args_sha256", r.ArgsSHA256, r.ArgsSHA256 != "")
	set("preview", r.Preview, r.Preview != "")
	set("challenge_id", r.ChallengeID, r.ChallengeID != "")
	set("approval", r.Approval, r.Approval != "")
	set("execution", r.Execution, r.Execution != "")
	set("result", r.Result, r.Result != "")
	set("process", r.Process, r.Process != "")
	set("gap", r.Gap, r.Gap != nil)
	set("checkpoint", r.Checkpoint, r.Checkpoint != nil)
	ev["unmapped"] = unmapped
	return ev
}

func activityName(kind string) string {
	switch kind {
	case "decision":
		return "Decision"
	case "outcome":
		return "Call Outcome"
	case "challenge":
		return "Verification Code Shown"
	case "verification":
		return "Verification Attempt"
	case "confirmation":
		return "Human Answer"
	case "execution":
		return "Execution Change"
	case "admin":
		return "Admin Action"
	case "approval":
		return "Approval Change"
	case "checkpoint":
		return "Signed Checkpoint"
	}
	return "Other"
}

// outcome maps a record to OCSF's status: what aqlguard let through or
// what succeeded is Success; a refusal or a failure is Failure.
func outcome(r store.Record) (string, int) {
	switch r.Kind {
	case "decision":
		if r.Decision == "allow" {
			return "Success", 1
		}
		return "Failure", 2
	case "outcome":
		if r.Result == "ok" {
			return "Success", 1
		}
		return "Failure", 2
	case "verification":
		if r.Result == "verified" || r.Result == "unblocked" {
			return "Success", 1
		}
		return "Failure", 2
	case "challenge":
		if r.Result == "code_shown" {
			return "Success", 1
		}
		return "Failure", 2
	case "confirmation":
		if strings.HasPrefix(r.Decision, "approved") {
			return "Success", 1
		}
		return "Failure", 2
	case "admin", "execution", "approval":
		return "Success", 1
	}
	return "Unknown", 0
}

var severityName = map[int]string{1: "Informational", 2: "Low", 3: "Medium", 4: "High", 5: "Critical"}

// severity follows the safety tier: advisory 1, confirm 2, verify 3,
// danger_zone 4; failed verifications and admin overrides 3.
func severity(r store.Record) int {
	switch r.Tier {
	case "confirm":
		return 2
	case "verify":
		return 3
	case "danger_zone":
		return 4
	}
	switch {
	case r.Kind == "admin", r.Kind == "verification" && r.Result != "verified" && r.Result != "unblocked":
		return 3
	}
	return 1
}

func message(r store.Record) string {
	var b strings.Builder
	b.WriteString(activityName(r.Kind))
	if r.Decision != "" {
		b.WriteString(": " + r.Decision)
	}
	if r.Operation != "" {
		b.WriteString(" " + r.Operation)
	}
	if r.Tier != "" {
		fmt.Fprintf(&b, " (%s, risk %d)", r.Tier, r.Risk)
	}
	if r.Result != "" {
		b.WriteString(" → " + r.Result)
	}
	return b.String()
}

func splitProcess(p string) (host string, pid int) {
	host, rest, ok := strings.Cut(p, "/")
	if !ok {
		return p, 0
	}
	pid, _ = strconv.Atoi(rest)
	return host, pid
}
