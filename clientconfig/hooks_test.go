package clientconfig

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tailscale/hujson"
)

// Install then remove gives back the file byte for byte, whatever was
// there: comments, other hooks, other settings.
func TestHooksInstallAndRemoveExactly(t *testing.T) {
	self := "/usr/local/bin/aqlguard"
	files := map[string]HookFile{}
	for _, f := range HookFiles(Env{Home: "/home/u"}) {
		files[f.Client] = f
	}
	cases := []struct {
		name, client, before string
		want                 []string // in the installed file
	}{
		{"claude settings with other hooks and comments", "claude-code", `{
  // mine
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/lint.sh"}]}
    ],
    "Stop": []
  }
}
`, []string{`"PreToolUse"`, `/usr/local/bin/aqlguard hook claude-code --agent claude-code`, `~/bin/lint.sh`, `"matcher":"^(Bash|Write|Edit|MultiEdit|NotebookEdit|Read|Grep|mcp__.*)$"`}},
		{"claude settings without hooks", "claude-code", "{\n  \"model\": \"opus\"\n}\n", []string{`"hooks":{"PreToolUse":[`}},
		{"a new cursor hooks.json", "cursor", "", []string{`"version": 1`, `"beforeShellExecution":[{`, `"failClosed":true`, `"preToolUse"`}},
		{"gemini settings with mcp servers", "gemini", "{\n  \"mcpServers\": {}\n}\n", []string{`"BeforeTool"`, `"timeout":60000`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs := &Records{Entries: map[string]Record{}}
			var data []byte
			if c.before != "" {
				data = []byte(c.before)
			}
			out, res, err := InstallHooks(files[c.client], data, self, recs, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != len(files[c.client].Events) {
				t.Errorf("results %v", res)
			}
			compact := string(out)
			if std, err := hujson.Standardize(append([]byte(nil), out...)); err == nil {
				var b bytes.Buffer
				if json.Compact(&b, std) == nil {
					compact = b.String()
				}
			}
			for _, w := range c.want {
				if !strings.Contains(compact, strings.ReplaceAll(w, `": `, `":`)) {
					t.Errorf("installed file lacks %s:\n%s", w, out)
				}
			}
			if c.before != "" && strings.Contains(c.before, "// mine") && !strings.Contains(string(out), "// mine") {
				t.Error("a comment was lost")
			}
			again, _, err := InstallHooks(files[c.client], out, self, recs, time.Now())
			if err != nil || string(again) != string(out) {
				t.Errorf("installing twice changed the file: %v\n%s", err, again)
			}
			got, err := InstalledHooks(out, self)
			if err != nil || len(got) != len(files[c.client].Events) {
				t.Errorf("InstalledHooks: %v %v", got, err)
			}
			back, _, err := RemoveHooks(files[c.client], out, self, recs)
			if err != nil {
				t.Fatal(err)
			}
			if c.before != "" && string(back) != c.before {
				t.Errorf("removed, not the original:\n%s\nwant:\n%s", back, c.before)
			}
			if created := CreatedEmpty(files[c.client], back, self, recs); created != (c.before == "") {
				t.Errorf("CreatedEmpty = %v for a file that was %q", created, c.before)
			}
			if len(recs.Entries) != 0 {
				t.Errorf("records left: %v", recs.Entries)
			}
		})
	}
}

// Remove takes only aqlguard's hooks: a hook of the user's that runs
// something else stays, even in a list init created.
func TestRemoveHooksLeavesOthers(t *testing.T) {
	f := HookFiles(Env{Home: "/h"})[0]
	in := `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "aqlguard hook claude-code --agent claude-code"}]}, {"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}]}}`
	recs := &Records{Entries: map[string]Record{}}
	recs.put(Record{File: f.Path, Entry: hookRecordEntry("PreToolUse"), Original: "hooks"})
	out, _, err := RemoveHooks(f, []byte(in), "/other/aqlguard", recs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "aqlguard hook") || !strings.Contains(string(out), "mine.sh") {
		t.Errorf("%s", out)
	}
}
