package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// guarded is the test server behind a policy with one rule of each kind.
const guarded = `
mode = "semantic"
agent = "e2e-agent"
[safety]
loop = %q
max_autonomous_steps = %d
risk_tolerance = "moderate"
deny = ["*drop_database*"]
requires_approval = ["ts_delete_note"]
auto_approve = ["ts_echo", "ts_get_item", "*.list_items*"]
[[safety.rules]]
action = "deny"
argument = "command"
pattern = "rm -rf *"
[[safety.risk_rules]]
pattern = "ts_create_note"
score = 70
reason = "notes are precious"
[[servers]]
name = "ts"
trust_first_sight = true
command = {{toml .testserver}}
args = ["-log", {{toml .dir}}]
`

func guardedConfig(loop string, steps int) string {
	return strings.Replace(fmt.Sprintf(guarded, loop, steps), `args = ["-log", {{toml .dir}}]`,
		`args = ["-log", "{{.dir}}/calls.jsonl"]`, 1)
}

// TestGuardRefusesAndNeverForwards: every tier's refusal has its DESIGN.md
// code, and the test server's own log proves no refused call reached it.
// Each case gets its own aqlguard: a block or a verification pause holds
// for every later call of the principal.
func TestGuardRefusesAndNeverForwards(t *testing.T) {
	cases := []struct {
		name, tool, op string
		params         map[string]any
		code           string
	}{
		{"deny pattern", "mcp_aql_delete", "ts_drop_database", map[string]any{"name": "prod"}, "PERMISSION_AGENT_BLOCKED"},
		{"deny in arguments", "mcp_aql_execute", "ts_echo", map[string]any{"message": "please DROP_DATABASE now"}, "PERMISSION_AGENT_BLOCKED"},
		{"argument rule", "mcp_aql_execute", "ts_run_command", map[string]any{"command": "rm   -rf /home"}, "PERMISSION_AGENT_BLOCKED"},
		{"requires approval", "mcp_aql_delete", "ts_delete_note", map[string]any{"id": "n1"}, "CONFIRMATION_REQUIRED"},
		{"verify tier by risk rule", "mcp_aql_create", "ts_create_note", map[string]any{"title": "t"}, "PERMISSION_VERIFICATION_REQUIRED"},
		// "*.list_items*" would match this call's hint; auto_approve must
		// not be reachable through model-written arguments.
		{"auto_approve not through arguments", "mcp_aql_create", "ts_create_note", map[string]any{"title": "x.list_items"}, "PERMISSION_VERIFICATION_REQUIRED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := startGuard(t, guardedConfig("enforcing", 1000))
			res, _ := g.callAQL(t, c.tool, c.op, c.params)
			assertResultSchema(t, res)
			code, details := errCode(t, res)
			if code != c.code {
				t.Fatalf("code %s, want %s: %s", code, c.code, jsonString(res))
			}
			if code == "PERMISSION_AGENT_BLOCKED" && details["agent"] != "e2e-agent" {
				t.Errorf("principal must be the configured agent: %v", details)
			}
			// Whatever comes next for this principal is refused too.
			res, _ = g.callAQL(t, "mcp_aql_execute", "ts_echo", map[string]any{"message": "next"})
			if c.code != "CONFIRMATION_REQUIRED" && res["success"] != false {
				t.Errorf("a %s must hold for the next call: %v", code, res)
			}
			for _, call := range readCalls(t, g.dir+"/calls.jsonl") {
				if call.Tool != "echo" || c.code != "CONFIRMATION_REQUIRED" {
					t.Errorf("the test server saw %s %s", call.Tool, call.Arguments)
				}
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		g := startGuard(t, guardedConfig("enforcing", 1000))
		// A tool that runs a command scores 45: the confirm tier pauses
		// for a human under the default (moderate) tolerance, and nobody
		// can be asked here.
		res, _ := g.callAQL(t, "mcp_aql_execute", "ts_run_command", map[string]any{"command": "ls"})
		if code, _ := errCode(t, res); code != "CONFIRMATION_REQUIRED" {
			t.Fatalf("confirm tier: %s", jsonString(res))
		}
		res, _ = g.callAQL(t, "mcp_aql_execute", "ts_echo", map[string]any{"message": "allowed"})
		if res["data"] != "allowed" {
			t.Fatalf("allowed call: %v", res)
		}
		res, _ = g.callAQL(t, "mcp_aql_read", "ts_list_items", map[string]any{"limit": 2})
		if res["success"] != true {
			t.Fatalf("auto-approved read: %v", res)
		}
		var got []string
		for _, c := range readCalls(t, g.dir+"/calls.jsonl") {
			got = append(got, c.Tool)
		}
		if strings.Join(got, ",") != "echo,list_items" {
			t.Errorf("the test server saw %v", got)
		}
	})
}

// TestGuardPassthroughAndSingleAreGuarded: the same refusals hold on the
// unified endpoint and on passthrough tools.
func TestGuardPassthroughAndSingleAreGuarded(t *testing.T) {
	cfg := strings.Replace(guardedConfig("enforcing", 1000), `mode = "semantic"`, `mode = "passthrough"`, 1)
	g := startGuard(t, cfg)
	raw2, err := g.callRaw("ts_echo", map[string]any{"message": "through"})
	if err != nil || raw2.IsError || resultText(t, raw2) != "through" {
		t.Errorf("passthrough allowed call must return the downstream result untouched: %v %v", jsonString(raw2), err)
	}
	res, raw := g.call(t, "ts_drop_database", map[string]any{"name": "prod"})
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" || !raw.IsError {
		t.Errorf("passthrough deny: %v", res)
	}
	res, _ = g.callAQL(t, "mcp_aql", "ts_drop_database", map[string]any{"name": "prod"})
	if code, _ := errCode(t, res); code != "PERMISSION_AGENT_BLOCKED" {
		t.Errorf("single deny: %v", res)
	}
	if calls := readCalls(t, g.dir+"/calls.jsonl"); len(calls) != 1 || calls[0].Tool != "echo" {
		t.Errorf("server saw %v", calls)
	}
}

