package verify

import (
	"strings"
	"testing"
)

// The first line of a question says what will happen in the effect's
// words (issue 31, item 4): what the guard's model says the tool does,
// where (new or existing, inside or outside the server's folders) and
// to whom (a URL's host); the tool's category never makes a write a
// "run".
func TestEffectWords(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	proj := []string{"/home/u/proj"}
	fs := func(tool string, places []Place, args map[string]any) Request {
		return Request{Client: "claude-code", Server: "filesystem", Tool: tool, Category: "EXECUTE", Effects: []string{"write"},
			Places: places, Roots: proj, Arguments: args, Roles: map[string]string{"path": "path", "content": "content",
				"source": "path", "destination": "path"}}
	}
	for _, tc := range []struct {
		name string
		r    Request
		want string
	}{
		{"a new file", fs("write_file", []Place{{Arg: "path", Path: "/home/u/proj/todo.txt", Looked: true}},
			map[string]any{"path": "/home/u/proj/todo.txt", "content": "x"}),
			`Claude Code wants to create the new file "~/proj/todo.txt" with the filesystem server.`},
		{"a new file outside the folder", fs("write_file", []Place{{Arg: "path", Path: "/home/u/scratch/todo.txt", Looked: true, Outside: true}},
			map[string]any{"path": "/home/u/scratch/todo.txt", "content": "x"}),
			`Claude Code wants to create the new file "~/scratch/todo.txt" outside the folder you gave the filesystem server (~/proj).`},
		{"an overwrite outside the folder", fs("write_file", []Place{{Arg: "path", Path: "/etc/hosts", Looked: true, Exists: true, Outside: true}},
			map[string]any{"path": "/etc/hosts", "content": "x"}),
			`Claude Code wants to overwrite "/etc/hosts" outside the folder you gave the filesystem server (~/proj).`},
		{"an edit", fs("edit_file", []Place{{Arg: "path", Path: "/home/u/proj/a.go", Looked: true, Exists: true}},
			map[string]any{"path": "/home/u/proj/a.go"}),
			`Claude Code wants to change "~/proj/a.go" with the filesystem server.`},
		{"a new folder", fs("create_directory", []Place{{Arg: "path", Path: "/home/u/proj/build", Looked: true}},
			map[string]any{"path": "/home/u/proj/build"}),
			`Claude Code wants to create the new folder "~/proj/build" with the filesystem server.`},
		{"a move", fs("move_file", []Place{{Arg: "destination", Path: "/home/u/proj/b.txt", Looked: true},
			{Arg: "source", Path: "/home/u/proj/a.txt", Looked: true, Exists: true}},
			map[string]any{"source": "/home/u/proj/a.txt", "destination": "/home/u/proj/b.txt"}),
			`Claude Code wants to move "~/proj/a.txt" to "~/proj/b.txt" with the filesystem server.`},
		{"a link that leads out", fs("write_file", []Place{{Arg: "path", Path: "/home/u/proj/key", Target: "/home/u/.ssh/id_rsa",
			Looked: true, Exists: true, Outside: true}}, map[string]any{"path": "/home/u/proj/key"}),
			`Claude Code wants to overwrite "~/proj/key" (a link to "~/.ssh/id_rsa") outside the folder you gave the filesystem server (~/proj).`},
		{"a write on another machine", func() Request {
			r := fs("write_file", []Place{{Arg: "path", Path: "/srv/x"}}, map[string]any{"path": "/srv/x"})
			r.Roots = nil
			return r
		}(), `Claude Code wants to write "/srv/x" with the filesystem server.`},
		{"several folders given", func() Request {
			r := fs("write_file", []Place{{Arg: "path", Path: "/tmp/x", Looked: true, Outside: true}}, map[string]any{"path": "/tmp/x"})
			r.Roots = []string{"/home/u/a", "/home/u/b"}
			return r
		}(), `Claude Code wants to create the new file "/tmp/x" outside the folders you gave the filesystem server (~/a, ~/b).`},
		{"a delete", Request{Server: "fs", Tool: "delete_file", Effects: []string{"delete"},
			Places: []Place{{Arg: "path", Path: "/home/u/proj/a.txt", Looked: true, Exists: true}}, Roots: proj,
			Arguments: map[string]any{"path": "/home/u/proj/a.txt"}},
			`The AI agent wants to delete "~/proj/a.txt" with the fs server.`},
		{"a read outside the folder", Request{Server: "filesystem", Tool: "read_text_file", Category: "READ", Effects: []string{"read"},
			Places: []Place{{Arg: "path", Path: "/home/u/.ssh/id_rsa", Looked: true, Exists: true, Outside: true}}, Roots: proj,
			Arguments: map[string]any{"path": "/home/u/.ssh/id_rsa"}},
			`The AI agent wants to read "~/.ssh/id_rsa" outside the folder you gave the filesystem server (~/proj).`},
		{"a request out", Request{Server: "fetch", Tool: "fetch", Category: "READ", Effects: []string{"send"},
			Arguments: map[string]any{"url": "https://example.com/page?q=1"}, Roles: map[string]string{"url": "url"}},
			`The AI agent wants to send a request for "https://example.com/page?q=1" to example.com with the fetch server.`},
		{"text sent out", Request{Server: "web", Tool: "post", Effects: []string{"send"},
			Arguments: map[string]any{"url": "https://hooks.example.com/in", "body": "the notes of today"},
			Roles:     map[string]string{"url": "url", "body": "content"}},
			`The AI agent wants to send "the notes of today" (18 characters) to hooks.example.com with the web server.`},
		{"data out without a URL", Request{Server: "github", Tool: "create_issue", Effects: []string{"send"},
			Arguments: map[string]any{"title": "x"}, Roles: map[string]string{"title": "content"}},
			`The AI agent wants to send data out of this machine with the github server (create_issue).`},
		{"a command runs, whatever else", Request{Server: "shell", Tool: "run", Effects: []string{"execute", "write"},
			Arguments: map[string]any{"command": "make", "path": "/home/u/proj"}, Roles: map[string]string{"command": "command", "path": "path"},
			Places: []Place{{Arg: "path", Path: "/home/u/proj", Looked: true, Exists: true}}},
			`The AI agent wants to run the command "make" with the shell server.`},
		{"nothing outside itself", Request{Server: "time", Tool: "get_time", Effects: []string{"none"}},
			`The AI agent wants to use get_time, which does nothing outside itself, with the time server.`},
		{"nothing tells", Request{Server: "x", Tool: "frobnicate", Effects: []string{"unknown"}, Arguments: map[string]any{"a": "b"}},
			`The AI agent wants to use frobnicate with the x server, and nothing tells what it does.`},
		{"the server's own store", Request{Server: "memory", Tool: "create_entities", Effects: []string{"write"},
			Arguments: map[string]any{"entities": []any{}}},
			`The AI agent wants to change what the memory server keeps (create_entities).`},
		// Without a model (a question asked again from its token alone),
		// the category speaks, but a path never "runs".
		{"no model: a path is not what runs", Request{Server: "filesystem", Tool: "write_file", Category: "EXECUTE",
			Arguments: map[string]any{"path": "/home/u/proj/todo.txt"}, Roles: map[string]string{"path": "path"}},
			`The AI agent wants to use write_file on "~/proj/todo.txt" (the filesystem server).`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Summary(); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// The words are the model's text quoted and made visible: a path that
// tries to read as aqlguard's own words stays inside its quotes, and a
// long one is cut.
func TestEffectWordsQuoteTheModelsText(t *testing.T) {
	r := Request{Server: "fs", Tool: "write_file", Effects: []string{"write"},
		Places: []Place{{Arg: "path", Path: "/tmp/x\u202e with the backup server. It is safe", Looked: true}}}
	got := r.Summary()
	if !strings.Contains(got, `create the new file "/tmp/x\u202E with the backup server. It is safe" with the fs server.`) {
		t.Errorf("got %s", got)
	}
	r.Places[0].Path = "/" + strings.Repeat("a", 200)
	if got := r.Summary(); !strings.Contains(got, "…\" with the fs server.") || len(got) > 150 {
		t.Errorf("a long path is not cut: %s", got)
	}
}
