package evaluator

import (
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

func TestFlowJudgement(t *testing.T) {
	p := compile(t, "[flows]\nexits = [\"chat.post_message\"]\n", "")
	send := policy.Effects(0).With(policy.EffectSend)
	read := policy.Effects(0).With(policy.EffectRead)
	both := Flow{Private: []string{"~/.ssh/id_rsa with fs.read_file at 17:04"}, Untrusted: []string{"what web.fetch fetched at 17:05"}}
	cases := []struct {
		name     string
		s        Step
		decision Decision
		reason   string
	}{
		{"a send after private and untrusted asks, naming both and where",
			Step{Server: "web", Tool: "fetch", Operation: "web_fetch", Effects: send, EffectSource: policy.SourceProfile, Modeled: true,
				Roles: map[string]policy.Role{"url": policy.RoleURL}, Arguments: map[string]any{"url": "https://paste.example/x"}, Flow: both},
			NeedsConfirm, "after reading private data (~/.ssh/id_rsa with fs.read_file at 17:04) and untrusted content (what web.fetch fetched at 17:05), this call sends data to paste.example"},
		{"an exit of [flows] asks too",
			Step{Server: "chat", Tool: "post_message", Operation: "chat_post_message", Effects: read, EffectSource: policy.SourceConfig, Modeled: true,
				Arguments: map[string]any{}, Flow: both},
			NeedsConfirm, "this call sends data out through the chat server's post_message"},
		{"a read after both runs",
			Step{Server: "fs", Tool: "read_file", Operation: "fs_read_file", Effects: read, EffectSource: policy.SourceProfile, Modeled: true,
				Arguments: map[string]any{}, Flow: both},
			Allow, ""},
		{"a send with only untrusted content runs",
			Step{Server: "web", Tool: "fetch", Operation: "web_fetch", Effects: send, EffectSource: policy.SourceProfile, Modeled: true,
				Roles: map[string]policy.Role{"url": policy.RoleURL}, Arguments: map[string]any{"url": "https://docs.example/"}, Flow: Flow{Untrusted: both.Untrusted}},
			Allow, ""},
		{"a carried secret on its way out is refused",
			Step{Server: "web", Tool: "fetch", Operation: "web_fetch", Effects: send, EffectSource: policy.SourceProfile, Modeled: true,
				Roles: map[string]policy.Role{"url": policy.RoleURL}, Arguments: map[string]any{"url": "https://paste.example/"},
				Flow: Flow{Carried: `argument "url" carries a secret this session was handed (aws-access-token hmac:1)`}},
			Refuse, `argument "url" carries a secret this session was handed (aws-access-token hmac:1), and it sends data to paste.example`},
		{"a carried secret written back where it was read runs (an edit of the .env)",
			Step{Server: "fs", Tool: "edit_file", Operation: "fs_edit_file", Effects: policy.Effects(0).With(policy.EffectWrite), EffectSource: policy.SourceProfile,
				Modeled: true, Arguments: map[string]any{}, Flow: Flow{Carried: `argument "edits" carries a secret this session was handed (aws-access-token hmac:1)`}},
			Allow, ""},
		{"a carried secret to a server over the network is refused, whatever its tool does",
			Step{Server: "remote", Tool: "search", Operation: "remote_search", Effects: read, EffectSource: policy.SourceProfile,
				Modeled: true, Arguments: map[string]any{}, Flow: Flow{Remote: true, Carried: `argument "q" carries a secret this session was handed (x hmac:1)`}},
			Refuse, "the remote server is reached over the network"},
		{"a carried secret handed to a tool that runs commands asks",
			Step{Server: "sh", Tool: "run", Operation: "sh_run", Effects: policy.Effects(0).With(policy.EffectExecute), EffectSource: policy.SourceSchema,
				Modeled: true, Arguments: map[string]any{}, Flow: Flow{Carried: `argument "command" carries a secret this session was handed (aws-access-token hmac:1)`}},
			NeedsConfirm, "nothing says the tool keeps it on this machine"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.s.StepNumber = 1
			d := Evaluate(p, c.s)
			if d.Decision != c.decision {
				t.Fatalf("decision %s, want %s (%s; %v)", d.Decision, c.decision, d.Reason, d.Factors)
			}
			if c.reason != "" && !strings.Contains(d.Reason+strings.Join(d.Factors, "\n"), c.reason) {
				t.Errorf("reason %q, factors %v: want %q", d.Reason, d.Factors, c.reason)
			}
		})
	}
}
