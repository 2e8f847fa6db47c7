package evaluator

import (
	"testing"

	"github.com/aqlguard/aqlguard/policy"
)

// destructive is the server-filesystem's write_file and edit_file: no
// verb the table knows, destructiveHint set, so EXECUTE by annotation.
var destructive = Annotations{Destructive: ptr(true)}

// Text rules are matched by argument role: what runs (a command, code, a
// query), where (a path, a URL) and anything unnamed, but not what is
// written (content) unless a rule says so.
func TestRoles(t *testing.T) {
	p := compile(t, `
[safety]
deny = ["*rm -rf *", "*/etc/shadow*", "*://evil.example/admin*"]
refuse = ["*drop table*"]

[[safety.rules]]
action = "deny"
roles = ["content"]
pattern = "*begin rsa private key*"

[[safety.rules]]
action = "requires_approval"
operation = "notes.*"
argument = "body"
pattern = "*password*"

[[safety.rules]]
action = "auto_approve"
operation = "fs.read_file"
argument = "path"
pattern = "/tmp/*"

[[servers]]
name = "runner"
command = "runner"
[servers.arguments]
"run_file:content" = "other"
"annotate:text" = "content"
`, "")
	for _, tc := range []struct {
		name     string
		tool     string
		category policy.Category
		ann      Annotations
		args     map[string]any
		want     string
	}{
		// A Makefile and a migration are written, not run.
		{"Makefile written", "fs.write_file", policy.Execute, destructive,
			map[string]any{"path": "Makefile", "content": "clean:\n\trm -rf build dist\n"}, "asks"},
		{"migration written", "fs.write_file", policy.Execute, destructive,
			map[string]any{"path": "db/001_drop.sql", "content": "DROP TABLE users;"}, "asks"},
		{"edit of a script", "fs.edit_file", policy.Execute, destructive,
			map[string]any{"path": "clean.sh", "edits": []any{map[string]any{"oldText": "x", "newText": "rm -rf out"}}}, "asks"},
		{"an issue about rm -rf", "gh.create_issue", policy.Create, Annotations{},
			map[string]any{"title": "rm -rf / in docs", "body": "Do not run rm -rf /tmp/x"}, "allowed"},
		// What runs is still judged.
		{"command", "shell.run_command", policy.Execute, Annotations{},
			map[string]any{"command": "rm -rf build"}, "blocks"},
		{"query", "db.query", policy.Read, Annotations{},
			map[string]any{"sql": "DROP TABLE users"}, "refuses"},
		{"a tool that says nothing of where it writes: text is other", "chat.send", policy.Execute, Annotations{},
			map[string]any{"text": "rm -rf /home"}, "blocks"},
		{"a tool told only where it runs: its text is what runs", "term.terminal", policy.Execute, Annotations{},
			map[string]any{"text": "rm -rf /srv", "cwd": "/home/me"}, "blocks"},
		{"a delete never takes content", "fs.delete_note", policy.Delete, Annotations{},
			map[string]any{"path": "/tmp/n", "body": "rm -rf x"}, "blocks"},
		{"the path is still judged", "fs.write_file", policy.Execute, destructive,
			map[string]any{"path": "/etc/shadow", "content": "x"}, "blocks"},
		// A rule that says so sees content.
		{"content rule", "fs.write_file", policy.Execute, destructive,
			map[string]any{"path": "k.pem", "content": "-----BEGIN RSA PRIVATE KEY-----\nMII"}, "blocks"},
		{"argument rule on a content argument", "notes.create_note", policy.Create, Annotations{},
			map[string]any{"body": "my password is hunter2"}, "asks"},
		// Declared roles win.
		{"declared other", "runner.run_file", policy.Execute, Annotations{},
			map[string]any{"path": "x.sh", "content": "rm -rf /srv"}, "blocks"},
		{"declared content", "runner.annotate", policy.Execute, Annotations{},
			map[string]any{"text": "rm -rf /srv"}, "asks"},
		{"declared content is another server's business", "other.annotate", policy.Execute, Annotations{},
			map[string]any{"text": "rm -rf /srv"}, "blocks"},
		// Paths and URLs in canonical form.
		{"path with dot segments", "fs.read_file", policy.Read, Annotations{},
			map[string]any{"path": "/tmp/../etc/./shadow"}, "blocks"},
		{"path with repeated slashes", "fs.read_file", policy.Read, Annotations{},
			map[string]any{"path": "//etc//shadow"}, "blocks"},
		{"approval of /tmp does not reach out of it", "fs.read_file", policy.Read, Annotations{},
			map[string]any{"path": "/tmp/../home/me/.netrc"}, "allowed"},
		{"url escapes", "web.fetch", policy.Read, Annotations{},
			map[string]any{"url": "HTTP://EVIL.example/%61dmin/x"}, "blocks"},
		{"url dot segments", "web.fetch", policy.Read, Annotations{},
			map[string]any{"url": "https://evil.example/x/../admin"}, "blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server, tool, _ := cut(tc.tool)
			s := Step{Principal: "default", StepNumber: 1, Server: server, Tool: tool, Operation: server + "_" + policy.SnakeName(tool),
				Category: tc.category, Annotations: tc.ann, Arguments: tc.args}
			for _, q := range []*policy.Policy{p, p.WithoutIndexes()} {
				d := Evaluate(q, s)
				if got := d.Outcome(); got != tc.want {
					t.Errorf("%s, want %s: %s %v", got, tc.want, d.Reason, d.Factors)
				}
			}
		})
	}
}

// An approving rule needs every form of a value: the path as sent and
// its canonical form both under /tmp.
func TestApprovalNeedsEveryForm(t *testing.T) {
	p := compile(t, `
[safety]
inherit = false # the shipped auto_approve "read_*" would approve every read_file
[[safety.rules]]
action = "auto_approve"
operation = "fs.read_file"
argument = "path"
pattern = "/tmp/*"
`, "")
	for path, want := range map[string]string{
		"/tmp/notes.txt":         "allowed",
		"/tmp/../home/me/.netrc": "asks",
		"/tmp/a/../../etc/x":     "asks",
		"/tmp//a/./b":            "allowed",
	} {
		s := Step{Principal: "default", StepNumber: 1, Server: "fs", Tool: "read_file", Operation: "fs_read_file",
			Category: policy.Execute, Arguments: map[string]any{"path": path}}
		if got := Evaluate(p, s).Outcome(); got != want {
			t.Errorf("read_file %s: %s, want %s", path, got, want)
		}
	}
}

func cut(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