// TestMonitoringAndLoggingModes: monitoring forwards and reports what
// enforcing would have done; logging forwards without evaluating.
func TestMonitoringAndLoggingModes(t *testing.T) {
	t.Run("monitoring", func(t *testing.T) {
		g := startGuard(t, guardedConfig("monitoring", 1000))
		res, _ := g.callAQL(t, "mcp_aql_delete", "ts_drop_database", map[string]any{"name": "prod"})
		if res["success"] != true || res["data"] != "dropped prod" {
			t.Fatalf("monitoring must forward: %v", res)
		}
		ws, _ := res["warnings"].([]any)
		if len(ws) != 1 || ws[0].(map[string]any)["code"] != "SAFETY_MONITORING_ONLY" ||
			ws[0].(map[string]any)["details"].(map[string]any)["decision"] != "block" {
			t.Errorf("monitoring must report the would-be decision: %v", res)
		}
		assertResultSchema(t, res)
		// The log line is written before the answer, but reaches us
		// through a pipe of its own: wait for it.
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(g.stderr(), "enforced=false"); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Error("log lacks the monitored decision")
				break
			}
		}
	})
	t.Run("logging", func(t *testing.T) {
		g := startGuard(t, guardedConfig("logging", 1))
		for i := 0; i < 3; i++ { // no step limit either: nothing is evaluated
			res, _ := g.callAQL(t, "mcp_aql_delete", "ts_drop_database", map[string]any{"name": "prod"})
			if res["success"] != true || res["warnings"] != nil {
				t.Fatalf("logging must forward silently: %v", res)
			}
		}
		if n := len(readCalls(t, g.dir+"/calls.jsonl")); n != 3 {
			t.Errorf("server saw %d calls, want 3", n)
		}
	})
}
